"""The web chat and context dashboard: static files served by the app, no build step.

``/`` is the chat (chat list, streamed answers with tool calls as they run, a stop button, titles);
the dashboard beside it reads ``/api/context/status`` and ``/api/chats/{id}/context``: the budget bar
coloured by health, the breakdown by layer, tokens per turn, the last pack's layers with what was
truncated or dropped and why, and compaction events. Plain HTML, CSS and JavaScript in ``static/``.
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
