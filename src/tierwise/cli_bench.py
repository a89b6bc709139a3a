"""``tierwise bench …``: benchmarks against peers, run in the same process or run."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Annotated

import typer

from tierwise.errors import InputError, UserError
from tierwise.tokens import DEFAULT_ENCODING, ENCODINGS

bench_app = typer.Typer(help="Benchmarks against peers, run in the same process.", no_args_is_help=True)


def _fail(message: str) -> typer.Exit:
    from tierwise.cli_common import fail  # the command line's one error format

    return fail(message)


def _database_failed(exc: Exception) -> typer.Exit:
    """A database error as the one line the command line prints (the driver's words, not SQLAlchemy's)."""
    cause = getattr(exc, "orig", None) or exc
    return _fail(f"the database could not be used: {str(cause).strip()}")


def _needs_bench_extra(command: str) -> None:
    """Exit 2, naming the install, when the bench extra's langchain-core (the peer) is missing."""
    try:
        import langchain_core  # noqa: F401
    except ImportError:
        raise _fail(
            f"`tierwise bench {command}` measures against langchain-core's trim_messages, which comes with "
            "the bench extra: pip install -e '.[bench]' (or pip install 'tierwise[bench]')"
        ) from None


@contextlib.contextmanager
def _replaying() -> Iterator[Callable[[str], None]]:
    """A status line on stderr while a long replay runs; the callable says where it is."""
    from rich.console import Console

    with Console(stderr=True).status("replaying") as status:
        yield lambda text: status.update(f"replaying {text}")


def _check_encoding(encoding: str) -> None:
    from tierwise.cli_common import check_encoding as check

    check(encoding)


@bench_app.command("locomo")
def bench_locomo_command(
    data: Annotated[
        Path, typer.Option(help="LoCoMo JSON (e.g. ../shared/bench/locomo/locomo-dev.json).")
    ] = Path("../shared/bench/locomo/locomo-dev.json"),
    budget: Annotated[int, typer.Option(help="Tokens per pack, question included.")] = 2000,
    encoding: Annotated[str, typer.Option(help=f"Tokenizer: {' or '.join(ENCODINGS)}.")] = DEFAULT_ENCODING,
    as_json: Annotated[bool, typer.Option("--json", help="Print the results as JSON.")] = False,
    dump: Annotated[
        Path | None, typer.Option(help="Write one JSON line per question (pack text included) here.")
    ] = None,
    limit_questions: Annotated[
        int | None, typer.Option(help="Score at most this many questions per conversation.")
    ] = None,
    dense: Annotated[
        bool | None,
        typer.Option(
            "--dense/--no-dense",
            help="Add the embeddings signal (extra 'embeddings'); default: if installed.",
        ),
    ] = None,
    out: Annotated[Path | None, typer.Option(help="Also write the results as JSON here.")] = None,
    dump_segments: Annotated[
        Path | None,
        typer.Option(help="Write one JSON line per memory segment (header, summary, turn ids) here."),
    ] = None,
) -> None:
    """Evidence recall of packs on LoCoMo, with recency and BM25 baselines in the same run.

    A second table measures the segment headers and summaries against LoCoMo's session summaries.
    """
    from tierwise.bench.locomo import run_locomo_benchmark

    try:
        _check_encoding(encoding)
        if limit_questions is not None and limit_questions < 1:
            raise InputError("--limit-questions must be at least 1")
        if not data.exists():
            raise InputError(f"no such file: {data}; pass --data PATH to locomo-dev.json")
        result = run_locomo_benchmark(
            data,
            budget=budget,
            encoding=encoding,
            retrieval_tokens=None,
            limit_questions=limit_questions,
            dump=dump,
            as_json=as_json,
            dense=dense,
            dump_segments=dump_segments,
        )
    except UserError as exc:
        raise _fail(str(exc)) from None
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")


@bench_app.command("engine")
def bench_engine_command(
    sizes: Annotated[
        str, typer.Option(help="Session lengths (messages), comma-separated.")
    ] = "200,1000,2000",
    turns: Annotated[int, typer.Option(help="Timed turns per size and turn shape.")] = 60,
    out: Annotated[
        Path | None,
        typer.Option(help="Also write the results as JSON here (e.g. bench/results/engine.json)."),
    ] = None,
    restart: Annotated[
        int,
        typer.Option(
            help="Instead: a stored chat this long, its first turn after a restart beside another "
            "client's requests (e.g. 10000; results: bench/results/restart.json)."
        ),
    ] = 0,
    usage_rows: Annotated[int, typer.Option(help="With --restart: the user's spending rows.")] = 10_000,
) -> None:
    """Time the chat engine's own work per turn (the model's time excluded), beside a minimal peer."""
    from tierwise.bench.engine import run

    try:
        if restart:
            from tierwise.bench.restart import run as run_restart

            if restart < 2 or usage_rows < 0:
                raise InputError("--restart must be at least 2 messages and --usage-rows 0 or more")
            run_restart(messages=restart, usage_rows=usage_rows, out=out)
            return
        size_list = _int_list(sizes, "--sizes")
        if turns < 1:
            raise InputError("--turns must be at least 1")
        if min(size_list) < 2:
            raise InputError("--sizes must each be at least 2 messages")
        run(sizes=size_list, turns=turns, out=out)
    except UserError as exc:
        raise _fail(str(exc)) from None


@bench_app.command("costguard")
def bench_costguard_command(
    rows: Annotated[int, typer.Option(help="Usage rows (turns) of the user checked.")] = 10_000,
    repeat: Annotated[int, typer.Option(help="Timed checks of tierwise's cost guard.")] = 500,
    database_url: Annotated[
        str | None, typer.Option(help="Also run on this empty, disposable PostgreSQL database.")
    ] = None,
    out: Annotated[
        Path | None,
        typer.Option(help="Also write the results as JSON here (e.g. bench/results/costguard.json)."),
    ] = None,
) -> None:
    """Time the cost guard's check with a long spending history, beside the full scan it replaced."""
    from sqlalchemy.exc import SQLAlchemyError

    from tierwise.bench.costguard import run

    if rows < 1 or repeat < 1:
        raise _fail("--rows and --repeat must each be at least 1")
    try:
        run(rows=rows, repeat=repeat, database_url=database_url, out=out)
    except UserError as exc:
        raise _fail(str(exc)) from None
    except SQLAlchemyError as exc:
        raise _database_failed(exc) from None


@bench_app.command("workers")
def bench_workers_command(
    database_url: Annotated[
        str,
        typer.Option(help="An empty, disposable PostgreSQL database (postgresql+psycopg://USER@HOST/DB)."),
    ],
    processes: Annotated[int, typer.Option(help="Server processes on the database.")] = 4,
    sessions: Annotated[int, typer.Option(help="OpenAI clients at once, a session each.")] = 100,
    turns: Annotated[int, typer.Option(help="Turns per session.")] = 5,
    rate: Annotated[int, typer.Option(help="The servers' rate limit, requests per minute.")] = 1_200,
    seconds: Annotated[float, typer.Option(help="How long the rate-limit phase asks (0: skip it).")] = 30.0,
    mode: Annotated[
        str, typer.Option(help="hosts: separate `tierwise serve` processes; workers: one with --workers.")
    ] = "hosts",
    out: Annotated[
        Path | None,
        typer.Option(help="Also write the results as JSON here (e.g. bench/results/workers.json)."),
    ] = None,
) -> None:
    """Sessions spread at random over several processes on one PostgreSQL, and a global rate limit."""
    from sqlalchemy.exc import SQLAlchemyError

    from tierwise.bench.workers import as_dict, report, run

    if processes < 1 or sessions < 1 or turns < 1 or rate < 1 or seconds < 0:
        raise _fail(
            "--processes, --sessions, --turns and --rate must each be at least 1, --seconds 0 or more"
        )
    if mode not in ("hosts", "workers"):
        raise _fail(f"unknown --mode {mode}; use hosts or workers")
    try:
        result = run(
            database_url,
            processes=processes,
            sessions=sessions,
            turns=turns,
            rate=rate,
            seconds=seconds,
            mode=mode,
        )
    except UserError as exc:
        raise _fail(str(exc)) from None
    except SQLAlchemyError as exc:
        raise _database_failed(exc) from None
    typer.echo(report(result))
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(as_dict(result), indent=2) + "\n", encoding="utf-8")


@bench_app.command("pack")
def bench_pack_command(
    sizes: Annotated[
        str, typer.Option(help="History lengths (messages), comma-separated.")
    ] = "100,1000,10000",
    budgets: Annotated[str, typer.Option(help="Budgets (tokens), comma-separated.")] = "4000,32000",
    repeat: Annotated[int, typer.Option(help="Timed runs per case and contender.")] = 200,
    encoding: Annotated[str, typer.Option(help="Tokenizer for both contenders.")] = DEFAULT_ENCODING,
    out: Annotated[
        Path | None, typer.Option(help="Also write the results as JSON here (e.g. bench/results/pack.json).")
    ] = None,
) -> None:
    """Time tierwise's packer against langchain-core's trim_messages on the same histories."""
    _needs_bench_extra("pack")
    from tierwise.bench.pack import run_pack_benchmark

    try:
        size_list = _int_list(sizes, "--sizes")
        budget_list = _int_list(budgets, "--budgets")
        if repeat < 1:
            raise InputError("--repeat must be at least 1")
        run_pack_benchmark(size_list, budget_list, repeat=repeat, encoding=encoding, out=out)
    except UserError as exc:
        raise _fail(str(exc)) from None


def _int_list(text: str, option: str) -> list[int]:
    try:
        values = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise InputError(f"{option} takes whole numbers separated by commas, e.g. 100,1000") from None
    if not values or any(v <= 0 for v in values):
        raise InputError(f"{option} takes positive whole numbers separated by commas, e.g. 100,1000")
    return values


@bench_app.command("disclosure")
def bench_disclosure_command(
    scales: Annotated[
        str, typer.Option(help="Workspace scales for tool latency, comma-separated.")
    ] = "1,10,100",
    repeat: Annotated[int, typer.Option(help="Timed calls per tool and scale.")] = 40,
    out: Annotated[
        Path | None,
        typer.Option(
            help="Also write JSON here, and markdown beside it (e.g. bench/results/disclosure.json)."
        ),
    ] = None,
) -> None:
    """Tokens sent with progressive disclosure vs full records (30 requests), and tool latency by scale."""
    from tierwise.bench.disclosure import run

    try:
        scale_list = _int_list(scales, "--scales")
        if repeat < 1 or min(scale_list) < 1:
            raise InputError("--repeat and every --scales value must be at least 1")
        run(scales=scale_list, repeat=repeat, out=out)
    except UserError as exc:
        raise _fail(str(exc)) from None


@bench_app.command("proxy")
def bench_proxy_command(
    clients: Annotated[int, typer.Option(help="Concurrent streaming clients.")] = 50,
    requests: Annotated[int, typer.Option(help="Requests per client at most.")] = 20,
    seconds: Annotated[
        float, typer.Option(help="Per run: stop starting requests after this many seconds.")
    ] = 60,
    pace: Annotated[
        list[str] | None,
        typer.Option(help="Upstream pace: model (~0.8 s an answer) or stress (38 ms); repeat for both."),
    ] = None,
    out: Annotated[
        Path | None, typer.Option(help="Also write JSON here (e.g. bench/results/proxy.json).")
    ] = None,
    hostile: Annotated[
        int,
        typer.Option(help="A neighbour also posts one conversation of this many messages (e.g. 100001)."),
    ] = 0,
    wire: Annotated[
        str,
        typer.Option(
            help="The clients' wire: chat, responses, anthropic or all (each beside the same peer); "
            "api: the web chat's turns."
        ),
    ] = "chat",
) -> None:
    """Load the OpenAI-compatible proxy on loopback (fake upstream) beside a bare passthrough peer."""
    from tierwise.bench.proxy import PACES, run
    from tierwise.bench.wires import API, parse_wires

    try:
        wires = parse_wires(wire, extra=(API,))
    except ValueError as exc:
        raise _fail(f"--wire: {exc}") from None
    if clients < 1 or requests < 1 or seconds <= 0 or hostile < 0:
        raise _fail("--clients and --requests must be at least 1, --seconds above 0, --hostile 0 or more")
    unknown = sorted(set(pace or ()) - set(PACES))
    if unknown:
        raise _fail(f"unknown --pace {', '.join(unknown)}; use {' or '.join(PACES)}")
    paces = {name: PACES[name] for name in pace} if pace else None
    run(
        clients=clients,
        requests=requests,
        seconds=seconds,
        paces=paces,
        out=out,
        hostile=hostile,
        wires=wires,
    )


@bench_app.command("cache")
def bench_cache_command(
    data: Annotated[
        Path, typer.Option(help="LoCoMo JSON (e.g. ../shared/bench/locomo/locomo-dev.json).")
    ] = Path("../shared/bench/locomo/locomo-dev.json"),
    budgets: Annotated[
        str, typer.Option(help="Comma-separated budgets; 'fits' is one the whole chat fits in.")
    ] = "4000,8000,fits",
    encoding: Annotated[str, typer.Option(help=f"Tokenizer: {' or '.join(ENCODINGS)}.")] = DEFAULT_ENCODING,
    productivity: Annotated[
        bool, typer.Option(help="Also replay the synthetic productivity chat (tool calls included).")
    ] = True,
    out: Annotated[
        Path | None,
        typer.Option(help="Also write JSON here, and markdown beside it (e.g. bench/results/cache.json)."),
    ] = None,
    wire: Annotated[
        str | None,
        typer.Option(
            help="Also replay through the endpoints: chat, responses, anthropic or all (always with chat, "
            "the reference); prefix reuse per wire side by side."
        ),
    ] = None,
    wire_limit: Annotated[
        int, typer.Option(help="LoCoMo conversations replayed through the endpoints (0: all).")
    ] = 1,
) -> None:
    """What a chat costs with prompt caching: tierwise vs full history, trim_messages, a stepped window."""
    _needs_bench_extra("cache")
    from tierwise.bench.cache import run_cache_benchmark
    from tierwise.bench.wires import parse_wires

    try:
        _check_encoding(encoding)
        try:
            wires = parse_wires(wire) if wire is not None else ()
        except ValueError as exc:
            raise InputError(f"--wire: {exc}") from None
        if wire_limit < 0:
            raise InputError("--wire-limit must be 0 (all) or more")
        plan: list[int | None] = []
        for raw in budgets.split(","):
            word = raw.strip()
            if word == "fits":
                plan.append(None)
            elif word.isdigit() and int(word) >= 500:
                plan.append(int(word))
            else:
                raise InputError(f"--budgets takes numbers of at least 500 or 'fits', not {word!r}")
        if not data.exists():
            raise InputError(f"no such file: {data}; pass --data PATH to locomo-dev.json")
        with _replaying() as progress:
            run_cache_benchmark(
                data,
                budgets=plan,
                encoding=encoding,
                productivity=productivity,
                out=out,
                wires=wires,
                wire_limit=wire_limit or None,
                progress=progress,
            )
    except UserError as exc:
        raise _fail(str(exc)) from None


@bench_app.command("agents")
def bench_agents_command(
    data: Annotated[
        Path, typer.Option(help="A directory of agent trajectories (*.json: messages and meta).")
    ] = Path("../shared/bench/agent-trajectories"),
    budgets: Annotated[
        str, typer.Option(help="Budgets (tokens, no reserve), comma-separated.")
    ] = "8000,16000,32000",
    limit: Annotated[int | None, typer.Option(help="Replay at most this many trajectories.")] = None,
    contenders: Annotated[
        str | None,
        typer.Option(
            help="Comma-separated subset of: full history, trim_messages, trim_messages (human|ai), "
            "tierwise chat, tierwise endpoint (default: all)."
        ),
    ] = None,
    encoding: Annotated[str, typer.Option(help=f"Tokenizer: {' or '.join(ENCODINGS)}.")] = DEFAULT_ENCODING,
    out: Annotated[
        Path | None,
        typer.Option(help="Also write JSON here, and markdown beside it (e.g. bench/results/agents.json)."),
    ] = None,
) -> None:
    """Agent loops: what each contender sends before every model call of real coding-agent runs."""
    from tierwise.bench.agents import CONTENDERS, run_agents_benchmark

    try:
        _check_encoding(encoding)
        budget_list = _int_list(budgets, "--budgets")
        if limit is not None and limit < 1:
            raise InputError("--limit must be at least 1")
        chosen = [c.strip() for c in contenders.split(",") if c.strip()] if contenders else list(CONTENDERS)
        unknown = [c for c in chosen if c not in CONTENDERS]
        if unknown or not chosen:
            raise InputError(
                f"unknown contender {unknown[0] if unknown else ''!r}; --contenders takes a comma-separated "
                f"subset of: {', '.join(CONTENDERS)}"
            )
        if any(c.startswith("trim_messages") for c in chosen):
            try:
                import langchain_core  # noqa: F401
            except ImportError:
                raise InputError(
                    "the trim_messages contender needs langchain-core (the bench extra): "
                    "pip install -e '.[bench]', or leave it out with --contenders"
                ) from None
        if not data.is_dir():
            raise InputError(
                f"no such directory: {data}; pass --data DIR holding the agent trajectories "
                "(e.g. ../shared/bench/agent-trajectories)"
            )
        with _replaying() as progress:
            run_agents_benchmark(
                data,
                budgets=budget_list,
                contenders=chosen,
                encoding=encoding,
                limit=limit,
                out=out,
                progress=progress,
            )
    except UserError as exc:
        raise _fail(str(exc)) from None


@bench_app.command("scrub")
def bench_scrub_command(
    locomo: Annotated[
        Path, typer.Option(help="LoCoMo JSON for false positives and cost (its first 2,000 turns).")
    ] = Path("../shared/bench/locomo/locomo-dev.json"),
    before: Annotated[
        str, typer.Option(help="Git revision whose scrub.py is measured beside today's.")
    ] = "ee459e7",
    out: Annotated[
        Path | None, typer.Option(help="Also write the results as JSON here (e.g. bench/results/scrub.json).")
    ] = None,
) -> None:
    """Secret and PII recall per kind, false positives and cost: tierwise, before, bc-detect-secrets."""
    from tierwise.bench.scrub import report, run

    result = run(locomo, before=before)
    typer.echo(report(result))
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
