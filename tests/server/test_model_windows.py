"""``/v1`` packs under the model's window, not a constant (issue 30; decision 68).

The upstream is a scripted model named like a real one; the endpoint is driven in-process.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tierwise.budget import Budget
from tierwise.chat.engine import ChatEngine
from tierwise.errors import InputError
from tierwise.providers.testing import ScriptedModel
from tierwise.providers.windows import ModelLimits, lookup_limits, models_from_env
from tierwise.server import create_app
from tierwise.server.openai_budget import plan_budget
from tierwise.store import Store
from tierwise.tokens import get_counter

pytestmark = pytest.mark.anyio

URL = "/v1/chat/completions"
WORDS = ("the", "offsite", "venue", "in", "Lisbon", "seats", "forty", "people", "with", "parking")


@pytest.fixture
def store() -> Iterator[Store]:
    opened = Store.open("sqlite://")
    yield opened
    opened.close()


def text_of(tokens: int, salt: str = "") -> str:
    """A text of ``tokens`` tokens or a few less, its words varied so nothing is repeated whole."""
    counter = get_counter()
    words = [f"{WORDS[i % len(WORDS)]}{salt}{i // len(WORDS)}" for i in range(tokens)]
    low, high = 1, len(words)  # the most words within ``tokens``
    while low < high:
        middle = (low + high + 1) // 2
        low, high = (middle, high) if counter.count(" ".join(words[:middle])) <= tokens else (low, middle - 1)
    return " ".join(words[:low])


def history(turns: int, each: int = 300) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    for i in range(turns):
        if i % 2 == 0:
            messages.append({"role": "user", "content": f"Note {i}: {text_of(each, salt=f'n{i}x')}"})
        else:
            messages.append({"role": "assistant", "content": f"Noted {i - 1}."})
    return messages


def tools(count: int, tokens: int) -> list[dict[str, Any]]:
    each = tokens // count
    return [
        {
            "type": "function",
            "function": {
                "name": f"tool_{i}",
                "description": text_of(each - 20, salt=f"t{i}x"),
                "parameters": {"type": "object", "properties": {"q": {"type": "string"}}},
            },
        }
        for i in range(count)
    ]


class Gateway:
    """The app in front of a scripted upstream called ``model``; ``budget``: a budget set, or none."""

    def __init__(self, store: Store, model: str, budget: Budget | None = None, replies: int = 4) -> None:
        self.upstream = ScriptedModel(*["ok"] * replies, model=model)
        self.engine = ChatEngine(store, self.upstream, budget=budget)
        self.app = create_app(store, self.engine)

    async def post(self, body: dict[str, Any]) -> httpx.Response:
        transport = httpx.ASGITransport(app=self.app)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as http:
            response = await http.post(URL, json={"model": "any", **body})
        sessions = getattr(self.app.state, "openai_sessions", None)
        if sessions is not None:
            await sessions.drain()
        return response

    def sent(self) -> list[dict[str, Any]]:
        """The messages of the last request the upstream got."""
        return list(self.upstream.requests[-1].messages)


def _error(response: httpx.Response) -> dict[str, Any]:
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert error["type"] == "invalid_request_error"
    return dict(error)


# -- the table ---------------------------------------------------------------------------------


def test_models_are_found_by_exact_name_then_by_longest_prefix() -> None:
    assert lookup_limits("gpt-4o") == ModelLimits(128_000, 16_384)
    assert lookup_limits("gpt-4o-2024-08-06") == lookup_limits("gpt-4o")
    assert lookup_limits("gpt-4o-mini-2024-07-18") == lookup_limits("gpt-4o-mini")
    assert lookup_limits("openai/gpt-4.1-mini") == ModelLimits(1_047_576, 32_768)
    assert lookup_limits("claude-sonnet-4-5-20250929") == ModelLimits(200_000, 64_000)
    assert lookup_limits("anthropic/claude-3.5-sonnet") == ModelLimits(200_000, 8_192)
    assert lookup_limits("claude-opus-4-1-20250805") == ModelLimits(200_000, 32_000)
    assert lookup_limits("models/gemini-2.5-pro") == ModelLimits(1_048_576, 65_536)
    assert (
        lookup_limits("llama3.1:8b")
        == lookup_limits("meta-llama/Llama-3.1-8B-Instruct")
        == ModelLimits(131_072)
    )
    assert lookup_limits("mistralai/mistral-small-3.1-24b-instruct") == ModelLimits(131_072)
    assert lookup_limits("deepseek-chat") == ModelLimits(128_000, 8_192)
    assert lookup_limits("qwen2.5-coder:32b") == ModelLimits(32_768, 8_192)
    assert lookup_limits("gpt-5-mini") == ModelLimits(400_000, 128_000, 272_000)
    # a prefix counts only at a separator: gpt-4.5 is not gpt-4, gpt-4o-… is not gpt-4
    assert lookup_limits("gpt-4.7-preview") is None
    assert lookup_limits("gpt-4o-audio-preview") == lookup_limits("gpt-4o")
    assert lookup_limits("my-local-model") is None and lookup_limits("scripted") is None


def test_a_budget_plan_keeps_the_prompt_when_the_model_has_room_for_the_answer() -> None:
    gpt4o = ModelLimits(128_000, 16_384)
    capped = plan_budget(Budget(16_000, 1_000), gpt4o, ceiling=True, max_tokens=8_192)
    assert (capped.first().available, capped.first().reserve) == (15_000, 8_192)  # not 7,808
    assert plan_budget(Budget(16_000, 1_000), gpt4o, ceiling=False).first().available == 127_000
    small = ModelLimits(16_385, 4_096)  # the model has no room for both: the answer's room wins
    assert (
        plan_budget(Budget(16_000, 1_000), small, ceiling=True, max_tokens=4_096).first().available == 12_289
    )
    unknown = plan_budget(Budget(16_000, 1_000), None, ceiling=False, max_tokens=8_192)
    assert unknown.first().available == 7_808  # as before: tierwise knows no more than the budget


# -- /v1 against a 128k model ----------------------------------------------------------------------


async def test_a_20k_message_goes_whole_to_a_128k_model_when_no_budget_is_set(store: Store) -> None:
    gateway = Gateway(store, "gpt-4o")
    message = {"role": "user", "content": text_of(20_000)}
    response = await gateway.post({"messages": [*history(6), message]})
    assert response.status_code == 200, response.text
    sent = gateway.sent()
    assert sent[-1] == message and len(sent) == 7  # the whole conversation, as sent
    assert int(response.headers["X-Tierwise-Pack-Tokens"]) > 20_000


async def test_a_20k_message_over_a_16k_budget_is_packed_not_refused(store: Store) -> None:
    gateway = Gateway(store, "gpt-4o", Budget(16_000, 1_000))
    past = history(60)  # ~9,000 tokens before the message
    message = {"role": "user", "content": text_of(20_000)}
    full = get_counter().count_messages([*past, message])
    response = await gateway.post({"messages": [*past, message]})
    assert response.status_code == 200, response.text
    sent = gateway.sent()
    assert sent[-1] == message  # what the model is asked goes whole
    packed = int(response.headers["X-Tierwise-Pack-Tokens"])
    assert packed < full - 4_000  # memory compacted what came before
    assert packed <= 20_000 + 16_000 // 4 + 200  # the overflow, plus memory's share of the budget


async def test_50_tools_of_22k_tokens_are_sent_with_or_without_a_budget(store: Store) -> None:
    toolset = tools(50, 22_000)
    assert get_counter().count_tools(toolset) > 20_000
    for budget in (None, Budget(16_000, 1_000)):
        gateway = Gateway(store, "gpt-4o", budget)
        response = await gateway.post(
            {"messages": [{"role": "user", "content": "Find the venue."}], "tools": toolset}
        )
        assert response.status_code == 200, (budget, response.text)
        assert len(gateway.upstream.requests[-1].tools) == 50


async def test_max_tokens_takes_its_room_from_the_model_not_the_budget(store: Store) -> None:
    gateway = Gateway(store, "o1-mini")  # 128k window, 65,536 output tokens
    response = await gateway.post(
        {"messages": [{"role": "user", "content": "Plan it."}], "max_tokens": 20_000}
    )
    assert response.status_code == 200, response.text
    assert gateway.upstream.requests[-1].params["max_tokens"] == 20_000  # forwarded as sent


async def test_max_completion_tokens_does_not_shrink_the_budget_when_the_model_has_room(store: Store) -> None:
    gateway = Gateway(store, "gpt-4o", Budget(16_000, 1_000))
    past = history(70, each=330)  # ~12,000 tokens: more than 7,808, less than 15,000
    response = await gateway.post({"messages": past, "max_completion_tokens": 8_192})
    assert response.status_code == 200, response.text
    packed = int(response.headers["X-Tierwise-Pack-Tokens"])
    assert 7_808 < packed <= 15_000
    assert len(gateway.sent()) == len(past)  # nothing had to go


async def test_what_the_model_would_refuse_is_refused_in_openais_words(store: Store) -> None:
    gateway = Gateway(store, "gpt-4o")
    too_much = await gateway.post({"messages": [{"role": "user", "content": "hi"}], "max_tokens": 20_000})
    error = _error(too_much)
    assert (error["code"], error["param"]) == ("invalid_value", "max_tokens")
    assert error["message"] == (
        "max_tokens is too large: 20000. This model supports at most 16384 completion tokens, "
        "whereas you provided 20000."
    )
    error = _error(
        await gateway.post({"messages": [{"role": "user", "content": "hi"}], "max_completion_tokens": 16_385})
    )
    assert error["param"] == "max_completion_tokens"

    huge = {"role": "user", "content": text_of(130_000)}
    error = _error(await gateway.post({"messages": [huge], "max_tokens": 1_000}))
    assert (error["code"], error["param"]) == ("context_length_exceeded", "messages")
    assert error["message"].startswith(
        "This model's maximum context length is 128000 tokens. However, you requested "
    )
    assert error["message"].endswith(
        " in the completion). Please reduce the length of the messages or completion."
    )
    assert not gateway.upstream.requests  # nothing reached the model


async def test_an_unknown_model_falls_back_to_the_default_budget(store: Store) -> None:
    gateway = Gateway(store, "my-local-model")
    assert gateway.engine.budget == Budget(16_000, 1_000) and not gateway.engine.budget_set
    fits = await gateway.post({"messages": [{"role": "user", "content": text_of(10_000)}]})
    assert fits.status_code == 200, fits.text
    error = _error(await gateway.post({"messages": [{"role": "user", "content": text_of(20_000, salt="b")}]}))
    assert error["code"] == "context_length_exceeded"
    assert "TIERWISE_MODELS" in error["message"] and "my-local-model" in error["message"]


# -- TIERWISE_MODELS ------------------------------------------------------------------------------


async def test_tierwise_models_names_a_window_as_json_or_a_file(
    store: Store, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    entry = {"window": 65_536, "max_output": 8_192}
    toml = tmp_path / "models.toml"
    toml.write_text('["my-local-model"]\nwindow = 65536\nmax_output = 8192\n', encoding="utf-8")
    as_json = tmp_path / "models.json"
    as_json.write_text(json.dumps({"my-local-model": entry}), encoding="utf-8")
    for value in (json.dumps({"my-local-model": entry}), str(toml), str(as_json)):
        monkeypatch.setenv("TIERWISE_MODELS", value)
        assert models_from_env() == {"my-local-model": ModelLimits(65_536, 8_192)}
        gateway = Gateway(store, "my-local-model-q4")  # by prefix, as the table's entries
        response = await gateway.post(
            {"messages": [{"role": "user", "content": text_of(20_000, salt=value[-3:])}]}
        )
        assert response.status_code == 200, (value, response.text)
        error = _error(
            await gateway.post({"messages": [{"role": "user", "content": "hi"}], "max_tokens": 9_000})
        )
        assert error["code"] == "invalid_value"
    monkeypatch.setenv("TIERWISE_MODELS", json.dumps({"gpt-4o": {"window": 8_192}}))  # overrides the table
    assert lookup_limits("gpt-4o", models_from_env()) == ModelLimits(8_192)


@pytest.mark.parametrize(
    ("value", "needle"),
    [
        ("{not json", "TIERWISE_MODELS is not valid JSON"),
        ("missing.toml", "cannot be read"),
        ("bad.toml", "is not valid TOML"),
        ("bad.json", "is not valid JSON"),
        ('{"m": {"max_output": 10}}', "'m' has no window"),
        ('{"m": {"window": "big"}}', "window must be a whole number of tokens"),
        ('{"m": {"window": 100, "context": 5}}', "unknown keys ['context']"),
        ('["m"]', "holds a list, not an object of models"),
    ],
)
def test_a_bad_tierwise_models_says_what_to_fix(
    value: str, needle: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, store: Store
) -> None:
    (tmp_path / "bad.toml").write_text("[m\nwindow = 1\n", encoding="utf-8")
    (tmp_path / "bad.json").write_text("{'m': 1}", encoding="utf-8")
    path = tmp_path / value
    monkeypatch.setenv("TIERWISE_MODELS", value if value.startswith(("{", "[")) else str(path))
    with pytest.raises(InputError) as caught:
        models_from_env()
    message = str(caught.value)
    assert needle in message and "TIERWISE_MODELS" in message, message
    assert '{"my-model": {"window": 32768, "max_output": 4096}}' in message  # the fix, by example
    with pytest.raises(InputError):  # a server is not built on it
        create_app(store, ChatEngine(store, ScriptedModel()))
