"""The web chat and context dashboard: static files served by the app, no build step.

``/`` is the chat (chat list with each chat's project or task, streamed answers with tool calls as
they run, a stop button, titles); "New chat on…" (Alt+P) picks a project, one of its open tasks or
the calendar; the open chat can be renamed in place (F2; Enter saves, Esc cancels) or deleted after a
confirm step; the sidebar's foot shows the month's tokens and dollars (``/api/usage``). The dashboard
beside it reads ``/api/context/status``, ``/api/chats/{id}/context`` and ``/api/chats/{id}/usage``:
the budget bar coloured by health, the chat's tokens, cost, turns and model calls, the breakdown by
layer, tokens per turn, the last pack's layers with what was truncated or dropped and why, and
compaction events. Plain HTML, CSS and JavaScript in ``static/``.
"""

from __future__ import annotations

from pathlib import Path

from fastapi import FastAPI
from fastapi.responses import FileResponse
from fastapi.staticfiles import StaticFiles

__all__ = ["STATIC", "mount_web"]

STATIC = Path(__file__).with_name("static")


def mount_web(app: FastAPI) -> None:
    """Serve the web UI: ``/`` and ``/static/…``."""
    app.mount("/static", StaticFiles(directory=STATIC), name="static")

    @app.get("/", include_in_schema=False)
    async def index() -> FileResponse:
        return FileResponse(STATIC / "index.html", headers={"cache-control": "no-cache"})
