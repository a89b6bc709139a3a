"""The context dashboard a person can read (issue 33): a labelled tokens-per-turn chart, one cache
figure saying where it comes from, the last prompt's tokens in words, plain words for the strategy,
empty states that say what will appear, and on a phone a backdrop behind a drawer and a header that
fits; the key field's placeholder shows the real key prefix.

Same browser as ``test_browser.py`` (Debian's chromium); the screenshots ``dashboard-1280.png``,
``dashboard-390.png`` and ``dashboard-390-drawer.png`` go to ``$TIERWISE_ARTIFACTS``.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.server.test_browser import _shot, browser, list_tasks
from tierwise.budget import Budget
from tierwise.chat.engine import ChatEngine
from tierwise.chat.terminal import local_user
from tierwise.providers.testing import ScriptedModel, tool_call
from tierwise.server import create_app
from tierwise.server.keys import KEY_PREFIX
from tierwise.server.threaded import serve_in_thread
from tierwise.store import Store
from tierwise.tokens import get_counter

__all__ = ["browser"]  # the module-scoped fixture, shared with test_browser.py

QUESTION = "What is left for the offsite?"
JARGON = ("Strategy:", "band none", "references full", "band caution")

# Each section's visible text: what follows an h3 up to the next one, without table headers.
SECTIONS = """() => [...document.querySelectorAll('#dashboard h3')].map((h) => {
  let text = '';
  for (let n = h.nextElementSibling; n && n.tagName !== 'H3'; n = n.nextElementSibling) {
    if (n.checkVisibility && !n.checkVisibility()) continue;
    const clone = n.cloneNode(true);
    clone.querySelectorAll('thead').forEach((t) => t.remove());
    text += ' ' + (n.tagName === 'TABLE' ? clone.textContent : n.innerText);
  }
  return [h.innerText, text.trim()];
})"""

# Tables shown with a header and no rows.
HEADER_ONLY = """() => [...document.querySelectorAll('#dashboard table')]
  .filter((t) => t.checkVisibility() && t.querySelectorAll('tbody tr').length === 0).map((t) => t.id)"""


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[str, ScriptedModel]]:
    store = Store.open(f"sqlite:///{tmp_path / 'dash.db'}")
    local_user(store)
    model = ScriptedModel(model="scripted-7b")
    engine = ChatEngine(store, model, tools=[list_tasks], budget=Budget(window=8_000, reserve=500))
    with serve_in_thread(create_app(store, engine)) as base:
        yield base, model
    store.close()


@pytest.fixture
def reference(tmp_path: Path) -> Iterator[str]:
    """``tierwise serve`` as a newcomer meets it: the offline assistant over the sample workspace."""
    from tierwise.workspace.app import assistant_engine, ensure_sample
    from tierwise.workspace.assistant import OfflineAssistant

    store = Store.open(f"sqlite:///{tmp_path / 'ref.db'}")
    ensure_sample(store, local_user(store))
    engine = assistant_engine(store, OfflineAssistant())
    with serve_in_thread(create_app(store, engine)) as base:
        yield base
    store.close()


def _ask(page: Any, text: str) -> None:
    """Send ``text`` and wait for its answer and the dashboard's refresh after it."""
    answers = page.locator("#messages li.assistant").count()
    page.get_by_label("Message").fill(text)
    page.keyboard.press("Enter")
    page.locator("#messages li.assistant").nth(answers).wait_for(timeout=30_000)
    page.locator("#send").wait_for(state="visible", timeout=30_000)
    page.wait_for_load_state("networkidle")


def _detail(page: Any) -> dict[str, Any]:
    return page.evaluate(  # type: ignore[no-any-return]
        "async () => (await fetch(`/api/chats/${location.hash.slice(1)}/context`)).json()"
    )


def _cache_lines(text: str) -> list[str]:
    """Lines that give a cache share: a percentage beside a word about caching or repeating."""
    return [line for line in text.splitlines() if re.search(r"\d%", line) and re.search(r"cach|repeat", line)]


def test_empty_dashboard_says_what_will_appear(browser: Any, served: tuple[str, ScriptedModel]) -> None:
    url, _ = served
    page = browser.new_page(viewport={"width": 1280, "height": 1400})
    page.goto(url)
    page.get_by_role("button", name="+ New chat").click()
    page.wait_for_function("location.hash.length > 1")
    page.wait_for_load_state("networkidle")  # the new chat's dashboard refresh is in
    assert page.evaluate(HEADER_ONLY) == []  # no table of headers alone
    for heading, text in page.evaluate(SECTIONS):
        assert len(text) >= 30 and "appear" in text, (heading, text)  # says what comes, and when
    _shot(page, "dashboard-empty-1280")
    assert page.locator("#key-input").get_attribute("placeholder").startswith(KEY_PREFIX)


def test_dashboard_after_turns_reads_in_plain_words(browser: Any, served: tuple[str, ScriptedModel]) -> None:
    url, model = served
    model.enqueue(tool_call("list_tasks", limit=2), "Two tasks: book the venue, send invites.", "Yes.")
    page = browser.new_page(viewport={"width": 1280, "height": 1500})
    page.goto(url)
    page.get_by_role("button", name="+ New chat").click()
    _ask(page, QUESTION)
    _ask(page, "Is the venue booked?")
    page.locator("#turns .bar").nth(1).wait_for(timeout=30_000)
    detail = _detail(page)
    turns = detail["turns"]
    dashboard = page.locator("#dashboard").inner_text()

    # 1. the chart: an axis with token values, each bar's value, a legend, the turn numbers
    ticks = [t.replace(",", "") for t in page.locator("#turns .axis .tick").all_text_contents()]
    assert len(ticks) >= 2 and all(re.fullmatch(r"\d+k?", t) for t in ticks), ticks
    values = page.locator("#turns .value").all_text_contents()
    assert values == [f"{t['prompt_tokens'] + t['completion_tokens']:,}" for t in turns], values
    assert page.locator("#turns .turn-label").all_text_contents() == ["1", "2"]
    titles = page.locator("#turns .bar > title").all_text_contents()
    assert titles[0].startswith("Turn 1:") and f"{turns[0]['prompt_tokens']:,} sent" in titles[0], titles
    legend = page.locator("#turns-legend").inner_text()
    assert "sent to the model" in legend and "answer" in legend, legend

    # 2. one cache figure, saying where it comes from (ScriptedModel reports no cached tokens)
    lines = _cache_lines(dashboard)
    assert len(lines) == 1, lines
    assert "expected, from the shared prefix" in lines[0] and "reported by the model" not in dashboard

    # 3. the last prompt's tokens in words: the question, the tool call's round trip, the rest
    layers = {layer["kind"]: layer["tokens"] for layer in detail["pack"]["layers"]}
    words = page.locator("#breakdown .sentence").inner_text()
    assert words.startswith(f"{detail['pack']['total_tokens']:,} tokens sent to the model"), words
    question = get_counter().count_message({"role": "user", "content": "Is the venue booked?"})
    assert f"{question:,} your question" in words, words
    assert f"{layers['tools']:,} tool definitions" in words and f"{layers['system']:,} instructions" in words

    # 4. no jargon; the technical terms stay available as a title
    assert not [j for j in JARGON if j in dashboard], dashboard
    assert "band" in (page.locator("#strategy").get_attribute("title") or "")
    _whole_dashboard(page)
    _shot(page, "dashboard-1280")


def test_cache_figure_reported_by_the_model(browser: Any, tmp_path: Path) -> None:
    store = Store.open(f"sqlite:///{tmp_path / 'cache.db'}")
    model = ScriptedModel(model="cached-7b", cache="prefix")
    model.enqueue("First.", "Second.")
    engine = ChatEngine(store, model, tools=[list_tasks], budget=Budget(window=8_000, reserve=500))
    with serve_in_thread(create_app(store, engine)) as url:
        page = browser.new_page(viewport={"width": 1280, "height": 1400})
        page.goto(url)
        _ask(page, "Hello there")
        _ask(page, "And again")
        page.locator("#turns .bar").nth(1).wait_for(timeout=30_000)
        page.locator("#usage", has_text="reported by the model").wait_for(timeout=30_000)
        lines = _cache_lines(page.locator("#dashboard").inner_text())
        assert len(lines) == 1 and "reported by the model" in lines[0], lines
        assert "expected" not in lines[0]
        assert "read from the cache" in page.locator("#turns-legend").inner_text()
    store.close()


def _header_fits(page: Any) -> None:
    """Every part of the header whole (nothing cut or hidden by overflow) and on the screen."""
    fits = page.evaluate(
        """() => [...document.querySelectorAll('header > *')].filter((e) => e.checkVisibility())
          .map((e) => [e.id || e.tagName,
                       e.scrollWidth <= e.clientWidth + 1 && e.scrollHeight <= e.clientHeight + 1,
                       e.getBoundingClientRect().right <= innerWidth + 0.5])"""
    )
    assert all(ok and inside for _, ok, inside in fits), fits
    assert "offline assistant (no AI model)" in page.locator("#model").inner_text().replace("\xa0", " ")


def test_phone_drawers_have_a_backdrop_and_the_header_fits(browser: Any, reference: str) -> None:
    narrow = browser.new_page(viewport={"width": 360, "height": 760})  # the narrowest layout
    narrow.goto(reference)
    narrow.locator("#model", has_text="offline assistant").wait_for()
    _header_fits(narrow)
    narrow.close()
    page = browser.new_page(viewport={"width": 390, "height": 844})
    page.goto(reference)
    page.locator("#messages li.empty .examples button").first.wait_for(timeout=30_000)
    page.locator("#model", has_text="offline assistant").wait_for()
    _header_fits(page)
    _ask(page, "What are my high priority tasks?")
    _ask(page, "Show me my active projects")
    _shot(page, "dashboard-390")

    page.get_by_role("button", name="Context").click()
    page.locator("#dashboard").wait_for(state="visible")
    page.locator("#turns .bar").nth(1).wait_for(timeout=30_000)
    assert page.locator("#backdrop").is_visible()
    _shot(page, "dashboard-390-drawer")
    page.locator("#turns").scroll_into_view_if_needed()
    page.screenshot(path=str(Path(_artifacts()) / "dashboard-390-drawer-chart.png"))
    lines = _cache_lines(page.locator("#dashboard").inner_text())
    assert len(lines) == 1 and "reported by the model" in lines[0], lines  # the offline assistant reports
    page.mouse.click(12, 600)  # the backdrop, left of the drawer
    page.locator("#dashboard").wait_for(state="hidden")
    assert not page.locator("#backdrop").is_visible()

    page.get_by_role("button", name="☰ Chats").click()
    page.locator("#chats").wait_for(state="visible")
    assert page.locator("#backdrop").is_visible()
    page.mouse.click(380, 600)  # right of the chat list
    page.locator("#chats").wait_for(state="hidden")
    assert page.locator("#messages li.assistant").count() == 2  # the tap only closed the drawer

    wide = browser.new_page(viewport={"width": 1280, "height": 900})  # the same chat on a desktop
    wide.goto(page.url)
    wide.locator("#turns .bar").nth(1).wait_for(timeout=30_000)
    wide.wait_for_load_state("networkidle")
    _whole_dashboard(wide)
    _shot(wide, "dashboard-1280-reference")


def _whole_dashboard(page: Any) -> None:
    """Make the window tall enough for the whole dashboard, so its screenshot shows every section."""
    height = page.evaluate(
        "document.querySelector('header').offsetHeight + document.querySelector('#dashboard').scrollHeight"
    )
    page.set_viewport_size({"width": page.viewport_size["width"], "height": max(800, height + 8)})


def _artifacts() -> str:
    from tests.server.test_browser import ARTIFACTS

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    return str(ARTIFACTS)


def test_context_detail_says_what_the_turn_input_holds(tmp_path: Path) -> None:
    """The route under the words: the question's tokens and the tools the turn called (no browser)."""
    import json
    import urllib.request

    store = Store.open(f"sqlite:///{tmp_path / 'detail.db'}")
    model = ScriptedModel()
    model.enqueue(tool_call("list_tasks", limit=2), "Two.", "Yes.")
    engine = ChatEngine(store, model, tools=[list_tasks], budget=Budget(window=8_000, reserve=500))

    def call(url: str, body: dict[str, Any] | None = None) -> bytes:
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(url, data=data, headers={"content-type": "application/json"})
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.read()  # type: ignore[no-any-return]  # a stream: read to its end

    packs = []
    with serve_in_thread(create_app(store, engine)) as url:
        chat = json.loads(call(f"{url}/api/chats", {}))["id"]
        for turns, question in enumerate((QUESTION, "Booked?"), 1):
            call(f"{url}/api/chats/{chat}/messages", {"content": question})
            deadline = time.monotonic() + 10
            while len((detail := json.loads(call(f"{url}/api/chats/{chat}/context")))["turns"]) < turns:
                assert time.monotonic() < deadline, detail  # the turn's records follow its answer
                time.sleep(0.05)
            packs.append(detail["pack"])
    store.close()
    first, second = packs
    count = get_counter().count_message
    assert first["input"] == {
        "question_tokens": count({"role": "user", "content": QUESTION}),
        "tool_calls": ["list_tasks"],
    }
    inputs = [layer["tokens"] for layer in first["layers"] if layer["kind"] == "input"]
    assert inputs and inputs[0] > first["input"]["question_tokens"]  # the rest: the call and its result
    booked = count({"role": "user", "content": "Booked?"})
    assert second["input"] == {"question_tokens": booked, "tool_calls": []}
