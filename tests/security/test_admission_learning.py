"""Issue 22, rows 3 and 4: admission that works cold and learns from failures (calls that can no longer meet their
deadline are shed at once with 503 + Retry-After), and reservation accounting that cannot drift (fuzzed)."""

from __future__ import annotations

import asyncio
import json
import random
from collections import Counter
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pcfjudge.backends.base import BackendTimeout, Completion, JudgeCall, ProviderError
from pcfjudge.backends.registry import ResolvedModel
from pcfjudge.backends.slots import Saturated, Shed, Slots
from pcfjudge.cache.memory import MemoryCache
from pcfjudge.engine.progress import Watch
from pcfjudge.engine.runner import CallSpec, Runner
from pcfjudge.errors import Refusal
from pcfjudge.settings import Settings

from tests.support.inprocess import FakeProvider, app_with_services, provider_settings

CANDIDATES = ["Paris", "Lyon", "Nice"]


def item(i: int, **extra: Any) -> dict[str, Any]:
    return {"question": f"Admission item {i}?", "candidates": CANDIDATES, "k": 1, "cache": "bypass", **extra}


async def burst(client: httpx.AsyncClient, start: int, n: int) -> list[httpx.Response]:
    return list(await asyncio.gather(*(client.post("/judge/listwise", json=item(start + i)) for i in range(n))))


def statuses(responses: list[httpx.Response]) -> Counter[int]:
    return Counter(r.status_code for r in responses)


def assert_refusals_say_when(responses: list[httpx.Response]) -> None:
    for r in responses:
        if r.status_code == 503:
            assert int(r.headers["retry-after"]) >= 1 and "overloaded" in r.text, r.text


# ── row 3: a cold service, and a provider that hangs ────────────────────────────────────────────────────────────


async def test_a_cold_burst_that_cannot_be_served_is_refused_not_left_to_time_out(fake: FakeProvider) -> None:
    fake.faults(latency_ms=1500)
    settings = provider_settings("openai", fake, backend_concurrency=2, request_timeout_s=2.0, max_retries=0)
    async with app_with_services(settings) as (client, services):
        responses = await burst(client, 0, 10)  # nothing measured yet: 2 run, 8 wait for a slot
        limit = services.registry.resolve(None).limit
        assert limit.reserved == 0
    counts = statuses(responses)
    assert counts[504] <= 2, counts  # at most the calls already running when their deadline came
    assert counts[503] >= 5 and counts[200] + counts[503] + counts[504] == 10, counts
    assert limit.shed >= 5  # refused from the queue while they waited
    assert_refusals_say_when(responses)


async def test_a_provider_that_hangs_is_learnt_and_a_second_burst_is_refused_at_once(fake: FakeProvider) -> None:
    settings = provider_settings("openai", fake, backend_concurrency=2, request_timeout_s=2.0, max_retries=0)
    async with app_with_services(settings) as (client, services):
        fake.faults(latency_ms=50)
        for i in range(4):  # warm: the service has seen 50 ms calls
            assert (await client.post("/judge/listwise", json=item(100 + i))).status_code == 200
        fake.faults(latency_ms=10_000)  # now it hangs, far past the 2 s deadline
        first = await burst(client, 200, 10)
        limit = services.registry.resolve(None).limit
        estimate = limit.latency_s
        second = await burst(client, 300, 10)
        fake.faults(latency_ms=0)
    for wave in (first, second):
        counts = statuses(wave)
        assert counts[504] <= 2 and counts[503] >= 8, counts  # only calls already running wait for their deadline
        assert_refusals_say_when(wave)
    assert estimate is not None and estimate > 1.0  # the timed-out calls taught it (it had only seen 50 ms)


def test_the_estimate_learns_from_calls_in_flight_and_from_calls_that_never_answered() -> None:
    async def main() -> None:
        slots = Slots(size=2, max_queued=10)
        loop = asyncio.get_running_loop()
        assert slots.estimate_s() is None
        entered = asyncio.Event()

        async def hold(seconds: float) -> None:
            async with slots.slot(loop.time() + 60):
                entered.set()
                await asyncio.sleep(seconds)

        running = asyncio.create_task(hold(60))
        await entered.wait()
        await asyncio.sleep(0.2)
        in_flight = slots.estimate_s()
        assert in_flight is not None and in_flight >= 0.2  # a running call has taken at least its age
        running.cancel()
        await asyncio.gather(running, return_exceptions=True)
        censored = slots.latency_s
        assert censored is not None and censored >= 0.2  # a cancelled call is a lower bound of the latency
        await hold(0.01)  # the first answer replaces what only lower bounds suggested
        assert slots.latency_s is not None and slots.latency_s < 0.1

    asyncio.run(main())


def test_a_waiting_call_past_hope_is_shed_and_an_idle_backend_still_admits_a_probe() -> None:
    async def main() -> None:
        slots = Slots(size=1, max_queued=10)
        loop = asyncio.get_running_loop()
        slots.latency_s, slots.measured = 1.0, 1
        blocker_in = asyncio.Event()

        async def blocker() -> None:
            async with slots.slot(loop.time() + 60):
                blocker_in.set()
                await asyncio.sleep(0.5)

        task = asyncio.create_task(blocker())
        await blocker_in.wait()
        with pytest.raises(Shed) as shed:  # one call ahead (1 s) + its own (1 s) cannot fit in 1.2 s
            async with slots.slot(loop.time() + 1.2):
                pytest.fail("a hopeless call must not get a slot")
        assert shed.value.failure == "backend_overloaded" and shed.value.retry_after is not None
        await task
        slots.latency_s = 100.0  # learnt as hung: still, an idle backend admits a probe of one round
        slots.reserve(1, remaining_s=1.0)
        with pytest.raises(Saturated):
            slots.reserve(1, remaining_s=1.0)
        slots.release(1)

    asyncio.run(main())


# ── row 4: reservations that drift ──────────────────────────────────────────────────────────────────────────────


async def test_repeated_permutations_with_cache_bypass_reserve_one_slot_per_call() -> None:
    settings = Settings(backend_concurrency=2, max_queued_calls=10, sim_latency_ms=50)
    body = {"candidates": ["a", "b"], "permutations": [[0, 1]] * 21, "cache": "bypass", "include_runs": False}
    async with app_with_services(settings) as (client, services):
        limit = services.registry.resolve("sim:default").limit
        responses = await asyncio.gather(
            *(client.post("/judge/listwise", json={**body, "question": f"Drift {i}?"}) for i in range(8))
        )
        assert limit.reserved == 0
    counts = statuses(responses)
    # 21 calls each: an idle backend takes the first; with 21 reserved nothing else fits in 2 running + 10 queued
    assert counts == {200: 1, 503: 7}, counts


class Flaky:
    """A backend answering after a random short delay, sometimes failing or timing out."""

    provider = "fuzz"

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.calls = 0

    async def complete(self, call: JudgeCall, until: float | None = None) -> Completion:
        self.calls += 1
        await asyncio.sleep(self.rng.choice([0, 0.001, 0.003, 0.01]))
        roll = self.rng.random()
        if roll < 0.15:
            raise ProviderError("boom")
        if roll < 0.2:
            raise BackendTimeout("slow")
        return Completion(json.dumps({"ok": True}))

    async def aclose(self) -> None:
        return None


def spec(key: str) -> CallSpec:
    call = JudgeCall(
        kind="listwise",
        model="m",
        system="s",
        prefix="p",
        body="b",
        schema_name="n",
        schema={},
        question="q",
        displayed=("a",),
    )
    return CallSpec(f"k:{key}", call, lambda text: dict(json.loads(text)), "v1")


REQUEST = st.fixed_dictionaries(
    {
        "keys": st.lists(st.sampled_from("abcde"), min_size=1, max_size=6),
        "mode": st.sampled_from(["use", "bypass", "refresh"]),
        "deadline": st.sampled_from([0.002, 0.01, 0.05, 1.0]),
        "leave_after": st.sampled_from([None, 0.0, 0.002, 0.02]),
        "start_after": st.sampled_from([0.0, 0.001, 0.005]),
    }
)


@given(requests=st.lists(REQUEST, min_size=1, max_size=10), seed=st.integers(0, 1000), size=st.sampled_from([1, 2, 4]))
@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_fuzz_reservations_are_made_per_call_task_and_released_exactly_once(
    requests: list[dict[str, Any]], seed: int, size: int
) -> None:
    async def main() -> None:
        loop = asyncio.get_running_loop()
        errors: list[Any] = []
        loop.set_exception_handler(lambda _loop, context: errors.append(context))
        slots = Slots(size=size, max_queued=8)
        runner = Runner(MemoryCache(), max_retries=1, retry_base_s=0.0, retry_max_s=0.0)
        model = ResolvedModel("fuzz", "m", Flaky(seed), slots)
        checks = 0

        async def one(request: dict[str, Any]) -> None:
            await asyncio.sleep(request["start_after"])
            specs = [spec(k) for k in request["keys"]]
            deadline = loop.time() + request["deadline"]
            work = asyncio.create_task(
                runner.run(specs, model, watch=Watch(until=deadline), cache_mode=request["mode"])
            )
            if request["leave_after"] is not None:
                await asyncio.sleep(request["leave_after"])
                work.cancel()  # the client left
            try:
                outcomes = await work
            except (Refusal, asyncio.CancelledError):
                return
            assert len(outcomes) == len(specs)

        async def watch() -> None:
            nonlocal checks
            while True:
                running = len(slots._running)
                assert slots.reserved >= 0 and slots._free >= 0 and slots._free + running == size
                calls = [t for t in asyncio.all_tasks() if t.get_coro().__qualname__ == "Runner._call_once"]
                assert slots.reserved >= len(calls)  # every live call task holds its reservation
                checks += 1
                await asyncio.sleep(0)

        watcher = asyncio.create_task(watch())
        await asyncio.gather(*(one(r) for r in requests))
        await asyncio.gather(*runner._inflight.values(), return_exceptions=True)
        for _ in range(5):
            await asyncio.sleep(0)
        watcher.cancel()
        await asyncio.gather(watcher, return_exceptions=True)
        assert slots.reserved == 0, "every reservation released exactly once"
        assert slots._free == size and not slots._running
        assert not [w for line in slots._lines.values() for w in line.in_turn() if not w.future.done()]
        assert not runner._inflight and not runner._waiters
        assert not errors, errors
        assert checks > 0

    asyncio.run(main())


async def test_shedding_looks_again_when_a_waiter_could_first_become_hopeless() -> None:
    """With nothing answered yet the estimate grows with the running calls' age, so a waiter ``rounds`` deep becomes
    hopeless at deadline / (rounds + 2 + SPARE) after they started; the queue is checked by then, not up to a whole
    tick later (a cold burst's last refusals came a tick late)."""
    slots = Slots(2, 10)
    loop = asyncio.get_running_loop()
    hold = asyncio.Event()

    async def running() -> None:
        async with slots.slot():
            await hold.wait()

    holders = [asyncio.create_task(running()) for _ in range(2)]
    await asyncio.sleep(0)
    start = loop.time()
    deadline = start + 0.15  # round 0 (2 waiters) hopeless at 0.15 / 2.1 ≈ 0.071 s, round 1 at 0.15 / 3.1 ≈ 0.048 s
    waiters = [asyncio.create_task(slots.slot(deadline).__aenter__()) for _ in range(4)]
    await asyncio.sleep(0)
    slots._tick()  # as the first tick would, right away
    ticker = slots._ticker
    assert ticker is not None
    assert ticker.when() - start <= 0.15 / 3.1 + 0.01  # at round 1's moment, not TICK_S (0.1 s) later
    results = await asyncio.gather(*waiters, return_exceptions=True)
    assert all(isinstance(r, Shed) for r in results)  # nobody answers: all four are shed before their deadline
    assert loop.time() < deadline
    hold.set()
    await asyncio.gather(*holders)
    assert slots.shed == 4
