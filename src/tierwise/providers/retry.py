"""Retrying a model request: which failures, how long to wait, and ``Retry-After``.

Only failures that may pass are retried — 408, 429, 5xx, dropped connections and connections that
could not be opened in time (the ``retryable`` flag of
:class:`~tierwise.providers.errors.ProviderError`) — and only while nothing of the answer has been
streamed. A request the server received and then let time out is not retried: a retry would wait out
the same deadline again, and the client must learn within it (decision 74). The wait doubles from
``base_delay`` up to ``max_delay`` and is jittered (a random 50–100% of it) so that many clients do
not retry in step. A ``Retry-After`` the server sends is honoured exactly; one longer than
``max_delay`` ends the retries instead (the fallback model, if any, is tried at once).

A gateway whose client retries by its own policy retries less: ``unanswered_only`` retries only a
request that got no byte of an answer (a connection refused or dropped before the response began,
:attr:`~tierwise.providers.errors.ProviderError.unanswered`) — what its client cannot see. A 429, a
5xx or a timeout is the client's to retry (decision 67).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime

from tierwise.providers.errors import ProviderError

__all__ = ["RETRYABLE_STATUS", "RetryPolicy", "is_retryable_status", "parse_retry_after"]

RETRYABLE_STATUS = frozenset({408, 429})
"""Status codes below 500 worth retrying (every 5xx is)."""


def is_retryable_status(status: int) -> bool:
    """Whether an HTTP status may succeed on a retry (408, 429, 5xx)."""
    return status in RETRYABLE_STATUS or status >= 500


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How often and how long to retry one model, and which failures.

    ``unanswered_only``: retry only a request that got no byte of an answer (see the module).

    Example:
        >>> policy = RetryPolicy(max_retries=3, base_delay=1.0, max_delay=5.0, rng=lambda: 1.0)
        >>> [policy.delay(attempt) for attempt in (1, 2, 3, 4)]
        [1.0, 2.0, 4.0, 5.0]
        >>> policy.delay(1, retry_after=2.5), policy.delay(1, retry_after=60.0)
        (2.5, None)
    """

    max_retries: int = 3
    base_delay: float = 0.5
    max_delay: float = 30.0
    rng: Callable[[], float] = random.random
    unanswered_only: bool = False

    def retries(self, error: ProviderError) -> bool:
        """Whether ``error`` is one this policy retries (before counting attempts).

        Example:
            >>> refused = ProviderError("connection refused", retryable=True, unanswered=True)
            >>> busy = ProviderError("HTTP 429", status=429, retryable=True)
            >>> late = ProviderError("no answer began", retryable=True, timed_out=True)
            >>> gateway = RetryPolicy(max_retries=1, unanswered_only=True)
            >>> [RetryPolicy().retries(e) for e in (refused, busy, late)]
            [True, True, False]
            >>> [gateway.retries(e) for e in (refused, busy, late)]
            [True, False, False]
        """
        if self.unanswered_only:
            return error.unanswered
        # A request that reached the server and timed out would wait out its deadline again.
        return error.retryable and (error.unanswered or not error.timed_out)

    def delay(self, attempt: int, retry_after: float | None = None) -> float | None:
        """Seconds to wait after failed attempt ``attempt`` (1-based), or ``None`` to stop retrying."""
        if retry_after is not None:
            return max(0.0, retry_after) if retry_after <= self.max_delay else None
        ceiling = min(self.max_delay, self.base_delay * 2.0 ** (attempt - 1))
        return ceiling * (0.5 + self.rng() / 2)


def parse_retry_after(headers: Mapping[str, str]) -> float | None:
    """Seconds from ``retry-after-ms``, ``retry-after`` (seconds or an HTTP date); ``None`` if absent or bad.

    Example:
        >>> parse_retry_after({"retry-after": "0.25"}), parse_retry_after({"retry-after-ms": "1500"})
        (0.25, 1.5)
    """
    lowered = {key.lower(): value for key, value in headers.items()}
    for header, scale in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        value = lowered.get(header)
        if value is None:
            continue
        try:
            seconds: float = float(value) / scale
        except ValueError:
            continue
        return max(0.0, seconds)
    value = lowered.get("retry-after")
    if value:
        try:
            when = parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        return max(0.0, (when - datetime.now(UTC)).total_seconds())
    return None
