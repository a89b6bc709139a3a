"""Neither the server nor the command line has an import circle (issue 30).

Routes raised ``ApiError`` from ``server/app.py``, which imports every router to mount it; the
``cli_*`` modules took their helpers from ``cli.py``, which imports them all. Imports made inside
functions count too (a circle put off until call time is still one); imports only for type checking
do not.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"


def _modules(*patterns: str) -> dict[str, Path]:
    found = {}
    for pattern in patterns:
        for path in SRC.glob(pattern):
            parts = path.relative_to(SRC).with_suffix("").parts
            found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def _type_only(tree: ast.AST) -> set[int]:
    """``id()`` of the import nodes under ``if TYPE_CHECKING:``."""
    out: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            out.update(id(inner) for stmt in node.body for inner in ast.walk(stmt))
    return out


def _graph(modules: dict[str, Path]) -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        skip = _type_only(tree)
        deps: set[str] = set()
        for node in ast.walk(tree):
            if id(node) in skip:
                continue
            if isinstance(node, ast.ImportFrom) and node.module:
                submodules = {f"{node.module}.{alias.name}" for alias in node.names} & modules.keys()
                deps |= submodules or ({node.module} & modules.keys())
            elif isinstance(node, ast.Import):
                deps |= {alias.name for alias in node.names} & modules.keys()
        graph[name] = deps - {name}
    return graph


def _circle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}

    def visit(node: str, path: list[str]) -> list[str] | None:
        state[node] = 1
        for dep in sorted(graph[node]):
            if state.get(dep) == 1:
                return [*path[path.index(dep) :], dep] if dep in path else [node, dep]
            if not state.get(dep) and (found := visit(dep, [*path, dep])):
                return found
        state[node] = 2
        return None

    for start in sorted(graph):
        if not state.get(start) and (found := visit(start, [start])):
            return found
    return None


@pytest.mark.parametrize("patterns", [("tierwise/server/*.py",), ("tierwise/cli.py", "tierwise/cli_*.py")])
def test_no_import_circle(patterns: tuple[str, ...]) -> None:
    modules = _modules(*patterns)
    assert len(modules) > 3
    circle = _circle(_graph(modules))
    assert circle is None, " -> ".join(circle or ())


def test_the_check_finds_a_circle() -> None:
    assert _circle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _circle({"a": {"b"}, "b": set()}) is None
