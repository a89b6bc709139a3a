"""The HTTP service: the chat API with server-sent events and context status.

The OpenAI-compatible endpoint, API keys and the web UI come next (issue 6).

:func:`~tierwise.server.app.create_app` builds the FastAPI application around a store and a chat
engine; ``tierwise serve`` runs it with uvicorn.
"""

from __future__ import annotations

from tierwise.server.app import create_app

__all__ = ["create_app"]
