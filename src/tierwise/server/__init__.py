"""The HTTP service: the web chat's API with server-sent events, the model wires, keys and the web UI.

:func:`~tierwise.server.app.create_app` builds the FastAPI application around a store and a chat
engine; ``tierwise serve`` runs it with uvicorn. ``create_app`` is imported on first use, so a
module of this package (``server.auth``, ``server.threaded``) can be imported without the app.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tierwise.server.app import create_app

__all__ = ["create_app"]


def __getattr__(name: str) -> Any:
    """``create_app``, imported on first use."""
    if name == "create_app":
        from tierwise.server.app import create_app

        return create_app
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
