"""Options more than one command takes: defined once, so their help reads alike."""

from __future__ import annotations

from typing import Annotated

import typer

__all__ = ["CacheHints", "Database", "Model", "SummaryModel", "Window"]

CacheHints = Annotated[
    bool | None,
    typer.Option(
        "--cache-hints/--no-cache-hints",
        help="Mark each request's stable prefix with cache_control breakpoints, for upstreams that "
        "cache only there (Anthropic models via OpenRouter…); default: TIERWISE_CACHE_HINTS, else off.",
        show_default=False,
    ),
]
SummaryModel = Annotated[
    str | None,
    typer.Option(
        "--summary-model",
        metavar="NAME",
        help="The model that writes segment summaries (a small, cheap one is usually right); "
        "'extractive' for none. Default: TIERWISE_SUMMARY_MODEL, else none (extractive summaries, "
        "no model calls of tierwise's own).",
        show_default=False,
    ),
]
Database = Annotated[
    str | None,
    typer.Option(metavar="URL", help="The database (default: TIERWISE_DATABASE_URL, else the data dir)."),
]
Model = Annotated[
    str | None, typer.Option(metavar="NAME", help="The model to use (overrides TIERWISE_MODEL).")
]
Window = Annotated[
    int, typer.Option(help="The prompt window in tokens; 1,000 of it are kept for the answer.")
]
