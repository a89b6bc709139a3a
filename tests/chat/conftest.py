"""Chat tests use the loopback fake OpenAI server from the provider tests."""

from __future__ import annotations

from tests.fake_openai import FakeOpenAI, fake_openai

__all__ = ["FakeOpenAI", "fake_openai"]
