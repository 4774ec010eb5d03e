"""Hooks through which the runner and the caches report what they did; ``telemetry.metrics`` implements them.

Models are named by their ``provider:model`` string."""

from __future__ import annotations

from typing import Any, Protocol

from pcfjudge.types import Usage


class Observer(Protocol):
    def backend_call(self, model: str, outcome: str, seconds: float, usage: Usage | None) -> None: ...

    def retry(self, model: str, kind: str) -> None: ...

    def single_flight_wait(self) -> None: ...

    def single_flight_alone(self) -> None:
        """A backend call made without the shared (cross-replica) single flight: Redis failed or its breaker is open."""
        ...

    def single_flight_duplicate(self) -> None:
        """An answer stored that another caller had stored already (outside a refresh): one call made twice."""
        ...

    def cache_lookup(self, layer: str, result: str, n: int) -> None:
        """``n`` key lookups in ``layer`` ("memory" | "redis") ended as ``result`` ("hit" | "miss" | "error")."""
        ...

    def cache_breaker(self, state: str) -> None:
        """The Redis circuit breaker moved to ``state`` ("closed" | "open" | "half_open")."""
        ...

    def judgment_event(self, kind: str, data: dict[str, Any]) -> None:
        """A judgment's light event (``engine.progress.LIGHT``: cached, round, juror, stopped), as it happens."""
        ...

    def slot_wait(self, model: str, priority: str, seconds: float) -> None:
        """A call of class ``priority`` got a backend slot after waiting ``seconds`` (``backends.slots``)."""
        ...


class _Noop:
    def backend_call(self, model: str, outcome: str, seconds: float, usage: Usage | None) -> None:
        return None

    def retry(self, model: str, kind: str) -> None:
        return None

    def single_flight_wait(self) -> None:
        return None

    def single_flight_alone(self) -> None:
        return None

    def single_flight_duplicate(self) -> None:
        return None

    def cache_lookup(self, layer: str, result: str, n: int) -> None:
        return None

    def cache_breaker(self, state: str) -> None:
        return None

    def judgment_event(self, kind: str, data: dict[str, Any]) -> None:
        return None

    def slot_wait(self, model: str, priority: str, seconds: float) -> None:
        return None


NOOP: Observer = _Noop()
