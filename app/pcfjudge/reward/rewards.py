"""The rewards core behind every RL front door: one request's groups in, one verdict per group out.

A group that holds at least ``size`` members in the request is judged at once. A smaller one is collected: it waits
up to ``wait_s`` for the rest of its members from other requests (in process, or across replicas with
PCFJ_REDIS_URL), then the whole group is judged once and every waiting request reads its own members' outcomes.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from typing import Protocol

from pcfjudge.cache.redis_client import connect
from pcfjudge.engine.judge import Judge
from pcfjudge.engine.progress import PLAIN, Watch
from pcfjudge.reward.collector import JudgeFn, LocalCollector
from pcfjudge.reward.rendezvous import RedisRendezvous
from pcfjudge.reward.scoring import GroupSpec, GroupVerdict, Recorder, judge_group
from pcfjudge.settings import CacheSettings


@dataclass(frozen=True, slots=True)
class GroupRequest:
    """One request's members of one group: what they share, the group's label and their responses in order."""

    spec: GroupSpec
    label: str
    texts: list[str]


class Collector(Protocol):
    """What ``Rewards`` collects through: the in-process collector or the Redis rendezvous."""

    async def collect(
        self, key: str, texts: Sequence[str], size: int, wait_s: float, judge: JudgeFn
    ) -> GroupVerdict: ...

    async def aclose(self) -> None: ...


RENDEZVOUS_TIMEOUT_S = 1.0


class Rewards:
    """Judges reward groups through ``judge`` (the service's one judging path), collecting incomplete ones."""

    def __init__(self, judge: Judge, local: LocalCollector, shared: Collector | None) -> None:
        self.judge, self.local, self.shared = judge, local, shared

    @classmethod
    def build(cls, cache: CacheSettings, judge: Judge) -> Rewards:
        local = LocalCollector()
        if not cache.redis_url:
            return cls(judge, local, None)

        # A group's members wait seconds for each other, so a Redis stall of a few hundred ms must not split the
        # group (as it would with the cache's 0.25 s timeouts, which only cost a miss); Redis down still falls back
        # to grouping in process, after at most these timeouts.
        read_s = max(RENDEZVOUS_TIMEOUT_S, cache.redis_timeout_s)
        connect_s = max(RENDEZVOUS_TIMEOUT_S, cache.redis_connect_timeout_s)
        client = connect(
            cache.redis_url,
            timeout_s=read_s,
            connect_timeout_s=connect_s,
            max_connections=cache.redis_max_connections,
            pool_timeout_s=cache.redis_pool_timeout_s,
        )
        shared = RedisRendezvous(
            client,
            local,
            judge_timeout_s=judge.timeout_s,
            op_timeout_s=read_s + connect_s,
        )
        return cls(judge, local, shared)

    async def judge_groups(
        self,
        groups: Sequence[GroupRequest],
        *,
        size: int,
        wait_s: float,
        record: Recorder | None = None,
        watch: Watch = PLAIN,
    ) -> list[GroupVerdict]:
        """Every group's verdict, in order (groups are judged and collected concurrently); the groups this request
        judges run as ``watch`` says and are awaited through ``record`` (its door's metrics, ``scoring.Recorder``)."""
        return list(await asyncio.gather(*(self._group(g, size, wait_s, record, watch) for g in groups)))

    async def _group(
        self, group: GroupRequest, size: int, wait_s: float, record: Recorder | None, watch: Watch
    ) -> GroupVerdict:
        judge: JudgeFn = partial(judge_group, self.judge, group.spec, record=record, watch=watch)
        if len(group.texts) >= size:
            return await judge(group.texts)
        collector = self.shared or self.local
        verdict = await collector.collect(group.spec.key(group.label), group.texts, size, wait_s, judge)
        missing = [text for text in dict.fromkeys(group.texts) if verdict.outcome(text) is None]
        if missing:  # lost with a crashed replica's open generation: judged now rather than dropped
            extra = await judge(missing)
            verdict = GroupVerdict(verdict.model, verdict.outcomes | extra.outcomes, verdict.usage + extra.usage)
        return verdict

    async def aclose(self) -> None:
        """Cancel collection and judging in flight, then close the Redis client."""
        await self.local.aclose()
        if self.shared is not None:
            await self.shared.aclose()
