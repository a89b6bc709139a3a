"""The model's tool arguments: parsed forgivingly, validated, and explained when they are wrong.

Everything here turns bad input into a message for the model instead of an exception: text that is
not a JSON object, NaN, unpaired surrogates, and pydantic's validation errors (one line per problem).
:func:`storable` cleans JSON data of what the store's backends refuse (NUL, unpaired surrogates).
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pydantic import ValidationError

from tierwise.tools.definition import Tool

__all__ = ["explain_validation", "parse_arguments", "raw_text", "storable"]

_MAX_PROBLEMS = 5
_SURROGATE = re.compile("[\ud800-\udfff]")  # in a str, always unpaired: JSON joins the pairs


def _short(value: Any, limit: int = 60) -> str:
    try:
        text = json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def raw_text(arguments: object, limit: int = 2000) -> str:
    """The arguments as text (cut at ``limit``), for the record of a call whose arguments were unreadable."""
    text = arguments if isinstance(arguments, str) else repr(arguments)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON; send a number or null")


def _map_text(value: Any, fix: Callable[[str], str]) -> Any:
    """``value`` (JSON data) with ``fix`` applied to every string, keys included."""
    if isinstance(value, str):
        return fix(value)
    if isinstance(value, dict):
        return {fix(str(k)): _map_text(v, fix) for k, v in value.items()}
    if isinstance(value, list):
        return [_map_text(v, fix) for v in value]
    return value


def _valid_unicode(text: str) -> str:
    """``text`` with unpaired surrogates replaced by U+FFFD."""
    return text if text.isascii() else _SURROGATE.sub("\ufffd", text)


def storable(value: Any) -> Any:
    """``value`` with NUL characters and unpaired surrogates replaced, as both store backends need."""
    return _map_text(value, lambda t: _valid_unicode(t).replace("\x00", "\ufffd"))


def parse_arguments(name: str, raw: object) -> tuple[dict[str, Any] | None, str | None]:
    """The model's arguments as a dict, or ``None`` and the problem in one line.

    Empty text means no arguments; NaN and infinities are not JSON and are refused; unpaired
    surrogates (a lone high or low surrogate escape) become U+FFFD. A mapping (arguments parsed
    already) is accepted.

    Example:
        >>> parse_arguments("add", '{"a": 1}')
        ({'a': 1}, None)
        >>> print(parse_arguments("add", "[1]")[1])
        arguments for add must be a JSON object of named parameters, e.g. {"task_id": "task_001"}; got a list
    """
    example = 'a JSON object of named parameters, e.g. {"task_id": "task_001"}'
    if isinstance(raw, Mapping):
        return _map_text({str(k): v for k, v in raw.items()}, _valid_unicode), None
    if not isinstance(raw, str):
        return None, f"arguments for {name} must be {example}; got {type(raw).__name__}"
    text = raw.strip()
    if not text:
        return {}, None  # some models send "" for a tool without parameters
    try:
        data = json.loads(text, parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:
        return None, f"arguments for {name} are not valid JSON ({exc.msg} at char {exc.pos}); send {example}"
    except (ValueError, RecursionError) as exc:
        return None, f"arguments for {name} are not valid JSON ({exc}); send {example}"
    data = _map_text(data, _valid_unicode)
    if not isinstance(data, dict):
        kind = {list: "a list", str: "a string", bool: "a boolean", type(None): "null"}.get(
            type(data), "a number"
        )
        return None, f"arguments for {name} must be {example}; got {kind}"
    return data, None


def _location(loc: Sequence[int | str]) -> str:
    text = ""
    for part in loc:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text or "(arguments)"


def explain_validation(tool: Tool, exc: ValidationError) -> str:
    """What is wrong with the arguments: one line per problem (at most five), naming the field and the fix.

    A missing parameter gets its description, an invented one the closest real name (or the list of
    parameters), anything else pydantic's message and the value that was sent.
    """
    errors = exc.errors(include_url=False)
    names = tool.parameter_names
    lines = [f"invalid arguments for {tool.name}; fix them and call again:"]
    for err in errors[:_MAX_PROBLEMS]:
        where = _location(err["loc"])
        if err["type"] == "missing":
            spec = tool.parameters.get("properties", {}).get(str(err["loc"][0]), {}) if err["loc"] else {}
            hint = spec.get("description") or spec.get("type")
            lines.append(f"- {where}: required but missing; add it" + (f" ({hint})" if hint else ""))
        elif err["type"] == "extra_forbidden":
            close = difflib.get_close_matches(str(err["loc"][-1]), names, n=1) if err["loc"] else []
            if close:
                lines.append(f"- {where}: not a parameter of {tool.name}; did you mean {close[0]!r}?")
            else:
                listed = ", ".join(names) or "none"
                lines.append(f"- {where}: not a parameter of {tool.name}; remove it (parameters: {listed})")
        else:
            lines.append(f"- {where}: {err['msg']} (got {_short(err.get('input'))})")
    if len(errors) > _MAX_PROBLEMS:
        lines.append(f"- … and {len(errors) - _MAX_PROBLEMS} more")
    return "\n".join(lines)
