"""The FastAPI application: routes, the user of a request, and errors as JSON.

Every error is ``{"error": message}`` with a status that says what kind it is — 400 a malformed
body, 401 a missing or unknown API key, 404 an id the user does not have (whoever owns it), 409 a
turn already running, 422 a value that is not valid, 429 over the rate limit (with ``Retry-After``)
— and never a stack trace. Every request acts for one user: the user of its API key
(:mod:`tierwise.server.auth`), or in local mode, whatever key it sends, the local user of
``tierwise chat``.
"""

from __future__ import annotations

import gc
import logging
import sys
from collections.abc import AsyncIterator, Callable, Collection, Iterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Receive, Scope, Send

from tierwise import collector
from tierwise.chat.engine import ChatEngine
from tierwise.errors import InputError, TierwiseError, UserError
from tierwise.server.errors import ApiError
from tierwise.store import NotFoundError, Store
from tierwise.workspace.queries import WorkspaceNotFound

__all__ = ["create_app"]

log = logging.getLogger(__name__)


class _Counted:
    """ASGI middleware: each HTTP request is counted while in flight (:func:`tierwise.collector.request`)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        with collector.request():  # long work breathes while other requests are served
            await self.app(scope, receive, send)


def _problem(status: int, message: str, headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status, headers=headers)


def _validation_message(exc: RequestValidationError) -> str:
    parts = []
    for error in exc.errors()[:5]:
        where = ".".join(str(p) for p in error.get("loc", ()) if p != "body") or "body"
        if error.get("type") == "json_invalid":
            return "the body is not valid JSON; send a JSON object"
        parts.append(f"{where}: {error.get('msg', 'invalid')}")
    return "invalid request: " + "; ".join(parts)


SERVING_GC_THRESHOLDS = (50_000, 20, 10)
SERVING_SWITCH_INTERVAL_S = 0.0005


def tune_for_serving() -> None:
    """Set the garbage collector and thread switching up for a process that serves the app.

    1. Everything alive now leaves the collector's future scans (``gc.freeze``): imports leave
       ~200,000 tracked objects (functions, classes, pydantic fields) that live as long as the
       process, and a full collection walking them paused every request in flight for ~100 ms.
    2. The youngest generation is collected after 50,000 more live container objects, not 700
       (:data:`SERVING_GC_THRESHOLDS`). With 50 answers streaming, a collection every 700 found most
       young objects still in use by requests in flight, promoted them, and every tenth walked
       thousands: 181 pauses per 1,000 requests, 16 of them 5–8 ms, each landing on the requests
       being prepared or finished at that moment (measured: proxy p99 10.2 → 8.4 ms, decision 38).
       The count is of objects still alive: a serving process's garbage is freed by reference
       counting as requests end, and collections now come with growth (cycles are still found).
    3. A thread waiting for the interpreter lock asks for it after 0.5 ms, not 5 ms
       (:data:`SERVING_SWITCH_INTERVAL_S`). While a worker thread loads a long chat, the event loop
       gives the lock up at every socket or SQLite call and waited up to 5 ms to get it back each
       time: a status request of another chat took 89–93 ms at p99 (20 ms with nothing loading);
       with 0.5 ms, 37–50 ms (decision 50).
    4. Long work (a long history remembered or loaded) holds the older generations' collections
       and freezes what survived it, and breathes while other requests are in flight
       (:mod:`tierwise.collector`, decisions 57 and 59).

    Used by ``tierwise serve`` and the benchmarks; not for a library call: it changes the whole process.
    """
    gc.collect()
    gc.freeze()
    gc.set_threshold(*SERVING_GC_THRESHOLDS)
    sys.setswitchinterval(SERVING_SWITCH_INTERVAL_S)
    collector.enable()


def warm_up(engine: ChatEngine, user_id: str) -> None:
    """Do once, before the first request, what the first request would otherwise pay for.

    Loads the tokenizer, runs memory and packing over a made-up conversation (nothing is stored:
    imports, compiled patterns, the search index's first build) and reads the store once (its
    first queries are compiled). Measured: a new session's first request 6.7 → 3.8 ms to pack.
    """
    from tierwise.memory.assemble import pack_turn
    from tierwise.memory.persist import StoreBlobs
    from tierwise.memory.retrieval import tokenize
    from tierwise.summarize.sentences import split_sentences

    memory = engine.memory_factory(StoreBlobs(engine.store, user_id))
    memory.summarizer = None  # a made-up conversation: never worth a summary model's request
    for i in range(24):
        role = "user" if i % 2 == 0 else "assistant"
        memory.add({"role": role, "content": f"Warm-up note {i}: the offsite venue holds forty people."})
    memory.maintain()
    pack_turn(memory, engine.budget, [{"role": "user", "content": "Where is the offsite?"}])
    tokenize(["Where is the offsite?"])  # bm25s and the stemmer: a long chat's first pack needs them
    # pySBD compiles ~100 patterns on its first ambiguous line (60 ms of a stored chat's first turn)
    split_sentences("Dr. Lee moved v2.1 of the plan to 3.5 km away... See https://example.com/a?b=1. Done.")
    engine.store.list_chats(user_id, entity_id="warm-up", limit=1)


@asynccontextmanager
async def _lifespan(app: FastAPI) -> AsyncIterator[None]:
    """Warm up before the first request (not during it); store pending answers at exit."""
    await anyio.to_thread.run_sync(warm_up, app.state.engine, app.state.local_user)
    if app.state.tune_gc:
        tune_for_serving()
    yield
    sessions = getattr(app.state, "openai_sessions", None)
    if sessions is not None:  # answers the OpenAI-compatible endpoint has sent but not stored yet
        await sessions.drain()


def create_app(
    store: Store,
    engine: ChatEngine,
    *,
    user_of: Callable[[Request], str] | None = None,
    require_key: bool = False,
    rate_limit: int | None = None,
    tune_gc: bool = False,
    hosts: Collection[str] | None = None,
    max_body_bytes: int | None = None,
    shared: bool | None = None,
    repair_history: bool | None = None,
) -> FastAPI:
    """The tierwise service around ``store`` and ``engine``.

    Args:
        store: chats, messages, snapshots and the workspace.
        engine: runs the turns (``tierwise.workspace.app.assistant_engine`` for the reference app).
        user_of: the user a request acts for (default: the local user, whatever key a request
            sends; with ``require_key``, the user of the request's API key, see
            :mod:`tierwise.server.auth`).
        require_key: refuse requests without a valid API key (401) instead of acting for the local
            user. Only this checks keys: a rate limit does not.
        rate_limit: requests per minute per user (a token bucket as deep as one minute's worth;
            429 with ``Retry-After`` beyond it); ``None``: no limit.
        tune_gc: once started, :func:`tune_for_serving` (for a process that only serves).
        hosts: the names the server answers to (``Host``); in local mode (no key required) a request
            for another name, or from another page's ``Origin``, is refused with 403 (see
            :mod:`tierwise.server.origin`). ``None``: any name (the ``Origin`` check still applies).
        max_body_bytes: the largest request body, on every path (413 beyond; OpenAI-shaped on
            ``/v1``); default ``TIERWISE_MAX_BODY_BYTES``, else 16 MB.
        shared: other processes serve the same database (``serve --workers``, several hosts), so
            nothing a request needs is kept only in this process; default: on PostgreSQL.
        repair_history: on ``/v1``, leave out tool calls and results that do not pair up instead of
            refusing them with OpenAI's 400 (:mod:`tierwise.server.openai_pairs`); default
            ``TIERWISE_REPAIR_HISTORY`` (another value than on or off: ``UserError``), else off.

    ``/v1`` packs under the upstream model's window, from the built-in table and ``TIERWISE_MODELS``
    (read here: ``app.state.model_limits``), capped by the engine's budget when it was set.

    Raises:
        UserError: ``TIERWISE_MAX_BODY_BYTES`` is not a positive number, or ``TIERWISE_MODELS`` is bad.
    """
    from tierwise.chat.floor import budget_floor
    from tierwise.chat.terminal import local_user
    from tierwise.providers.windows import lookup_limits, models_from_env
    from tierwise.server import chats, openai_compat, usage, wire_responses, workspace_routes
    from tierwise.server.anthropic_messages import router as anthropic_router
    from tierwise.server.anthropic_schema import SCHEMA_MODELS
    from tierwise.server.body_limit import BodyLimit
    from tierwise.server.openai_budget import max_tokens_limit
    from tierwise.server.openai_errors import document, max_body_bytes_from_env
    from tierwise.server.openai_pairs import repair_history_from_env
    from tierwise.server.running import RunningTurns
    from tierwise.server.web import mount_web

    app = FastAPI(
        title="tierwise",
        version="0.1.0",
        description="A context engine for LLM applications.",
        lifespan=_lifespan,
    )
    app.state.store, app.state.engine = store, engine
    app.state.tune_gc = tune_gc
    app.state.shared = store.engine.dialect.name != "sqlite" if shared is None else shared
    app.state.running = RunningTurns(engine, shared=app.state.shared)
    app.state.max_body_bytes = max_body_bytes if max_body_bytes is not None else max_body_bytes_from_env()
    app.state.repair_history = repair_history if repair_history is not None else repair_history_from_env()
    limits = app.state.model_limits = lookup_limits(openai_compat.model_name(engine), models_from_env())
    app.add_middleware(BodyLimit, limit=app.state.max_body_bytes)  # /v1 reads its own, OpenAI-shaped
    app.add_middleware(_Counted)
    default_user = app.state.local_user = local_user(store)
    # Local mode: every request acts for the local user, whatever key it sends (OpenAI clients
    # always send one). Keys are checked only when required; a rate limit does not turn that on.
    app.state.user_of = user_of or (lambda request: default_user)
    if require_key or rate_limit is not None:
        from tierwise.server.auth import Limiter, RateLimiter, SharedRateLimiter, make_user_of, rate_limited

        limiter: Limiter | None = None
        if rate_limit is not None:  # shared: every process counts in the store
            limiter = SharedRateLimiter(store, rate_limit) if app.state.shared else RateLimiter(rate_limit)
        if user_of is None and require_key:
            app.state.user_of = make_user_of(
                store, require_key=True, local_user_id=default_user, limiter=limiter
            )
        elif limiter is not None:
            app.state.user_of = rate_limited(app.state.user_of, limiter)

    if not require_key and user_of is None:  # local mode: no key stands between a web page and us
        from tierwise.server.origin import LocalOriginGuard

        app.add_middleware(LocalOriginGuard, hosts=hosts)

    @app.exception_handler(ApiError)
    async def api_error(request: Request, exc: ApiError) -> JSONResponse:
        return _problem(exc.status, str(exc), exc.headers)

    @app.exception_handler(NotFoundError)
    async def not_found(request: Request, exc: NotFoundError) -> JSONResponse:
        return _problem(404, f"no {exc.kind} {exc.id!r}")

    @app.exception_handler(WorkspaceNotFound)
    async def workspace_not_found(request: Request, exc: WorkspaceNotFound) -> JSONResponse:
        return _problem(404, f"no {exc.kind} {exc.id!r}")

    @app.exception_handler(InputError)
    async def input_error(request: Request, exc: InputError) -> JSONResponse:
        return _problem(422, str(exc))

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        # FastAPI checks a route's parameters and body before the route asks who is calling: without
        # a valid key the answer is the 401 (or 429), not a 422 telling a stranger the API's shape.
        try:
            await run_in_threadpool(app.state.user_of, request)
        except ApiError as refused:
            return _problem(refused.status, str(refused), refused.headers)
        message = _validation_message(exc)
        return _problem(400 if "not valid JSON" in message else 422, message)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        headers = dict(exc.headers or {})  # a 405 keeps its Allow
        if exc.status_code == 405:  # every method of the path, not only its first route's
            headers["Allow"] = _allowed(request) or headers.get("Allow", "")
        if request.url.path.startswith("/v1/"):
            from tierwise.server.openai_errors import openai_error

            return openai_error(exc.status_code, str(exc.detail), headers=headers)
        return _problem(exc.status_code, str(exc.detail), headers)

    @app.exception_handler(TierwiseError)
    async def tierwise_error(request: Request, exc: TierwiseError) -> JSONResponse:
        return _problem(422 if isinstance(exc, UserError) else 500, str(exc))

    @app.exception_handler(Exception)
    async def internal(request: Request, exc: Exception) -> JSONResponse:
        log.exception("request %s %s failed", request.method, request.url.path)
        return _problem(500, f"internal error ({type(exc).__name__}); nothing already stored was lost")

    @app.get("/api/health")
    async def health() -> dict[str, Any]:
        return {"ok": True}

    app.include_router(chats.router)
    app.include_router(anthropic_router)  # /v1/messages, before openai_compat's /v1 catch-all
    app.include_router(wire_responses.router)  # before openai_compat's: its catch-all would shadow it
    app.include_router(openai_compat.router)
    app.include_router(workspace_routes.router)
    app.include_router(usage.router)
    mount_web(app, require_key=require_key)
    document(
        app,
        {
            "/v1/chat/completions": openai_compat.ChatCompletionRequest,
            "/v1/responses": wire_responses.ResponsesRequest,
        },
        require_key=require_key,
        window=max_tokens_limit(engine.budget, limits) + 1,  # max_tokens documented up to the model's
        token_limit=engine.budget.available,
        token_floor=lambda: budget_floor(engine),  # a chat's smallest token_limit (issue 32)
        models=SCHEMA_MODELS,  # /v1/messages' bodies (their routes read the raw body)
    )
    return app


def _leaves(routes: Any) -> Iterator[Any]:
    """The routes themselves, the included routers' too (FastAPI keeps those as one route each)."""
    for route in routes:
        inner = getattr(route, "original_router", None)
        if inner is not None:
            yield from _leaves(inner.routes)
        else:
            yield route


def _allowed(request: Request) -> str:
    """The methods some route of the request's path takes (``GET, PATCH``), for a 405's ``Allow``.

    Asked of the router itself, method by method, so included routers answer for their routes.
    """
    from starlette.routing import Match

    # The routes that matched the path but not the method (a mount or a catch-all takes any method).
    routes = [  # (not /v1's catch-all: it answers any path, with a 404 or its own 405)
        r
        for r in _leaves(request.app.router.routes)
        if r.matches(request.scope)[0] is Match.PARTIAL and not getattr(r, "path", "").endswith("{path:path}")
    ]
    allowed = []
    for method in ("GET", "POST", "PUT", "PATCH", "DELETE"):
        scope = {**request.scope, "method": method}
        if any(route.matches(scope)[0] is Match.FULL for route in routes):
            allowed.append(method)
    return ", ".join(allowed)
