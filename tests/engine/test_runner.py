"""Failure policy through the listwise path with a scripted backend: degraded results, quorum, retries."""

from __future__ import annotations

import asyncio
import json

from pcfjudge.backends.base import BackendError, Completion, JudgeCall, ProviderError, RateLimited
from pcfjudge.backends.sim import SimJudge, SimParams
from pcfjudge.engine.failures import JudgingFailed
from pcfjudge.engine.listwise_runs import ListwiseTask
from pcfjudge.judging.consensus import PRESETS
from pcfjudge.services import Services
from pcfjudge.settings import Settings


class Scripted:
    """Answers like the sim judge, except for scripted failures keyed by call number."""

    provider = "sim"

    def __init__(self, script: dict[int, BackendError | str]) -> None:
        self.script = script
        self.calls = 0
        self.judge = SimJudge(SimParams())

    async def complete(self, call: JudgeCall, until: float | None = None) -> Completion:
        n = self.calls
        self.calls += 1
        step = self.script.get(n)
        if isinstance(step, BackendError):
            raise step
        if isinstance(step, str):
            return Completion(step)
        return Completion(json.dumps(self.judge.answer(call)))

    async def aclose(self) -> None:
        return None


def run_task(backend: Scripted, k: int = 5, **settings: object) -> object:
    async def main() -> object:
        services = Services.build(Settings(retry_base_s=0.0, **settings))  # type: ignore[arg-type]
        services.registry.backends["sim"] = backend
        task = ListwiseTask("q", ["a", "b", "c"], ["x", "y", "z"], k=k, weights=PRESETS["proposed"])
        try:
            return await services.judge.using(timeout_s=5).listwise(task)
        except JudgingFailed as exc:
            return exc
        finally:
            await services.aclose()

    return asyncio.run(main())


def test_failed_runs_are_listed_and_result_is_degraded() -> None:
    backend = Scripted({1: ProviderError("boom"), 3: ProviderError("boom")})
    result = run_task(backend, k=5, max_retries=0)
    assert not isinstance(result, JudgingFailed)
    assert result.degraded  # type: ignore[attr-defined]
    errors = [r.error for r in result.runs]  # type: ignore[attr-defined]
    assert sum(e is not None for e in errors) == 2 and "provider_error" in str(errors)


def test_retry_recovers_provider_errors() -> None:
    backend = Scripted({0: RateLimited("slow down", retry_after=0.0), 1: ProviderError("boom")})
    result = run_task(backend, k=3, max_retries=2)
    assert not isinstance(result, JudgingFailed)
    assert not result.degraded  # type: ignore[attr-defined]
    assert backend.calls == 5  # 3 runs + 2 retries


def test_unusable_output_is_retried_once_then_fails_the_run() -> None:
    # Calls are made concurrently; every call that gets bad JSON retries once. With all answers bad, each
    # of the 3 runs makes exactly 2 calls and fails as invalid_json; the request is below quorum -> 502.
    backend = Scripted({i: "not json" for i in range(100)})
    result = run_task(backend, k=3)
    assert isinstance(result, JudgingFailed)
    assert result.kind == "backend_error" and backend.calls == 6
    assert all(r.error and r.error.startswith("invalid_json") for r in result.runs)


def test_below_quorum_rate_limits_map_to_503_with_retry_after() -> None:
    backend = Scripted({i: RateLimited("429", retry_after=7.0) for i in range(100)})
    result = run_task(backend, k=3, max_retries=0)
    assert isinstance(result, JudgingFailed)
    assert result.kind == "backend_overloaded" and result.retry_after == 7.0


def test_a_calls_class_reaches_the_backend_on_the_call() -> None:
    """The runner sends each call with the class of the work it serves (a fleet's rate budget reads it there)."""
    from pcfjudge.engine.progress import Watch

    seen: list[str] = []

    class Recording(Scripted):
        async def complete(self, call: JudgeCall, until: float | None = None) -> Completion:
            seen.append(call.priority)
            return await super().complete(call, until)

    async def main() -> None:
        services = Services.build(Settings(retry_base_s=0.0))
        services.registry.backends["sim"] = Recording({})
        try:
            for priority in ("interactive", "background"):
                task = ListwiseTask(f"q {priority}", ["a", "b"], ["x", "y"], k=2, weights=PRESETS["proposed"])
                judge = services.judge.using(timeout_s=5)
                await judge.run(judge.checked(task), Watch(priority=priority))
        finally:
            await services.aclose()

    asyncio.run(main())
    assert seen == ["interactive", "interactive", "background", "background"]
