"""The agent CLIs' fixtures: the scripted upstream of each kind, and tierwise served over it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.agents_cli.harness import BUDGET, RESERVE, RequestLog, Served
from tests.agents_cli.upstreams import KINDS, Upstream
from tierwise.budget import Budget
from tierwise.chat.engine import ChatEngine
from tierwise.server import create_app
from tierwise.server.threaded import serve_in_thread
from tierwise.store import Store


@pytest.fixture(params=sorted(KINDS))
def upstream(request: pytest.FixtureRequest) -> Iterator[Upstream]:
    """The scripted upstream on 127.0.0.1, of each kind in turn (chat, responses, anthropic)."""
    server = KINDS[request.param]()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def tierwise(upstream: Upstream, tmp_path: Path) -> Iterator[Served]:
    """tierwise's app served in a thread over ``upstream``, on a store of its own."""
    store = Store.open(f"sqlite:///{tmp_path / 'tierwise.db'}")
    engine = ChatEngine(store, upstream.provider(), budget=Budget(window=BUDGET, reserve=RESERVE))
    log = RequestLog(create_app(store, engine))
    try:
        with serve_in_thread(log) as base:
            yield Served(base, log.seen, log.sent)
    finally:
        store.close()
