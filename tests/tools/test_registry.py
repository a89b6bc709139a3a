from __future__ import annotations

import pytest

from tierwise.tools import Tool, ToolDefinitionError, ToolRegistry, UnknownToolError, tool


@tool(tier="list")
def zeta() -> str:
    """Z."""
    return "z"


@tool(tier="detail")
def alpha(x: int) -> int:
    """A."""
    return x


def test_lookup_and_membership() -> None:
    registry = ToolRegistry([zeta])
    registry.register(alpha)
    assert "alpha" in registry and "beta" not in registry and len(registry) == 2
    assert registry.get("alpha") is alpha and registry.get("beta") is None
    assert registry["zeta"] is zeta
    with pytest.raises(UnknownToolError, match="unknown tool 'beta'; available: alpha, zeta"):
        registry["beta"]
    with pytest.raises(LookupError):
        registry["beta"]


def test_definitions_are_sorted_whatever_the_registration_order() -> None:
    one, two = ToolRegistry([zeta, alpha]), ToolRegistry([alpha, zeta])
    assert one.names() == two.names() == ["alpha", "zeta"]
    assert one.definitions() == two.definitions()
    assert [d["function"]["name"] for d in one.definitions()] == ["alpha", "zeta"]
    assert [t.name for t in one] == ["alpha", "zeta"]
    assert [t.name for t in one.tools(tier="list")] == ["zeta"]


def test_replace_and_unregister() -> None:
    def alpha_v2(y: str) -> str:
        """A again."""
        return y

    replacement = Tool.from_function(alpha_v2, tier="action", name="alpha")
    registry = ToolRegistry([alpha])
    registry.register(alpha)  # the same tool again is fine
    with pytest.raises(ToolDefinitionError, match="already registered; pass replace=True"):
        registry.register(replacement)
    registry.register(replacement, replace=True)
    assert registry["alpha"] is replacement
    registry.unregister("alpha")
    assert "alpha" not in registry and registry.unknown("alpha") == "unknown tool 'alpha'; available: none"
    with pytest.raises(ToolDefinitionError, match="decorate the function"):
        registry.register(alpha_v2)  # type: ignore[arg-type]
