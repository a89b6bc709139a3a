"""``tierwise workspace …``: the reference assistant's data — sample, clear, calendar import and export."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from tierwise.cli_options import Database
from tierwise.errors import UserError

if TYPE_CHECKING:
    from tierwise.store import Store

workspace_app = typer.Typer(
    help="The assistant's workspace: load the sample, clear it, import or export the calendar (ICS).",
    no_args_is_help=True,
)

_USER = typer.Option(metavar="ID", help="Whose workspace (default: the local user of `tierwise chat`).")


def _open(db: str | None, user: str | None) -> tuple[Store, str]:
    from tierwise.chat.terminal import local_user
    from tierwise.cli_common import fail as _fail
    from tierwise.cli_common import open_store as _open_store
    from tierwise.store import NotFoundError

    store = _open_store(db)
    if user is None:
        return store, local_user(store)
    try:
        return store, store.get_user(user).id
    except NotFoundError:
        store.close()
        raise _fail(f"no user {user!r} in this database; leave --user out to use the local user") from None


@workspace_app.command("sample")
def sample_command(
    scale: Annotated[int, typer.Option(help="Copies of the sample (1 ≈ 10 projects, 300 tasks).")] = 1,
    seed: Annotated[int, typer.Option(help="Seed of the generator (same seed, same workspace).")] = 0,
    user: Annotated[str | None, _USER] = None,
    db: Database = None,
) -> None:
    """Load the deterministic sample workspace (projects, tasks, notes, brain dumps, two weeks of events)."""
    from tierwise.cli_common import fail as _fail
    from tierwise.workspace.sample import WorkspaceInUse, generate_workspace

    store, user_id = _open(db, user)
    try:
        summary = generate_workspace(store, user_id, scale=scale, seed=seed)
    except WorkspaceInUse:
        same = "".join(f" {flag} {value}" for flag, value in (("--user", user), ("--db", db)) if value)
        raise _fail(
            f"the workspace of user {user_id!r} is not empty, and the sample loads only into an empty one: "
            f"run `tierwise workspace clear --yes{same}` first (it deletes the projects, tasks, notes, brain "
            f"dumps and events; chats are kept), then `tierwise workspace sample{same}`"
        ) from None
    except UserError as exc:
        raise _fail(str(exc)) from None
    finally:
        store.close()
    typer.echo(
        f"loaded: {summary.projects} projects, {summary.tasks} tasks, {summary.notes} notes, "
        f"{summary.brain_dumps} brain dumps, {summary.calendar_events} events"
    )


@workspace_app.command("clear")
def clear_command(
    yes: Annotated[
        bool, typer.Option("--yes", help="Confirm: delete every workspace row of the user.")
    ] = False,
    user: Annotated[str | None, _USER] = None,
    db: Database = None,
) -> None:
    """Delete the user's projects, tasks, notes, brain dumps and events (chats are kept); it stays empty."""
    from tierwise.cli_common import fail as _fail
    from tierwise.workspace.sample import clear_workspace

    if not yes:
        raise _fail("this deletes the whole workspace of the user; add --yes to confirm")
    store, user_id = _open(db, user)
    try:
        clear_workspace(store, user_id)
    finally:
        store.close()
    typer.echo(
        "workspace cleared: the assistant starts with an empty workspace from now on "
        "(`tierwise workspace sample` loads the sample again)"
    )


@workspace_app.command("import-ics")
def import_command(
    path: Annotated[Path, typer.Argument(metavar="FILE.ics", help="An iCalendar file.")],
    user: Annotated[str | None, _USER] = None,
    db: Database = None,
) -> None:
    """Import (or update, by UID) the events of an iCalendar file into the local calendar."""
    from tierwise.cli_common import fail as _fail
    from tierwise.workspace.calendar import import_ics

    try:
        data = path.read_bytes()
    except IsADirectoryError:
        raise _fail(f"{path} is a directory; give an .ics file") from None
    except OSError as exc:
        raise _fail(f"cannot read {path}: {exc.strerror or exc}") from None
    store, user_id = _open(db, user)
    try:
        result = import_ics(store, user_id, data)
    except UserError as exc:
        raise _fail(str(exc)) from None
    finally:
        store.close()
    typer.echo(f"imported: {result.created} new, {result.updated} updated, {result.skipped} skipped")
    for problem in result.problems:
        typer.echo(f"note: {problem}", err=True)


@workspace_app.command("export-ics")
def export_command(
    out: Annotated[Path | None, typer.Option(help="Write here instead of printing.")] = None,
    user: Annotated[str | None, _USER] = None,
    db: Database = None,
) -> None:
    """Export the local calendar as an iCalendar file (recurrences, time zones and task links kept)."""
    from tierwise.cli_common import fail as _fail
    from tierwise.workspace.calendar import export_ics

    store, user_id = _open(db, user)
    try:
        data = export_ics(store, user_id)
    finally:
        store.close()
    if out is None:
        sys.stdout.write(data.decode("utf-8"))
        return
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_bytes(data)
    except OSError as exc:
        raise _fail(f"cannot write {out}: {exc.strerror or exc}") from None
    typer.echo(f"written: {out}", err=True)
