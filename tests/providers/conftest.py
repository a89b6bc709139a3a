"""Provider tests: real model requests are blocked (loopback stays open for the fake server).

The guard (no real model requests) and the anyio backend are fixtures of the root conftest.
"""

from __future__ import annotations

from tests.fake_anthropic import FakeAnthropic, fake_anthropic
from tests.fake_openai import FakeOpenAI, fake_openai

__all__ = ["FakeAnthropic", "FakeOpenAI", "fake_anthropic", "fake_openai"]
