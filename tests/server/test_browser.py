"""The web UI in headless Chromium (Playwright for Python, Debian's chromium): chat, stream, stop, dashboard,
chats on a project or task, rename, delete, usage.

The browser comes from Debian (``/usr/bin/chromium``); if it is missing, the test setup installs it
with apt-get (as root). Screenshots go to ``$TIERWISE_ARTIFACTS`` (default ``test-artifacts/``).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tierwise.budget import Budget
from tierwise.chat.engine import ChatEngine
from tierwise.chat.terminal import local_user
from tierwise.providers import TextDelta
from tierwise.providers.pricing import Price
from tierwise.providers.testing import Script, ScriptedModel, tool_call
from tierwise.server import create_app
from tierwise.server.threaded import free_port, serve_in_thread
from tierwise.store import Store
from tierwise.tools import tool
from tierwise.workspace.repository import Workspace

ARTIFACTS = Path(os.environ.get("TIERWISE_ARTIFACTS", "test-artifacts"))
FLAGS = [
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def _unavailable(reason: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(f"{reason} (CI must run the browser tests)", pytrace=False)
    pytest.skip(reason)


def _chromium() -> str | None:
    found = shutil.which("chromium") or ("/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else None)
    if found or not hasattr(os, "geteuid") or os.geteuid() != 0 or not shutil.which("apt-get"):
        return found
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    subprocess.run(["apt-get", "update", "-qq"], capture_output=True, timeout=600, env=env)
    subprocess.run(["apt-get", "install", "-y", "-qq", "chromium"], capture_output=True, timeout=900, env=env)
    return shutil.which("chromium")


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _unavailable("playwright is not installed: pip install -e '.[dev]'")
    executable = _chromium()
    if executable is None:
        _unavailable(
            "Debian's chromium is not installed and could not be installed (apt-get install chromium)"
        )
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=executable, args=FLAGS, headless=True)
        yield launched
        launched.close()


@tool(tier="list")
def list_tasks(limit: int = 20) -> list[str]:
    """List tasks."""
    return ["Book venue", "Send invites"][:limit]


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[str, ScriptedModel]]:
    store = Store.open(f"sqlite:///{tmp_path / 'ui.db'}")
    model = ScriptedModel()
    engine = ChatEngine(store, model, tools=[list_tasks], budget=Budget(window=8_000, reserve=500))
    with serve_in_thread(create_app(store, engine)) as base:
        yield base, model
    store.close()


def _shot(page: Any, name: str) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)


def test_chat_stream_tool_stop_and_dashboard(browser: Any, served: tuple[str, ScriptedModel]) -> None:
    url, model = served
    model.enqueue(
        tool_call("list_tasks", limit=2),
        Script(
            *(
                TextDelta(w)
                for w in re.findall(r"\S+\s*", "Two tasks left: **book the venue** and send invites.")
            ),
            delay=0.05,
        ),
        Script(TextDelta("The venue "), TextDelta("is booked, and "), TextDelta("more."), delay=3),
    )
    page = browser.new_page(viewport={"width": 1280, "height": 800})
    page.goto(url)
    page.get_by_role("button", name="+ New chat").click()
    page.get_by_label("Message").fill("What is left for the offsite?")
    page.keyboard.press("Enter")
    page.locator("#messages li.tool", has_text="list_tasks").wait_for(timeout=30_000)
    page.locator("#messages li.assistant strong", has_text="book the venue").wait_for(timeout=30_000)
    page.locator("#send").wait_for(state="visible", timeout=30_000)
    _shot(page, "chat-answer")
    assert page.locator("#chat-list li").count() == 1  # typing right after "New chat" used that chat

    page.get_by_label("Message").fill("Is the venue booked?")
    page.keyboard.press("Enter")
    page.locator("#messages li.assistant", has_text="The venue").last.wait_for(timeout=30_000)
    assert page.locator("#stop").is_visible()
    page.locator("#stop").click()
    page.locator("#messages li.tool", has_text="stopped").wait_for(timeout=30_000)
    assert "more." not in page.locator("#messages").inner_text()
    _shot(page, "chat-stopped")

    assert page.locator("#breakdown .legend").inner_text().count("\n") >= 2
    assert "tokens in the last pack" in page.locator("#budget-text").inner_text()
    assert page.locator("#layers tbody tr").count() >= 3
    assert page.locator("#turns .bar").count() == 2
    # the second turn's pack starts with the first's: the expected cache hit, the chat's one cache figure
    assert "expected" in page.locator("#usage dd", has_text="of prompt tokens").inner_text()
    assert "repeated from the previous prompt" in page.locator("#turns-legend").inner_text()
    _shot(page, "dashboard")

    phone = browser.new_page(viewport={"width": 390, "height": 844})
    phone.goto(url)
    phone.get_by_role("button", name="Context").click()
    phone.locator("#dashboard").wait_for(state="visible")
    _shot(phone, "phone-dashboard")


def test_tierwise_serve_chats_with_the_offline_assistant(browser: Any, tmp_path: Path) -> None:
    import json
    import sys
    import urllib.request

    port = free_port()
    child = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tierwise.cli",
            "serve",
            "--port",
            str(port),
            "--db",
            f"sqlite:///{tmp_path / 's.db'}",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/chats", timeout=2) as response:
                    json.loads(response.read())
                break
            except OSError:
                time.sleep(0.2)
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.goto(f"http://127.0.0.1:{port}/")
        page.locator("#model", has_text="offline assistant").wait_for()  # who answers, in the header
        page.locator("#messages li.empty .examples button").first.wait_for()
        page.get_by_label("Message").fill("What are my high priority tasks for the Q4 launch?")
        page.keyboard.press("Enter")
        page.locator("#messages li.tool", has_text="list_tasks").wait_for(timeout=30_000)
        page.locator("#messages li.assistant", has_text="Q4 Product Launch").wait_for(timeout=30_000)
        page.get_by_label("Message").fill("Tell me more about the API documentation task")
        page.keyboard.press("Enter")
        page.locator("#messages li.tool", has_text="get_task_details").wait_for(timeout=30_000)
        page.locator("#messages li.assistant", has_text="Design API documentation portal").last.wait_for(
            timeout=30_000
        )
        page.locator("#send").wait_for(state="visible", timeout=30_000)
        _shot(page, "offline-assistant")
        assert "location" in page.locator("#breakdown").inner_text()
        # the offline assistant reports cached tokens as an OpenAI server would (1,024+, steps of 128)
        cached = page.locator("#usage dd", has_text="of prompt tokens")
        cached.wait_for(timeout=30_000)
        assert "%" in cached.inner_text() and "expected" not in cached.inner_text()
        # what it cannot do offline gets its labelled reply, never a misrouted tool call
        tools_before = page.locator("#messages li.tool").count()
        page.get_by_label("Message").fill("write me a haiku about my tasks")
        page.keyboard.press("Enter")
        page.locator("#messages li.assistant strong", has_text="I can't do that offline.").wait_for(
            timeout=30_000
        )
        assert page.locator("#messages li.tool").count() == tools_before
        _shot(page, "offline-cannot")
    finally:
        child.terminate()
        out, _ = child.communicate(timeout=10)
    assert '"GET / HTTP/1.1" 200' in out  # serve's request log


@pytest.fixture
def served_workspace(tmp_path: Path) -> Iterator[tuple[str, ScriptedModel]]:
    """The app with a priced model and a workspace: project "Offsite 2026" with two open tasks."""
    store = Store.open(f"sqlite:///{tmp_path / 'ws.db'}")
    user = local_user(store)
    ws = Workspace(store)
    project = ws.create_project(user, name="Offsite 2026")
    ws.create_project(user, name="Garden shed")
    ws.create_task(user, title="Book the venue", project_id=project["id"], priority="high")
    ws.create_task(user, title="Send invites", project_id=project["id"])
    model = ScriptedModel(model="priced-model")
    engine = ChatEngine(
        store,
        model,
        tools=[list_tasks],
        budget=Budget(window=8_000, reserve=500),
        prices={"priced-model": Price(input=2.0, output=10.0)},
    )
    with serve_in_thread(create_app(store, engine)) as base:
        yield base, model
    store.close()


def test_chat_on_a_project_rename_delete_and_usage(
    browser: Any, served_workspace: tuple[str, ScriptedModel]
) -> None:
    url, model = served_workspace
    model.enqueue("The venue is the one open item.", "Booked.")
    page = browser.new_page(viewport={"width": 1280, "height": 800})
    page.goto(url)
    page.locator("#messages li.empty").wait_for()
    assert page.locator("#chat-actions").is_hidden()

    # New chat on… a project, by keyboard: filter, arrow down, Enter, then the whole project.
    page.keyboard.press("Alt+p")
    page.locator("#picker").wait_for(state="visible")
    page.locator("#picker-list button", has_text="Garden shed").wait_for()
    page.get_by_label("Filter").fill("offsite")
    page.locator("#picker-list button", has_text="Offsite 2026").wait_for()
    page.wait_for_function("document.querySelectorAll('#picker-list button').length === 1")
    page.keyboard.press("ArrowDown")
    page.keyboard.press("Enter")
    page.locator("#picker-list button", has_text="Book the venue").wait_for()
    _shot(page, "picker-tasks")
    page.keyboard.press("ArrowDown")  # "The whole project"
    page.keyboard.press("Enter")
    page.locator("#chat-context", has_text="Project · Offsite 2026").wait_for()
    assert page.locator("#picker").is_hidden()
    assert "Offsite 2026" in page.locator("#chat-list li").first.inner_text()

    page.get_by_label("Message").fill("What is open for the offsite?")
    page.keyboard.press("Enter")
    page.locator("#messages li.assistant", has_text="one open item").wait_for(timeout=30_000)
    page.locator("#send").wait_for(state="visible", timeout=30_000)
    page.locator("#usage dt", has_text="Cost").wait_for(timeout=30_000)
    usage = page.locator("#usage").inner_text()
    assert "prompt" in usage and "$0.0" in usage and "1 model call" in usage and "priced-model" in usage
    page.locator("#month-usage", has_text="This month:").wait_for()
    assert "tokens" in page.locator("#month-usage").inner_text()
    _shot(page, "chat-on-project-usage")

    # A second chat, on a task, by mouse.
    page.get_by_role("button", name="New chat on a project or task").click()
    # the last opening's list (the project's tasks) is gone at once, not clickable while projects load
    assert page.locator("#picker-list button", has_text="The whole project").count() == 0
    page.locator("#picker-list button", has_text="Offsite 2026").click()
    page.locator("#picker-list button", has_text="Send invites").click()
    page.locator("#chat-context", has_text="Task · Send invites (Offsite 2026)").wait_for()
    page.locator("#chat-list a[aria-current='true'] .where", has_text="Task · Send invites").wait_for()
    assert page.locator("#chat-list li").count() == 2

    # Rename: F2, Esc cancels; F2, type, Enter saves.
    page.keyboard.press("F2")
    page.get_by_label("Chat title").fill("never saved")
    page.keyboard.press("Escape")
    assert (
        page.locator("#chat-title").is_visible()
        and "never saved" not in page.locator("#chat-title").inner_text()
    )
    page.keyboard.press("F2")
    page.get_by_label("Chat title").fill("Invites <b>plan</b>")
    page.keyboard.press("Enter")
    page.locator("#chat-title", has_text="Invites <b>plan</b>").wait_for()  # shown as text, not markup
    page.locator("#chat-list a[aria-current='true']", has_text="Invites <b>plan</b>").wait_for()
    assert page.locator("#chat-list b").count() == 0
    _shot(page, "chat-renamed")

    # Delete with a confirm step: Keep has the focus; Esc cancels; Delete removes and opens the other chat.
    page.get_by_role("button", name="Delete", exact=True).click()
    page.locator("#delete-confirm").wait_for(state="visible")
    assert page.evaluate("document.activeElement.id") == "delete-no"
    page.keyboard.press("Escape")
    assert page.locator("#delete-confirm").is_hidden() and page.locator("#chat-list li").count() == 2
    page.locator("#delete").click()
    _shot(page, "chat-delete-confirm")
    page.locator("#delete-yes").click()
    page.locator("#chat-context", has_text="Project · Offsite 2026").wait_for()
    page.wait_for_function("document.querySelectorAll('#chat-list li').length === 1")
    assert "Invites" not in page.locator("#chat-list").inner_text()
    page.locator("#messages li.assistant", has_text="one open item").wait_for()
    page.wait_for_function("document.activeElement.id === 'input'")

    page.locator("#delete").click()
    page.locator("#delete-yes").click()
    page.locator("#messages li.empty").wait_for()
    page.wait_for_function("document.activeElement.id === 'input'")  # back to the composer
    assert page.locator("#chat-list li").count() == 0
    assert page.locator("#chat-title").inner_text() == "New chat"
    assert page.locator("#chat-actions").is_hidden()
    _shot(page, "chat-deleted-empty")

    phone = browser.new_page(viewport={"width": 390, "height": 844})
    phone.goto(url)
    phone.get_by_role("button", name="☰ Chats").click()  # on a phone the chat list is a drawer
    phone.get_by_role("button", name="New chat on a project or task").click()
    phone.locator("#picker-list button", has_text="Offsite 2026").wait_for()
    _shot(phone, "phone-picker")


def test_replaced_api_sessions_are_hidden_until_asked_for(browser: Any, tmp_path: Path) -> None:
    store = Store.open(f"sqlite:///{tmp_path / 'replaced.db'}")
    user = local_user(store)
    store.create_chat(user, title="API current", context_type="api", entity_id="s1")
    store.create_chat(user, title="API before the edit", context_type="api-superseded", entity_id="s1")
    engine = ChatEngine(store, ScriptedModel(), budget=Budget(window=8_000, reserve=500))
    try:
        with serve_in_thread(create_app(store, engine)) as url:
            page = browser.new_page(viewport={"width": 1280, "height": 800})
            page.goto(url)
            page.locator("#chat-list a", has_text="API current").wait_for()
            assert page.locator("#chat-list a", has_text="API before the edit").count() == 0
            page.get_by_label("Show earlier branches of API sessions").check()
            replaced = page.locator("#chat-list a", has_text="API before the edit")
            replaced.wait_for()
            assert "API session (earlier branch)" in replaced.inner_text()
            page.get_by_label("Show earlier branches of API sessions").uncheck()
            replaced.wait_for(state="detached")
            page.close()
    finally:
        store.close()
