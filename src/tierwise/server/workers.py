"""``tierwise serve --workers N``: N processes serving one PostgreSQL database.

uvicorn starts each worker process afresh and imports :func:`app` (a factory); the worker builds
its store, model and chat engine from the :class:`ServeSettings` the ``serve`` command put in the
environment (``TIERWISE_SERVE_SETTINGS``), with the ``TIERWISE_*`` model settings inherited as
they are. Nothing a request needs lives in one process only (the app is ``shared``): a session's
chat is found in the store on every request, answers are stored before ``[DONE]``, rate limits
and running turns are kept in the store (:mod:`tierwise.store.shared`). The same holds for
several hosts behind a load balancer, each running ``tierwise serve`` on the same database.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import asdict, dataclass, field

from fastapi import FastAPI

from tierwise.errors import UserError

__all__ = ["SETTINGS_VARIABLE", "ServeSettings", "app", "check_workers"]

SETTINGS_VARIABLE = "TIERWISE_SERVE_SETTINGS"


@dataclass(frozen=True)
class ServeSettings:
    """What ``tierwise serve`` was asked for, as each worker needs it."""

    db: str
    model: str | None = None
    budget: int | None = None  # none set: /v1 packs under the model's window (decision 68)
    reserve: int = 1_000
    cache_hints: bool | None = None
    summary_model: str | None = None
    require_key: bool = False
    rate_limit: int | None = None
    max_body_bytes: int | None = None
    hosts: list[str] | None = field(default=None)

    def to_env(self) -> str:
        """The settings as the environment carries them to the workers."""
        return json.dumps(asdict(self))

    @classmethod
    def from_env(cls) -> ServeSettings:
        """The settings the ``serve`` command left in the environment.

        Raises:
            UserError: there are none (the factory was started by hand, not by ``tierwise serve``).
        """
        raw = os.environ.get(SETTINGS_VARIABLE)
        if not raw:
            raise UserError(
                f"{SETTINGS_VARIABLE} is not set: start the workers with `tierwise serve --workers N`"
            )
        return cls(**json.loads(raw))


def check_workers(workers: int, dialect: str) -> None:
    """Whether ``workers`` processes can serve a database of ``dialect``.

    Raises:
        UserError: fewer than one worker, or several on SQLite (a file one process writes at a time).
    """
    if workers < 1:
        raise UserError(f"--workers {workers} is not a number of processes; use 1 or more")
    if workers > 1 and dialect == "sqlite":
        raise UserError(
            f"--workers {workers} needs PostgreSQL (SQLite is served by one process): set --db or "
            "TIERWISE_DATABASE_URL to postgresql+psycopg://USER@HOST/DB, or leave --workers out"
        )


def app() -> FastAPI:
    """One worker's app (uvicorn's factory), built from :class:`ServeSettings` in the environment.

    It says on stdout when it is ready (``worker 4242 ready in 9.1 s``): loading takes seconds per
    worker, and ``serve --workers N`` would be silent until the last one answers.
    """
    started = time.perf_counter()
    from tierwise.chat import terminal
    from tierwise.server import create_app
    from tierwise.store import Store

    settings = ServeSettings.from_env()
    store = Store.open(settings.db)
    provider = terminal.make_provider(settings.model, cache_hints=settings.cache_hints)
    engine = terminal.make_engine(
        store,
        provider,
        window=settings.budget,
        reserve=settings.reserve,
        summary_model=settings.summary_model,
    )
    built = create_app(
        store,
        engine,
        require_key=settings.require_key,
        rate_limit=settings.rate_limit,
        max_body_bytes=settings.max_body_bytes,
        tune_gc=True,
        hosts=settings.hosts,
        shared=True,
    )
    print(f"worker {os.getpid()} ready in {time.perf_counter() - started:.1f} s", flush=True)
    return built
