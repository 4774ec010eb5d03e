"""Group collection across replicas: a rendezvous in Redis where one replica judges a group and the others read it.

Keys of a group key G (all with the Redis Cluster hash tag {G}, so every script touches one slot):
    pcfj:rg:{G}:cur    the open generation's id (random), expiring a while after the wait
    pcfj:rg:{G}:open   that generation's member responses (a list), same lifetime
    pcfj:rg:{G}:res    hash: "<gen>" → the verdict (JSON), "<gen>:m" → the closed generation's members (JSON)

JOIN, one atomic script: append the request's responses to the open generation, opening one if there is none; if
that makes ``size`` members, close it at once (members moved to "<gen>:m", cur/open deleted) and this caller judges.
Otherwise the caller's replica watches the generation (one watcher per generation and replica, shared by its local
members): it polls for the verdict and, once the wait has passed since its first local member joined, tries CLOSE
(the same move, only if that generation is still the open one); if that succeeds it judges what arrived. The
judging replica judges in a task of its own (its caller may leave), publishes the verdict, failures included, and
every replica's waiters read it. No verdict within the judging deadline after the close (the judging replica
died): a watcher takes over and judges the closed members itself (backend calls are single-flighted through the
shared cache).

Redis stalls and restarts: a command that timed out may still run once Redis answers again, so JOIN and CLOSE are
idempotent (JOIN records its id in "j:<id>", a closer its id in "<gen>:j"; retried, they answer what the first try
did) and every operation is retried until it succeeds, for up to ``PATIENCE_S`` since Redis stopped answering. A
stall shorter than that neither splits a group nor judges a member twice. Redis unreachable for longer (or found
down when a member arrives after that): members fall back to the in-process collector, and their rewards say so
(``FALLBACK_NOTE``): such a member may also be judged with its full group on another replica once Redis is back.
"""

from __future__ import annotations

import asyncio
import json
import secrets
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from pcfjudge.cache.redis_client import RedisClient, close
from pcfjudge.reward.collector import JudgeFn, LocalCollector, noted, settle
from pcfjudge.reward.scoring import GroupVerdict

T = TypeVar("T")
GRACE_S = 5.0
PATIENCE_S = 10.0
"""How long a stalled Redis is waited for (each operation retried) before members fall back to in-process groups."""
PROBE_S = 1.0
"""Once Redis has been down longer than ``PATIENCE_S``: at most one try per this long; other members fall back."""
FALLBACK_NOTE = (
    "grouped in process: the shared rendezvous (Redis) was unreachable, so this sample was judged with the members "
    "this replica had; it may also be judged with its full group elsewhere (never charged twice)"
)

# KEYS = cur, open, res; ARGV = size, join id (also the id of a generation it opens), open ms, res ms, response…
_JOIN = """
local known = redis.call('hget', KEYS[3], 'j:' .. ARGV[2])
if known then
  if redis.call('get', KEYS[1]) == known then return {0, known} end
  if redis.call('hget', KEYS[3], known .. ':j') == ARGV[2] then
    return {1, known, cjson.decode(redis.call('hget', KEYS[3], known .. ':m'))}
  end
  return {0, known}
end
local gen = redis.call('get', KEYS[1])
if not gen then
  gen = ARGV[2]
  redis.call('del', KEYS[2])
end
redis.call('hset', KEYS[3], 'j:' .. ARGV[2], gen)
redis.call('pexpire', KEYS[3], ARGV[4])
local n = 0
for i = 5, #ARGV do n = redis.call('rpush', KEYS[2], ARGV[i]) end
if n >= tonumber(ARGV[1]) then
  local members = redis.call('lrange', KEYS[2], 0, -1)
  redis.call('del', KEYS[1], KEYS[2])
  redis.call('hset', KEYS[3], gen .. ':m', cjson.encode(members), gen .. ':j', ARGV[2])
  redis.call('pexpire', KEYS[3], ARGV[4])
  return {1, gen, members}
end
redis.call('set', KEYS[1], gen, 'PX', ARGV[3])
redis.call('pexpire', KEYS[2], ARGV[3])
return {0, gen}
"""
# KEYS = cur, open, res; ARGV = gen id, res ms, closer id. Closes the generation only if it is still the open one
# (or answers again what this closer's earlier try did).
_CLOSE = """
if redis.call('get', KEYS[1]) == ARGV[1] then
  local members = redis.call('lrange', KEYS[2], 0, -1)
  redis.call('del', KEYS[1], KEYS[2])
  redis.call('hset', KEYS[3], ARGV[1] .. ':m', cjson.encode(members), ARGV[1] .. ':j', ARGV[3])
  redis.call('pexpire', KEYS[3], ARGV[2])
  return {1, members}
end
if redis.call('hget', KEYS[3], ARGV[1] .. ':j') == ARGV[3] then
  return {1, cjson.decode(redis.call('hget', KEYS[3], ARGV[1] .. ':m'))}
end
return {0}
"""

# KEYS = res; ARGV = gen id, verdict, res ms.
_PUBLISH = "redis.call('hset', KEYS[1], ARGV[1], ARGV[2]) return redis.call('pexpire', KEYS[1], ARGV[3])"


class RendezvousUnavailable(Exception):
    """Redis failed or timed out (for longer than the patience, where the operation was retried)."""


@dataclass(slots=True)
class _Watch:
    texts: list[str]
    done: asyncio.Future[GroupVerdict]


def _keys(key: str) -> tuple[str, str, str]:
    return f"pcfj:rg:{{{key}}}:cur", f"pcfj:rg:{{{key}}}:open", f"pcfj:rg:{{{key}}}:res"


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


class RedisRendezvous:
    """Collects groups across replicas (see the module docstring), falling back to ``local`` without Redis.

    It has no circuit breaker: a stall is ridden out for ``patience_s`` instead (a split group costs more than a
    wait)."""

    def __init__(
        self,
        client: RedisClient,
        local: LocalCollector,
        *,
        judge_timeout_s: float,
        op_timeout_s: float = 0.5,
        poll_s: tuple[float, float] = (0.01, 0.2),
        patience_s: float | None = None,
    ) -> None:
        self.client, self.local = client, local
        self.judge_timeout_s, self.op_timeout_s = judge_timeout_s, op_timeout_s
        self.poll_min_s, self.poll_max_s = poll_s
        self.patience_s = PATIENCE_S if patience_s is None else patience_s
        self.down_since: float | None = None  # loop time of the first failure since Redis last answered
        self._last_try = 0.0
        self._watches: dict[tuple[str, str], _Watch] = {}

    def _now(self) -> float:
        return asyncio.get_running_loop().time()

    def down_too_long(self) -> bool:
        """Redis has not answered for longer than the patience: not a stall any more."""
        return self.down_since is not None and self._now() - self.down_since > self.patience_s

    async def _run(self, op: Callable[[RedisClient], Awaitable[T]]) -> T:
        """One try of ``op``, bounded by the operation timeout."""
        self._last_try = self._now()
        try:
            async with asyncio.timeout(self.op_timeout_s):
                result = await op(self.client)
        except Exception as exc:  # anything Redis or the client raises
            if self.down_since is None:
                self.down_since = self._last_try
            raise RendezvousUnavailable(f"{type(exc).__name__}: {exc}") from exc
        self.down_since = None
        return result

    async def _patient(self, op: Callable[[RedisClient], Awaitable[T]]) -> T:
        """``op`` (idempotent), retried until it succeeds while Redis has been down for less than the patience;
        ``RendezvousUnavailable`` after that."""
        if self.down_too_long():
            if self._now() - self._last_try < PROBE_S:
                raise RendezvousUnavailable(f"Redis has not answered for over {self.patience_s:g}s")
            return await self._run(op)  # one probe: is it back?
        delay = 0.05
        while True:
            try:
                return await self._run(op)
            except RendezvousUnavailable:
                if self.down_too_long():
                    raise
            await asyncio.sleep(delay)
            delay = min(delay * 2, 0.5)

    async def collect(self, key: str, texts: Sequence[str], size: int, wait_s: float, judge: JudgeFn) -> GroupVerdict:
        """Join the group ``key`` with ``texts`` and return its verdict, wherever it is judged. The join runs in a
        task of its own: a caller that leaves mid-join still leaves its member (and, if it closed the group, the
        judging) behind."""
        done: asyncio.Future[GroupVerdict] = asyncio.get_running_loop().create_future()
        self.local.spawn(lambda: settle(done, self._join(key, list(texts), size, wait_s, judge)))
        return await asyncio.shield(done)

    async def _fallback(self, key: str, texts: list[str], size: int, wait_s: float, judge: JudgeFn) -> GroupVerdict:
        self.local.count("fallback")
        return noted(await self.local.collect(key, texts, size, max(0.0, wait_s), judge), FALLBACK_NOTE)

    async def _join(self, key: str, texts: list[str], size: int, wait_s: float, judge: JudgeFn) -> GroupVerdict:
        keys = _keys(key)
        arrived = self._now()
        open_ms = round((2 * wait_s + GRACE_S + self.patience_s) * 1000)
        res_ms = round((2 * wait_s + self.judge_timeout_s + 12 * GRACE_S + self.patience_s) * 1000)
        join_id = secrets.token_hex(8)  # the same id on every retry: a JOIN that ran already is not repeated
        try:
            reply = await self._patient(lambda c: c.eval(_JOIN, 3, *keys, size, join_id, open_ms, res_ms, *texts))
        except RendezvousUnavailable:
            return await self._fallback(key, texts, size, wait_s - (self._now() - arrived), judge)
        gen = _text(reply[1])
        if reply[0] == 1:
            self.local.count("full")
            return await self._judge(key, gen, [_text(m) for m in reply[2]], judge)
        watch = self._watches.get((key, gen))
        if watch is None:
            watch = self._watches[(key, gen)] = _Watch(list(texts), asyncio.get_running_loop().create_future())
            close_at = arrived + wait_s
            self.local.spawn(lambda: self._watch(key, gen, size, close_at, judge, watch))
        else:
            watch.texts.extend(texts)
        return await asyncio.shield(watch.done)

    async def _judge(self, key: str, gen: str, members: list[str], judge: JudgeFn) -> GroupVerdict:
        """Judge a closed generation in a task of its own, publish the verdict, hand it to local waiters."""
        done: asyncio.Future[GroupVerdict] = asyncio.get_running_loop().create_future()
        self.local.spawn(lambda: self._judge_and_publish(key, gen, members, judge, done))
        return await asyncio.shield(done)

    async def _judge_and_publish(
        self, key: str, gen: str, members: list[str], judge: JudgeFn, done: asyncio.Future[GroupVerdict]
    ) -> None:
        await settle(done, judge(members))
        if done.cancelled() or done.exception() is not None:
            return
        verdict = done.result()
        watch = self._watches.get((key, gen))
        if watch is not None and not watch.done.done():
            watch.done.set_result(verdict)
        res, blob = _keys(key)[2], verdict.to_json()
        res_ms = round((self.judge_timeout_s + 12 * GRACE_S + self.patience_s) * 1000)
        try:
            await self._patient(lambda c: c.eval(_PUBLISH, 1, res, gen, blob, res_ms))
        except RendezvousUnavailable:
            return  # other replicas' watchers take over when no verdict comes

    async def _watch(self, key: str, gen: str, size: int, close_at: float, judge: JudgeFn, watch: _Watch) -> None:
        try:
            await settle(watch.done, self._await_group(key, gen, size, close_at, judge, watch))
        finally:
            self._watches.pop((key, gen), None)

    async def _await_group(
        self, key: str, gen: str, size: int, close_at: float, judge: JudgeFn, watch: _Watch
    ) -> GroupVerdict:
        keys = _keys(key)
        closer = secrets.token_hex(8)
        wait_s = close_at - self._now()
        try:
            verdict = await self._poll(keys[2], gen, close_at, watch)
            if verdict is not None:
                return verdict
            res_ms = round((max(0.0, wait_s) + self.judge_timeout_s + 12 * GRACE_S + self.patience_s) * 1000)
            reply = await self._patient(lambda c: c.eval(_CLOSE, 3, *keys, gen, res_ms, closer))
            if reply[0] == 1:
                self.local.count("timeout")
                return await self._judge(key, gen, [_text(m) for m in reply[1]], judge)
            verdict = await self._poll(keys[2], gen, self._now() + self.judge_timeout_s + GRACE_S, watch)
            if verdict is not None:
                return verdict
            blob = await self._patient(lambda c: c.hget(keys[2], f"{gen}:m"))
        except RendezvousUnavailable:
            return await self._fallback(key, list(watch.texts), size, close_at - self._now(), judge)
        self.local.count("takeover")
        members = [str(m) for m in json.loads(blob)] if blob else list(watch.texts)
        return await self._judge(key, gen, members, judge)

    async def _poll(self, res: str, gen: str, until: float, watch: _Watch) -> GroupVerdict | None:
        """The published verdict of ``gen``, or None at ``until``; stops early once ``watch`` is resolved. A Redis
        that does not answer is waited for (``RendezvousUnavailable`` once it has been down past the patience)."""
        delay = self.poll_min_s
        while not watch.done.done():
            try:
                blob = await self._run(lambda c: c.hget(res, gen))
            except RendezvousUnavailable:
                if self.down_too_long():
                    raise
                blob = None
            if blob is not None:
                return GroupVerdict.from_json(blob)
            remaining = until - self._now()
            if remaining <= 0:
                return None
            await asyncio.sleep(min(remaining, delay))
            delay = min(delay * 2, self.poll_max_s)
        return watch.done.result() if not watch.done.cancelled() else None

    async def aclose(self) -> None:
        await close(self.client)
