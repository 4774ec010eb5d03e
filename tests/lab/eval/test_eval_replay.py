"""The eval's ``ReplayRunner`` around the service's runner, and the harness's one concurrency loop (``judge_all``)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from dataclasses import replace

import pytest
from pcfjudge.backends.registry import ResolvedModel
from pcfjudge.engine.runner import CallOutcome, CallRunner, CallSpec
from pcfjudge.services import Services
from pcfjudge.settings import Settings
from pcfjudge.surface import Watch
from pcfjudge.types import CacheMode
from pcfjudge_lab.eval.harness import judge_all
from pcfjudge_lab.eval.replay import ReplayRunner
from pcfjudge_lab.eval.rewardbench2.collect import Rb2Plan, make_task, planned_calls
from pcfjudge_lab.eval.rewardbench2.loader import FactualityItem
from pcfjudge_lab.eval.runlog import PlannedCall

ITEM = FactualityItem("Factuality:1", "What is 2+2?", ("4", "5", "22", "four-ish"), 0, "Factuality")
PLAN = Rb2Plan("sim:oracle", max_k=3, executions=2)


class Counting:
    """A ``CallRunner`` that records the cache keys it is asked for, then asks ``inner``."""

    def __init__(self, inner: CallRunner) -> None:
        self.inner, self.keys = inner, list[str]()

    async def run(
        self, specs: Sequence[CallSpec], model: ResolvedModel, *, watch: Watch, cache_mode: CacheMode = "use"
    ) -> list[CallOutcome]:
        self.keys += [spec.key for spec in specs]
        return await self.inner.run(specs, model, watch=watch, cache_mode=cache_mode)


@pytest.fixture
async def services() -> AsyncIterator[Services]:
    services = Services.build(Settings())
    try:
        yield services
    finally:
        await services.aclose()


async def test_replay_runner_answers_logged_calls_and_delegates_the_rest_by_cache_key(services: Services) -> None:
    task = make_task(ITEM, PLAN, "consensus", PLAN.executions)
    calls = planned_calls(ITEM.item_id, task, services.judge.plan_listwise(task))
    assert [c.key[2:] for c in calls] == [(e, r) for e in range(2) for r in range(3)]
    first: dict[PlannedCall, CallOutcome] = {}
    await services.judge.using(runner=ReplayRunner(services.runner, calls, {}, first.__setitem__)).listwise(task)
    assert set(first) == set(calls) and all(o.answer is not None for o in first.values())

    logged = calls[1]  # as if a previous run had logged execution 0, run 1
    answer = first[logged].answer
    assert answer is not None
    inner = Counting(services.runner)
    second: dict[PlannedCall, CallOutcome] = {}
    runner = ReplayRunner(inner, calls, {logged.replay_key: answer}, second.__setitem__)
    result = await services.judge.using(runner=runner).listwise(task)
    assert sorted(inner.keys) == sorted(c.cache_key for c in calls if c != logged)  # the logged call is not made
    assert second[logged].cached and second[logged].answer == answer
    assert set(second) == set(calls) and result.runs[1].cached  # every call is reported once, replayed or made


async def test_a_call_outside_the_plan_is_a_clear_error(services: Services) -> None:
    task = make_task(ITEM, PLAN, "consensus", 1)
    other = replace(task, question="What is 3+3?")  # another item: the same runs, other cache keys
    calls = planned_calls(ITEM.item_id, other, services.judge.plan_listwise(other))
    runner = ReplayRunner(services.runner, calls, {}, lambda call, outcome: None)
    with pytest.raises(RuntimeError, match="not in the plan the eval was given"):
        await services.judge.using(runner=runner).listwise(task)


async def test_two_planned_calls_with_one_cache_key_are_refused(services: Services) -> None:
    call = PlannedCall("k", ("i", "consensus", 0, 0), ("i", "listwise", 0, ("0", "1")), ("0", "1"), 0)
    with pytest.raises(ValueError, match="one cache key"):
        ReplayRunner(services.runner, [call, replace(call, key=("i", "consensus", 0, 1))], {}, lambda c, o: None)


async def test_judge_all_bounds_concurrency_and_sums_failures() -> None:
    running = peak = 0

    async def one(item: int) -> int:
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        await asyncio.sleep(0.001)
        running -= 1
        return int(item % 3 == 0)

    assert await judge_all(range(30), 4, one) == 10
    assert peak == 4
