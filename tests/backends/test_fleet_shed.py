"""A fleet call with no endpoint budget before its deadline is shed (503 overloaded, Retry-After) before it spends;
with budget coming in time it waits for it; a 429 blocks its endpoint and the retry goes to another at once."""

from __future__ import annotations

import asyncio

import pytest
from pcfjudge.backends.base import Completion, JudgeCall, RateLimited
from pcfjudge.backends.budget import MemoryBudget
from pcfjudge.backends.fleet import FleetBackend
from pcfjudge.backends.models_file import EndpointSpec, FleetSpec
from pcfjudge.backends.slots import Shed

from tests.support.inprocess import listwise_call


class Stub:
    provider = "openai"

    def __init__(self, fail: BaseException | None = None) -> None:
        self.calls = 0
        self.fail = fail

    async def complete(self, call: JudgeCall, until: float | None = None) -> Completion:
        self.calls += 1
        if self.fail is not None:
            raise self.fail
        return Completion(text="{}")

    async def aclose(self) -> None:
        return None


def fleet(stubs: list[Stub], rpm: int | None = None) -> FleetBackend:
    specs = tuple(EndpointSpec(f"e{i}", "openai", "m", None, rpm=rpm) for i in range(len(stubs)))
    return FleetBackend(FleetSpec("f", specs), stubs, MemoryBudget(), capacity=4)


async def test_no_budget_before_the_deadline_is_shed_before_spending() -> None:
    stubs = [Stub(), Stub()]
    backend = fleet(stubs, rpm=1)
    await backend.complete(listwise_call())
    await backend.complete(listwise_call())  # each endpoint's one request this minute
    with pytest.raises(Shed) as shed:
        await backend.complete(listwise_call(), until=asyncio.get_running_loop().time() + 2.0)
    assert shed.value.kind == "overloaded" and shed.value.failure == "backend_overloaded"
    assert shed.value.retry_after is not None and 58 < shed.value.retry_after <= 61
    assert [s.calls for s in stubs] == [1, 1]  # nothing sent


async def test_a_429_blocks_its_endpoint_and_the_retry_goes_elsewhere_at_once() -> None:
    limited, other = Stub(RateLimited("429", retry_after=30.0)), Stub()
    backend = fleet([limited, other])
    with pytest.raises(RateLimited) as caught:  # the turn starts at e0, the limited one
        await backend.complete(listwise_call(), until=asyncio.get_running_loop().time() + 5.0)
    assert caught.value.retry_after is None  # another endpoint can take the retry now
    await asyncio.sleep(0)  # the block is recorded
    for _ in range(3):
        await backend.complete(listwise_call())
    assert (limited.calls, other.calls) == (1, 3)
    await backend.aclose()
