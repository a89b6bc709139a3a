"""What the command line's commands share: the one error format, the store, the reference assistant.

Every ``cli_*`` module imports from here, never from :mod:`tierwise.cli` (which imports them all to
register their commands), so the command line has no import circle.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import typer

from tierwise.errors import InputError, UserError
from tierwise.tokens import ENCODINGS

if TYPE_CHECKING:
    from tierwise.chat.engine import ChatEngine
    from tierwise.providers import Provider
    from tierwise.store import Store

__all__ = ["assistant", "check_encoding", "check_session", "fail", "open_store"]


def fail(message: str) -> typer.Exit:
    """Print ``error: message`` to stderr; the exit (code 2) to raise."""
    typer.echo(f"error: {message}", err=True)
    return typer.Exit(code=2)


def check_encoding(encoding: str) -> None:
    """Raise :class:`InputError` naming the choices if ``encoding`` is not a known tokenizer."""
    if encoding not in ENCODINGS:
        raise InputError(f"unknown encoding {encoding!r}; use --encoding {' or --encoding '.join(ENCODINGS)}")


def open_store(url: str | None) -> Store:
    """The store at ``url`` (default: the environment's), or exit 2 saying what is wrong."""
    from sqlalchemy.exc import SQLAlchemyError

    from tierwise.store import Store

    try:
        return Store.open(url)
    except UserError as exc:
        raise fail(str(exc)) from None
    except (SQLAlchemyError, OSError) as exc:
        raise fail(f"cannot open the database ({exc}); check --db or TIERWISE_DATABASE_URL") from None


def check_session(store: Store, user_id: str, chat_id: str) -> None:
    """Raise :class:`InputError` if ``chat_id`` is not a stored chat of ``user_id``."""
    from tierwise.store import NotFoundError

    try:
        store.get_chat(user_id, chat_id)
    except NotFoundError:
        raise InputError(
            f"no stored chat {chat_id!r}; run `tierwise chat` without --session to start a new one"
        ) from None


def assistant(
    db: str | None,
    model: str | None,
    budget: int | None,
    session: str | None = None,
    cache_hints: bool | None = None,
    summary_model: str | None = None,
    reserve: int = 1_000,
) -> tuple[Store, str, Provider, ChatEngine, str | None]:
    """The store, local user, model and engine of the reference assistant (chat and serve).

    A new local user gets the sample workspace; the returned line says so. Exits 2 on bad settings.
    ``cache_hints`` (``--cache-hints``) overrides ``TIERWISE_CACHE_HINTS`` for a configured model;
    ``summary_model`` (``--summary-model``) overrides ``TIERWISE_SUMMARY_MODEL``. ``budget`` ``None``:
    none set (``serve``: ``/v1`` packs under the model's window); ``reserve``: of it, the answer's.
    """
    from tierwise.chat import terminal
    from tierwise.workspace.app import ensure_sample

    store = open_store(db)
    try:
        with store.exclusive("setup"):  # servers starting at once on one database: one sets up
            user = terminal.local_user(store)
            loaded = ensure_sample(store, user) if session is None else None
        if session is not None:
            check_session(store, user, session)
        provider = terminal.make_provider(model, cache_hints=cache_hints)
        engine = terminal.make_engine(
            store, provider, window=budget, reserve=reserve, summary_model=summary_model
        )
    except UserError as exc:
        store.close()
        raise fail(str(exc)) from None
    return store, user, provider, engine, loaded
