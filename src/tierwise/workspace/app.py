"""The reference assistant, assembled: the chat engine with the workspace's tools, context and prompt.

:func:`assistant_engine` is what ``tierwise chat`` (and later ``tierwise serve``) run: a
:class:`~tierwise.chat.engine.ChatEngine` whose tools are seed 001's twelve (plus memory's
housekeeping), whose context source is :class:`~tierwise.workspace.context.WorkspaceContext`, whose
system prompt teaches the list → detail pattern, and whose failure strategies include the
calendar's reconnection message. :func:`assistant_provider` picks the model: the configured one, or
— when nothing is configured — the offline assistant, which is labelled as such everywhere.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from tierwise.budget import Budget
from tierwise.chat.costguard import CostGuard
from tierwise.chat.engine import ChatEngine
from tierwise.providers import Provider, ProviderSettings
from tierwise.providers.upstream import upstream_provider
from tierwise.store import Store
from tierwise.store.models import utcnow
from tierwise.workspace.adaptive import AdaptiveBudgets
from tierwise.workspace.calendar import Calendar, LocalCalendar
from tierwise.workspace.context import SYSTEM_PROMPT, WorkspaceContext
from tierwise.workspace.context_cache import ContextCache
from tierwise.workspace.offering import WorkspaceOffering
from tierwise.workspace.prefetch import Prefetcher
from tierwise.workspace.repository import Workspace
from tierwise.workspace.tools import WORKSPACE_STRATEGIES, workspace_tools

__all__ = ["OFFLINE_NOTICE", "assistant_engine", "assistant_provider", "ensure_sample"]

OFFLINE_NOTICE = (
    "offline assistant: no model is configured, so a local rule-based assistant answers common "
    "requests (tasks, projects, notes, calendar). For a real model set TIERWISE_BASE_URL and "
    "TIERWISE_MODEL (and TIERWISE_API_KEY if it needs one)."
)


def assistant_provider(model: str | None = None) -> Provider:
    """The configured model, or the offline assistant when neither base URL nor model is set.

    Raises:
        ProviderNotConfigured: only one of ``TIERWISE_BASE_URL`` / ``TIERWISE_MODEL`` is set.
        InputError: a ``TIERWISE_*`` variable has a bad value.
    """
    settings = ProviderSettings.load()
    if settings.base_url is None and settings.model is None and model is None:
        from tierwise.workspace.assistant import OfflineAssistant

        return OfflineAssistant()
    return upstream_provider(settings, model=model)


def is_offline(provider: Provider) -> bool:
    """Whether ``provider`` is the offline assistant."""
    return provider.name == "offline"


def ensure_sample(store: Store, user_id: str, *, today: Any = None) -> str | None:
    """Load the sample workspace for a user who has none yet (no profile); returns a line saying so."""
    from tierwise.workspace.models import UserProfile
    from tierwise.workspace.sample import generate_workspace

    with store.session() as session:
        if session.get(UserProfile, user_id) is not None:
            return None
    if Workspace(store).search_projects(user_id, limit=1)[1]:
        return None
    summary = generate_workspace(store, user_id, today=today)
    return (
        f"loaded the sample workspace: {summary.projects} projects, {summary.tasks} tasks, "
        f"{summary.notes} notes, {summary.calendar_events} events (`tierwise workspace clear` removes it)"
    )


def assistant_engine(
    store: Store,
    provider: Provider,
    *,
    budget: Budget | None = None,
    guard: CostGuard | None = None,
    calendar: Calendar | None = None,
    clock: Callable[[], datetime] = utcnow,
    **options: Any,
) -> ChatEngine:
    """The chat engine of the reference assistant (see the module docstring).

    Args:
        store: the store (chats and the workspace).
        provider: the model (:func:`assistant_provider`).
        budget: the prompt budget (default: 16,000 tokens with 1,000 for the answer); ``budget_set``
            (in ``options``, default: whether it was given) makes it a ceiling on ``/v1`` too.
        guard: spending limits, if any.
        calendar: the calendar (default: the local one in the store).
        clock: the current time, aware; tests and benchmarks fix it.
        options: passed on to :class:`~tierwise.chat.engine.ChatEngine`, except ``context_cache``
            (a :class:`~tierwise.workspace.context_cache.ContextCache`, ``None`` for none) and
            ``prefetch`` (a :class:`~tierwise.workspace.prefetch.Prefetcher`) and ``adaptive`` (an
            :class:`~tierwise.workspace.adaptive.AdaptiveBudgets`), ``None`` for none: seed 000 §10's
            location cache, detail prefetching and adaptive related layers, on by default; and
            ``tool_offering`` (default :class:`~tierwise.workspace.offering.WorkspaceOffering`: each
            model call is offered the tools it can use, and a chat's tool list only grows, so a
            provider's prompt cache keeps its front; ``tools_grow=False`` offers each call only its
            own, fewest tokens but no cache; ``None``: every tool on every call).
    """
    calendar = calendar or LocalCalendar(store)
    title_provider = None if is_offline(provider) else provider
    cache = options.pop("context_cache", ContextCache())
    prefetch = options.pop("prefetch", Prefetcher())
    adaptive = options.pop("adaptive", AdaptiveBudgets())
    return ChatEngine(
        store,
        provider,
        tools=workspace_tools(),
        budget=budget or Budget(window=16_000, reserve=1_000),
        budget_set=options.pop("budget_set", budget is not None),
        system=SYSTEM_PROMPT,
        guard=guard,
        title_provider=options.pop("title_provider", title_provider),
        context=WorkspaceContext(store, calendar=calendar, clock=clock, cache=cache, adaptive=adaptive),
        tool_extras={"clock": clock, "calendar": calendar, "prefetch": prefetch, "adaptive": adaptive},
        tool_strategies=WORKSPACE_STRATEGIES,
        tool_offering=options.pop("tool_offering", WorkspaceOffering()),
        **options,
    )
