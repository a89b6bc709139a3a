"""The web UI's finish (issue 17) in headless Chromium: the API-key field, markdown, a phone-sized
layout with the dashboard as a drawer, the dashboard refreshing live during a turn, example prompts,
housekeeping calls by name, the model in the header.

Same browser as ``test_browser.py`` (Debian's chromium, installed with apt-get when missing and root);
screenshots go to ``$TIERWISE_ARTIFACTS`` (default ``test-artifacts/``).
"""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.server.test_browser import _shot, browser, list_tasks
from tierwise.budget import Budget
from tierwise.chat.engine import ChatEngine
from tierwise.chat.terminal import local_user
from tierwise.providers import TextDelta
from tierwise.providers.testing import Script, ScriptedModel, tool_call
from tierwise.server import create_app
from tierwise.server.keys import create_key
from tierwise.server.threaded import serve_in_thread
from tierwise.store import Store

__all__ = ["browser"]  # the module-scoped fixture, shared with test_browser.py

MARKDOWN = """Plan for *Friday*, with **two** things left:

- [x] Book the venue
- [ ] Send the invites
  - [ ] to the team

1. first
2. second

Run `tierwise serve`, then:

```bash
tierwise chat <b>not bold</b>
```

<img src=x onerror="window.pwned=1"> [safe](https://example.com) [bad](javascript:alert(1))"""


@pytest.fixture
def app_parts(tmp_path: Path) -> Iterator[tuple[Store, ScriptedModel, ChatEngine]]:
    store = Store.open(f"sqlite:///{tmp_path / 'ui.db'}")
    model = ScriptedModel(model="scripted-7b")
    engine = ChatEngine(store, model, tools=[list_tasks], budget=Budget(window=8_000, reserve=500))
    yield store, model, engine
    store.close()


def _errors(page: Any) -> list[str]:
    """The page's uncaught errors and console errors, collected as they happen."""
    seen: list[str] = []
    page.on("pageerror", lambda error: seen.append(str(error)))
    page.on("console", lambda m: seen.append(m.text) if m.type == "error" and "401" not in m.text else None)
    return seen


def test_require_key_mode_asks_for_a_key_and_shows_refusals(browser: Any, app_parts: Any) -> None:
    store, model, engine = app_parts
    key, _ = create_key(store, local_user(store), "browser")
    model.enqueue("Hello with a key.")
    with serve_in_thread(create_app(store, engine, require_key=True)) as url:
        with urllib.request.urlopen(f"{url}/api/info") as response:  # readable without a key
            info = json.loads(response.read())
        assert info == {"model": "scripted-7b", "offline": False, "label": "scripted-7b", "requireKey": True}
        page = browser.new_page(viewport={"width": 1280, "height": 800})
        page.goto(url)
        page.locator("#key-form").wait_for(state="visible")
        assert "API key" in page.locator("#key-status").inner_text()
        _shot(page, "key-prompt")

        page.get_by_label("API key").fill("tw-not-a-real-key")
        page.keyboard.press("Enter")
        page.locator("#key-status", has_text="401").wait_for()
        assert page.locator("#key-form").is_visible()
        _shot(page, "key-refused")

        page.get_by_label("API key").fill(key)
        page.keyboard.press("Enter")
        page.locator("#key-form").wait_for(state="hidden")
        page.locator("#messages li.empty").wait_for()
        page.get_by_label("Message").fill("hi")
        page.keyboard.press("Enter")
        page.locator("#messages li.assistant", has_text="Hello with a key.").wait_for(timeout=30_000)
        assert page.evaluate("localStorage.getItem('tierwise.apiKey')") == key

        # The key is revoked elsewhere (here: replaced by a wrong one): the next send says so, visibly.
        page.evaluate("localStorage.setItem('tierwise.apiKey', 'tw-revoked')")
        page.locator("#send").wait_for(state="visible", timeout=30_000)
        page.get_by_label("Message").fill("still there?")
        page.keyboard.press("Enter")
        page.locator("#messages li.error", has_text="401").wait_for()
        page.locator("#key-form").wait_for(state="visible")
        _shot(page, "key-send-refused")


def test_rate_limit_and_network_errors_are_shown(browser: Any, app_parts: Any) -> None:
    store, _, engine = app_parts
    with serve_in_thread(create_app(store, engine, rate_limit=1)) as url:
        page = browser.new_page(viewport={"width": 1280, "height": 800})
        page.goto(url)
        page.locator("#notice", has_text="429").wait_for(timeout=30_000)
        assert "wait" in page.locator("#notice").inner_text()
        _shot(page, "rate-limited")
    # the server is gone: a send says it cannot reach it
    page.locator("#notice-close").click()
    page.get_by_label("Message").fill("anyone?")
    page.keyboard.press("Enter")
    page.locator("#notice, #messages li.error", has_text="Cannot reach the server").first.wait_for(
        timeout=30_000
    )
    _shot(page, "server-gone")


def test_markdown_is_rendered_and_safe(browser: Any, app_parts: Any) -> None:
    store, model, engine = app_parts
    model.enqueue(MARKDOWN)
    with serve_in_thread(create_app(store, engine)) as url:
        page = browser.new_page(viewport={"width": 1280, "height": 800})
        errors = _errors(page)
        page.goto(url)
        page.get_by_label("Message").fill("What is left for Friday?")
        page.keyboard.press("Enter")
        answer = page.locator("#messages li.assistant").last
        answer.locator("pre code").wait_for(timeout=30_000)
        assert answer.locator("em", has_text="Friday").count() == 1
        assert answer.locator("strong", has_text="two").count() == 1
        checks = answer.locator("li.check input[type=checkbox]")
        assert checks.count() == 3
        assert [checks.nth(i).is_checked() for i in range(3)] == [True, False, False]
        assert answer.locator("ul ul li.check", has_text="to the team").count() == 1  # nested by indent
        assert answer.locator("ol li").count() == 2
        assert answer.locator("code", has_text="tierwise serve").count() == 1
        assert "<b>not bold</b>" in answer.locator("pre code").inner_text()
        assert answer.locator("b, img, script").count() == 0
        assert answer.locator("a[href='https://example.com']").count() == 1
        assert answer.locator("a[href^='javascript']").count() == 0
        assert page.evaluate("window.pwned") is None
        _shot(page, "markdown")
        assert errors == []


def test_phone_layout_drawers_examples_and_model(browser: Any, app_parts: Any) -> None:
    store, model, engine = app_parts
    model.enqueue("Your high priority tasks: none yet.")
    with serve_in_thread(create_app(store, engine)) as url:
        for width in (390, 360):  # at 360 the chat of the 390 run is open
            page = browser.new_page(viewport={"width": width, "height": 760})
            errors = _errors(page)
            page.goto(url)
            page.locator("#messages li.empty .examples button, #messages li.assistant").first.wait_for()
            assert "scripted-7b" in page.locator("#model").inner_text()
            assert page.locator("#chats").is_hidden() and page.locator("#dashboard").is_hidden()
            for selector in ("#input", "#send", "#toggle-chats", "#toggle-dashboard"):
                box = page.locator(selector).bounding_box()
                assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= width + 0.5, selector
                assert box["y"] + box["height"] <= 760, selector
            assert page.evaluate("document.documentElement.scrollWidth") <= width
            if width == 390:
                _shot(page, "phone-empty-examples")
                page.locator(".examples button", has_text="high priority").click()
                page.locator("#messages li.assistant", has_text="none yet").wait_for(timeout=30_000)
                page.locator("#send").wait_for(state="visible", timeout=30_000)
                page.get_by_role("button", name="☰ Chats").click()
                page.locator("#chats").wait_for(state="visible")
                assert page.locator("#chat-list li").count() == 1
                _shot(page, "phone-chats-drawer")
                page.locator("#chat-list a").first.click()
                page.locator("#chats").wait_for(state="hidden")
                page.get_by_role("button", name="Context").click()
                page.locator("#dashboard").wait_for(state="visible")
                box = page.locator("#dashboard").bounding_box()
                assert box is not None and box["x"] + box["width"] <= width + 0.5
                page.locator("#budget-text", has_text="tokens in the last pack").wait_for()
                _shot(page, "phone-dashboard-drawer")
                page.get_by_label("Close the dashboard").click()
                page.locator("#dashboard").wait_for(state="hidden")
            page.close()
            assert errors == []


def test_dashboard_refreshes_live_during_a_turn(browser: Any, app_parts: Any) -> None:
    store, model, engine = app_parts
    words = ["The", "venue", "is", "booked", "and", "the", "invites", "go", "out", "on", "Monday."]
    model.enqueue(
        tool_call("recall_segments", ids=["S1"], form="summary"),
        Script(*(TextDelta(w + " ") for w in words), delay=0.4),
    )
    with serve_in_thread(create_app(store, engine)) as url:
        page = browser.new_page(viewport={"width": 1280, "height": 800})
        errors = _errors(page)
        page.goto(url)
        page.get_by_role("button", name="+ New chat").click()
        page.locator("#budget-text", has_text="No pack yet.").wait_for()
        page.get_by_label("Message").fill("Where are we with the offsite?")
        page.keyboard.press("Enter")
        # while the answer streams (Stop shown), the dashboard has refreshed on its own: the server's
        # status said "running", which no refresh before the turn or after it could have seen
        page.locator("#live").wait_for(state="visible", timeout=30_000)
        assert page.locator("#stop").is_visible(), page.locator("#messages").inner_text()
        status = page.evaluate(
            "async (id) => (await fetch(`/api/context/status?sessionId=${id}`)).json()",
            page.evaluate("location.hash.slice(1)"),
        )
        if status.get("tierBreakdown") is not None:  # seed 004's tiers, once the server reports them
            assert page.locator("#tiers tbody tr").count() == 4
            assert "Cost saving is" in page.locator("#strategy").inner_text()  # plain words (issue 33)
        _shot(page, "dashboard-live")
        page.locator("#send").wait_for(state="visible", timeout=30_000)
        page.locator("#live").wait_for(state="hidden", timeout=30_000)
        page.locator("#budget-text", has_text="tokens in the last pack").wait_for(timeout=30_000)
        line = page.locator("#messages li.tool").first
        assert line.inner_text().startswith("⚙ recalled S1 (summary)")
        page.reload()  # the stored call reads the same
        page.locator("#messages li.tool", has_text="recalled S1 (summary)").wait_for()
        assert "sha256" not in page.locator("#messages").inner_text()
        _shot(page, "dashboard-after-turn")
        assert errors == []


TIERS = [
    {"tier": 1, "name": "Always present", "tokens": 1200, "items": 3, "percent": 40.0, "layers": ["system"]},
    {"tier": 2, "name": "Location", "tokens": 900, "items": 1, "percent": 30.0, "layers": ["location"]},
    {
        "tier": 3,
        "name": "Recent and related",
        "tokens": 600,
        "items": 8,
        "percent": 20.0,
        "layers": ["history"],
    },
    {"tier": 4, "name": "On request", "tokens": 300, "items": 2, "percent": 10.0, "layers": ["tools"]},
]
STRATEGY = {
    "band": "caution",
    "historyMessages": 12,
    "relatedItems": 5,
    "references": "summary",
    "reason": "budget health 62%: older references as summaries",
}
COMPACTIONS = [
    {"action": "step", "threshold": 0.7, "tokens_before": 5000, "tokens_after": 5000},  # changed nothing
    {"action": "step", "threshold": 0.8, "tokens_before": 12345, "tokens_after": 6789},
    {
        "action": "summarise",
        "threshold": 0.9,
        "tokens_before": 9000,
        "tokens_after": 4000,
        "label": "S3 summarised",
    },
]


def test_dashboard_shows_tiers_strategy_and_only_compactions_that_changed(
    browser: Any, app_parts: Any
) -> None:
    """Seed 004's fields as the status route reports them (added to a real response in flight)."""
    store, model, engine = app_parts
    model.enqueue("Noted.")

    def status(route: Any) -> None:
        body = route.fetch().json()
        body |= {
            "budgetPercent": 40.0,
            "tierBreakdown": TIERS,
            "strategy": STRATEGY,
            "currentContext": {"type": "project", "entityId": "p1", "name": "Offsite 2026", "tokens": 1234},
            "tokenLimit": 7500,
        }
        route.fulfill(json=body)

    def detail(route: Any) -> None:
        body = route.fetch().json()
        route.fulfill(json={**body, "compactions": COMPACTIONS})

    with serve_in_thread(create_app(store, engine)) as url:
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.route("**/api/context/status?*", status)
        page.route("**/api/chats/*/context", detail)
        page.goto(url)
        page.get_by_label("Message").fill("Note the venue")
        page.keyboard.press("Enter")
        page.locator("#messages li.assistant", has_text="Noted.").wait_for(timeout=30_000)
        page.locator("#send").wait_for(state="visible", timeout=30_000)  # the turn over: no refresh
        page.locator("#live").wait_for(state="hidden", timeout=30_000)  # replaces the table meanwhile
        page.locator("#tiers tbody tr").nth(3).wait_for()
        cells = page.locator("#tiers tbody tr").nth(0).locator("td").all_inner_texts()
        assert [c.strip() for c in cells[:4]] == ["1", "Always present", "1,200", "3"], cells
        last = page.locator("#tiers tbody tr").nth(3).inner_text()
        assert "On request" in last and "10%" in last
        strategy = page.locator("#strategy").inner_text()
        assert strategy.startswith("Cost saving is on (caution):"), strategy  # plain words (issue 33)
        keeps = "at most the last 12 messages, at most 5 related items and recalled turns as summaries"
        assert keeps in strategy
        title = page.locator("#strategy").get_attribute("title") or ""  # the technical terms, and why
        assert "pruning band: caution" in title and "references summary" in title
        assert "budget health 62%" in title
        assert (
            page.locator("#current-context").inner_text() == "Context: Project · Offsite 2026 (1,234 tokens)"
        )
        assert page.locator("#compactions li").all_inner_texts() == [
            "step at 0.8: 12,345 → 6,789 tokens",
            "S3 summarised",
        ]
        _shot(page, "dashboard-tiers")
