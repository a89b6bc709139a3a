"""Seed 000 §10 in the workspace: prefetched details, the location cache, adaptive related layers."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import pytest

from tests.workspace.conftest import NOW
from tierwise.store import Store
from tierwise.tools import ToolContext, ToolExecutor, ToolRegistry
from tierwise.workspace.adaptive import AdaptiveBudgets
from tierwise.workspace.context import WorkspaceContext
from tierwise.workspace.context_cache import ContextCache, touch, workspace_version
from tierwise.workspace.prefetch import Prefetcher
from tierwise.workspace.repository import Workspace
from tierwise.workspace.tools import WORKSPACE_STRATEGIES, workspace_tools


class _Setup:
    def __init__(self, path: Path) -> None:
        self.store = Store.open(f"sqlite:///{path / 'w.db'}")
        self.user = self.store.create_user("maya").id
        self.ws = Workspace(self.store)
        self.project = self.ws.create_project(self.user, name="Launch", context="Plan " * 50)["id"]
        self.tasks = [
            self.ws.create_task(self.user, title=f"Task {i}", project_id=self.project, priority="high")
            for i in range(3)
        ]
        self.prefetch, self.adaptive = Prefetcher(), AdaptiveBudgets(patience=2)
        self.executor = ToolExecutor(
            ToolRegistry(workspace_tools()), store=self.store, strategies=WORKSPACE_STRATEGIES
        )

    def data(self, name: str, **arguments: Any) -> Any:
        extras = {"clock": lambda: NOW, "prefetch": self.prefetch, "adaptive": self.adaptive}
        context = ToolContext(user_id=self.user, extras=extras)
        result = asyncio.run(self.executor.execute("c", name, json.dumps(arguments), context=context))
        assert result.success, result.content
        return json.loads(result.content)


class _Store:
    """Any object the versions can be kept for."""


def _location(layers: list[Any]) -> str:
    return next(str(layer.content) for layer in layers if layer.kind == "location")


@pytest.fixture
def setup(tmp_path: Path) -> _Setup:
    s = _Setup(tmp_path)
    yield s  # type: ignore[misc]
    s.prefetch.close()
    s.store.close()


# -- §10.1 prefetching ----------------------------------------------------------------------------


def test_the_top_rows_detail_is_served_from_the_prefetch_and_equals_a_fresh_one(setup: _Setup) -> None:
    top = setup.data("list_tasks", project_id=setup.project)["tasks"][0]["id"]
    assert setup.prefetch.stats.offered == 1
    served = setup.data("get_task_details", task_id=top)
    assert setup.prefetch.stats.hits == 1
    fresh = setup.data("get_task_details", task_id=top)  # nothing prefetched any more: computed
    assert setup.prefetch.stats.misses == 1 and served == fresh


def test_a_write_between_list_and_detail_is_never_served_stale(setup: _Setup) -> None:
    top = setup.data("list_tasks", project_id=setup.project)["tasks"][0]["id"]
    setup.data("update_task", task_id=top, updates={"title": "Renamed"})
    detail = setup.data("get_task_details", task_id=top)
    assert detail["task"]["title"] == "Renamed"
    assert setup.prefetch.stats.hits == 0 and setup.prefetch.stats.stale == 1


def test_other_ids_and_other_arguments_compute_as_usual(setup: _Setup) -> None:
    page = setup.data("list_tasks", project_id=setup.project)["tasks"]
    setup.data("get_task_details", task_id=page[1]["id"])
    assert setup.prefetch.stats.hits == 0 and setup.prefetch.stats.misses == 1
    setup.data("list_tasks", project_id=setup.project)
    with_project = setup.data("get_task_details", task_id=page[0]["id"], include_project_context=True)
    assert "project" in with_project["task"] and setup.prefetch.stats.hits == 0


def test_notes_and_projects_are_prefetched_too(setup: _Setup) -> None:
    note = setup.ws.create_note(setup.user, title="Pricing", content="Tiers", project_id=setup.project)
    setup.data("search_notes", query="pricing")
    assert setup.data("get_note_details", note_id=note["id"])["note"]["content"] == "Tiers"
    setup.data("search_projects", query="launch")
    assert setup.data("get_project_details", project_id=setup.project)["project"]["name"] == "Launch"
    assert setup.prefetch.stats.hits == 2


def test_an_in_memory_store_is_not_prefetched_from() -> None:
    store = Store.open("sqlite://")
    prefetcher = Prefetcher()
    assert not prefetcher.offer(store, "u", "task", "t", lambda: {"id": "t"})
    assert prefetcher.take(store, "u", "task", "t") is None
    prefetcher.close()


def test_a_failed_prefetch_is_a_miss_not_an_error(tmp_path: Path) -> None:
    store = Store.open(f"sqlite:///{tmp_path / 'w.db'}")
    prefetcher = Prefetcher()

    def boom() -> Any:
        raise RuntimeError("database went away")

    prefetcher.offer(store, "u", "task", "t", boom)
    assert prefetcher.take(store, "u", "task", "t") is None and prefetcher.stats.misses == 1
    prefetcher.close()
    store.close()


# -- §10.2 the location cache -------------------------------------------------------------------------


def test_the_location_is_built_once_until_a_write(setup: _Setup) -> None:
    cache = ContextCache()
    source = WorkspaceContext(setup.store, clock=lambda: NOW, cache=cache)
    first = source.layers(setup.user, "project", setup.project)
    assert source.layers(setup.user, "project", setup.project) == first
    assert cache.stats.hits == 1 and cache.stats.misses == 1 and cache.stats.saved_ms > 0
    setup.ws.create_task(setup.user, title="Brand new task", project_id=setup.project, priority="high")
    again = source.layers(setup.user, "project", setup.project)
    assert cache.stats.stale == 1 and "Brand new task" in " ".join(str(x.content) for x in again)


def test_every_workspace_write_and_the_profile_move_the_version(setup: _Setup) -> None:
    before = workspace_version(setup.store, setup.user)
    setup.ws.update_task(setup.user, setup.tasks[0]["id"], {"priority": "low"})
    setup.ws.update_project_context(setup.user, setup.project, "More.", "append")
    setup.ws.create_note(setup.user, title="n", content="c")
    setup.ws.set_profile(setup.user, timezone="Europe/Paris")
    assert workspace_version(setup.store, setup.user) == before + 4


def test_the_profile_is_read_once_until_it_changes_and_stays_out_of_the_figures(setup: _Setup) -> None:
    cache = ContextCache()
    source = WorkspaceContext(setup.store, clock=lambda: NOW, cache=cache)
    reads: list[str] = []
    profile = source.workspace.profile
    source.workspace.profile = lambda user: reads.append(user) or profile(user)  # type: ignore[method-assign]
    source.layers(setup.user, "project", setup.project)
    first = len(reads)  # the turn's own read, and the location's build reads it too
    for _ in range(2):
        source.layers(setup.user, "project", setup.project)
    assert len(reads) == first
    assert (cache.stats.hits, cache.stats.misses) == (2, 1)  # the location's lookups only
    setup.ws.set_profile(setup.user, timezone="Europe/Paris")
    assert "(Europe/Paris)" in _location(source.layers(setup.user, "project", setup.project))
    assert len(reads) > first


def test_the_cache_forgets_after_its_time_limit() -> None:
    now = [0.0]
    cache = ContextCache(ttl_s=60, clock=lambda: now[0])
    store = _Store()
    assert cache.get(store, "u", "k", lambda: 1) == 1
    now[0] = 61
    assert cache.get(store, "u", "k", lambda: 2) == 2 and cache.stats.stale == 1
    touch(store, "other-user")  # another user's write changes nothing here
    assert cache.get(store, "u", "k", lambda: 3) == 2


def test_the_now_line_is_never_cached(setup: _Setup) -> None:
    moments = iter([NOW, NOW.replace(hour=15)])
    source = WorkspaceContext(setup.store, clock=lambda: next(moments), cache=ContextCache())
    one, two = (_location(source.layers(setup.user, "project", setup.project)) for _ in range(2))
    assert "Now:" in one and one != two and one.split("\n", 1)[1] == two.split("\n", 1)[1]


# -- §10.3 adaptive related layers ----------------------------------------------------------------


def test_the_related_layer_grows_when_used_and_shrinks_when_not(setup: _Setup) -> None:
    notes = [
        setup.ws.create_note(setup.user, title=f"Note {i}", content="c", project_id=setup.project)["id"]
        for i in range(8)
    ]
    source = WorkspaceContext(setup.store, clock=lambda: NOW, adaptive=setup.adaptive)

    def related() -> str:
        layers = {layer.kind: layer for layer in source.layers(setup.user, "project", setup.project)}
        return str(layers["related"].content)

    assert related().count("· note_") == 3  # the base allowance
    setup.data("get_note_details", note_id=notes[0])  # not shown (the oldest): the layer was short
    assert related().count("· note_") == 5 and setup.adaptive.stats.opened_missing == 1
    for _ in range(2):
        text = related()
    assert text.count("· note_") == 5
    assert related().count("· note_") == 4 and setup.adaptive.stats.shrunk == 1
    assert AdaptiveBudgets().allowance("u", ("project", "p")) == 3


def test_bad_adaptive_settings_are_refused_with_the_rule() -> None:
    with pytest.raises(ValueError, match="least <= base <= most"):
        AdaptiveBudgets(base=9, most=8)


def test_the_prefetcher_saves_time_on_the_request_path(setup: _Setup) -> None:
    def slow() -> dict[str, str]:
        time.sleep(0.05)
        return {"id": "t"}

    setup.prefetch.offer(setup.store, setup.user, "task", "t", slow)
    deadline = time.monotonic() + 10  # the background build is done (however busy the machine)
    while not all(p.future.done() for p in setup.prefetch._pending.values()) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert setup.prefetch.take(setup.store, setup.user, "task", "t") == {"id": "t"}
    # the 50 ms build was taken off the request path: saved is the build's time less any wait
    assert setup.prefetch.stats.hits == 1 and setup.prefetch.stats.saved_ms >= 40
