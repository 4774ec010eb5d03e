"""Memory that returns after a burst (issue 49): once no judgment has run for ``PCFJ_REST_AFTER_S`` the service empties
the memo caches the judgments filled and drops the cache entries whose TTL has passed, nothing reading them. What it
does to the process's RSS is measured by ``pcfjudge bench safety`` (docs/operations/safety.md), not asserted here."""

from __future__ import annotations

import asyncio

from pcfjudge import at_rest
from pcfjudge.cache.memory import MemoryCache
from pcfjudge.engine import listwise_runs
from pcfjudge.judging import prompts
from pcfjudge.kept import Kept
from pcfjudge.settings import Settings

from tests.support.basics import CANDIDATES
from tests.support.inprocess import app_with_services
from tests.support.waits import eventually


async def test_a_service_at_rest_lets_go_of_what_its_judgments_left() -> None:
    settings = Settings(rest_after_s=1.0, cache_ttl_s=3.0)  # margins for a loaded machine
    async with app_with_services(settings) as (client, services):
        for i in range(3):
            body = {"question": f"rest question {i}?", "candidates": CANDIDATES, "k": 3}
            assert (await client.post("/judge/listwise", json=body)).status_code == 200
        cache = services.cache
        assert isinstance(cache, MemoryCache) and len(cache) == 9  # three judgments' runs
        assert listwise_runs._plan.cache_info().currsize >= 3 and prompts._listwise_head_v2.cache_info().currsize >= 3
        # nothing reads the cache again: its entries leave at rest, past their TTL, with the memos
        await eventually(lambda: len(cache) == 0, what="the expired entries to leave", timeout_s=10)
        assert listwise_runs._plan.cache_info().currsize == 0 and prompts._listwise_head_v2.cache_info().currsize == 0
        assert len(listwise_runs._CONSENSUS.kept) == 0
        again = {"question": "rest question 0?", "candidates": CANDIDATES, "k": 3}
        answer = await client.post("/judge/listwise", json=again)
        assert answer.status_code == 200 and answer.json()["usage"]["backend_calls"] == 3  # its entries had expired


async def test_the_process_does_not_rest_while_a_judgment_runs() -> None:
    memo: Kept[str, int] = at_rest.forget(Kept(4))
    resting = asyncio.create_task(at_rest.rest_when_idle(0.05))
    try:
        with at_rest.busy():
            memo.put("kept", 1)
            await asyncio.sleep(0.4)  # eight checks while busy
            assert dict(memo) == {"kept": 1}
        await eventually(
            lambda: not memo, what="the memo emptied at rest", timeout_s=5
        )  # two quiet checks after it ended
    finally:
        resting.cancel()
        await asyncio.gather(resting, return_exceptions=True)


def test_rest_says_what_it_let_go() -> None:
    memo: Kept[str, int] = at_rest.forget(Kept(4))
    memo.put("a", 1)
    memo.put("b", 2)
    assert at_rest.rest() >= 2 and not memo
    assert at_rest.rest() == 0  # nothing left: no collection, no trim
