"""The conformance harness: tierwise's ``/v1`` served on loopback in front of a scripted upstream.

Each client of the suite (the ``openai`` SDK, the Agents SDK, LangChain, litellm, pydantic-ai) talks to
a real uvicorn server on 127.0.0.1 (:func:`tierwise.server.threaded.serve_in_thread`), which forwards
its packs to :class:`tests.fake_openai.FakeOpenAI`, an OpenAI-compatible server on loopback that answers
with scripted replies and records every request body. Nothing reaches beyond loopback (the suite's
conftest makes litellm use its bundled model map; ``tests/conftest.py`` refuses other addresses).

The cases are the same for every client; their scripts and their checks of what the upstream got live
here, so a client's file holds only how that client is driven::

    def test_tool_round_trip(tierwise: Serve, upstream: FakeOpenAI) -> None:
        script_tool_round(upstream)
        server = tierwise()
        ...  # the client runs get_weather and answers
        check_tool_round(upstream)
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import json
import shutil
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from tests.fake_openai import FakeOpenAI, FakeReply
from tests.server.test_openai_recall import QUESTION, history, log, sha
from tierwise.budget import Budget
from tierwise.chat.engine import ChatEngine
from tierwise.providers import OpenAICompatProvider, Provider
from tierwise.server import create_app
from tierwise.server.threaded import serve_in_thread
from tierwise.store import Store
from tierwise.tokens import get_counter

__all__ = [
    "ANSWER",
    "BIG_MODEL",
    "BUDGET",
    "LOOP_STEPS",
    "LOOP_TASK",
    "QUESTION",
    "RATE_LIMITED",
    "RECALL_ANSWER",
    "RECALL_WINDOW",
    "RESERVE",
    "SERVER_ERROR",
    "SMALL_MODEL",
    "STREAMS",
    "STRUCTURED",
    "SYSTEM",
    "TOOLS",
    "WEATHER",
    "Seen",
    "Serve",
    "Tierwise",
    "big_result",
    "check_agent_loop",
    "check_big_result",
    "check_parallel",
    "check_recall",
    "check_structured",
    "check_tool_round",
    "history",
    "log",
    "loop_arguments",
    "loop_output",
    "read_log",
    "script_agent_loop",
    "script_big_result",
    "script_parallel",
    "script_recall",
    "script_tool_round",
    "served",
    "serving",
    "sha",
    "store_template",
    "weather",
]

STREAMS = (False, True)
"""Each case runs whole answers, then streamed ones (one served app for both: an app's first request
costs ~0.3 s, FastAPI building its routes)."""
SYSTEM = "You are a concise travel assistant."
ANSWER = "It is 18°C and sunny in Paris."
WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The weather in a city.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
            "additionalProperties": False,
        },
    },
}
"""The tool every client offers, as OpenAI's wire spells it (frameworks derive it from a function)."""
TOOLS = {
    "get_weather": WEATHER,
    "read_log": {
        "type": "function",
        "function": {
            "name": "read_log",
            "description": "A worker's build log.",
            "parameters": {
                "type": "object",
                "properties": {"worker": {"type": "integer"}},
                "required": ["worker"],
            },
        },
    },
    "read_artifacts": {
        "type": "function",
        "function": {"name": "read_artifacts", "description": "The build's artefacts.", "parameters": {}},
    },
}
"""The definitions a client without a framework sends, by name."""

BIG_MODEL = "gpt-4o-mini"
"""An upstream model tierwise knows (128k window): a 30k-token result fits it whole."""
SMALL_MODEL = "fake-model"
"""A model tierwise does not know: the budget (16k) is all it has, so a 30k-token result is cut."""
BUDGET, RESERVE = 16_000, 1_000
RECALL_WINDOW = 8_000
"""The budget of the retrieval case: the 15k-token build history compacts at once."""
RECALL_ANSWER = "Worker 12 is slowest: its step 36 took 36ms, like worker 11's."
BIG_TOKENS = 30_000

RATE_LIMITED = {
    "error": {
        "message": "Rate limit reached for gpt-4o-mini on requests per min (RPM): Limit 3, Used 3.",
        "type": "requests",
        "param": None,
        "code": "rate_limit_exceeded",
    }
}
SERVER_ERROR = {
    "error": {
        "message": "The server had an error while processing your request. Sorry about that!",
        "type": "server_error",
        "param": None,
        "code": None,
    }
}


def weather(city: str) -> str:
    """What every client's ``get_weather`` tool returns."""
    return f"{city}: 18°C and sunny"


# -- the served app -------------------------------------------------------------------------------


@dataclass
class Seen:
    """One ``/v1`` answer (chat completion, response or message) as the server sent it."""

    status: int
    chat: str | None
    path: str = ""
    streamed: bool = False


_ANSWERED = ("/chat/completions", "/responses", "/messages")


@dataclass
class _Recorder:
    """An ASGI wrapper noting each answer's status and ``X-Tierwise-Chat`` (``/v1/chat/completions``,
    ``/v1/responses``, ``/v1/messages``)."""

    app: Any
    seen: list[Seen] = field(default_factory=list)

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or not scope["path"].endswith(_ANSWERED):
            return await self.app(scope, receive, send)

        async def sending(message: Any) -> None:
            if message["type"] == "http.response.start":
                headers = {k.decode().lower(): v.decode() for k, v in message.get("headers", [])}
                streamed = headers.get("content-type", "").startswith("text/event-stream")
                chat = headers.get("x-tierwise-chat")
                self.seen.append(Seen(message["status"], chat, scope["path"], streamed))
            await send(message)

        return await self.app(scope, receive, sending)


class Tierwise:
    """tierwise served on loopback: ``url`` (ends in ``/v1``) for the clients, ``seen`` its answers."""

    def __init__(self, base: str, recorder: _Recorder) -> None:
        self.base = base
        self.url = f"{base}/v1"
        self._recorder = recorder

    @property
    def seen(self) -> list[Seen]:
        """Every ``/v1`` answer so far, in order."""
        return list(self._recorder.seen)

    @property
    def chats_seen(self) -> set[str]:
        """The ``X-Tierwise-Chat`` of every answered request (the chats the requests continued)."""
        return {s.chat for s in self._recorder.seen if s.chat}

    def chats(self, *, messages: int | None = None, timeout: float = 10.0) -> list[dict[str, Any]]:
        """``GET /api/chats`` with the earlier branches, once ``messages`` are stored (answers are
        stored in the background) or, without it, once there is a chat."""
        deadline = time.monotonic() + timeout
        while True:
            listed = loopback().get(f"{self.base}/api/chats", params={"include_superseded": "true"})
            listed.raise_for_status()
            chats: list[dict[str, Any]] = listed.json()["chats"]
            stored = sum(c["message_count"] for c in chats)
            ready = stored >= messages if messages is not None else bool(chats)
            if ready or time.monotonic() > deadline:
                return chats
            time.sleep(0.05)


@functools.cache
def loopback() -> httpx.Client:
    """One client for the suite's reads of the served app (each new client builds an SSL context, ~30 ms)."""
    return httpx.Client(timeout=10)


Serve = Callable[..., Tierwise]
"""The ``tierwise`` fixture: ``tierwise(model=…, budget=…, reserve=…)`` serves the app over the upstream."""


def store_template(directory: Path) -> Path:
    """An empty, migrated SQLite store in ``directory``, to copy for each served app (a copy opens in
    ~0.03 s; a new store runs the migrations, ~0.25 s)."""
    path = directory / "template.db"
    Store.open(f"sqlite:///{path}").close()
    return path


@contextmanager
def served(
    provider: Provider, store_path: Path, *, budget: int = BUDGET, reserve: int = RESERVE
) -> Iterator[Tierwise]:
    """tierwise over ``provider`` on loopback, its SQLite store at ``store_path`` (a copy of a template);
    the app and the store closed at the end."""
    store = Store.open(f"sqlite:///{store_path}")
    try:
        engine = ChatEngine(store, provider, budget=Budget(window=budget, reserve=reserve))
        recorder = _Recorder(create_app(store, engine))
        with serve_in_thread(recorder) as base:
            yield Tierwise(base, recorder)
    finally:
        store.close()


@contextmanager
def serving(upstream: FakeOpenAI, template: Path, directory: Path) -> Iterator[Serve]:
    """A factory of served apps over ``upstream``, each on a copy of ``template`` in ``directory``;
    every app and store closed at the end."""
    numbers = itertools.count()
    with ExitStack() as opened:

        def serve(*, model: str = BIG_MODEL, budget: int = BUDGET, reserve: int = RESERVE) -> Tierwise:
            path = directory / f"tierwise-{next(numbers)}.db"
            shutil.copyfile(template, path)
            provider = OpenAICompatProvider(base_url=upstream.url, api_key="k", model=model)
            return opened.enter_context(served(provider, path, budget=budget, reserve=reserve))

        yield serve


# -- the cases: what the upstream answers, and what it must have received ------------------------


def _tool_messages(body: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [m for m in body["messages"] if m.get("role") == "tool"]


def _tool_names(body: Mapping[str, Any]) -> list[str]:
    return [t["function"]["name"] for t in body.get("tools") or ()]


def script_tool_round(upstream: FakeOpenAI) -> None:
    """The model calls ``get_weather(Paris)``, then answers."""
    upstream.script(
        FakeReply(tool_calls=[{"id": "call_paris", "name": "get_weather", "arguments": {"city": "Paris"}}]),
        ANSWER,
    )


def check_tool_round(upstream: FakeOpenAI) -> None:
    """The tool's result reached the upstream after its call; the tool was offered both times."""
    first, second = upstream.requests
    assert _tool_names(first) == _tool_names(second) == ["get_weather"]
    (call,) = second["messages"][-2]["tool_calls"]
    assert (call["id"], call["function"]["name"]) == ("call_paris", "get_weather")
    assert json.loads(call["function"]["arguments"]) == {"city": "Paris"}
    assert second["messages"][-1] == {
        "role": "tool",
        "tool_call_id": "call_paris",
        "content": weather("Paris"),
    }


def script_parallel(upstream: FakeOpenAI, *, interleave: bool = True) -> None:
    """The model calls ``get_weather`` for Paris and Tokyo at once (pieces interleaved), then answers."""
    calls = [
        {"id": "call_paris", "name": "get_weather", "arguments": {"city": "Paris"}},
        {"id": "call_tokyo", "name": "get_weather", "arguments": {"city": "Tokyo"}},
    ]
    upstream.script(FakeReply(tool_calls=calls, interleave=interleave), "Paris and Tokyo are both sunny.")


def check_parallel(upstream: FakeOpenAI) -> None:
    """Both calls went back in one assistant message, each followed by its result."""
    _first, second = upstream.requests
    calls = second["messages"][-3]["tool_calls"]
    assert [(c["id"], json.loads(c["function"]["arguments"])) for c in calls] == [
        ("call_paris", {"city": "Paris"}),
        ("call_tokyo", {"city": "Tokyo"}),
    ]
    results = {m["tool_call_id"]: m["content"] for m in second["messages"][-2:]}
    assert results == {"call_paris": weather("Paris"), "call_tokyo": weather("Tokyo")}


STRUCTURED = {"city": "Paris", "temperature_c": 18, "sunny": True}


def check_structured(upstream: FakeOpenAI) -> dict[str, Any]:
    """The client's ``json_schema`` response format reached the upstream as sent; returns the schema."""
    body = upstream.requests[-1]
    response_format = body["response_format"]
    assert response_format["type"] == "json_schema"
    schema: dict[str, Any] = response_format["json_schema"]["schema"]
    assert set(schema["properties"]) >= set(STRUCTURED)
    return schema


"""A 30k-token result under a 16k budget, to a 128k model: sent whole (decision 68 counts the step)."""


def big_result() -> str:
    """A tool result of about 30,000 tokens: distinct numbered lines, so a cut shows where it is."""
    lines = [f"row {i:05d}: build artefact {i * 7919 % 100_003:06d} checksum ok" for i in range(2_140)]
    return "\n".join(lines)


def script_big_result(upstream: FakeOpenAI) -> None:
    """The model asks for the artefact list (the client's ``read_artifacts``), then answers."""
    upstream.script(
        FakeReply(tool_calls=[{"id": "call_big", "name": "read_artifacts", "arguments": {}}]),
        "The artefacts are all there.",
    )


def check_big_result(upstream: FakeOpenAI, *, whole: bool) -> None:
    """The step being answered reached the upstream: whole, or its head and tail with a pointer."""
    assert abs(get_counter().count(big_result()) - BIG_TOKENS) < 3_000
    sent = _tool_messages(upstream.requests[-1])[-1]["content"]
    if whole:
        assert sent == big_result()
        return
    lines = big_result().splitlines()
    assert lines[0] in sent and lines[-1] in sent  # its head and its tail
    assert len(sent) < len(big_result()) // 2
    digest = hashlib.sha256(big_result().encode()).hexdigest()
    assert f'open_blob(sha256="{digest}")' in sent  # the pointer to the rest
    assert "open_blob" in _tool_names(upstream.requests[-1])  # and the tool that follows it


def script_recall(upstream: FakeOpenAI) -> None:
    """``open_blob`` (tierwise's, answered by tierwise), the client's ``read_log``, then the answer."""
    upstream.script(
        FakeReply(tool_calls=[{"id": "call_blob", "name": "open_blob", "arguments": {"sha256": sha(11)}}]),
        FakeReply(tool_calls=[{"id": "call_read", "name": "read_log", "arguments": {"worker": 12}}]),
        RECALL_ANSWER,
    )


def check_recall(upstream: FakeOpenAI) -> None:
    """tierwise answered ``open_blob`` with the blob, the client's tool came back, ours was not resent."""
    blob, client_tool, final = upstream.requests
    assert _tool_names(blob)[-2:] == ["open_blob", "recall_segments"]
    assert client_tool["messages"][-1]["content"] == log(11)
    assert final["messages"][-2]["tool_calls"][0]["id"] == "call_read"
    assert "worker 12" in final["messages"][-1]["content"]
    assert "call_blob" not in json.dumps(final["messages"])


def read_log(worker: int) -> str:
    """What every client's ``read_log`` tool returns."""
    return f"the build log of worker {worker}: step 36 took 36ms"


LOOP_STEPS = 40
LOOP_TASK = "Fix the failing tests in src/app; run them after each change."


def loop_arguments(step: int) -> str:
    """A step's arguments as the model sends them: compact, keys not sorted (clients re-serialise them)."""
    arguments = {"step": step, "path": f"src/app/mod_{step % 7}.py", "opts": {"z": 1, "a": [step]}}
    return json.dumps(arguments, separators=(",", ":"))


def loop_output(step: int) -> str:
    """What the client's ``run`` tool returns at ``step``: ~600 tokens, so the loop outgrows 16k."""
    return "\n".join(f"step {step} line {j}: test_{j:03d} passed in {j % 13}ms" for j in range(40))


def script_agent_loop(upstream: FakeOpenAI) -> None:
    """``LOOP_STEPS`` calls of the client's ``run`` tool, one a step, then the answer."""
    for step in range(LOOP_STEPS):
        call = {"id": f"call_{step:02d}", "name": "run", "arguments": loop_arguments(step)}
        upstream.script(FakeReply(tool_calls=[call]))
    upstream.script("All tests pass.")


def check_agent_loop(server: Tierwise, upstream: FakeOpenAI) -> None:
    """Every request of the loop continued one chat, and the store holds that chat only."""
    assert len(upstream.requests) == LOOP_STEPS + 1
    assert [s.status for s in server.seen] == [200] * (LOOP_STEPS + 1)
    (chat,) = server.chats_seen  # X-Tierwise-Chat: the same chat for all 41 requests
    stored = 1 + 2 * LOOP_STEPS + 1  # the task, each call and its result, the answer
    chats = server.chats(messages=stored)
    assert [(c["id"], c["context_type"]) for c in chats] == [(chat, "api")]  # no earlier branch
    assert chats[0]["message_count"] == stored
