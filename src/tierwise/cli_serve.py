"""``tierwise serve``: the web chat and the HTTP API, in one process or ``--workers N`` on PostgreSQL."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Annotated, Any

import typer

from tierwise.budget import DEFAULT_WINDOW
from tierwise.cli_options import CacheHints, Database, Model, SummaryModel
from tierwise.errors import UserError

if TYPE_CHECKING:
    from tierwise.chat.engine import ChatEngine
    from tierwise.store import Store

__all__ = [
    "DEFAULT_RESERVE",
    "Reserve",
    "ServeBudget",
    "check_reserve",
    "log_config",
    "require_key_from_env",
    "serve_command",
]

_YES, _NO = ("1", "true", "yes", "on"), ("0", "false", "no", "off", "")

DEFAULT_RESERVE = 1_000

ServeBudget = Annotated[
    int | None,
    typer.Option(
        "--budget",
        metavar="TOKENS",
        help="A ceiling each prompt is packed under, the answer's --reserve included; on /v1 the "
        "model's window when smaller (a request that fits the model but not the budget is packed, "
        "not refused). Default: none — /v1 uses the model's window (built-in table, TIERWISE_MODELS), "
        "else 16,000, as the web chat does.",
        show_default=False,
    ),
]
Reserve = Annotated[
    int,
    typer.Option(
        "--reserve",
        metavar="TOKENS",
        min=1,
        help="Of the window, tokens the answer keeps when a request sets no max_tokens (a request's "
        "max_tokens or max_completion_tokens takes its room from the model's window instead).",
    ),
]


def require_key_from_env() -> bool:
    """``TIERWISE_REQUIRE_KEY``: whether ``serve`` requires API keys when neither flag is given.

    ``1``, ``true``, ``yes``, ``on``: required; ``0``, ``false``, ``no``, ``off`` or unset: local mode.

    Raises:
        UserError: another value, naming the ones that work.
    """
    raw = os.environ.get("TIERWISE_REQUIRE_KEY", "")
    value = raw.strip().lower()
    if value in _YES:
        return True
    if value in _NO:
        return False
    raise UserError(
        f"TIERWISE_REQUIRE_KEY={raw!r} is not on or off; set it to 1 (or true) to require API keys, "
        "0 (or false) or unset for local mode"
    )


def check_reserve(budget: int | None, reserve: int) -> None:
    """Whether ``serve --reserve`` leaves the prompt something of the budget (16,000 when none is set).

    Raises:
        typer.BadParameter: it does not (exit 2, naming ``--reserve`` and the fix).
    """
    window = budget if budget is not None else DEFAULT_WINDOW
    if budget is not None and budget < 1:
        raise typer.BadParameter(
            f"{budget} is not a number of tokens; use 1 or more", param_hint="'--budget'"
        )
    if reserve >= window:
        whose = f"--budget {window:,}" if budget is not None else f"the web chat's {window:,}-token budget"
        fix = "or a larger --budget" if budget is not None else f"or set --budget above {reserve:,}"
        raise typer.BadParameter(
            f"{reserve:,} leaves nothing of {whose} for the prompt; use a smaller --reserve {fix}",
            param_hint="'--reserve'",
        )


def log_config(access_log: bool = True) -> dict[str, Any]:
    """The logging of ``serve`` (uvicorn's): warnings and errors on stderr, one line per request on stdout.

    The request line is uvicorn's access log: time, client, method, path, protocol and status, e.g.
    ``06:51:02 127.0.0.1:53122 "GET /api/chats HTTP/1.1" 200`` (a streamed answer is logged when it
    starts). ``access_log=False`` (``serve --quiet``) leaves only the warnings.
    """
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {
            "default": {"()": "uvicorn.logging.DefaultFormatter", "fmt": "%(levelprefix)s %(message)s"},
            "access": {
                "()": "uvicorn.logging.AccessFormatter",
                "fmt": '%(asctime)s %(client_addr)s "%(request_line)s" %(status_code)s',
                "datefmt": "%H:%M:%S",
                "use_colors": False,
            },
        },
        "handlers": {
            "default": {
                "formatter": "default",
                "class": "logging.StreamHandler",
                "stream": "ext://sys.stderr",
            },
            "access": {"formatter": "access", "class": "logging.StreamHandler", "stream": "ext://sys.stdout"},
        },
        "loggers": {
            "uvicorn": {"handlers": ["default"], "level": "WARNING", "propagate": False},
            "uvicorn.error": {"level": "WARNING"},
            "uvicorn.access": {
                "handlers": ["access"],
                "level": "INFO" if access_log else "WARNING",
                "propagate": False,
            },
        },
    }


def serve_command(
    host: Annotated[
        str, typer.Option(help="Address to bind (beyond loopback only with --require-key).")
    ] = "127.0.0.1",
    require_key: Annotated[
        bool | None,
        typer.Option(
            "--require-key/--no-require-key",
            help="Every request needs an API key (tierwise keys create); default: TIERWISE_REQUIRE_KEY "
            "(1/true or 0/false), else off.",
            show_default=False,
        ),
    ] = None,
    port: Annotated[int, typer.Option(help="Port to listen on.")] = 8000,
    model: Model = None,
    budget: ServeBudget = None,
    reserve: Reserve = DEFAULT_RESERVE,
    db: Database = None,
    cache_hints: CacheHints = None,
    summary_model: SummaryModel = None,
    workers: Annotated[
        int,
        typer.Option(metavar="N", help="Processes serving requests (more than 1 needs PostgreSQL).", min=1),
    ] = 1,
    quiet: Annotated[
        bool, typer.Option("--quiet", "-q", help="No request log (one line per request otherwise).")
    ] = False,
) -> None:
    """Run the web chat and the HTTP API; on loopback without --require-key, for the local user."""
    import ipaddress

    from tierwise.cli_common import fail as _fail  # the command line's one error format
    from tierwise.providers.windows import models_from_env
    from tierwise.server.auth import rate_limit_from_env
    from tierwise.server.openai_errors import max_body_bytes_from_env
    from tierwise.store.faults import check_writable
    from tierwise.store.settings import database_url

    try:
        require_key = require_key if require_key is not None else require_key_from_env()
    except UserError as exc:
        raise _fail(str(exc)) from None
    try:
        loopback = host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        raise _fail(f"--host {host!r} is not an IP address; use 127.0.0.1") from None
    if not loopback and not require_key:
        raise _fail(
            f"refusing to serve on {host} without authentication: add --require-key or set "
            "TIERWISE_REQUIRE_KEY=1 (and create keys with `tierwise keys create --user NAME`), or use "
            "--host 127.0.0.1"
        )
    if not 0 < port < 65536:
        raise _fail(f"--port {port} is not a port; use 1-65535")
    own = _points_at_itself(host, port)
    if own:
        raise _fail(own)
    check_reserve(budget, reserve)
    try:
        rate_limit = rate_limit_from_env(local=loopback and not require_key)
        max_body_bytes = max_body_bytes_from_env()
        models_from_env()  # TIERWISE_MODELS: a bad one is named now, not at the first request
    except UserError as exc:
        raise _fail(str(exc)) from None
    try:  # a database it cannot write would fail at the first turn: refuse now, naming the fix
        check_writable(db or database_url())
    except UserError as exc:
        raise _fail(f"tierwise serve cannot store chats there: {exc}") from None
    import uvicorn  # the server's imports after the refusals above: a refusal comes at once

    from tierwise.cli_common import assistant as _assistant
    from tierwise.server import create_app

    store, _, _, engine, loaded = _assistant(
        db, model, budget, cache_hints=cache_hints, summary_model=summary_model, reserve=reserve
    )
    if loaded:
        typer.echo(loaded)
    if workers > 1:
        _serve_workers(
            store, workers, host, port, model, budget, cache_hints, summary_model, require_key, quiet, reserve
        )
        return
    from tierwise.server.web import service_info

    typer.echo(
        f"tierwise is serving on http://{host}:{port} (API: /api, OpenAPI: /docs), answered by "
        f"{service_info(engine, require_key=require_key)['label']}{_upstream(engine)}; Ctrl-C stops it"
    )
    try:
        service = create_app(
            store,
            engine,
            require_key=require_key,
            rate_limit=rate_limit,
            max_body_bytes=max_body_bytes,
            tune_gc=True,
            hosts=[host, "127.0.0.1", "localhost", "::1"] if loopback else None,
        )
        uvicorn.run(service, host=host, port=port, log_config=log_config(not quiet), log_level=None)
    finally:
        store.close()


def _points_at_itself(host: str, port: int) -> str | None:
    """Why the configured model server is this server's own address (a loop), or ``None``.

    vLLM and several other servers take port 8000 by default, the port ``serve`` takes too: the
    assistant's every call would come back to itself.
    """
    from urllib.parse import urlsplit

    from tierwise.providers.settings import ProviderSettings

    try:
        base_url = ProviderSettings.load().base_url
    except UserError:
        return None  # the provider's own setup names a bad value
    if not base_url:
        return None
    parts = urlsplit(base_url)
    try:
        upstream_port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        return None
    local = {"localhost", "127.0.0.1", "::1", "0.0.0.0", host}
    if parts.hostname in local and upstream_port == port:
        return (
            f"TIERWISE_BASE_URL {base_url} is this server's own address (port {port}): run the model "
            f"server on another port (vLLM: --port 8001, then TIERWISE_BASE_URL=http://localhost:8001/v1) "
            f"or serve tierwise on another one (tierwise serve --port 8080)"
        )
    return None


_WIRES = {"chat": "Chat Completions", "responses": "Responses API", "anthropic": "Anthropic Messages"}


def _upstream(engine: ChatEngine) -> str:
    """Where the model is and which wire it speaks (`` via Anthropic Messages at …``), if it is a server."""
    provider = engine.provider
    base_url = getattr(provider, "base_url", None)
    if not isinstance(base_url, str):
        return ""
    return f" via {_WIRES.get(provider.wire, provider.wire)} at {base_url}"


def _serve_workers(
    store: Store,
    workers: int,
    host: str,
    port: int,
    model: str | None,
    budget: int | None,
    cache_hints: bool | None,
    summary_model: str | None,
    require_key: bool,
    quiet: bool = False,
    reserve: int = DEFAULT_RESERVE,
) -> None:
    """``serve --workers N``: N uvicorn processes, each building its app (:mod:`tierwise.server.workers`)."""
    import os

    import uvicorn

    from tierwise.cli_common import fail as _fail
    from tierwise.server.auth import rate_limit_from_env
    from tierwise.server.openai_errors import max_body_bytes_from_env
    from tierwise.server.workers import SETTINGS_VARIABLE, ServeSettings, check_workers

    try:
        check_workers(workers, store.engine.dialect.name)
        settings = ServeSettings(
            db=store.engine.url.render_as_string(hide_password=False),
            model=model,
            budget=budget,
            reserve=reserve,
            cache_hints=cache_hints,
            summary_model=summary_model,
            require_key=require_key,
            rate_limit=rate_limit_from_env(local=not require_key),
            max_body_bytes=max_body_bytes_from_env(),
            hosts=None if require_key else [host, "127.0.0.1", "localhost", "::1"],
        )
    except UserError as exc:
        raise _fail(str(exc)) from None
    finally:
        store.close()  # each worker opens its own
    os.environ[SETTINGS_VARIABLE] = settings.to_env()
    typer.echo(
        f"tierwise is serving on http://{host}:{port} with {workers} workers (API: /api, OpenAPI: /docs); "
        f"each says when it is ready (seconds apiece); Ctrl-C stops it"
    )
    uvicorn.run(
        "tierwise.server.workers:app",
        factory=True,
        workers=workers,
        host=host,
        port=port,
        log_config=log_config(not quiet),
        log_level=None,
    )
