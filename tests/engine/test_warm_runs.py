"""``engine.listwise_runs.warm_applies``: a judgment the cache answers whole, with the entries it answered the same task with before,
is that judgment again (a copy, equal to it and to a judgment made the usual way), asking the cache once; anything
else (an entry stored again, another task, a run missing, adaptive K, a budget, a listener) is judged as usual."""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import Any

import pytest
from pcfjudge.engine import listwise_runs
from pcfjudge.engine.listwise_runs import ListwiseResult, ListwiseTask
from pcfjudge.engine.progress import PLAIN
from pcfjudge.judging.waves import Adaptive, Budget
from pcfjudge.kept import KeptFor
from pcfjudge.services import Services
from pcfjudge.settings import Settings

from tests.engine.test_hot_path import counting
from tests.support.inprocess import ClientFactory

TASK = ListwiseTask("Which planet is closest to the Sun?", ["a", "b", "c"], ["Venus.", "Mercury.", "Mars."], k=5)


def judged(steps: Callable[[Services, list[int], list[int]], Awaitable[Any]]) -> Any:
    """Run ``steps`` with a service (the simulated judge, the in-process cache), counting its backend calls and
    its cache's ``get_many`` calls."""

    async def main() -> Any:
        services = Services.build(Settings())
        calls, asked = [0], [0]
        backend = services.registry.backends["sim"]
        complete, get_many = backend.complete, services.cache.get_many

        async def counted_complete(*args: Any, **kwargs: Any) -> Any:
            calls[0] += 1
            return await complete(*args, **kwargs)

        async def counted_get_many(*args: Any, **kwargs: Any) -> Any:
            asked[0] += 1
            return await get_many(*args, **kwargs)

        backend.complete = counted_complete  # type: ignore[method-assign]
        services.cache.get_many = counted_get_many  # type: ignore[method-assign]
        try:
            return await steps(services, calls, asked)
        finally:
            await services.aclose()

    return asyncio.run(main())


@pytest.mark.parametrize("executions", [1, 2])
def test_a_warm_judgment_is_the_judgment_again(monkeypatch: pytest.MonkeyPatch, executions: int) -> None:
    results = counting(monkeypatch, listwise_runs, "_result")
    task = replace(TASK, executions=executions)

    async def steps(services: Services, calls: list[int], asked: list[int]) -> list[ListwiseResult]:
        resolved = replace(task, model=services.judge.resolve(None))  # as a front door's task: the same object
        cold = await services.judge.listwise(resolved)
        assert (calls[0], asked[0], results[0]) == (5 * executions, 1, 1)
        made = await services.judge.listwise(resolved)  # warm, judged from the entries fetched, then kept
        again = await services.judge.listwise(resolved)  # the kept judgment
        assert (calls[0], asked[0], results[0]) == (5 * executions, 3, 2)  # no call; the cache asked once each
        return [cold, made, again]

    cold, made, again = judged(steps)
    assert again is not made and again == made  # a copy: the same runs, consensus, hits and counts
    assert again.cache_hits == 5 * executions and again.backend_calls == 0 and again.runs_planned == 5 * executions
    assert again.consensus == cold.consensus and [r.result for r in again.runs] == [r.result for r in cold.runs]


def test_an_entry_stored_again_or_another_task_is_judged_as_usual(monkeypatch: pytest.MonkeyPatch) -> None:
    results = counting(monkeypatch, listwise_runs, "_result")

    async def steps(services: Services, calls: list[int], asked: list[int]) -> list[ListwiseResult]:
        task = replace(TASK, model=services.judge.resolve(None))
        first = await services.judge.listwise(task)
        await services.judge.listwise(task)  # kept
        key = services.judge.plan_listwise(task).runs[0].key
        (entry,) = await services.cache.get_many([key])
        assert entry is not None
        await services.cache.set(key, {k: v for k, v in entry.items()})  # the same answer, stored again
        restored = await services.judge.listwise(task)
        assert results[0] == 3  # judged again from the entries: one of them is not the one kept
        other = await services.judge.listwise(replace(task))  # an equal task, another object
        assert results[0] == 4 and calls[0] == 5
        await services.cache.delete([key])
        missing = await services.judge.listwise(task)  # one run not cached: called, the rest from the entries
        assert (calls[0], results[0]) == (6, 5) and missing.backend_calls == 1 and missing.cache_hits == 4
        assert asked[0] == 6  # the cache asked once per judgment, the one with a run missing included
        return [first, restored, other, missing]

    first, *rest = judged(steps)
    assert all(r.consensus == first.consensus for r in rest)


def test_only_one_wave_of_every_run_with_nothing_reported_run_by_run_is_kept() -> None:
    assert listwise_runs.warm_applies(TASK, PLAIN)
    assert not listwise_runs.warm_applies(replace(TASK, auto=Adaptive(3)), PLAIN)
    assert not listwise_runs.warm_applies(replace(TASK, budget=Budget(max_calls=3)), PLAIN)
    assert not listwise_runs.warm_applies(replace(TASK, cache_mode="refresh"), PLAIN)
    assert not listwise_runs.warm_applies(TASK, replace(PLAIN, listener=lambda _event: None))
    assert not listwise_runs.warm_applies(TASK, PLAIN.hooked(lambda _spec, _outcome: None))


def test_a_kept_value_is_forgotten_with_its_object() -> None:
    kept: KeptFor[ListwiseTask, str] = KeptFor(4)
    task, context = replace(TASK), (object(),)
    kept.put(task, context, "judged")
    assert kept.get(task, context) == "judged" and kept.get(task, (object(),)) is None
    assert kept.get(replace(TASK), context) is None
    del task
    gc.collect()
    assert len(kept.kept) == 0


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/judge/listwise", {"question": "Which planet is closest to the Sun?", "candidates": ["Venus.", "Mercury."]}),
        (
            "/v2/rerank",
            {"model": "sim:default", "query": "closest planet to the Sun", "documents": ["Venus", "Mercury"]},
        ),
        ("/rerank", {"query": "closest planet to the Sun", "texts": ["Venus", "Mercury"], "truncate": True}),
    ],
)
async def test_a_request_repeated_byte_for_byte_is_a_warm_judgment(
    make_client: ClientFactory, monkeypatch: pytest.MonkeyPatch, path: str, body: dict[str, Any]
) -> None:
    """Through a door: the first request calls, the second is judged from the cache's entries and kept, the rest are
    the kept judgment; every answer the same."""
    results = counting(monkeypatch, listwise_runs, "_result")
    async with make_client() as client:
        answers = [(await client.post(path, json=body)).json() for _ in range(4)]
    assert results[0] == 2
    for answer in answers if path != "/rerank" else ():  # TEI's answer is the ranks alone
        answer.pop("id", None)
        answer.pop("request_id", None)
        answer.get("usage", {}).pop("cache_hits", None)
        answer.get("usage", {}).pop("backend_calls", None)
        answer.get("meta", {}).pop("billed_units", None)
    assert answers[1] == answers[2] == answers[3]
