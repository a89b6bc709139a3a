"""The prompt budget of one ``/v1`` request: the model's window, the configured ceiling, the answer's room.

A budget is a ceiling tierwise packs under, never a reason to refuse what the model would take
(decision 68). Per request, with the upstream model's limits (:mod:`tierwise.providers.windows`):

- **The ceiling**: the prompt tokens tierwise packs under — ``min(model window, budget)`` less the
  answer's reserve when a budget is set (``serve --budget``), else the model's window less it. An
  unknown model falls back to the budget (16,000 tokens by default), as before the table existed.
- **The answer's room**: ``max_tokens`` / ``max_completion_tokens`` when sent, else the reserve
  (``serve --reserve``). It comes out of the *model's* window: the prompt gets the ceiling unless the
  model lacks room for both, so ``max_completion_tokens=8192`` on a 128k model leaves a 16k budget's
  prompt at 15,000 tokens, not 7,808.
- **Packed, not refused**: what the request must send whole (system messages, tools, the step being
  answered) may outgrow the ceiling; the budget then grows to it plus a quarter of the ceiling
  (:data:`OVERFLOW_SHARE`) for memory, up to what the model takes beside the answer's room. Tools
  and system messages are counted before packing (they are the same on every request of a session,
  so its budget — and the head memory made for it — stays the same); a turn too large for the ceiling
  is found by the packer (:class:`~tierwise.errors.BudgetError`) and packed again.
- **Refused as the model would refuse**, OpenAI's words and codes: a ``max_tokens`` above the model's
  output limit (``invalid_value``, its parameter), and a prompt that does not fit beside the answer
  even with nothing left to pack (``context_length_exceeded``, ``messages``). For an unknown model
  the budget is all tierwise knows: nothing grows, and a refusal names the fix (``TIERWISE_MODELS``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, TypeVar

from tierwise.budget import Budget
from tierwise.errors import BudgetError
from tierwise.memory.assemble import STEP_SHARE
from tierwise.providers.windows import MODELS_VARIABLE, ModelLimits
from tierwise.server.openai_params import BadRequest
from tierwise.tokens import get_counter

__all__ = ["OVERFLOW_SHARE", "PACK_ATTEMPTS", "BudgetPlan", "max_tokens_limit", "plan_budget"]

_T = TypeVar("_T")

OVERFLOW_SHARE = 0.25
"""When what a request must send whole outgrows the ceiling, memory keeps this share of the ceiling
beside it (the budget grows by what overflows, plus this)."""

_STEP_MARGIN = 64  # the pack's own framing beside the step (reply priming, the head message's)

PACK_ATTEMPTS = 4
"""Packs tried per request at most (the first budget, then grown ones)."""


@dataclass(frozen=True)
class BudgetPlan:
    """How one request is packed: the budget it starts with, how far it may grow, what is refused.

    Attributes:
        model: the upstream model's name.
        limits: its limits (an unknown model's: the configured budget's window, no output limit).
        known: whether the limits are the model's own (the table or ``TIERWISE_MODELS``).
        ceiling: prompt tokens tierwise packs under.
        room: tokens kept for the answer: ``max_tokens`` if sent, else the configured reserve.
        most: prompt tokens the model takes beside ``room`` (an unknown model: the ceiling).
        configured: the engine's budget (its allocations and fragment size are kept).
    """

    model: str
    limits: ModelLimits
    known: bool
    ceiling: int
    room: int
    most: int
    configured: Budget

    def first(
        self,
        system: Sequence[Mapping[str, Any]] | None = None,
        tools: Sequence[Mapping[str, Any]] = (),
        step: Sequence[Mapping[str, Any]] = (),
    ) -> Budget:
        """The budget to pack under first: the ceiling, or more when what must go whole outgrows it.

        That is ``system``, ``tools`` and ``step``, the step being answered: memory sends it whole
        only within half of what the budget leaves (``memory.assemble.STEP_SHARE``) and cuts a larger
        result to its head and tail, so a 30,000-token file a 128k model could read whole must grow
        the budget here, before packing.
        """
        prompt = self.ceiling
        if self.known and (system or tools or step):
            counter = get_counter()
            fixed = counter.count_messages(system or ()) + counter.count_tools(tools)
            whole = counter.count_messages(step) if step else 0
            needed = fixed + max(self._memory, int(whole / STEP_SHARE) + _STEP_MARGIN)
            if needed > prompt:
                prompt = needed
        return self._budget(min(prompt, self.most))

    async def pack(
        self,
        begin: Callable[[Budget], Awaitable[_T]],
        system: Sequence[Mapping[str, Any]] | None = None,
        tools: Sequence[Mapping[str, Any]] = (),
        step: Sequence[Mapping[str, Any]] = (),
    ) -> tuple[_T, Budget]:
        """``begin(budget)`` under :meth:`first`, then :meth:`grown` while what it must send does not fit.

        Returns what ``begin`` returned and the budget it packed under.

        Raises:
            BadRequest: refused as the model would refuse it (:meth:`grown`).
            BudgetError: still too large after :data:`PACK_ATTEMPTS` packs.
        """
        budget = self.first(system, tools, step)
        for _ in range(PACK_ATTEMPTS - 1):
            try:
                return await begin(budget), budget
            except BudgetError as exc:
                budget = self.grown(budget, exc)
        return await begin(budget), budget

    def grown(self, budget: Budget, exc: BudgetError) -> Budget:
        """The budget to pack under after ``exc`` (what must be sent whole did not fit ``budget``).

        The budget grows to what is needed plus memory's share of the ceiling, at most to all the
        model takes beside the answer's room; each call grows it (the caller stops after a few).

        Raises:
            BadRequest: the model has no more room (``context_length_exceeded``, as OpenAI words it),
                or, for an unknown model, the budget cannot grow (naming ``TIERWISE_MODELS``).
        """
        needed = budget.available + exc.over_by
        if not self.known:
            raise BadRequest(
                400,
                f"{exc} (tierwise does not know the context window of {self.model!r}, so it packs under "
                f"its budget of {self.configured.window:,} tokens: name the model's window in "
                f'{MODELS_VARIABLE}, e.g. {MODELS_VARIABLE}=\'{{"{self.model}": {{"window": 131072}}}}\', '
                "or raise serve --budget)",
                "context_length_exceeded",
                "messages",
            )
        if needed > self.most:
            raise self._too_long(needed)
        return self._budget(min(needed + self._memory, self.most))

    @property
    def _memory(self) -> int:
        return int(self.ceiling * OVERFLOW_SHARE)

    def _budget(self, prompt: int) -> Budget:
        return replace(self.configured, window=prompt + self.room, reserve=self.room)

    def _too_long(self, prompt: int) -> BadRequest:
        """OpenAI's refusal of a prompt of ``prompt`` tokens beside the answer's room."""
        window, room = self.limits.window, self.room
        if self.limits.max_input is not None and prompt + room <= window:
            message = (
                f"This model's maximum input length is {self.limits.max_input} tokens. However, your "
                f"messages resulted in {prompt} tokens. Please reduce the length of the messages."
            )
        else:
            message = (
                f"This model's maximum context length is {window} tokens. However, you requested "
                f"{prompt + room} tokens ({prompt} in the messages, {room} in the completion). "
                "Please reduce the length of the messages or completion."
            )
        return BadRequest(400, message, "context_length_exceeded", "messages")


def plan_budget(
    configured: Budget,
    limits: ModelLimits | None,
    *,
    ceiling: bool,
    max_tokens: int | None = None,
    param: str = "max_tokens",
    model: str = "the model",
) -> BudgetPlan:
    """The budget plan of a request to ``model`` (``limits``: ``None`` when unknown).

    Args:
        configured: the engine's budget: its window is the ceiling when ``ceiling`` (a budget the user
            set) or the model is unknown; its reserve is the answer's room when ``max_tokens`` is not sent.
        limits: the model's limits, or ``None``.
        ceiling: whether ``configured`` is a budget the user set (else the model's window is used).
        max_tokens: the request's ``max_completion_tokens`` or ``max_tokens``, if sent.
        param: which of the two it was (named in a refusal).
        model: the model's name (named in a refusal).

    Raises:
        BadRequest: ``max_tokens`` above the model's output limit, or leaving no room for a prompt.

    Example:
        >>> plan = plan_budget(
        ...     Budget(16_000, 1_000), ModelLimits(128_000, 16_384), ceiling=True, max_tokens=8_192
        ... )
        >>> plan.first().available, plan.first().reserve
        (15000, 8192)
    """
    known = limits is not None
    if limits is None:
        limits = ModelLimits(configured.window)  # as before the table: the budget stands in for it
    window = min(limits.window, configured.window) if ceiling or not known else limits.window
    reserve = min(configured.reserve, limits.output_limit)
    if max_tokens is not None and known and max_tokens > limits.output_limit:
        raise BadRequest(
            400,
            f"{param} is too large: {max_tokens}. This model supports at most {limits.output_limit} "
            f"completion tokens, whereas you provided {max_tokens}.",
            "invalid_value",
            param,
        )
    room = max_tokens if max_tokens is not None else reserve
    most = limits.prompt_room(room)
    if most < 1:
        if known:
            message = (
                f"This model's maximum context length is {limits.window} tokens. However, you requested "
                f"{room} tokens in the completion alone. Please reduce {param}."
            )
        else:
            message = (
                f"{param} ({room}) leaves no room for the prompt in the {limits.window}-token window "
                f"tierwise packs under; ask for fewer tokens, or name the model's window in {MODELS_VARIABLE}"
            )
        raise BadRequest(400, message, "context_length_exceeded", param)
    prompt = max(1, window - reserve)
    if not known:
        most = min(prompt, most)
    return BudgetPlan(model, limits, known, min(prompt, most), room, most, configured)


def max_tokens_limit(configured: Budget, limits: ModelLimits | None) -> int:
    """The most ``max_tokens`` a request may ask for: the model's output limit, below its window.

    Example:
        >>> max_tokens_limit(Budget(16_000, 1_000), None)
        15999
        >>> max_tokens_limit(Budget(16_000), ModelLimits(128_000, 16_384))
        16384
    """
    if limits is None:
        return configured.window - 1
    return min(limits.output_limit, limits.window - 1)
