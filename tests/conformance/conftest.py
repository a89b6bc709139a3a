"""The conformance suite's fixtures: the scripted upstream and tierwise served in front of it.

Set before any client is imported: litellm uses its bundled model map and fetches nothing
(``LITELLM_LOCAL_MODEL_COST_MAP``, ``LITELLM_OFFLINE_MODE``; it fetched the map from GitHub at import),
and no framework traces or reports telemetry (the Agents SDK's tracing is turned off where it is used).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
os.environ["LITELLM_OFFLINE_MODE"] = "true"
os.environ["OPENAI_AGENTS_DISABLE_TRACING"] = "1"
os.environ["LANGSMITH_TRACING"] = "false"
os.environ["LANGCHAIN_TRACING_V2"] = "false"

import pytest

from tests.conformance.harness import Tierwise, serving, store_template
from tests.fake_openai import FakeOpenAI


@pytest.fixture
def upstream() -> Iterator[FakeOpenAI]:
    """The scripted OpenAI-compatible upstream on 127.0.0.1 (``script`` / ``fail``, ``requests``)."""
    yield from FakeOpenAI.running()


@pytest.fixture(scope="session")
def _template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return store_template(tmp_path_factory.mktemp("template"))


@pytest.fixture
def tierwise(upstream: FakeOpenAI, _template: Path, tmp_path: Path) -> Iterator[Callable[..., Tierwise]]:
    """Serve tierwise over ``upstream``: ``tierwise(model=…, budget=…, reserve=…)`` → its ``url``.

    Each served app has a SQLite store of its own, a copy of an empty migrated one."""
    with serving(upstream, _template, tmp_path) as serve:
        yield serve
