"""The web chat and context dashboard: static files served by the app, no build step.

``/`` is the chat (chat list with each chat's project or task, streamed answers with tool calls as
they run, a stop button, titles); "New chat on…" (Alt+P) picks a project, one of its open tasks or
the calendar; the open chat can be renamed in place (F2; Enter saves, Esc cancels) or deleted after a
confirm step; the sidebar's foot shows the month's tokens and dollars (``/api/usage``). An empty chat
offers example prompts the offline assistant answers; the header says which model answers. The
dashboard beside it (a drawer on a narrow screen) reads ``/api/context/status``,
``/api/chats/{id}/context`` and ``/api/chats/{id}/usage`` — once a second while a turn runs: the
budget bar coloured by health, seed 004's tiers 1–4 and the strategy in force, the chat's tokens,
cost, turns and model calls, the breakdown by layer, tokens per turn, the last pack's layers with
what was truncated or dropped and why, and the compactions that changed something.

With ``serve --require-key`` the page asks for a key (kept in the browser's ``localStorage``, sent
as ``Authorization: Bearer``) and shows every refusal (401, 403, 429) and network error.

``GET /api/info`` is the one API route that needs no key: the page reads it before it has one. It
says which model answers (its name, or that it is the offline assistant) and whether keys are
required — nothing about any user. Plain HTML, CSS and JavaScript modules in ``static/``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import FileResponse
from fastapi.staticfiles import StaticFiles

from tierwise.chat.engine import ChatEngine
from tierwise.server.api_models import ServiceInfo

__all__ = ["STATIC", "mount_web", "service_info"]

STATIC = Path(__file__).with_name("static")
OFFLINE_LABEL = "offline assistant (no AI model)"


def service_info(engine: ChatEngine, *, require_key: bool) -> dict[str, Any]:
    """What ``GET /api/info`` says: which model answers, and whether requests need a key.

    Example:
        >>> from tierwise.budget import Budget
        >>> from tierwise.providers.testing import ScriptedModel
        >>> from tierwise.store import Store
        >>> model = ScriptedModel(model="m1")
        >>> engine = ChatEngine(Store.open("sqlite://"), model, budget=Budget(window=4000))
        >>> service_info(engine, require_key=False)
        {'model': 'm1', 'offline': False, 'label': 'm1', 'requireKey': False}
    """
    from tierwise.workspace.assistant import OfflineAssistant

    offline = isinstance(engine.provider, OfflineAssistant)
    model = engine.model or engine.provider.model or engine.provider.name
    label = OFFLINE_LABEL if offline else model
    return {"model": model, "offline": offline, "label": label, "requireKey": require_key}


def mount_web(app: FastAPI, *, require_key: bool = False) -> None:
    """Serve the web UI: ``/``, ``/favicon.ico``, ``/static/…`` and ``GET /api/info`` (no key needed)."""
    app.mount("/static", StaticFiles(directory=STATIC), name="static")

    @app.get("/", include_in_schema=False)
    async def index() -> FileResponse:
        return FileResponse(STATIC / "index.html", headers={"cache-control": "no-cache"})

    @app.get("/favicon.ico", include_in_schema=False)
    async def favicon() -> FileResponse:
        return FileResponse(STATIC / "favicon.svg", media_type="image/svg+xml")

    @app.get("/api/info", responses={200: {"model": ServiceInfo, "description": "The service"}})
    async def info(request: Request) -> dict[str, Any]:
        """Which model answers and whether requests need an API key; readable without a key."""
        return service_info(request.app.state.engine, require_key=require_key)
