"""Request authentication (API keys) and per-user rate limits.

:func:`make_user_of` builds the ``user_of`` of :func:`~tierwise.server.app.create_app`: the user a
request acts for is the owner of its key, sent as ``Authorization: Bearer <key>`` or ``X-API-Key:
<key>`` — when keys are required: then a request without a key, or with an unknown, malformed or
revoked one, is a 401, never a silent fall back to the local user. In local mode (keys not required)
keys are not checked at all: every request acts for the local user, whatever key it sends, as the
OpenAI clients always send one; a rate limit does not change that.

:class:`RateLimiter` is a token bucket per user; wrapped around ``user_of`` (:func:`rate_limited`),
a request over the limit is a 429 whose ``Retry-After`` says how many seconds to wait.

Wrong keys are throttled by client address (:class:`FailedKeys`, issue 32): once an address has sent
:data:`FAILED_KEYS_BURST` unknown, malformed or revoked keys, and until its allowance refills
(:data:`FAILED_KEYS_PER_MINUTE` a minute), its requests are 429s with ``Retry-After``, whatever key
they send, so keys cannot be guessed at request speed. A request without a key is a 401 and not
counted (no guess); local mode checks no key and throttles nothing. The count is per process (with
``--workers`` each allows its own), by the connection's address (behind a reverse proxy, all of its
clients share one).
"""

from __future__ import annotations

import math
import os
import threading
import time
from collections.abc import Callable

from fastapi import Request

from tierwise.errors import UserError
from tierwise.server.errors import ApiError
from tierwise.server.keys import user_for_key
from tierwise.store import Store

__all__ = [
    "DEFAULT_RATE_LIMIT",
    "FAILED_KEYS_BURST",
    "FAILED_KEYS_PER_MINUTE",
    "MISSING_KEY",
    "FailedKeys",
    "RateLimiter",
    "SharedRateLimiter",
    "key_of",
    "make_user_of",
    "rate_limit_from_env",
    "rate_limited",
]

FAILED_KEYS_BURST = 10
"""Wrong keys an address may send at once before its requests are refused for a while."""
FAILED_KEYS_PER_MINUTE = 10
"""How fast an address's allowance of wrong keys refills."""
DEFAULT_RATE_LIMIT = 600  # requests per minute per user when serving with keys (a bucket that deep)
MISSING_KEY = (
    "missing API key: send Authorization: Bearer <key> (create one with `tierwise keys create --user NAME`)"
)
_CHALLENGE = {"WWW-Authenticate": "Bearer"}
_MAX_BUCKETS = 10_000  # above this, full buckets (idle users) are forgotten


class RateLimiter:
    """A token bucket per user: ``rate`` requests per minute, up to ``burst`` at once.

    Each user's bucket starts full (``burst`` tokens, default ``rate``) and refills at ``rate``
    tokens a minute; a request takes one. Thread-safe (sync routes run in a thread pool).

    Example:
        >>> now = [0.0]
        >>> limiter = RateLimiter(60, burst=2, clock=lambda: now[0])
        >>> limiter.check("ada"), limiter.check("ada"), limiter.check("ada")
        (None, None, 1.0)
        >>> now[0] += 1.0
        >>> limiter.check("ada") is None
        True
    """

    def __init__(
        self, rate: int, *, burst: int | None = None, clock: Callable[[], float] = time.monotonic
    ) -> None:
        if isinstance(rate, bool) or not isinstance(rate, int) or rate < 1:
            raise ValueError(f"rate must be a positive number of requests per minute, got {rate!r}")
        burst = rate if burst is None else burst
        if isinstance(burst, bool) or not isinstance(burst, int) or burst < 1:
            raise ValueError(f"burst must be a positive number of requests, got {burst!r}")
        self.rate, self.burst, self._clock = rate, burst, clock
        self._per_second = rate / 60.0
        self._buckets: dict[str, tuple[float, float]] = {}  # user → (tokens, when counted)
        self._lock = threading.Lock()

    def check(self, user_id: str) -> float | None:
        """Take a token for ``user_id``: ``None`` if there was one, else the seconds until there is."""
        with self._lock:
            now = self._clock()
            tokens, then = self._buckets.get(user_id, (float(self.burst), now))
            tokens = min(float(self.burst), tokens + max(0.0, now - then) * self._per_second)
            if tokens >= 1.0:
                self._buckets[user_id] = (tokens - 1.0, now)
                if len(self._buckets) > _MAX_BUCKETS:
                    self._forget_idle(now)
                return None
            self._buckets[user_id] = (tokens, now)
            return (1.0 - tokens) / self._per_second

    def peek(self, user_id: str) -> float | None:
        """What :meth:`check` would answer, without taking a token."""
        with self._lock:
            now = self._clock()
            tokens, then = self._buckets.get(user_id, (float(self.burst), now))
            tokens = min(float(self.burst), tokens + max(0.0, now - then) * self._per_second)
        return None if tokens >= 1.0 else (1.0 - tokens) / self._per_second

    def _forget_idle(self, now: float) -> None:
        """Drop the buckets that have refilled (forgetting them changes nothing)."""
        full = [
            user
            for user, (tokens, then) in self._buckets.items()
            if tokens + max(0.0, now - then) * self._per_second >= self.burst
        ]
        for user in full:
            del self._buckets[user]


class FailedKeys:
    """Wrong API keys counted per client address: after ``burst`` of them, 429s until some refill.

    A :class:`RateLimiter` whose tokens are the wrong keys an address may still send; a request from
    an address with none left is refused before its key is looked at (a right key too: it could be
    a guess that happened to hit).

    Example:
        >>> now = [0.0]
        >>> failed = FailedKeys(per_minute=60, burst=2, clock=lambda: now[0])
        >>> failed.wait("10.0.0.9"), failed.failed("10.0.0.9"), failed.failed("10.0.0.9")
        (None, None, None)
        >>> failed.wait("10.0.0.9"), failed.wait("10.0.0.7")
        (1.0, None)
    """

    def __init__(
        self,
        per_minute: int = FAILED_KEYS_PER_MINUTE,
        *,
        burst: int = FAILED_KEYS_BURST,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._limiter = RateLimiter(per_minute, burst=burst, clock=clock)

    def wait(self, address: str) -> float | None:
        """``None`` if ``address`` may still try a key, else the seconds until it may."""
        return self._limiter.peek(address)

    def failed(self, address: str) -> float | None:
        """Count one wrong key from ``address``: ``None``, or the seconds to wait if none was left."""
        return self._limiter.check(address)


def _refuse_for(seconds_left: float) -> ApiError:
    seconds = max(1, math.ceil(seconds_left))
    return ApiError(
        429,
        f"too many wrong API keys from this address; retry after {seconds} s with a valid key "
        "(list yours with `tierwise keys list`)",
        headers={"Retry-After": str(seconds)},
    )


class SharedRateLimiter:
    """:class:`RateLimiter`'s buckets kept in the store, so every process serving it shares them.

    For ``serve --workers`` and several hosts on one PostgreSQL: a user's ``rate`` holds across all of
    them, not per process. One statement per request (:meth:`Store.take_request`).
    """

    def __init__(self, store: Store, rate: int, *, burst: int | None = None) -> None:
        RateLimiter(rate, burst=burst)  # the same checks of rate and burst
        self.store, self.rate, self.burst = store, rate, rate if burst is None else burst

    def check(self, user_id: str) -> float | None:
        """Take a token for ``user_id``: ``None`` if there was one, else the seconds until there is."""
        return self.store.take_request(f"user:{user_id}", self.rate, self.burst)


Limiter = RateLimiter | SharedRateLimiter
"""Either limiter: one process's buckets, or the store's."""


def key_of(request: Request) -> str | None:
    """The API key the request sends (``Authorization: Bearer`` or ``X-API-Key``), if any.

    Raises:
        ApiError: 401, an ``Authorization`` header of another scheme, or an empty bearer token.
    """
    header = request.headers.get("authorization")
    if header is not None:
        scheme, _, token = header.strip().partition(" ")
        if scheme.lower() != "bearer":
            raise ApiError(
                401, "unsupported Authorization scheme: send Authorization: Bearer <key>", headers=_CHALLENGE
            )
        token = token.strip()
        if not token:
            raise ApiError(401, "empty bearer token: send Authorization: Bearer <key>", headers=_CHALLENGE)
        return token
    key = request.headers.get("x-api-key")
    if key is not None:
        key = key.strip()
        if not key:
            raise ApiError(401, "empty X-API-Key header: send X-API-Key: <key>", headers=_CHALLENGE)
        return key
    return None


def rate_limited(user_of: Callable[[Request], str], limiter: Limiter) -> Callable[[Request], str]:
    """``user_of``, then a token from ``limiter`` for that user (else a 429 with ``Retry-After``)."""

    def limited(request: Request) -> str:
        user = user_of(request)
        wait = limiter.check(user)
        if wait is not None:
            seconds = max(1, math.ceil(wait))
            raise ApiError(
                429,
                f"rate limit: {limiter.rate} requests per minute; retry after {seconds} s",
                headers={"Retry-After": str(seconds)},
            )
        return user

    return limited


def make_user_of(
    store: Store,
    *,
    require_key: bool,
    local_user_id: str,
    limiter: Limiter | None = None,
    failed_keys: FailedKeys | None = None,
) -> Callable[[Request], str]:
    """The ``user_of`` of an app: with ``require_key``, the owner of the request's API key.

    With ``require_key`` a request without a key, or with an unknown, malformed or revoked one, is a
    401, and an address that sent too many wrong keys gets 429s for a while (``failed_keys``, a new
    :class:`FailedKeys` by default). Without it (local mode) keys are not checked: every request acts
    for ``local_user_id``, whatever key it sends (OpenAI clients always send one). With ``limiter``,
    each request also takes a token from its user's bucket (429 with ``Retry-After`` when there is none).
    """
    failures = failed_keys if failed_keys is not None else FailedKeys()

    def user_of(request: Request) -> str:
        if not require_key:
            return local_user_id
        address = request.client.host if request.client is not None else "unknown"
        wait = failures.wait(address)
        if wait is not None:
            raise _refuse_for(wait)
        try:
            key = key_of(request)
        except ApiError:  # a malformed header: a wrong key too
            if (wait := failures.failed(address)) is not None:
                raise _refuse_for(wait) from None
            raise
        if key is None:
            raise ApiError(401, MISSING_KEY, headers=_CHALLENGE)
        user = user_for_key(store, key)
        if user is None:
            if (wait := failures.failed(address)) is not None:
                raise _refuse_for(wait)
            raise ApiError(
                401,
                "invalid API key: it is unknown or was revoked (list yours with `tierwise keys list`)",
                headers=_CHALLENGE,
            )
        return user

    return user_of if limiter is None else rate_limited(user_of, limiter)


def rate_limit_from_env(*, local: bool = False) -> int | None:
    """``TIERWISE_RATE_LIMIT``: requests per minute per user (``0`` or ``off``: none).

    Unset: none for a ``local`` server (loopback, no keys: one person and their agents), else
    :data:`DEFAULT_RATE_LIMIT` — enough for an agent loop at full speed (a model call a second or
    faster, several subagents at once), not for one key to flood a shared server.

    Raises:
        UserError: the variable is not a whole number.
    """
    raw = os.environ.get("TIERWISE_RATE_LIMIT", "").strip().lower()
    if not raw:
        return None if local else DEFAULT_RATE_LIMIT
    if raw in ("0", "off", "none"):
        return None
    try:
        value = int(raw)
    except ValueError:
        raise UserError(
            f"TIERWISE_RATE_LIMIT={raw!r} is not a number of requests per minute; use e.g. 600, or 0 for none"
        ) from None
    if value < 0:
        raise UserError(f"TIERWISE_RATE_LIMIT={value} is negative; use e.g. 600, or 0 for none")
    return value or None
