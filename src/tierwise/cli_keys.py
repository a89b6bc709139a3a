"""``tierwise keys …``: create, list and revoke the API keys of the HTTP service's users."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from tierwise.cli_options import Database
from tierwise.errors import UserError

if TYPE_CHECKING:
    from tierwise.server.keys import ApiKeyInfo

keys_app = typer.Typer(
    help="API keys of the HTTP service: create one for a user, list them, revoke one.",
    no_args_is_help=True,
)


def _when(info: ApiKeyInfo) -> tuple[str, str, str]:
    created = info.created_at.strftime("%Y-%m-%d %H:%M")
    used = info.last_used_at.strftime("%Y-%m-%d %H:%M") if info.last_used_at else "never"
    status = f"revoked {info.revoked_at:%Y-%m-%d %H:%M}" if info.revoked_at else "active"
    return created, used, status


@keys_app.command("create")
def create_command(
    user: Annotated[
        str, typer.Option(metavar="NAME", help="The user the key acts for (created if there is none).")
    ],
    name: Annotated[str, typer.Option(metavar="LABEL", help="A label to tell the key apart.")] = "default",
    db: Database = None,
) -> None:
    """Create an API key for a user and print it (once: only its hash is stored)."""
    from tierwise.cli_common import fail as _fail
    from tierwise.cli_common import open_store as _open_store
    from tierwise.server.keys import create_key
    from tierwise.store import NotFoundError

    if not name.strip():
        raise _fail("--name must not be empty; give the key a label, e.g. --name laptop")
    store = _open_store(db)
    try:
        try:
            user_id = store.get_user(user).id
        except NotFoundError:
            user_id = store.create_user(user, user_id=user).id
        key, info = create_key(store, user_id, name)
    except UserError as exc:
        raise _fail(str(exc)) from None
    finally:
        store.close()
    typer.echo(key)
    typer.echo(
        f"created API key {info.id} ({info.prefix}…, {info.name!r}) for user {user_id!r}.\n"
        "warning: this is the only time the key is shown (only its hash is stored); save it now. "
        "Send it as: Authorization: Bearer <key>",
        err=True,
    )


@keys_app.command("list")
def list_command(
    user: Annotated[
        str | None, typer.Option(metavar="NAME", help="Only this user's keys (default: every user's).")
    ] = None,
    db: Database = None,
) -> None:
    """List API keys: id, user, label, prefix, created, last used, status (never the keys)."""
    from tierwise.cli_common import fail as _fail
    from tierwise.cli_common import open_store as _open_store
    from tierwise.server.keys import list_all_keys, list_keys
    from tierwise.store import NotFoundError

    store = _open_store(db)
    try:
        if user is not None:
            store.get_user(user)
        keys = list_all_keys(store) if user is None else list_keys(store, user)
    except NotFoundError:
        raise _fail(f"no user {user!r} in this database; see `tierwise keys list`") from None
    except UserError as exc:
        raise _fail(str(exc)) from None
    finally:
        store.close()
    if not keys:
        typer.echo(
            "no API keys"
            + (f" for user {user!r}" if user else "")
            + "; create one with `tierwise keys create --user NAME`",
            err=True,
        )
        return
    for info in keys:
        created, used, status = _when(info)
        typer.echo(
            f"{info.id}  user={info.user_id}  name={info.name!r}  prefix={info.prefix}…  "
            f"created={created}  last_used={used}  {status}"
        )


@keys_app.command("revoke")
def revoke_command(
    key_id: Annotated[str, typer.Argument(metavar="KEY_ID", help="The key's id (see `tierwise keys list`).")],
    user: Annotated[
        str | None, typer.Option(metavar="NAME", help="The key's user (default: whoever owns it).")
    ] = None,
    db: Database = None,
) -> None:
    """Revoke an API key: requests with it are refused from now on (401)."""
    from tierwise.cli_common import fail as _fail
    from tierwise.cli_common import open_store as _open_store
    from tierwise.server.keys import key_owner, revoke_key
    from tierwise.store import NotFoundError

    store = _open_store(db)
    try:
        owner = user if user is not None else key_owner(store, key_id)
        if owner is None:
            raise _fail(f"no API key {key_id!r}; see `tierwise keys list`")
        info = revoke_key(store, owner, key_id)
    except NotFoundError:
        raise _fail(
            f"user {user!r} has no API key {key_id!r}; see `tierwise keys list --user {user}`"
        ) from None
    except UserError as exc:
        raise _fail(str(exc)) from None
    finally:
        store.close()
    typer.echo(f"revoked API key {info.id} ({info.prefix}…, {info.name!r}) of user {info.user_id!r}")
