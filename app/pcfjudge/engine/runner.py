"""Run a request's backend calls: cache lookup, in-process single flight, bounded retries, one deadline.

The one failure policy of the service lives here (SDK retries are off):
  * rate limits, overload, timeouts and provider errors are retried up to ``max_retries`` times with jittered
    exponential backoff that honours ``Retry-After``, never past the request deadline;
  * an answer that cannot be used (invalid JSON, wrong labels, truncated) is retried once, then the run fails;
  * refusals are not retried;
  * successful answers are cached; failures never are;
  * a call nobody waits for any more (its requests disconnected or passed their deadline) is cancelled.

Admission control (``Slots.reserve``) admits the calls a request needs before any starts, or refuses at once: one
reservation per call task the request starts, released exactly once when the task ends. A call waiting for a slot
that can no longer meet its deadline is shed (``Shed``: a 503 run failure with Retry-After). A call waits for its slot
in the class and key's turn of the request that started it (``Watch.priority``, ``Watch.key``).

What calls cost (``engine.spend``): every attempt, retries included, is counted against the judgment's meter (its
``Watch``'s) before it is made (and not made once the meter is spent: ``over_limit``). A call is charged to the request
that started it; a request that joins another request's call in flight, or a second run of the same call in one
request, gets the answer as a cache hit (``cached``, no usage), as it would from the shared cache.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from functools import partial
from typing import Protocol

from pcfjudge.backends.base import BackendError, BackendTimeout, Completion, Refused, Truncated
from pcfjudge.backends.registry import ResolvedModel
from pcfjudge.backends.slots import ANYONE, Priority, Saturated, Shed
from pcfjudge.cache.flight import SharedFlight
from pcfjudge.cache.interface import PARSED, CacheValue
from pcfjudge.engine import turns
from pcfjudge.engine.calls import CallOutcome as CallOutcome  # re-exported: the judges and eval import them here
from pcfjudge.engine.calls import CallSpec as CallSpec
from pcfjudge.engine.calls import from_cache
from pcfjudge.engine.progress import DEADLINE_KIND, Watch
from pcfjudge.engine.spend import Meter
from pcfjudge.errors import Overloaded
from pcfjudge.judging.parse import OutputError
from pcfjudge.telemetry import tracing
from pcfjudge.telemetry.hooks import NOOP, Observer
from pcfjudge.types import CacheMode, Usage


class OverLimit(BackendError):
    """The request's call allowance is spent: the attempt (a retry, usually) is not made."""

    kind = "over_limit"


class CallCache(Protocol):
    """What the runner needs of a cache (memory, Redis, or both layered)."""

    async def get_many(self, keys: Sequence[str]) -> list[CacheValue | None]: ...

    async def set(self, key: str, value: CacheValue, *, fresh: bool = False) -> None: ...


class CallRunner(Protocol):
    """What the judges need to make their calls: ``Runner`` itself, or a wrapper such as eval's ``ReplayRunner``."""

    async def run(
        self, specs: Sequence[CallSpec], model: ResolvedModel, *, watch: Watch, cache_mode: CacheMode = "use"
    ) -> list[CallOutcome]: ...


class Runner:
    """The service's ``CallRunner``: cache, single flight (in process and across replicas), retries, deadline."""

    def __init__(
        self,
        cache: CallCache,
        *,
        max_retries: int = 2,
        retry_base_s: float = 0.5,
        retry_max_s: float = 20.0,
        observer: Observer = NOOP,
    ) -> None:
        self.cache = cache
        # checked once: a runtime Protocol isinstance is not cheap
        self._flight: SharedFlight | None = cache if isinstance(cache, SharedFlight) else None
        # A cache kept per API key (PCFJ_CACHE_PER_KEY) keeps the calls in flight apart by the same key.
        self._scoped: Callable[[str], str] = getattr(cache, "scoped", _same)
        self.max_retries = max_retries
        self.retry_base_s = retry_base_s
        self.retry_max_s = retry_max_s
        self.observer = observer
        self._inflight: dict[str, asyncio.Task[CallOutcome]] = {}
        self._waiters: dict[asyncio.Task[CallOutcome], int] = {}  # requests waiting for each call task
        self._jitter = random.Random()

    async def run(
        self,
        specs: Sequence[CallSpec],
        model: ResolvedModel,
        *,
        watch: Watch,
        cache_mode: CacheMode = "use",
        fetched: Sequence[CacheValue | None] | None = None,
    ) -> list[CallOutcome]:
        """Outcomes in the order of ``specs``, each reported to ``watch.on_outcome`` as it finishes; every call is
        done by ``watch.until`` (a ``loop.time()`` instant), and waited for until ``watch.answer_by``. ``fetched``:
        the cache's entries for ``specs`` (``cached``), when the caller has asked for them already.

        Raises ``Refusal`` (503) when admission control will not take the calls this needs. When the caller goes
        away (cancelled: its client disconnected) or its deadline passes, every call no other request is waiting
        for is cancelled; calls shared through single flight keep running for the others.
        """
        hook, deadline, answer = watch.on_outcome, watch.until, watch.answer_by
        outcomes = await self._cached(specs, cache_mode, hook, fetched)
        announce_hits(watch, model, len(specs) - outcomes.count(None))
        misses = [i for i, o in enumerate(outcomes) if o is None]
        if not misses:
            return [o for o in outcomes if o is not None]
        if watch.heard:  # before any call task exists: a judgment's span, made now, is the parent of its calls
            watch.announce("calling", {"model": model.string, "runs": len(misses)})
        loop = asyncio.get_running_loop()
        # The caller's deadline (``answer_by``): wait until it, and let the calls go on to the request's own deadline.
        wait_until = deadline if answer is None else min(deadline, answer.at)
        cut = wait_until < deadline
        # No await from here until every task exists: the count reserved is the count of tasks started below.
        flights = [self._scoped(specs[i].key) for i in misses] if cache_mode != "bypass" else []
        starts = len(misses) if cache_mode == "bypass" else len({f for f in flights if f not in self._inflight})
        try:
            model.limit.reserve(starts, deadline - loop.time(), watch.priority)
        except Saturated as exc:  # the backend cannot take them: the service declines the request (503)
            raise Overloaded(exc.detail, retry_after=exc.retry_after) from None
        pending: dict[int, asyncio.Task[CallOutcome]] = {}
        owned: set[int] = set()  # runs whose call this request started (the others share a call in flight)
        for n, i in enumerate(misses):
            task, started = self._join(specs[i], flights[n] if flights else None, model, watch, cache_mode)
            pending[i] = task
            if started:
                owned.add(i)
        assert len(owned) == starts, "call tasks started must match the reservation"
        gone = True  # the caller went away (cancelled) unless the wait ends normally
        try:
            # asyncio.wait never cancels what it waits for: a shared call outlives this request's deadline or exit
            if hook is None:
                await asyncio.wait(pending.values(), timeout=max(0.0, wait_until - loop.time()))
            else:
                await _reporting(pending, owned, specs, hook, wait_until)
            gone = False
        finally:
            linger = cut and answer is not None and answer.linger and not gone
            for task in pending.values():
                self._leave(task, cancel=not linger)
        for i, task in pending.items():
            outcomes[i] = _ended(task, i in owned, cut)
        return [o for o in outcomes if o is not None]  # every slot is filled above

    async def cached(self, keys: Sequence[str]) -> list[CacheValue | None]:
        """The cache's entries for ``keys`` (None where it has none), as ``run`` with ``cache_mode`` "use" would
        find them: for a caller that looks before it runs (``listwise_runs.warm_applies``) and passes them on (``fetched``)."""
        return await self.cache.get_many(keys)

    async def _cached(
        self,
        specs: Sequence[CallSpec],
        cache_mode: CacheMode,
        hook: Callable[[CallSpec, CallOutcome], None] | None,
        fetched: Sequence[CacheValue | None] | None = None,
    ) -> list[CallOutcome | None]:
        """The outcomes the cache has (None where it has none), each reported to ``hook``."""
        outcomes: list[CallOutcome | None] = [None] * len(specs)
        if cache_mode == "use" and specs:
            hits = fetched if fetched is not None else await self.cache.get_many([s.key for s in specs])
            for i, hit in enumerate(hits):
                if hit is not None:
                    outcomes[i] = found = from_cache(specs[i], hit)
                    if hook is not None and found is not None:
                        hook(specs[i], found)
        return outcomes

    def _join(
        self, spec: CallSpec, flight: str | None, model: ResolvedModel, watch: Watch, cache_mode: CacheMode
    ) -> tuple[asyncio.Task[CallOutcome], bool]:
        """The task making ``spec``'s call, shared by every request waiting for the same key (``flight``) in this
        process, and whether this call started it (it then holds one reservation, released when it ends)."""
        task = self._inflight.get(flight) if flight is not None else None
        started = task is None
        if task is not None:
            self.observer.single_flight_wait()
            tracing.shared(model.string, "request")
        else:
            by = Attempts(watch.until, watch.meter, watch.priority, watch.key)
            task = asyncio.create_task(self._call_once(spec, model, by, cache_mode))
            task.add_done_callback(lambda _t: model.limit.release(1, by.priority))
            if flight is not None:
                self._inflight[flight] = task
                task.add_done_callback(partial(self._forget, flight))
        self._waiters[task] = self._waiters.get(task, 0) + 1
        return task, started

    def _leave(self, task: asyncio.Task[CallOutcome], cancel: bool = True) -> None:
        """One request stopped waiting for ``task``; the last one to leave cancels it if it is still running (unless
        ``cancel`` is False: a run the caller's deadline cut, going on into the cache, in its slot)."""
        left = self._waiters.pop(task, 1) - 1
        if left > 0:
            self._waiters[task] = left
        elif not task.done() and cancel:
            task.cancel()

    def _forget(self, key: str, task: asyncio.Task[CallOutcome]) -> None:
        if self._inflight.get(key) is task:
            del self._inflight[key]

    async def _call_once(
        self, spec: CallSpec, model: ResolvedModel, by: Attempts, cache_mode: CacheMode
    ) -> CallOutcome:
        """Across replicas (shared cache only): one holder of the key's lock calls; the others take its answer."""
        if cache_mode == "bypass" or self._flight is None:
            return await self._call(spec, model, by, cache_mode)
        started = time.perf_counter()
        claim = await self._flight.claim(spec.key, by.until, fresh=cache_mode == "refresh")
        stored = from_cache(spec, claim.value) if claim.value is not None else None
        if stored is not None:
            stored.latency_ms = _ms(started)
            tracing.shared(model.string, "replica")
            return stored
        if claim.alone:  # no shared flight: the other replicas may be making this call too
            self.observer.single_flight_alone()
        try:
            return await self._call(spec, model, by, cache_mode)
        finally:
            await claim.release()

    async def _call(self, spec: CallSpec, model: ResolvedModel, by: Attempts, cache_mode: CacheMode) -> CallOutcome:
        """One backend call, its retries included: in a span of its own when tracing is on (``telemetry.tracing``)
        and the trace it is in is sampled."""
        if not tracing.on() or tracing.unsampled():
            return await self._attempts(spec, model, by, cache_mode)
        params = spec.call.params
        provider = getattr(model.backend, "provider", model.provider)  # the wire's: openai for an engine too
        from pcfjudge.telemetry.spans import backend_call  # tracing on only

        with backend_call(provider, model.name, model.string, params.temperature, params.max_output_tokens) as call:
            outcome = await self._attempts(spec, model, by, cache_mode)
            call.ended(outcome.error, outcome.usage)
        return outcome

    async def _attempts(self, spec: CallSpec, model: ResolvedModel, by: Attempts, cache_mode: CacheMode) -> CallOutcome:
        loop, deadline = asyncio.get_running_loop(), by.until
        started = time.perf_counter()
        usage = Usage()
        attempt = 0
        output_retried = False
        while True:
            remaining = deadline - loop.time()
            if remaining <= 0:
                return _failure(BackendTimeout("request deadline passed"), started, usage)
            call_started = time.perf_counter()
            try:
                await turns.take()  # the CPU of sending, then of reading the answer: a turn each (``turns``)
                completion = await _attempt(spec, model, by, remaining, self.observer)
                await turns.take()
                usage = usage + completion.usage
                answer = spec.validate(completion.text)
                parsed = spec.decode(answer) if spec.decode is not None else None
            except TimeoutError:
                exc: BackendError | OutputError = BackendTimeout(
                    f"no answer within the request deadline ({remaining:.1f}s, including the wait for a free slot)"
                )
            except (BackendError, OutputError) as err:
                if isinstance(err, Shed | OverLimit):  # no call was made
                    return _failure(err, started, usage)
                exc = err
                usage = usage + err.usage if isinstance(err, BackendError) else usage  # a failure may spend tokens
            else:
                self.observer.backend_call(model.string, "ok", time.perf_counter() - call_started, completion.usage)
                if cache_mode != "bypass":
                    await self._store(spec, model, answer, parsed, usage, fresh=cache_mode == "refresh")
                return CallOutcome(answer=answer, parsed=parsed, latency_ms=_ms(started), usage=usage)
            kind = exc.kind if isinstance(exc, BackendError) else "parse_error"
            self.observer.backend_call(model.string, kind, time.perf_counter() - call_started, None)
            if isinstance(exc, OutputError | Truncated):  # an unusable answer: retried once
                if output_retried:
                    return _failure(exc, started, usage)
                output_retried = True
                self.observer.retry(model.string, kind)
                tracing.retried(kind)
                continue
            attempt += 1
            delay = self._backoff(attempt, exc.retry_after)
            if isinstance(exc, Refused) or not exc.retryable or attempt > self.max_retries:
                return _failure(exc, started, usage)
            if loop.time() + delay >= deadline:
                return _failure(exc, started, usage)
            self.observer.retry(model.string, kind)
            tracing.retried(kind)
            await asyncio.sleep(delay)

    async def _store(
        self,
        spec: CallSpec,
        model: ResolvedModel,
        answer: dict[str, object],
        parsed: object,
        usage: Usage,
        *,
        fresh: bool,
    ) -> None:
        value = {
            "answer": answer,
            "usage": usage.as_dict(),
            "prompt_version": spec.prompt_version,
            "model": model.string,
        }
        if parsed is not None:
            value[PARSED] = parsed  # kept in process only (the Redis layer stores the JSON fields)
        await self.cache.set(spec.key, value, fresh=fresh)

    def _backoff(self, attempt: int, retry_after: float | None) -> float:
        base = min(self.retry_max_s, self.retry_base_s * 2.0 ** (attempt - 1))
        delay = base * (0.5 + self._jitter.random() / 2)
        return max(delay, retry_after) if retry_after is not None else delay

    async def aclose(self) -> None:
        for task in list(self._inflight.values()):
            task.cancel()


@dataclass(frozen=True, slots=True)
class Attempts:
    """What a call task's attempts answer to: the instant they must be done by, the meter of the judgment that
    started the call (None: nothing counted), and its class and key (``Watch``'s)."""

    until: float
    meter: Meter | None
    priority: Priority = "interactive"
    key: str = ANYONE


async def _attempt(
    spec: CallSpec, model: ResolvedModel, by: Attempts, remaining: float, observer: Observer
) -> Completion:
    """One backend attempt: wait for a slot (inside the deadline), count it against the judgment's meter, call."""
    async with asyncio.timeout(remaining):  # waiting for a slot counts against the deadline
        waiting = time.perf_counter()
        async with model.limit.slot(by.until, by.priority, by.key):
            tracing.queued(waiting)  # the slot's wait, on the call's span
            observer.slot_wait(model.string, by.priority, time.perf_counter() - waiting)
            refused = by.meter.try_call() if by.meter is not None else None  # every attempt counted; none past it
            if refused is not None:
                raise OverLimit(f"the request's backend calls ({refused}) are spent; no retry left")
            call = spec.call if by.priority == "interactive" else replace(spec.call, priority=by.priority)
            return await model.backend.complete(call, until=by.until)


_CUT = "the caller's deadline passed before this run finished (it goes on into the cache unless cancelled)"


async def _reporting(
    pending: dict[int, asyncio.Task[CallOutcome]],
    owned: set[int],
    specs: Sequence[CallSpec],
    hook: Callable[[CallSpec, CallOutcome], None],
    until: float,
) -> None:
    """Wait for ``pending`` until ``until``, calling ``hook`` for each call as it finishes."""
    loop = asyncio.get_running_loop()
    runs: dict[asyncio.Task[CallOutcome], list[int]] = {}
    for i, task in pending.items():
        runs.setdefault(task, []).append(i)
    waiting = set(runs)
    while waiting and (left := until - loop.time()) > 0:
        done, waiting = await asyncio.wait(waiting, timeout=left, return_when=asyncio.FIRST_COMPLETED)
        for task in done:
            if not task.cancelled():
                for i in runs[task]:
                    hook(specs[i], _final(task.result(), i in owned))


def announce_hits(watch: Watch, model: ResolvedModel, hits: int) -> None:
    """The ``cached`` event of the runs the cache answered (a judgment's span records it: ``engine.judgment_spans``)."""
    if hits and watch.heard:
        watch.announce("cached", {"cache": "hit", "model": model.string, "runs": hits})


def _ended(task: asyncio.Task[CallOutcome], owned: bool, cut: bool) -> CallOutcome:
    """What became of a call when its request stopped waiting: its outcome, or cut by the caller's deadline, or
    timed out at the request's own."""
    if task.done() and not task.cancelled():
        return _final(task.result(), owned)
    if cut:
        return CallOutcome(error=DEADLINE_KIND, detail=_CUT, failure="backend_timeout")
    return _failure(BackendTimeout("request deadline passed before the call finished"), 0.0)


def _final(outcome: CallOutcome, owned: bool) -> CallOutcome:
    return outcome if owned or outcome.answer is None else _shared(outcome)


def _same(key: str) -> str:
    return key


def _shared(outcome: CallOutcome) -> CallOutcome:
    """Another run's answer, as a cache hit: the call is charged to (and its usage reported by) its owner."""
    return replace(outcome, cached=True, usage=Usage())


def _ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 3) if started else 0.0


def _failure(exc: BackendError | OutputError, started: float, usage: Usage | None = None) -> CallOutcome:
    if isinstance(exc, OutputError):
        return CallOutcome(
            error=exc.kind, detail=exc.detail, latency_ms=_ms(started), usage=usage or Usage(), failure="backend_error"
        )
    return CallOutcome(
        error=exc.kind,
        detail=exc.detail,
        latency_ms=_ms(started),
        usage=usage or Usage(),
        retry_after=exc.retry_after,
        failure=exc.failure,
    )
