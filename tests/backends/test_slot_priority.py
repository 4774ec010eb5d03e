"""Issue 39, item 3: interactive work first. A free backend slot goes to the highest class waiting (interactive, then
stream, then background), first come first served within a class and the API keys taking turns; queued background
calls do not count against an interactive request's admission; each door's requests wait in their class (direct:
interactive, stream: stream, job: background), in their key's turn, and the waits are metrics per class. Orders of
service are asserted, never times."""

from __future__ import annotations

import asyncio
import math
from pathlib import Path
from typing import Any

import pytest
from pcfjudge.backends.slots import Priority, Saturated, Slots
from pcfjudge.settings import Settings
from pydantic import SecretStr

from tests.support.inprocess import app_with_services

ALICE, BOB = "sk-alice-0123456789", "sk-bob-9876543210"
KEYS = SecretStr(f"alice:{ALICE},bob:{BOB}")


class Line:
    """Calls holding or waiting for ``slots``' slots; each holds its slot until ``release`` lets it go."""

    def __init__(self, slots: Slots) -> None:
        self.slots = slots
        self.served: list[str] = []  # labels in the order the calls got a slot
        self._gates: dict[str, asyncio.Event] = {}
        self._tasks: list[asyncio.Task[None]] = []

    async def call(self, label: str, priority: Priority = "interactive", key: str = "anonymous") -> None:
        gate = self._gates[label] = asyncio.Event()

        async def hold() -> None:
            async with self.slots.slot(math.inf, priority, key):
                self.served.append(label)
                await gate.wait()

        self._tasks.append(asyncio.create_task(hold()))
        await settle()  # in the line (or in a slot) before the next call comes

    async def release(self, label: str) -> None:
        """The call ``label`` ends; the slot it frees goes to the next in line."""
        self._gates[label].set()
        await settle()

    async def release_in_order(self) -> None:
        """End every call, the longest holding first, until none is left."""
        done = 0
        while done < len(self.served):
            await self.release(self.served[done])
            done += 1
        await asyncio.gather(*self._tasks)


def waiting(slots: Slots) -> int:
    """Calls waiting for a slot (a cancelled one is not)."""
    return sum(1 for line in slots._lines.values() for w in line.in_turn() if not w.future.done())


async def settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


async def test_an_interactive_call_takes_the_next_free_slot_before_twenty_queued_background_calls() -> None:
    line = Line(Slots(size=2, max_queued=100))
    await line.call("job-running-0", "background")
    await line.call("job-running-1", "background")
    for i in range(20):
        await line.call(f"job-{i}", "background")
    await line.call("direct", "interactive")
    assert line.served == ["job-running-0", "job-running-1"] and waiting(line.slots) == 21
    await line.release("job-running-0")
    assert line.served[-1] == "direct"  # the first slot to free went to the interactive call
    await line.release_in_order()
    assert line.served[3:] == [f"job-{i}" for i in range(20)]  # then the background calls, first come first served


async def test_classes_are_served_highest_first_and_in_arrival_order_within_one() -> None:
    line = Line(Slots(size=1, max_queued=100))
    await line.call("running", "background")
    arrivals: list[tuple[str, Priority]] = [
        ("b1", "background"), ("s1", "stream"), ("i1", "interactive"), ("b2", "background"), ("s2", "stream"),
        ("i2", "interactive"),
    ]  # fmt: skip
    for label, priority in arrivals:
        await line.call(label, priority)
    await line.release_in_order()
    assert line.served == ["running", "i1", "i2", "s1", "s2", "b1", "b2"]


async def test_within_a_class_the_keys_take_turns_so_one_keys_flood_does_not_hold_back_anothers_call() -> None:
    line = Line(Slots(size=1, max_queued=100))
    await line.call("running", "interactive", "carol")
    for i in range(10):
        await line.call(f"alice-{i}", "interactive", "alice")
    await line.call("bob-0", "interactive", "bob")
    await line.release_in_order()
    assert "bob-0" in line.served[1:3]  # within the first two slots handed over, not after alice's ten
    alices = [label for label in line.served if label.startswith("alice")]
    assert alices == [f"alice-{i}" for i in range(10)]  # each key's own calls stay first come first served


async def test_the_turns_hold_in_a_busy_background_class_too() -> None:
    line = Line(Slots(size=1, max_queued=100))
    await line.call("running", "background", "alice")
    for i in range(3):
        await line.call(f"a{i}", "background", "alice")
    for i in range(3):
        await line.call(f"b{i}", "background", "bob")
    await line.release_in_order()
    assert line.served == ["running", "a0", "b0", "a1", "b1", "a2", "b2"]


async def test_a_cancelled_waiter_gives_its_turn_up_and_the_next_class_is_served() -> None:
    slots = Slots(size=1, max_queued=10)
    line = Line(slots)
    await line.call("running", "background")
    waiter = asyncio.create_task(slots.slot(math.inf, "interactive").__aenter__())
    await settle()
    await line.call("job", "background")
    waiter.cancel()
    await asyncio.gather(waiter, return_exceptions=True)
    await line.release_in_order()
    assert line.served == ["running", "job"] and waiting(slots) == 0 and slots._free == 1


def test_queued_background_calls_do_not_count_against_an_interactive_requests_admission() -> None:
    slots = Slots(size=2, max_queued=4)
    slots.latency_s, slots.measured = 1.0, 1  # learnt: a call takes a second
    slots.reserve(6, remaining_s=60.0, priority="background")  # jobs fill the queue
    with pytest.raises(Saturated):
        slots.reserve(1, remaining_s=60.0, priority="background")  # the queue is full for background work
    with pytest.raises(Saturated):
        slots.reserve(1, remaining_s=2.0, priority="background")  # and 4 rounds are ahead of it
    slots.reserve(2, remaining_s=2.0, priority="interactive")  # nothing ahead of a direct request: one round
    slots.reserve(2, remaining_s=3.0, priority="stream")  # behind the direct request's 2 calls: two rounds
    with pytest.raises(Saturated):
        slots.reserve(3, remaining_s=3.0, priority="stream")  # three rounds would not fit
    assert slots.reserved_by == {"interactive": 2, "stream": 2, "background": 6} and slots.reserved == 10
    slots.release(6, "background")
    slots.release(2, "stream")
    slots.release(2, "interactive")
    assert slots.reserved == 0
    with pytest.raises(RuntimeError):
        slots.release(1, "stream")


async def test_background_calls_holding_slots_count_once_for_an_interactive_request() -> None:
    slots = Slots(size=2, max_queued=10)
    line = Line(slots)
    slots.latency_s, slots.measured = 1.0, 1
    slots.reserve(8, remaining_s=60.0, priority="background")
    await line.call("job-0", "background")
    await line.call("job-1", "background")  # both slots held by background calls: they end within a round
    assert slots.ahead("interactive") == 2 and slots.ahead("background") == 8
    with pytest.raises(Saturated):
        slots.reserve(2, remaining_s=1.5, priority="interactive")  # a round for the jobs in the slots, then its own
    slots.reserve(2, remaining_s=2.5, priority="interactive")
    slots.release(2, "interactive")
    await line.release_in_order()
    slots.release(8, "background")


# ── through the app: each door's class and key, and the metrics ───────────────────────────────────────────────────


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def body(question: str, **extra: Any) -> dict[str, Any]:
    return {"question": question, "candidates": ["Paris", "Lyon", "Nice"], "k": 2, "cache": "bypass", **extra}


async def test_direct_requests_streams_and_jobs_wait_in_their_class_and_their_keys_turn() -> None:
    async with app_with_services(Settings(api_keys=KEYS)) as (client, services):
        limit = services.registry.resolve("sim:default").limit
        seen: list[tuple[str, str]] = []
        original = limit.slot

        def slot(deadline: float = math.inf, priority: Priority = "interactive", key: str = "anonymous") -> Any:
            seen.append((priority, key))
            return original(deadline, priority, key)

        limit.slot = slot  # type: ignore[method-assign]
        direct = await client.post("/judge/listwise", json=body("Direct?"), headers=bearer(ALICE))
        streamed = await client.post("/judge/listwise", json=body("Streamed?", stream=True), headers=bearer(BOB))
        accepted = await client.post(
            "/v1/jobs", json={"endpoint": "/judge/listwise", "request": body("A job?")}, headers=bearer(BOB)
        )
        assert direct.status_code == streamed.status_code == 200 and accepted.status_code == 202, accepted.text
        for _ in range(500):
            job = (await client.get(accepted.json()["location"], headers=bearer(BOB))).json()
            if job["status"] not in ("queued", "running"):
                break
            await asyncio.sleep(0.02)
        assert job["status"] == "succeeded", job
        metrics = (await client.get("/metrics")).text
    assert seen == [("interactive", "alice")] * 2 + [("stream", "bob")] * 2 + [("background", "bob")] * 2
    assert limit.reserved == 0 and limit.reserved_by == {"interactive": 0, "stream": 0, "background": 0}
    for priority in ("interactive", "stream", "background"):
        assert f'pcfjudge_slot_wait_seconds_count{{class="{priority}",provider="sim"}}' in metrics, priority


def test_the_slot_wait_metric_is_documented() -> None:
    docs = Path(__file__).resolve().parents[2] / "docs" / "operations" / "metrics.md"
    assert "pcfjudge_slot_wait_seconds{provider,class}" in docs.read_text(encoding="utf-8")
