"""Turns of the event loop for the calls' CPU, so that large judgments share the loop with every other request.

Hundreds of calls start in one turn (a round of windows) and answer in one (a provider's batch); the loop runs every
ready task before it polls again: four 1,000-candidate reranks made ~100 ms turns that ``/healthz`` waited behind
(docs/performance.md). ``take()`` lets ``PER_TURN`` such steps run a turn; the rest wait, in order, for the next.
"""

from __future__ import annotations

import asyncio
from collections import deque
from weakref import WeakKeyDictionary

PER_TURN = 8  # steps (a fraction of a millisecond of CPU each) in one turn of the loop


class Turns:
    def __init__(self, per_turn: int = PER_TURN) -> None:
        self.per_turn = per_turn
        self._taken = 0  # steps let through in this turn
        self._waiting: deque[asyncio.Future[None]] = deque()
        self._ticking = False

    async def take(self) -> None:
        """Return at once while this turn has room (no suspension), else in a later turn."""
        if self._taken < self.per_turn and not self._waiting:
            self._taken += 1
            self._tick_soon()
            return
        turn = asyncio.get_running_loop().create_future()
        self._waiting.append(turn)
        self._tick_soon()
        await turn

    def _tick_soon(self) -> None:  # a callback scheduled now runs in the next turn, after the loop polled for I/O
        if not self._ticking:
            self._ticking = True
            asyncio.get_running_loop().call_soon(self._tick)

    def _tick(self) -> None:
        self._ticking = False
        self._taken = 0
        while self._waiting and self._taken < self.per_turn:
            turn = self._waiting.popleft()
            if not turn.done():  # not cancelled while it waited
                turn.set_result(None)
                self._taken += 1
        if self._waiting or self._taken:
            self._tick_soon()


_LOOPS: WeakKeyDictionary[asyncio.AbstractEventLoop, Turns] = WeakKeyDictionary()


async def take() -> None:
    """Wait for room for one step in a turn of the running loop (one gate per loop, shared by every judgment)."""
    loop = asyncio.get_running_loop()
    if (turns := _LOOPS.get(loop)) is None:
        turns = _LOOPS[loop] = Turns()
    await turns.take()
