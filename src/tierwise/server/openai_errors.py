"""OpenAI-shaped errors of the ``/v1`` endpoints, and their part of the OpenAPI document.

An error is ``{"error": {"message", "type", "param", "code"}}`` with OpenAI's status: 400 for a body
that is not JSON, lacks a field or has an invalid value (never 422: the SDKs map 422 to another
exception than OpenAI's servers cause), 401 a bad key, 404 an unknown path or model, 405 a method a
path does not take (with ``Allow``), 413 a body over the size limit, 429 a rate or spending limit,
500 an internal error. The upstream model's own errors reach the client as it gave them — its 4xx or
5xx, its error object and ``Retry-After`` — a timeout as 504, any other failure as 502
(:mod:`tierwise.server.openai_upstream`).

:func:`document` adds to the app's OpenAPI document what the ``/v1`` routes read by hand: the
request body's schema, the error responses and the bearer security scheme.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from fastapi import FastAPI
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ValidationError

from tierwise.errors import UserError

if TYPE_CHECKING:
    from tierwise.server.openai_validate import MessagesInvalid

__all__ = [
    "COMPLETION_RESPONSES",
    "DEFAULT_MAX_BODY_BYTES",
    "ERROR_RESPONSES",
    "SSE_EVENT",
    "ErrorResponse",
    "document",
    "error_body",
    "max_body_bytes_from_env",
    "openai_error",
    "validation_error",
]

DEFAULT_MAX_BODY_BYTES = 16 * 1024 * 1024


class ErrorDetail(BaseModel):
    """What went wrong: a message that says what to fix, its kind, the parameter and a code."""

    message: str
    type: str
    param: str | None = None
    code: str | None = None


class ErrorResponse(BaseModel):
    """An OpenAI-shaped error."""

    error: ErrorDetail


_DESCRIPTIONS = {
    400: "Invalid request: not JSON, a missing or invalid parameter, or too long for the budget",
    401: "Missing, unknown or revoked API key (only with --require-key)",
    404: "Unknown endpoint or model",
    405: "Method not allowed (see the Allow header)",
    413: "The request body is over the size limit (TIERWISE_MAX_BODY_BYTES)",
    429: "Rate limit (Retry-After), the upstream's as sent, or spending limit (code insufficient_quota)",
    500: "Internal error; nothing already stored was lost",
    502: "The upstream model failed (no connection, a broken answer, or it refused tierwise's key)",
    504: "The upstream model did not answer in time",
}
_API_ERRORS = {
    400: "Invalid request body or JSON",
    401: "Missing, unknown or revoked API key (only with --require-key)",
    404: "No such chat, task, project, note or event (for this user)",
    405: "Method not allowed (see the Allow header)",
    409: "A turn is already running in this chat",
    413: "The request body is over the size limit",
    422: "A value is out of range or malformed; the message names the fix",
    429: "Rate limit (Retry-After) or spending limit",
    500: "Internal error; nothing already stored was lost",
}
_OPEN = ("/api/health", "/api/info")
"""The routes that need no key, even with ``--require-key``."""
ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    status: {"model": ErrorResponse, "description": text} for status, text in _DESCRIPTIONS.items()
}
"""The error responses of a ``/v1`` route, for its decorator's ``responses``."""

SSE_EVENT: dict[str, Any] = {
    "type": "object",
    "description": "One server-sent event (the schema of a text/event-stream describes each event)",
    "properties": {"event": {"type": "string"}, "data": {"type": "string"}, "id": {"type": "string"}},
    "required": ["data"],
}
"""One server-sent event, as OpenAPI documents an event stream's events."""

COMPLETION_RESPONSES: dict[int | str, dict[str, Any]] = {
    200: {
        "description": "A chat.completion object; with stream: true, server-sent events instead: "
        "chat.completion.chunk objects, then `data: [DONE]`",
        "content": {
            "application/json": {"schema": {"type": "object"}},
            "text/event-stream": {"schema": SSE_EVENT},
        },
    },
    **ERROR_RESPONSES,
}
"""The responses of ``POST /v1/chat/completions``: JSON, or a stream of events when asked for."""


def error_body(message: str, kind: str, code: str | None, param: str | None = None) -> dict[str, Any]:
    """The JSON of an OpenAI-shaped error."""
    return {"error": {"message": message, "type": kind, "param": param, "code": code}}


def openai_error(
    status: int,
    message: str,
    *,
    code: str | None = None,
    param: str | None = None,
    headers: Mapping[str, str] | None = None,
) -> JSONResponse:
    """An OpenAI-shaped error response."""
    kind = "invalid_request_error"
    if status == 502:
        kind = "upstream_error"
    elif status >= 500:
        kind = "server_error"
    elif status == 401:
        kind = "authentication_error"
    elif status == 429:
        kind = "rate_limit_error"
    return JSONResponse(
        error_body(message, kind, code, param), status_code=status, headers=dict(headers or {})
    )


_EXPECTED = {
    "bool_type": "a boolean",
    "int_type": "an integer",
    "float_type": "a number",
    "string_type": "a string",
    "dict_type": "an object",
    "list_type": "an array",
}


def _json_type(value: Any) -> str:
    """What JSON calls ``value``'s type, with its article (``an integer``)."""
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, dict):
        return "an object"
    return "an array" if isinstance(value, list) else "null"


def validation_error(exc: ValidationError | MessagesInvalid) -> JSONResponse:
    """A body that failed validation: 400 naming the first parameter at fault.

    A value of the wrong JSON type (where one type fits) is ``invalid_type``, worded as OpenAI words
    it: ``Invalid type for 'parallel_tool_calls': expected a boolean, but got an integer instead.``
    """
    errors = exc.errors(include_url=False)
    param = (".".join(str(p) for p in errors[0]["loc"]) or None) if errors else None
    if errors and errors[0]["type"] == "missing":
        return openai_error(
            400, f"missing required parameter: {param!r}", code="missing_required_parameter", param=param
        )
    if len(errors) == 1 and errors[0]["type"] in _EXPECTED:  # (a union's branches each add one)
        expected, got = _EXPECTED[errors[0]["type"]], _json_type(errors[0].get("input"))
        message = f"Invalid type for {param!r}: expected {expected}, but got {got} instead."
        return openai_error(400, message, code="invalid_type", param=param)
    parts = []
    for error in errors[:5]:
        where = ".".join(str(p) for p in error.get("loc", ())) or "body"
        parts.append(f"{where}: {error.get('msg', 'invalid')}")
    return openai_error(400, "invalid request: " + "; ".join(parts), code="invalid_value", param=param)


def max_body_bytes_from_env() -> int:
    """``TIERWISE_MAX_BODY_BYTES``: the largest ``/v1`` request body accepted (default 16 MB).

    Raises:
        UserError: the variable is not a positive whole number.
    """
    raw = os.environ.get("TIERWISE_MAX_BODY_BYTES", "").strip()
    if not raw:
        return DEFAULT_MAX_BODY_BYTES
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if value < 1:
        raise UserError(
            f"TIERWISE_MAX_BODY_BYTES={raw!r} is not a positive number of bytes; use e.g. 16777216 (16 MB)"
        )
    return value


def document(
    app: FastAPI,
    request_models: Mapping[str, type[BaseModel]],
    *,
    require_key: bool,
    window: int | None = None,
    token_limit: int | None = None,
    token_floor: Callable[[], int] | None = None,
    models: Sequence[type[BaseModel]] = (),
) -> None:
    """Add the ``/v1`` request schemas and the bearer security scheme to ``app``'s OpenAPI document.

    ``request_models`` maps a path (``/v1/chat/completions``) to the model of its POST body.
    ``models``: other request models, added to the components as they are, for the routes whose
    ``openapi_extra`` refers to them (``/v1/messages``: :mod:`tierwise.server.anthropic_schema`). With
    ``require_key`` every ``/v1`` and ``/api`` operation needs the bearer key; without, it is optional
    (any key or none is accepted in local mode). ``window``: the budget's window in tokens, which a
    body's ``max_tokens`` and ``max_completion_tokens`` must stay below (documented as their maximum).
    ``token_limit``: the largest budget a chat may be given (the server's), documented as the maximum
    of ``token_limit`` in ``NewChat`` and ``Rename`` (more is a 422); ``token_floor``: the smallest,
    worked out when the document is first made (:func:`tierwise.chat.floor.budget_floor`; less is a 422).
    """
    from tierwise.server.openapi_links import add_links

    build: Callable[[], dict[str, Any]] = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is not None:
            return app.openapi_schema
        schema = build()
        components = schema.setdefault("components", {})
        schemas = components.setdefault("schemas", {})
        for path, model in request_models.items():
            body = model.model_json_schema(ref_template="#/components/schemas/{model}")
            schemas.update(body.pop("$defs", {}))
            if window is not None:
                _limit_max_tokens(body, window)
            schemas[model.__name__] = body
            operation = schema.get("paths", {}).get(path, {}).get("post")
            if operation is not None:
                ref = {"$ref": f"#/components/schemas/{model.__name__}"}
                content = {"application/json": {"schema": ref}}
                operation["requestBody"] = {"required": True, "content": content}
        for model in models:
            body = model.model_json_schema(ref_template="#/components/schemas/{model}")
            schemas.update(body.pop("$defs", {}))
            schemas[model.__name__] = body
        components.setdefault("securitySchemes", {})["bearer"] = {
            "type": "http",
            "scheme": "bearer",
            "description": (
                "An API key from `tierwise keys create --user NAME`; any key or none in local mode."
            ),
        }
        schemas["Problem"] = {
            "type": "object",
            "properties": {"error": {"type": "string", "description": "What went wrong and the fix"}},
            "required": ["error"],
        }
        problem = {"application/json": {"schema": {"$ref": "#/components/schemas/Problem"}}}
        for path, operations in schema.get("paths", {}).items():
            for operation in operations.values():
                if not isinstance(operation, dict):
                    continue
                responses = operation.setdefault("responses", {})
                if "HTTPValidationError" in str(responses.get("422")):  # FastAPI's, never sent
                    del responses["422"]  # /api answers a Problem (below), /v1 a 400
                if path.startswith("/api/"):
                    for status, text in _API_ERRORS.items():
                        responses.setdefault(str(status), {"description": text, "content": problem})
        for name in ("HTTPValidationError", "ValidationError"):
            schemas.pop(name, None)
        security: list[dict[str, list[str]]] = [{"bearer": []}] if require_key else [{"bearer": []}, {}]
        for path, operations in schema.get("paths", {}).items():
            if path.startswith(("/v1/", "/api/")) and path not in _OPEN:
                for operation in operations.values():
                    if isinstance(operation, dict):
                        operation["security"] = security
        if token_limit is not None:
            least = min(token_floor(), token_limit) if token_floor is not None else None
            _limit_token_limit(schemas, token_limit, least)
        add_links(schema)  # where the id parameters come from (a chat's from POST /api/chats…)
        app.openapi_schema = schema
        return schema

    app.openapi = openapi  # type: ignore[method-assign]


def _limit_token_limit(schemas: dict[str, Any], most: int, least: int | None = None) -> None:
    """Document a chat's ``token_limit`` as between ``least`` and ``most`` (outside is a 422).

    ``most``: the server's budget; ``least``: what a chat's guaranteed layers need.
    """
    for name in ("NewChat", "Rename"):
        field = schemas.get(name, {}).get("properties", {}).get("token_limit")
        if not isinstance(field, dict):
            continue
        for branch in field.get("anyOf", [field]):
            if branch.get("type") == "integer":
                branch["maximum"] = most
                if least is not None:
                    branch["minimum"] = least
        at_least = "" if least is None else f"at least {least:,} (for the system prompt, tools, a message), "
        field["description"] = (
            f"The chat's budget: the tokens each of its prompts may use, {at_least}at most {most:,} (the "
            "server's: its window less the answer's reserve); the server's when left out."
        )


def _limit_max_tokens(body: dict[str, Any], window: int) -> None:
    """Document ``max_tokens``, ``max_completion_tokens`` (``max_output_tokens``) as below ``window``."""
    for name in ("max_tokens", "max_completion_tokens", "max_output_tokens"):
        field = body.get("properties", {}).get(name)
        if not isinstance(field, dict):
            continue
        for branch in field.get("anyOf", [field]):
            if branch.get("type") == "integer":
                branch["maximum"] = window - 1
        field["description"] = (
            f"At most {window - 1:,}: the answer and the packed prompt share the {window:,}-token window "
            "(a prompt that does not fit in what is left is a 400, context_length_exceeded)."
        )
