"""Run the model's tool calls: validate, execute with a timeout, fall back, compress, record.

:meth:`ToolExecutor.execute` never raises for anything a model or a tool can do. An unknown tool,
arguments that are not a JSON object, a missing, mistyped or invented argument, an exception in the
tool, a timeout, a result that cannot be serialised: each becomes a :class:`ToolResult` whose
``content`` tells the model what went wrong and how to fix it (one line per problem, at most five).

Runtime failures (exceptions, timeouts) then go through the failure strategies
(:mod:`tierwise.tools.strategies`, seed 000 §8.2): retry with backoff, an alternative tool, an
explanation for the user, or a skip. Results larger than ``blob_threshold_tokens`` are stored as blobs
and the model gets their compressed form (summary, entities, the sha256 for ``open_blob``). With a
store, a user, a chat and the id of the assistant message that made the call, every execution is
recorded with ``Store.add_tool_call`` (off the event loop, in a worker thread).

Sync tools run in worker threads (:func:`asyncio.to_thread`). Python cannot stop a thread, so a sync
tool that times out keeps running in the background until it returns; its result is discarded.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from tierwise.errors import InputError
from tierwise.memory.blobs import CompressedToolResult, compress_tool_result
from tierwise.tools.arguments import explain_validation, parse_arguments, raw_text, storable
from tierwise.tools.definition import Tool, ToolContext
from tierwise.tools.registry import ToolRegistry
from tierwise.tools.results import ToolCall, ToolResult, serialize_result
from tierwise.tools.strategies import DEFAULT_STRATEGIES, FailureStrategy, Fallback, find_strategy

if TYPE_CHECKING:
    from tierwise.memory.blobs import BlobStore
    from tierwise.memory.engine import Memory
    from tierwise.store import Store
    from tierwise.tokens import TokenCounter

__all__ = ["ToolExecutor"]

logger = logging.getLogger(__name__)

_MAX_ERROR_CHARS = 500


def _describe(exc: BaseException) -> str:
    """``"Type: message"`` on one line, without a traceback."""
    message = " ".join(str(exc).split())
    text = f"{type(exc).__name__}: {message}" if message else type(exc).__name__
    return text if len(text) <= _MAX_ERROR_CHARS else text[: _MAX_ERROR_CHARS - 1] + "…"


@dataclasses.dataclass(slots=True)
class _Run:
    """The outcome of running one tool (with retries): a value, or the last error."""

    ok: bool
    value: Any = None
    error: str = ""
    attempts: int = 0
    strategy: FailureStrategy | None = None


class ToolExecutor:
    """Executes tool calls against a :class:`ToolRegistry`.

    Args:
        registry: the tools the model may call.
        store: where executions are recorded (with ``user_id``, ``chat_id`` and a ``message_id``).
        user_id: the user the calls act for; tools receive it in their :class:`ToolContext`.
        chat_id: the chat the calls are made in.
        memory: the chat's memory engine, handed to tools in their context.
        blobs: where results over ``blob_threshold_tokens`` are stored; without it nothing is
            compressed. Use ``StoreBlobs(store, user_id)`` to link the recorded calls to their blobs.
        counter: counts result tokens (default: the shared ``o200k_base`` counter).
        blob_threshold_tokens: results of more tokens become blobs.
        timeout_s: the limit for one run of a tool, in seconds.
        strategies: failure strategies, the first match applies (default: seed 000 §8.2's three).

    Example:
        >>> import asyncio
        >>> from tierwise.tools import tool
        >>> @tool(tier="action")
        ... def add(a: int, b: int = 1) -> int:
        ...     '''Add two numbers.'''
        ...     return a + b
        >>> executor = ToolExecutor(ToolRegistry([add]))
        >>> asyncio.run(executor.execute("c1", "add", '{"a": 2}')).content
        '3'
        >>> print(asyncio.run(executor.execute("c2", "add", '{"a": "two", "c": 1}')).content)
        error: invalid arguments for add; fix them and call again:
        - a: Input should be a valid integer, unable to parse string as an integer (got "two")
        - c: not a parameter of add; remove it (parameters: a, b)
    """

    def __init__(
        self,
        registry: ToolRegistry,
        *,
        store: Store | None = None,
        user_id: str | None = None,
        chat_id: str | None = None,
        memory: Memory | None = None,
        blobs: BlobStore | None = None,
        counter: TokenCounter | None = None,
        blob_threshold_tokens: int = 400,
        timeout_s: float = 30,
        strategies: Sequence[FailureStrategy] = DEFAULT_STRATEGIES,
    ) -> None:
        if not timeout_s > 0:
            raise InputError(f"timeout_s must be a positive number of seconds (got {timeout_s!r})")
        if blob_threshold_tokens < 0:
            raise InputError(f"blob_threshold_tokens must be 0 or more (got {blob_threshold_tokens!r})")
        self.registry = registry
        self.store = store
        self.user_id = user_id
        self.chat_id = chat_id
        self.memory = memory
        self.blobs = blobs
        self.counter = counter
        self.blob_threshold_tokens = blob_threshold_tokens
        self.timeout_s = float(timeout_s)
        self.strategies = tuple(strategies)

    # -- public ------------------------------------------------------------------------------------

    async def execute(
        self,
        call_id: str,
        name: str,
        arguments_json: str | Mapping[str, Any],
        *,
        message_id: str | None = None,
        context: ToolContext | None = None,
    ) -> ToolResult:
        """Run one tool call; every failure becomes an error result, never an exception.

        Args:
            call_id: the model's id for the call.
            name: the tool the model called.
            arguments_json: the arguments as the model sent them (JSON text; a parsed dict is accepted).
            message_id: the stored assistant message that made the call; without it nothing is recorded.
            context: a context for the tool; its unset fields are filled from the executor.
        """
        start = time.perf_counter()
        ctx = self._context(call_id, message_id, context)
        arguments, problem = parse_arguments(name, arguments_json)
        logged = arguments if arguments is not None else {"_raw": raw_text(arguments_json)}
        tool = self.registry.get(name)
        values: dict[str, Any] | None = None
        if tool is None:
            problem = self.registry.unknown(name)
        elif arguments is not None:
            try:
                values = tool.validate(arguments)
            except ValidationError as exc:
                problem = explain_validation(tool, exc)
        if tool is None or arguments is None or values is None:
            problem = problem or f"arguments for {name} could not be read"
            result = ToolResult(
                call_id, name, f"error: {problem}", success=False, error=problem, duration_ms=_ms(start)
            )
            await self._record(ctx, name, logged, result)
            return result
        run = await self._run(tool, values, ctx)
        if run.ok:
            result = await self._success(call_id, name, tool, run, start)
        elif run.strategy is not None and run.strategy.fallback == "alternative":
            return await self._alternative(call_id, tool, arguments, run, ctx, logged, start)
        else:
            result = self._failure(call_id, name, run, start)
        await self._record(ctx, name, logged, result)
        return result

    async def execute_many(
        self,
        calls: Iterable[ToolCall | Mapping[str, Any]],
        *,
        message_id: str | None = None,
        context: ToolContext | None = None,
    ) -> list[ToolResult]:
        """Run independent calls concurrently; results come back in the calls' order.

        Args:
            calls: :class:`ToolCall` objects, or OpenAI ``tool_calls`` entries.
            message_id: the stored assistant message that made the calls.
            context: a context for every call (see :meth:`execute`).
        """
        parsed = [c if isinstance(c, ToolCall) else ToolCall.from_openai(c) for c in calls]
        return list(
            await asyncio.gather(
                *(
                    self.execute(c.call_id, c.name, c.arguments, message_id=message_id, context=context)
                    for c in parsed
                )
            )
        )

    # -- running -----------------------------------------------------------------------------------

    def _context(self, call_id: str, message_id: str | None, given: ToolContext | None) -> ToolContext:
        base = given if given is not None else ToolContext()
        return dataclasses.replace(
            base,
            user_id=base.user_id if base.user_id is not None else self.user_id,
            chat_id=base.chat_id if base.chat_id is not None else self.chat_id,
            store=base.store if base.store is not None else self.store,
            memory=base.memory if base.memory is not None else self.memory,
            blobs=base.blobs if base.blobs is not None else self.blobs,
            message_id=message_id if message_id is not None else base.message_id,
            call_id=call_id,
        )

    async def _attempt(self, tool: Tool, values: Mapping[str, Any], ctx: ToolContext) -> _Run:
        """Run ``tool`` once under the timeout."""
        try:
            async with asyncio.timeout(self.timeout_s) as deadline:
                value = await tool.invoke(values, ctx)
        except TimeoutError as exc:
            if not deadline.expired():  # the tool itself raised TimeoutError
                return self._raised(tool, ctx, exc)
            logger.warning("tool %s (call %s) timed out after %s s", tool.name, ctx.call_id, self.timeout_s)
            return _Run(False, error=f"timed out after {self.timeout_s:g} s", attempts=1)
        except Exception as exc:
            return self._raised(tool, ctx, exc)
        return _Run(True, value, attempts=1)

    @staticmethod
    def _raised(tool: Tool, ctx: ToolContext, exc: Exception) -> _Run:
        error = _describe(exc)
        logger.warning("tool %s (call %s) failed: %s", tool.name, ctx.call_id, error, exc_info=exc)
        return _Run(False, error=error, attempts=1)

    async def _run(self, tool: Tool, values: Mapping[str, Any], ctx: ToolContext) -> _Run:
        """Run ``tool``, retrying while a ``retry`` strategy matches and has attempts left."""
        attempts = 0
        strategy: FailureStrategy | None = None
        while True:
            attempts += 1
            run = await self._attempt(tool, values, ctx)
            run.attempts = attempts
            if run.ok:
                run.strategy = strategy
                return run
            strategy = find_strategy(self.strategies, tool.name, run.error)
            run.strategy = strategy
            if strategy is None or strategy.fallback != "retry" or attempts > strategy.retries:
                return run
            logger.info("retrying tool %s (call %s) after: %s", tool.name, ctx.call_id, run.error)
            await asyncio.sleep(strategy.delay(attempts))

    async def _content(self, name: str, value: Any) -> tuple[str, Any, str | None, str | None]:
        """Text for the model, JSON-able data, blob sha256 and an error if the value cannot be sent."""
        try:
            text, data = serialize_result(value)
        except Exception as exc:  # a circular reference, undecodable bytes, a failing __str__ …
            return "", None, None, f"the result of {name} cannot be serialised: {_describe(exc)}"
        if self.blobs is None:
            return text, data, None, None
        try:
            compressed = await asyncio.to_thread(self._compress, name, text)
        except Exception:
            logger.exception("could not store the result of tool %s as a blob; sending it in full", name)
            return text, data, None, None
        if isinstance(compressed, CompressedToolResult):
            return compressed.render(), data, compressed.blob.sha256, None
        return text, data, None, None

    def _compress(self, name: str, text: str) -> str | CompressedToolResult:
        assert self.blobs is not None
        if self.counter is None:
            from tierwise.tokens import get_counter

            self.counter = get_counter()
        return compress_tool_result(
            name, text, self.blobs, self.counter, threshold_tokens=self.blob_threshold_tokens
        )

    # -- results -----------------------------------------------------------------------------------

    async def _success(self, call_id: str, name: str, tool: Tool, run: _Run, start: float) -> ToolResult:
        content, data, sha, error = await self._content(tool.name, run.value)
        fallback: Fallback | None = run.strategy.fallback if run.strategy else None
        if error is not None:
            return ToolResult(
                call_id,
                name,
                f"error: {error}",
                success=False,
                error=error,
                duration_ms=_ms(start),
                attempts=run.attempts,
                strategy_used=fallback,
            )
        return ToolResult(
            call_id,
            name,
            content,
            success=True,
            duration_ms=_ms(start),
            blob_sha256=sha,
            attempts=run.attempts,
            strategy_used=fallback,
            data=data,
        )

    def _failure(self, call_id: str, name: str, run: _Run, start: float) -> ToolResult:
        strategy = run.strategy
        fallback: Fallback | None = strategy.fallback if strategy else None
        error = run.error
        if strategy is not None and strategy.fallback == "explain":
            tell = strategy.user_message or f"the {name} tool is unavailable right now."
            content = f"error: {name} failed: {error}. Do not call it again now; tell the user: {tell}"
        elif strategy is not None and strategy.fallback == "skip":
            content = f"{name} was skipped ({strategy.user_message or error}); continue without it."
        elif run.attempts > 1:
            content = f"error: {name} failed after {run.attempts} attempts: {error}"
        else:
            content = f"error: {name} failed: {error}"
        return ToolResult(
            call_id,
            name,
            content,
            success=False,
            error=error,
            duration_ms=_ms(start),
            attempts=run.attempts,
            strategy_used=fallback,
        )

    async def _alternative(
        self,
        call_id: str,
        tool: Tool,
        arguments: Mapping[str, Any],
        run: _Run,
        ctx: ToolContext,
        logged: dict[str, Any],
        start: float,
    ) -> ToolResult:
        """Run the strategy's alternative tool with the arguments it accepts; record both runs."""
        assert run.strategy is not None
        strategy, name = run.strategy, tool.name
        failed = self._failure(call_id, name, dataclasses.replace(run, strategy=None), start)
        await self._record(ctx, name, logged, failed)
        alt = self.registry.get(strategy.alternative_tool or "")
        if alt is None or alt is tool:
            logger.warning(
                "the strategy for %s names alternative %r, which is not registered (or is the same tool)",
                name,
                strategy.alternative_tool,
            )
            return dataclasses.replace(failed, strategy_used="alternative")
        kept = {k: v for k, v in arguments.items() if k in alt.parameter_names}
        alt_start = time.perf_counter()
        try:
            values = alt.validate(kept)
        except ValidationError as exc:
            why = explain_validation(alt, exc).splitlines()[1].removeprefix("- ")
            content = f"{failed.content} (the alternative {alt.name} could not run either: {why})"
            return dataclasses.replace(
                failed, content=content, strategy_used="alternative", duration_ms=_ms(start)
            )
        alt_run = await self._attempt(alt, values, ctx)
        alt_result = (
            await self._success(call_id, alt.name, alt, alt_run, alt_start)
            if alt_run.ok
            else self._failure(call_id, alt.name, alt_run, alt_start)
        )
        await self._record(ctx, alt.name, kept, alt_result)
        if not alt_result.success:
            content = f"{failed.content} (the alternative {alt.name} failed too: {alt_result.error})"
            return dataclasses.replace(
                failed, content=content, strategy_used="alternative", duration_ms=_ms(start)
            )
        prefix = strategy.user_message or f"{name} failed; here is {alt.name} instead."
        content = f"{prefix}\n({name} failed: {run.error}. Result of {alt.name}:)\n{alt_result.content}"
        return ToolResult(
            call_id,
            name,
            content,
            success=True,
            error=run.error,
            duration_ms=_ms(start),
            blob_sha256=alt_result.blob_sha256,
            attempts=run.attempts + 1,
            strategy_used="alternative",
            data=alt_result.data,
        )

    # -- recording ---------------------------------------------------------------------------------

    async def _record(
        self, ctx: ToolContext, name: str, arguments: Mapping[str, Any], result: ToolResult
    ) -> None:
        """``Store.add_tool_call`` for one execution, if there is a store, user, chat and message."""
        store = ctx.store
        if store is None or ctx.user_id is None or ctx.chat_id is None or ctx.message_id is None:
            return
        blob_in_store = (
            result.blob_sha256 is not None
            and getattr(self.blobs, "store", None) is store
            and getattr(self.blobs, "user_id", None) == ctx.user_id
        )
        if not result.success:
            logged_result: Any = {"content": result.content}
        elif blob_in_store or isinstance(result.data, str):
            logged_result = {"content": result.content if blob_in_store else result.data}
        else:
            logged_result = result.data
        try:
            await asyncio.to_thread(
                store.add_tool_call,
                ctx.user_id,
                ctx.chat_id,
                ctx.message_id,
                storable(name) or "(empty)",
                storable(dict(arguments)),
                result=storable(logged_result),
                blob_sha256=result.blob_sha256 if blob_in_store else None,
                duration_ms=result.duration_ms,
                success=result.success,
                error=storable(result.error),
            )
        except Exception:
            logger.exception("could not record tool call %s (%s) in the store", ctx.call_id, name)


def _ms(start: float) -> int:
    return max(0, round((time.perf_counter() - start) * 1000))
