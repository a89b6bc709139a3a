"""OpenAPI links: which response an operation's id parameter comes from.

A chat's id comes from ``POST /api/chats``, a project's from ``GET /api/projects``, a task's from
``GET /api/tasks``, a model's from ``GET /v1/models``. :func:`add_links` writes that down in the
document (``responses.<status>.links``), so a client generator, or an API tester such as
schemathesis's stateful phase, calls ``/api/chats/{chat_id}`` with a chat that exists.
"""

from __future__ import annotations

from typing import Any

__all__ = ["add_links"]

# (path, method, status of the response, the parameter it supplies, where in the response body)
_SOURCES = (
    ("/api/chats", "post", "201", "chat_id", "/id"),
    ("/api/chats", "post", "201", "sessionId", "/id"),
    ("/api/projects", "get", "200", "project_id", "/projects/0/id"),
    ("/api/tasks", "get", "200", "task_id", "/tasks/0/id"),
    ("/v1/models", "get", "200", "model", "/data/0/id"),
)


def add_links(schema: dict[str, Any]) -> None:
    """Link each source response in ``schema`` to every operation that takes the id it returns."""
    paths: dict[str, Any] = schema.get("paths", {})
    for source, method, status, parameter, pointer in _SOURCES:
        response = paths.get(source, {}).get(method, {}).get("responses", {}).get(status)
        if not isinstance(response, dict):
            continue
        for operations in paths.values():
            for operation in operations.values():
                if not isinstance(operation, dict) or "operationId" not in operation:
                    continue
                names = {p.get("name") for p in operation.get("parameters", ()) if isinstance(p, dict)}
                if parameter in names:
                    response.setdefault("links", {})[operation["operationId"]] = {
                        "operationId": operation["operationId"],
                        "parameters": {parameter: f"$response.body#{pointer}"},
                    }
