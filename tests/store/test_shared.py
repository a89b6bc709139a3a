"""Rate limits kept in the store: one bucket per key, shared by every process (and thread) using it."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import httpx
import pytest

from tierwise.chat.engine import ChatEngine
from tierwise.providers.testing import ScriptedModel
from tierwise.server import create_app
from tierwise.server.auth import SharedRateLimiter
from tierwise.store import Store


@pytest.fixture
def two(store_url: str) -> Iterator[tuple[Store, Store]]:
    """Two stores on one database: two processes' connections."""
    first, second = Store.open(store_url), Store.open(store_url)
    yield first, second
    first.close()
    second.close()


def test_a_bucket_starts_full_and_refuses_once_empty(two: tuple[Store, Store]) -> None:
    store, _ = two
    taken = [store.take_request("ada", 60, 3) for _ in range(4)]
    assert taken[:3] == [None, None, None]
    assert taken[3] is not None and 0.5 < taken[3] <= 1.0  # one token a second: about 1 s to wait
    assert store.take_request("grace", 60, 3) is None  # another key has its own bucket


def test_a_bucket_refills_with_time(two: tuple[Store, Store]) -> None:
    store, _ = two
    assert store.take_request("ada", 600, 1) is None  # ten a second, one at a time
    assert store.take_request("ada", 600, 1) is not None
    time.sleep(0.15)
    assert store.take_request("ada", 600, 1) is None


def test_processes_share_a_bucket_and_never_take_the_same_token(two: tuple[Store, Store]) -> None:
    taken: list[bool] = []
    lock = threading.Lock()

    def take(store: Store) -> None:
        for _ in range(25):
            got = store.take_request("ada", 1, 30) is None  # 30 at once, then one a minute
            with lock:
                taken.append(got)

    threads = [threading.Thread(target=take, args=(store,)) for store in (*two, *two)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(taken) == 100
    assert sum(taken) == 30  # exactly the bucket's depth, whichever process asked


def test_the_limiter_checks_its_settings(two: tuple[Store, Store]) -> None:
    with pytest.raises(ValueError, match="rate must be a positive number"):
        SharedRateLimiter(two[0], 0)


async def test_apps_on_one_database_share_a_users_rate_limit(two: tuple[Store, Store]) -> None:
    apps = [
        create_app(store, ChatEngine(store, ScriptedModel(*["ok"] * 10)), rate_limit=3, shared=True)
        for store in two
    ]
    codes = []
    for i in range(5):
        app = apps[i % 2]
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as http:
            codes.append((await http.get("/api/chats")).status_code)
    assert codes == [200, 200, 200, 429, 429]  # three a minute in all, not three per process


pytestmark = pytest.mark.anyio


def test_exclusive_lets_one_process_in_at_a_time(two: tuple[Store, Store]) -> None:
    inside: list[int] = []
    overlaps: list[int] = []
    lock = threading.Lock()

    def work(store: Store, n: int) -> None:
        for _ in range(5):
            with store.exclusive("setup"):
                with lock:
                    if inside:
                        overlaps.append(n)
                    inside.append(n)
                time.sleep(0.01)
                with lock:
                    inside.remove(n)

    threads = [threading.Thread(target=work, args=(store, n)) for n, store in enumerate(two)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if two[0].engine.dialect.name == "postgresql":  # SQLite is served by one process: nothing taken
        assert overlaps == []
