"""Options more than one command takes (``chat``, ``serve``): defined once, so their help reads alike."""

from __future__ import annotations

from typing import Annotated

import typer

__all__ = ["CacheHints", "SummaryModel"]

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
        "'extractive' for none. Default: TIERWISE_SUMMARY_MODEL, else the chat model.",
        show_default=False,
    ),
]
