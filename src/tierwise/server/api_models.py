"""What the chat routes answer, as the OpenAPI document states it (the routes still build plain JSON).

These models document the responses of ``POST /api/chats``, ``GET /api/chats``, ``GET`` and
``PATCH /api/chats/{id}``, ``GET /api/context/status`` and ``GET /api/info``, so a client generator
gets their fields and an API tester (schemathesis's ``response_schema_conformance``) checks every
answer against them. They are documentation only (each route's ``responses``), never a
``response_model``: an answer is not filtered or re-validated on its way out. Objects stay open
(fields may be added); what a field may be (``null`` included) is stated.

Documenting a created chat's fields also tells schemathesis that ``entity_id`` belongs to the chat
it creates, so its stateful phase starts from ``POST /api/chats`` and follows the chat's links.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, Field

__all__ = ["ChatList", "ChatOut", "ContextStatus", "RunningChat", "ServiceInfo"]


class ChatProject(BaseModel):
    """The project a task chat's task belongs to."""

    id: str
    name: str


class ChatContext(BaseModel):
    """Where a chat is opened: its type, the entity's id and name, and whether the entity still exists."""

    type: str
    id: str | None
    name: str | None
    project: ChatProject | None
    exists: bool


class ChatOut(BaseModel):
    """A chat, with its location (``context``) and its budget (``token_limit``, always a number)."""

    id: str
    user_id: str
    context_type: str
    entity_id: str | None
    title: str
    title_generated: bool
    conversation_summary: str | None
    key_decisions: list[Any]
    created_entities: list[Any]
    total_tokens_used: int = Field(ge=0)
    token_limit: int = Field(description="The tokens each of the chat's prompts may use (its budget)")
    message_count: int = Field(ge=0)
    messages_archived: int = Field(ge=0)
    last_compression_at: datetime | None
    narrative: dict[str, Any] | None
    created_at: datetime
    updated_at: datetime
    context: ChatContext


class RunningChat(ChatOut):
    """A chat, and whether a turn is running in it."""

    running: bool


class ChatList(BaseModel):
    """The user's chats, most recent first."""

    chats: list[ChatOut]


class Tier(BaseModel):
    """One of seed 004's tiers 1–4 in a pack: its tokens and items, its share and its layer kinds."""

    tier: int = Field(ge=1, le=4)
    name: str
    tokens: int = Field(ge=0)
    items: int = Field(ge=0)
    percent: float = Field(ge=0)
    layers: list[str]


class StatusBudget(BaseModel):
    """The chat's budget: window, the answer's reserve, and what prompts may use."""

    window: int
    reserve: int
    available: int


class CurrentContext(BaseModel):
    """Where the chat is, and the tokens its location layer took in the last pack."""

    type: str
    entityId: str | None
    name: str | None
    tokens: int = Field(ge=0)


class Strategy(BaseModel):
    """The pruning band in force (``null`` without spending limits) and one sentence why."""

    band: str | None
    historyMessages: int | None
    relatedItems: int | None
    references: Literal["full", "summary", "none"]
    reason: str


class Spending(BaseModel):
    """Whether dollar limits are set and can work (``warning`` when the model has no price)."""

    dollarLimits: bool
    priceKnown: bool | None
    warning: str | None


class StatusTotals(BaseModel):
    """The chat's tokens used so far and its messages."""

    tokensUsed: int = Field(ge=0)
    messages: int = Field(ge=0)


class StatusCache(BaseModel):
    """The chat's prompt caching (see ``GET /api/context/status``)."""

    hitShare: float | None
    source: Literal["provider", "expected"] | None
    promptTokens: int
    cachedTokens: int
    expectedTokens: int
    savedDollars: float
    lastPackPrefixTokens: int | None


class ContextStatus(BaseModel):
    """Seed 004's status of a chat's context (``GET /api/context/status``)."""

    sessionId: str
    running: bool
    budget: StatusBudget
    tokenLimit: int
    budgetPercent: float | None = Field(description="The last pack's tokens as a share of its budget")
    tierBreakdown: list[Tier]
    live: bool
    currentContext: CurrentContext
    strategy: Strategy
    spending: Spending
    budgetHealth: float | None
    pruningBand: dict[str, Any] | None
    snapshot: dict[str, Any] | None
    totals: StatusTotals
    cache: StatusCache
    lastUpdated: datetime


class ServiceInfo(BaseModel):
    """Which model answers, and whether requests need an API key."""

    model: str
    offline: bool
    label: str
    requireKey: bool
