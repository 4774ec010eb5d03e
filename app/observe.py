"""Hooks through which the judging layer reports what it did; the metrics module implements them."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from app.backends.registry import ResolvedModel
    from app.judging.types import Usage


class Observer(Protocol):
    def backend_call(self, model: ResolvedModel, outcome: str, seconds: float, usage: Usage | None) -> None: ...

    def retry(self, model: ResolvedModel, kind: str) -> None: ...

    def single_flight_wait(self) -> None: ...


class _Noop:
    def backend_call(self, model: ResolvedModel, outcome: str, seconds: float, usage: Usage | None) -> None:
        return None

    def retry(self, model: ResolvedModel, kind: str) -> None:
        return None

    def single_flight_wait(self) -> None:
        return None


NOOP: Observer = _Noop()
