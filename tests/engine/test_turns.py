"""``engine.turns``: at most ``per_turn`` steps of CPU in one turn of the event loop, the rest in later turns, first
come first served, with what arrives meanwhile served in between."""

from __future__ import annotations

import asyncio

import pytest
from pcfjudge.engine import turns
from pcfjudge.engine.turns import Turns


async def test_steps_beyond_a_turns_room_wait_for_later_turns_in_order() -> None:
    gate = Turns(per_turn=3)
    loop = asyncio.get_running_loop()
    turn = 0
    ran: list[tuple[int, int]] = []  # (step, the turn it ran in)

    def count_turn() -> None:  # a callback each turn: the turn number
        nonlocal turn
        turn += 1
        if len(ran) < 10:
            loop.call_soon(count_turn)

    async def step(i: int) -> None:
        await gate.take()
        ran.append((i, turn))

    loop.call_soon(count_turn)
    await asyncio.gather(*(step(i) for i in range(10)))
    assert [i for i, _ in ran] == list(range(10))  # first come, first served
    per_turn: dict[int, int] = {}
    for _, t in ran:
        per_turn[t] = per_turn.get(t, 0) + 1
    assert max(per_turn.values()) == 3
    assert len(per_turn) == 4  # 3 + 3 + 3 + 1


async def test_a_request_arriving_meanwhile_is_served_before_the_queue_is_through() -> None:
    gate = Turns(per_turn=2)
    order: list[str] = []

    async def step(i: int) -> None:
        await gate.take()
        order.append(f"step {i}")

    async def other_request() -> None:  # a probe: arrives after the steps, never takes a turn
        await asyncio.sleep(0)
        order.append("probe")

    await asyncio.gather(*(step(i) for i in range(12)), other_request())
    assert order.index("probe") < order.index("step 11")
    assert order.index("probe") <= 4  # within the first turns, not after the twelve steps


async def test_an_uncrowded_loop_takes_a_turn_without_waiting() -> None:
    gate = Turns(per_turn=8)
    before = asyncio.current_task()
    await gate.take()  # no suspension: the room of this turn
    assert asyncio.current_task() is before
    assert gate._taken == 1 and not gate._waiting


async def test_a_cancelled_waiter_gives_its_turn_to_the_next() -> None:
    gate = Turns(per_turn=1)
    first = asyncio.ensure_future(gate.take())
    waiting = asyncio.ensure_future(gate.take())
    behind = asyncio.ensure_future(gate.take())
    await asyncio.sleep(0)  # the three ran: the first took this turn's room, the other two wait
    assert first.done() and not waiting.done() and not behind.done()
    waiting.cancel()
    await asyncio.wait_for(behind, timeout=1)
    assert waiting.cancelled() and behind.done()


async def test_take_shares_one_gate_per_loop() -> None:
    await turns.take()
    assert len([t for loop, t in turns._LOOPS.items() if loop is asyncio.get_running_loop()]) == 1


async def test_large_reranks_share_the_loop_a_few_steps_a_turn(monkeypatch: pytest.MonkeyPatch) -> None:
    """Three 300-document reranks at once (the sim judge, 228 calls): a task that looks at every turn of the loop sees
    no more than two turns' room of steps (this turn's and those woken for it) between two of its looks."""
    from tests.support.inprocess import app_client

    taken = total = 0
    real_take = Turns.take

    async def counted(self: Turns) -> None:
        nonlocal taken, total
        await real_take(self)
        taken, total = taken + 1, total + 1

    monkeypatch.setattr(Turns, "take", counted)
    most = 0
    looks = 0
    done = False

    async def look_every_turn() -> None:
        nonlocal taken, most, looks
        while not done:
            most, taken, looks = max(most, taken), 0, looks + 1
            await asyncio.sleep(0)

    docs = [f"Document {i} says the Peace of Westphalia was signed in {1600 + i % 90}." for i in range(300)]
    async with app_client() as client:
        looking = asyncio.create_task(look_every_turn())
        replies = await asyncio.gather(
            *(
                client.post("/v2/rerank", json={"model": "rerank", "query": f"[{i}] When?", "documents": docs})
                for i in range(3)
            )
        )
        done = True
        await looking
    assert [r.status_code for r in replies] == [200, 200, 200], replies[0].text
    assert total > 228 and looks >= total / (2 * turns.PER_TURN)  # the steps were spread over many turns
    assert 0 < most <= 2 * turns.PER_TURN
