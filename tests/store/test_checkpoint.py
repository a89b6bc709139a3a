"""A SQLite file's WAL is checkpointed by a background thread, never inside a commit."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tierwise.store import Store
from tierwise.store.checkpoint import Checkpointer


def test_commits_do_not_checkpoint_and_the_background_thread_does(tmp_path: Path) -> None:
    path = tmp_path / "c.db"
    store = Store.open(f"sqlite:///{path}")
    wal = path.with_name("c.db-wal")
    try:
        with store.engine.connect() as connection:
            assert connection.exec_driver_sql("PRAGMA wal_autocheckpoint").scalar() == 0
        checkpointer = store._checkpointer
        assert isinstance(checkpointer, Checkpointer)
        user = store.create_user("ada")
        chat = store.create_chat(user.id)
        for i in range(300):  # well past the 1,000-page default threshold in log frames
            big = {"role": "user", "content": "x" * 4000 + str(i)}
            store.add_message(user.id, chat.id, big, token_count=9)
        grown = wal.stat().st_size
        assert grown > 1000 * 4096  # no commit checkpointed (and restarted) the log
        checkpointer.interval_s = 0.05
        time.sleep(1.5)  # the thread's next turn checkpoints; later writes then reuse the log
        for _ in range(50):
            store.add_message(user.id, chat.id, {"role": "user", "content": "y" * 4000}, token_count=9)
        assert wal.stat().st_size == grown  # the log restarted from its start instead of growing
    finally:
        store.close()
    assert not wal.exists() or wal.stat().st_size == 0  # the last checkpoint truncated it
    again = Store.open(f"sqlite:///{path}")
    try:
        assert len(again.list_messages(user.id, chat.id)) == 350
    finally:
        again.close()


def test_an_in_memory_store_has_no_checkpointer() -> None:
    store = Store.open("sqlite://")
    assert store._checkpointer is None
    store.close()


def test_an_unknown_checkpoint_mode_is_refused(tmp_path: Path) -> None:
    store = Store.open(f"sqlite:///{tmp_path / 'm.db'}")
    try:
        assert store._checkpointer is not None
        with pytest.raises(ValueError, match="unknown checkpoint mode"):
            store._checkpointer.checkpoint("NOW")
    finally:
        store.close()
