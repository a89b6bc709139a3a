"""The ``tierwise`` command line.

Usage errors and bad input print one line starting with ``error:`` that names the fix, and exit
with code 2; nothing else ends in a traceback unless it is a bug.
"""

from __future__ import annotations

import json
import sys
from contextlib import nullcontext, suppress
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
import typer.core
from rich.console import Console
from rich.table import Table

from tierwise.budget import Budget, band_for_health
from tierwise.cli_common import assistant as _assistant
from tierwise.cli_common import check_encoding as _check_encoding
from tierwise.cli_common import fail as _fail
from tierwise.cli_common import open_store as _open_store
from tierwise.cli_options import CacheHints, Database, Model, SummaryModel, Window
from tierwise.errors import InputError, TierwiseError, UserError
from tierwise.packing import Pack, Packer, conversation_layers, parse_conversation
from tierwise.tables import print_table
from tierwise.tokens import DEFAULT_ENCODING, ENCODINGS, TokenCounter

if TYPE_CHECKING:
    pass

# Plain one-paragraph usage errors instead of rich panels: they read well in logs and CI.
typer.core.HAS_RICH = False


app = typer.Typer(
    name="tierwise",
    help="tierwise: decides, for every LLM call, what goes into the prompt.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _read_json(path: Path) -> Any:
    if not path.exists():
        raise InputError(
            f"no such file: {path}; give the path of a JSON file like examples/conversation.json"
        )
    if path.is_dir():
        raise InputError(f"{path} is a directory; give the path of a JSON file")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise InputError(f"{path} is not UTF-8 text; save it as UTF-8 JSON") from None
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror}; check its permissions") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(
            f"{path} is not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg}); fix the file"
        ) from None


@app.command("pack")
def pack_command(
    input_path: Annotated[
        Path,
        typer.Argument(
            metavar="INPUT.json",
            help='OpenAI-style request body: {"messages": [...], "tools": [...]} (tools optional).',
        ),
    ],
    budget: Annotated[int, typer.Option(help="Total tokens the call must fit (the model window).")],
    reserve: Annotated[int, typer.Option(help="Of the budget, tokens kept for the response.")] = 0,
    encoding: Annotated[str, typer.Option(help=f"Tokenizer: {' or '.join(ENCODINGS)}.")] = DEFAULT_ENCODING,
    as_json: Annotated[
        bool,
        typer.Option(
            "--json",
            help="Print the packed request and its report as JSON instead of a table: "
            '{"messages", "tools" (when the input has any), "report"}.',
        ),
    ] = False,
    seed: Annotated[str | None, typer.Option(help="Seed for tie-breaking (recorded in the report).")] = None,
    health: Annotated[
        float | None,
        typer.Option(help="Budget health, 0-1 (share of spend left): applies its pruning band."),
    ] = None,
) -> None:
    """Pack a conversation into a token budget and report what was kept, cut or dropped."""
    try:
        _check_encoding(encoding)
        plan = Budget(window=budget, reserve=reserve)
        band = band_for_health(health) if health is not None else None
        conversation = parse_conversation(_read_json(input_path))
        layers = conversation_layers(conversation.message_dicts(), conversation.tool_dicts())
        result = Packer(TokenCounter(encoding)).pack(layers, plan, seed=seed, band=band, health=health)
    except UserError as exc:
        raise _fail(str(exc)) from None
    except TierwiseError as exc:
        raise _fail(str(exc)) from None
    if as_json:
        json.dump(result.to_dict(), sys.stdout, ensure_ascii=False, indent=2)
        sys.stdout.write("\n")
    else:
        _print_report(result, input_path)


def _print_report(result: Pack, source: Path) -> None:
    report = result.report
    console = Console()
    table = Table(title=f"tierwise pack · {source.name}", title_justify="left")
    table.add_column("layer")
    table.add_column("kind")
    table.add_column("prio", justify="right")
    table.add_column("status")
    table.add_column("tokens", justify="right")
    table.add_column("of", justify="right")
    table.add_column("messages", justify="right")
    table.add_column("why")
    styles = {"kept": "green", "truncated": "yellow", "dropped": "red"}
    for r in report.layers:
        msgs = f"{r.messages}/{r.messages_full}" if r.messages_full else ""
        why = "; ".join(x for x in (r.reason, *r.notes) if x)
        table.add_row(
            r.id,
            r.kind,
            str(r.priority),
            f"[{styles[r.status]}]{r.status}[/]",
            f"{r.tokens:,}",
            f"{r.tokens_full:,}",
            msgs,
            why,
        )
    print_table(console, table)
    console.print(
        f"budget {report.budget:,} (window {report.window:,} − reserve {report.reserve:,}) · "
        f"packed {report.total_tokens:,} tokens ({report.utilisation:.1%}) · "
        f"all layers whole {report.tokens_all_layers:,} · saved {report.tokens_saved:,}"
    )
    if report.band:
        console.print(f"pruning band: {report.band} (health {report.health})")
    console.print(f"encoding {report.encoding} · policy {report.policy} · sha256 {report.checksum}")


@app.command("replay")
def replay_command(
    transcript: Annotated[
        Path,
        typer.Argument(
            metavar="TRANSCRIPT.json",
            help='{"messages": [...], "tools": [...]}; a message may carry an ISO 8601 "timestamp".',
        ),
    ],
    budget: Annotated[int, typer.Option(help="Total tokens each pack must fit (the model window).")],
    reserve: Annotated[int, typer.Option(help="Of the budget, tokens kept for the response.")] = 0,
    encoding: Annotated[str, typer.Option(help=f"Tokenizer: {' or '.join(ENCODINGS)}.")] = DEFAULT_ENCODING,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the full report (every pack) as JSON.")
    ] = False,
    store: Annotated[
        bool, typer.Option(help="Also persist every message in the chat store (TIERWISE_DATABASE_URL).")
    ] = False,
    dump: Annotated[
        Path | None,
        typer.Option(
            help="Write each pack (one per model call), exactly as it would be sent, as a JSON line: "
            '{"turn", "ms", "tokens", "budget", "checksum", "messages", "tools"}.'
        ),
    ] = None,
    summary_model: Annotated[
        str | None,
        typer.Option(
            "--summary-model",
            metavar="NAME",
            help="Segment summaries by this model, at TIERWISE_BASE_URL (default: TIERWISE_SUMMARY_MODEL, "
            "else extractive summaries: no model is called).",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Feed a conversation message by message; pack before every model call, against the full history."""
    from tierwise.replay import parse_transcript, replay, replay_summarizer, show_replay

    try:
        _check_encoding(encoding)
        plan = Budget(window=budget, reserve=reserve)
        messages, times, tools = parse_transcript(_read_json(transcript))
        summarizer = replay_summarizer(summary_model, TokenCounter(encoding))
        sink = _store_sink(transcript.stem) if store else None
        quiet = nullcontext(lambda done: None)
        with _dump_file(dump) as write, quiet if as_json else _progress(len(messages)) as tick:
            report = replay(
                messages,
                times,
                plan,
                counter=TokenCounter(encoding),
                tools=tools,
                store=sink,
                progress=tick,
                on_row=write,
                summarizer=summarizer,
            )
    except UserError as exc:
        raise _fail(str(exc)) from None
    except TierwiseError as exc:
        raise _fail(str(exc)) from None
    if as_json:
        json.dump(report.to_dict(), sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        show_replay(report, Console())
    if report.lost or not report.all_within_budget:
        raise typer.Exit(code=1)


def _dump_file(path: Path | None) -> Any:
    """A context giving ``write(row, pack)``, which appends the pack to ``path`` as a JSON line.

    A line: ``turn`` (the index of the message the pack precedes: the model call's answer), ``ms``
    (the pack's build time), ``tokens``, ``budget``, ``checksum``, then the ``messages`` and
    ``tools`` as sent.
    """
    from contextlib import contextmanager

    import orjson

    @contextmanager
    def dumping() -> Any:
        if path is None:
            yield None
            return
        if path.is_dir():
            raise InputError(f"--dump {path} is a directory; give a file name, e.g. packs.jsonl")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            out = path.open("wb")
        except OSError as exc:
            raise InputError(f"cannot write --dump {path} ({exc.strerror}); choose a writable path") from None
        written = 0
        with out:

            def write(row: Any, pack: Any) -> None:
                nonlocal written
                written += 1
                line = {
                    "turn": row.turn,
                    "ms": row.ms,
                    "tokens": pack.report.total_tokens,
                    "budget": pack.report.budget,
                    "checksum": pack.report.checksum,
                    "messages": pack.messages,
                    "tools": pack.tools,
                }
                out.write(orjson.dumps(line) + b"\n")

            yield write
        typer.echo(f"written: {path} ({written} packs, one JSON line each)", err=True)

    return dumping()


def _progress(total: int) -> Any:
    from contextlib import contextmanager

    from rich.progress import Progress

    @contextmanager
    def bar() -> Any:
        with Progress(console=Console(stderr=True), transient=True) as progress:
            task = progress.add_task("replaying", total=total)
            yield lambda done: progress.update(task, completed=done)

    return bar()


def _store_sink(title: str) -> Any:
    from tierwise.store import Store

    db = Store.open()
    user = db.create_user("replay")
    chat = db.create_chat(user.id, title=f"replay of {title}")
    counter = TokenCounter()

    def add(message: Any, at: Any) -> None:
        db.add_message(user.id, chat.id, message, token_count=counter.count_message(message), at=at)

    return (add, lambda: len(db.list_messages(user.id, chat.id)))


@app.command("chat")
def chat_command(
    session: Annotated[
        str | None,
        typer.Option(
            "--session", "-s", metavar="ID", help="Continue a stored chat (leaving one prints its id)."
        ),
    ] = None,
    model: Model = None,
    budget: Window = 16_000,
    db: Database = None,
    cache_hints: CacheHints = None,
    summary_model: SummaryModel = None,
) -> None:
    """Chat with the configured model: answers stream as markdown, tools show as they run."""
    import asyncio

    from tierwise.chat import terminal

    store, user, provider, engine, loaded = _assistant(db, model, budget, session, cache_hints, summary_model)
    console = Console()
    if loaded:
        console.print(f"[dim]{loaded}[/]")

    async def chat() -> None:
        try:
            await terminal.chat_loop(
                engine,
                user,
                session,
                console,
                lambda: console.input("[bold]you ›[/] "),
                resumed=bool(session),
            )
        finally:
            await provider.aclose()

    try:
        with suppress(ImportError):
            import readline  # noqa: F401 - line editing and history for input()
        asyncio.run(chat())
    finally:
        store.close()


def _serve_command() -> None:
    from tierwise.cli_serve import serve_command

    app.command("serve")(serve_command)


_serve_command()


@app.command("traces")
def traces_command(
    chat: Annotated[
        str | None, typer.Option("--chat", "-c", metavar="ID", help="Only this chat's turns.")
    ] = None,
    out: Annotated[Path | None, typer.Option(help="Write the JSONL here instead of printing it.")] = None,
    user: Annotated[str, typer.Option(metavar="ID", help="Whose turns (default: the local user).")] = "local",
    db: Database = None,
) -> None:
    """Export the stored traces of chat turns as JSONL (one span or event per line)."""
    from tierwise.chat.trace import export_traces
    from tierwise.store import NotFoundError

    store = _open_store(db)
    try:
        if chat is not None:
            store.get_chat(user, chat)
        text = export_traces(store, user, chat)
    except NotFoundError:
        raise _fail(
            f"no stored chat {chat!r} for user {user!r}; use the id `tierwise chat` prints when you leave"
        ) from None
    finally:
        store.close()
    if out is None:
        sys.stdout.write(text)
        return
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise _fail(f"cannot write {out}: {exc.strerror or exc}") from None
    typer.echo(f"{text.count(chr(10)):,} spans written to {out}", err=True)


def _workspace_commands() -> None:
    from tierwise.cli_workspace import workspace_app

    app.add_typer(workspace_app, name="workspace")


_workspace_commands()


def _keys_commands() -> None:
    from tierwise.cli_keys import keys_app

    app.add_typer(keys_app, name="keys")


_keys_commands()


def _bench_commands() -> None:
    from tierwise.cli_bench import bench_app

    app.add_typer(bench_app, name="bench")


_bench_commands()


def main() -> None:
    """Entry point of the ``tierwise`` console script."""
    app()


if __name__ == "__main__":  # pragma: no cover
    main()
