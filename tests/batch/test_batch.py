"""``pcfjudge.batch``: calls planned by the judge, sent as OpenAI / Anthropic batches (official SDKs, the fake provider
behind them), collected into the cache and judged from it exactly as live; never paid twice; failures (partial,
expiry, cancellation) recorded and resubmitted alone; interrupted submissions settled."""

from __future__ import annotations

import contextlib
import dataclasses
import json
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from pcfjudge.batch.ids import PATTERN, custom_id
from pcfjudge.batch.job import BatchError, BatchJob
from pcfjudge.batch.probe import Probe
from pcfjudge.batch.store import STATE, BatchState
from pcfjudge.cache.interface import PARSED
from pcfjudge.engine.failures import JudgingFailed
from pcfjudge.engine.judge import Judge
from pcfjudge.engine.listwise_runs import ListwiseResult, ListwiseTask
from pcfjudge.engine.pairwise_passes import PairwiseResult, PairwiseTask
from pcfjudge.judging.window_rounds import WindowOptions
from pcfjudge.services import Services

from tests.support.inprocess import FakeProvider, provider_settings

MODELS = {"openai": "openai:judge-x", "anthropic": "anthropic:judge-y"}
PRICE = (2.0, 8.0)
Task = ListwiseTask | PairwiseTask


def listwise(model: str, n: int = 2, k: int = 3) -> list[ListwiseTask]:
    return [
        ListwiseTask(
            question=f"Question {i}: in which year did the Berlin Wall fall?",
            ids=["a", "b", "c"],
            texts=["1989.", f"It fell in {1990 + i}.", "I am not sure; the late 1980s."],
            k=k,
            model=model,
        )
        for i in range(n)
    ]


def services_for(provider: str, fake: FakeProvider, **overrides: Any) -> Services:
    settings = provider_settings(provider, fake, prices={MODELS[provider]: PRICE}, batch_poll_s=0.01, **overrides)
    return Services.build(settings)


@pytest.fixture(params=["openai", "anthropic"])
async def provider(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
async def services(provider: str, fake: FakeProvider) -> AsyncIterator[Services]:
    built = services_for(provider, fake)
    yield built
    await built.aclose()


OpenJob = Callable[..., BatchJob]


@pytest.fixture
def open_job() -> Iterator[OpenJob]:
    """``BatchJob(...)``, closed after the test whatever happens."""
    jobs: list[BatchJob] = []

    def make(*args: Any, **kwargs: Any) -> BatchJob:
        jobs.append(BatchJob(*args, **kwargs))
        return jobs[-1]

    yield make
    for job in jobs:
        job.close()


def drive(tasks: Sequence[Task]) -> Callable[[Judge], Awaitable[None]]:
    async def run(judge: Judge) -> None:
        for task in tasks:
            with contextlib.suppress(JudgingFailed):
                await (judge.listwise(task) if isinstance(task, ListwiseTask) else judge.pairwise(task))

    return run


def go(_estimate: str) -> str | None:
    return None


def knobs(fake: FakeProvider, **values: Any) -> dict[str, Any]:
    response = fake.control.post("/_control/batches", json=values)
    response.raise_for_status()
    result: dict[str, Any] = response.json()
    return result


def batches(fake: FakeProvider) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = fake.control.get("/_control/batches").json()["batches"]
    return found


async def judged(judge: Judge, task: Task) -> ListwiseResult | PairwiseResult:
    return await (judge.listwise(task) if isinstance(task, ListwiseTask) else judge.pairwise(task))


def judgments(result: ListwiseResult | PairwiseResult) -> Any:
    """What a judgment says, run by run (no latencies, no cache flags)."""
    if isinstance(result, ListwiseResult):
        return [(r.execution, r.index, r.order, r.result.judgments if r.result else r.error) for r in result.runs]
    return [(p.name, p.verdict, p.raw_verdict, p.rationale, p.resolved_answer, p.error) for p in result.passes]


async def test_batched_answers_are_the_live_answers_served_from_the_cache(
    provider: str, services: Services, fake: FakeProvider, tmp_path: Path, open_job: OpenJob
) -> None:
    model = MODELS[provider]
    tasks: list[Task] = [*listwise(model), PairwiseTask("What is 2+2?", "4.", "5.", model=model)]
    job = open_job(services, tmp_path / "batch", model)
    assert await job.rounds(drive(tasks), go) == {}
    planned = {run.key for t in tasks if isinstance(t, ListwiseTask) for run in services.judge.plan_listwise(t).runs}
    collected = set(job.results.values)
    assert planned <= collected and len(collected) == len(planned) + 2  # and the pair's direct and swapped passes
    assert fake.calls()["completions"] == {}  # no live call was made
    assert sum(b["requests"] for b in batches(fake)) == len(collected)  # each call sent once

    live_services = services_for(provider, fake)
    try:
        for task in tasks:
            from_cache = await judged(services.judge, task)
            assert from_cache.backend_calls == 0 and from_cache.cache_hits > 0
            live = await judged(live_services.judge, task)
            assert live.backend_calls > 0
            assert judgments(from_cache) == judgments(live)
        key = next(iter(planned))
        (batch_value,) = await services.cache.get_many([key])
        (live_value,) = await live_services.cache.get_many([key])
        assert batch_value is not None and live_value is not None
        assert batch_value.keys() == live_value.keys() and PARSED in batch_value  # the runner's value shape
        assert batch_value["answer"] == live_value["answer"]
        assert batch_value["prompt_version"] == live_value["prompt_version"] and batch_value["model"] == model
    finally:
        await live_services.aclose()


async def test_custom_ids_are_valid_everywhere_and_map_back_to_cache_keys(
    services: Services, provider: str, tmp_path: Path, open_job: OpenJob
) -> None:
    job = open_job(services, tmp_path / "batch", MODELS[provider])
    missing = await job.plan(drive(listwise(MODELS[provider], n=3, k=5)))
    keys = list(missing)
    ids = [custom_id(key) for key in keys]
    assert len(set(ids)) == len(keys) == 15
    assert all(PATTERN.match(cid) for cid in ids) and all(len(key) > 64 for key in keys)
    assert ids == [custom_id(key) for key in keys]  # the same call always gets the same id


async def test_a_call_in_a_running_batch_is_never_submitted_again(
    provider: str, services: Services, fake: FakeProvider, tmp_path: Path, open_job: OpenJob
) -> None:
    knobs(fake, delay_polls=1000)
    model, directory = MODELS[provider], tmp_path / "batch"
    tasks = listwise(model)
    job = open_job(services, directory, model)
    made = await job.submit(job.to_submit(await job.plan(drive(tasks))), go)
    assert len(made) == 1 and len(made[0].requests) == 6
    assert job.to_submit(await job.plan(drive(tasks))) == []
    again = open_job(services, directory, None)  # a new process on the same directory
    assert again.model.string == model
    await again.refresh()
    assert again.to_submit(await again.plan(drive(tasks))) == []
    assert await again.submit([], go) == []
    assert len(batches(fake)) == 1


async def test_partial_failures_are_recorded_and_only_the_failed_calls_resubmitted(
    provider: str, services: Services, fake: FakeProvider, tmp_path: Path, open_job: OpenJob
) -> None:
    knobs(fake, faults=["truncated", "refusal", "500"])  # the first three requests processed
    model = MODELS[provider]
    tasks = listwise(model)
    job = open_job(services, tmp_path / "batch", model)
    missing = await job.rounds(drive(tasks), go)
    first, second = job.state.submissions
    order = list(first.requests.values())  # the batch processes them in this order
    kinds = {key: err.split(":")[0] for key, err in job.results.errors.items()}
    assert kinds == {order[1]: "refusal"}  # the refusal alone is left failed (a live call does not retry one)
    assert set(second.requests.values()) == {order[0], order[2]}  # truncated and 500: resubmitted alone, once
    assert job.results.outcomes[first.local_id]["ok"] == 3
    assert sorted(job.results.outcomes[first.local_id]) == ["ok", "provider_error", "refusal", "truncated"]
    assert set(missing) == {order[1]}
    # the item still gets its judgment from the collected runs (2 of 3 succeeded: a strict majority)
    final = services.judge.using(runner=Probe(job.results, services.cache, error="not_collected"))
    results = [await final.listwise(task) for task in tasks]
    assert sum(r.degraded for r in results) == 1
    # and the refusal can be submitted again, alone
    (third,) = await job.submit(job.to_submit(missing), go)
    assert list(third.requests.values()) == [order[1]]


async def test_expired_requests_are_recorded_and_resubmitted(
    provider: str, services: Services, fake: FakeProvider, tmp_path: Path, open_job: OpenJob
) -> None:
    knobs(fake, expire_after=2)  # every batch expires after two requests
    model = MODELS[provider]
    job = open_job(services, tmp_path / "batch", model)
    missing = await job.rounds(drive(listwise(model)), go)
    first, second = job.state.submissions
    assert first.provider_status == ("expired" if provider == "openai" else "ended")
    assert dict(job.results.outcomes[first.local_id]) == {"ok": 2, "expired": 4}
    expired = list(first.requests.values())[2:]
    assert sorted(second.requests.values()) == sorted(expired)  # resubmitted alone
    assert dict(job.results.outcomes[second.local_id]) == {"ok": 2, "expired": 2}
    assert len(missing) == 2  # expired twice: left for the next run (at most two submissions a call per run)
    knobs(fake, expire_after=None)
    assert await job.rounds(drive(listwise(model)), go) == {}
    assert set(job.state.submissions[2].requests.values()) == set(missing)
    assert len(job.results.values) == 6


async def test_a_cancelled_batch_keeps_what_ran_and_the_rest_can_be_resubmitted_alone(
    provider: str, services: Services, fake: FakeProvider, tmp_path: Path, open_job: OpenJob
) -> None:
    knobs(fake, delay_polls=1000, per_poll=2)
    model = MODELS[provider]
    tasks = listwise(model)
    job = open_job(services, tmp_path / "batch", model)
    (sub,) = await job.submit(job.to_submit(await job.plan(drive(tasks))), go)
    assert [s.local_id for s in await job.cancel()] == [sub.local_id]  # its status check ran two requests
    await job.refresh()
    assert sub.status == "ended"
    recorded = await job.collect(await job.plan(drive(tasks)))
    assert dict(recorded) == {"ok": 2, "cancelled": 4}
    missing = await job.plan(drive(tasks))
    cancelled = {key for key, err in job.results.errors.items() if err.startswith("cancelled")}
    assert set(missing) == cancelled and len(cancelled) == 4
    knobs(fake, delay_polls=0, per_poll=None)
    (again,) = await job.submit(job.to_submit(missing), go)
    assert set(again.requests.values()) == cancelled
    assert await job.rounds(drive(tasks), go) == {}


async def test_an_interrupted_submission_is_found_at_the_provider_not_sent_again(
    provider: str, services: Services, fake: FakeProvider, tmp_path: Path, open_job: OpenJob
) -> None:
    knobs(fake, delay_polls=1000)
    model, directory = MODELS[provider], tmp_path / "batch"
    tasks = listwise(model)
    job = open_job(services, directory, model)
    todo = job.to_submit(await job.plan(drive(tasks)))
    # A crash right after the provider created the batch: state.json still says "writing", with no batch id.
    sub = job._write(job._chunks(todo)[0])
    await job.api.submit(sub, (directory / sub.input).read_bytes(), job._tag(sub))
    created = sub.batch_id
    state = json.loads((directory / STATE).read_text())
    assert state["submissions"][0]["status"] == "writing" and state["submissions"][0]["batch_id"] is None
    resumed = open_job(services, directory, model)
    await resumed.refresh()
    (settled,) = resumed.state.submissions
    assert settled.status == "submitted" and settled.batch_id == created
    assert len(batches(fake)) == 1


async def test_a_submission_interrupted_before_the_provider_had_it_is_sent_once(
    provider: str, services: Services, fake: FakeProvider, tmp_path: Path, open_job: OpenJob
) -> None:
    model, directory = MODELS[provider], tmp_path / "batch"
    job = open_job(services, directory, model)
    job._write(job._chunks(job.to_submit(await job.plan(drive(listwise(model)))))[0])  # crash before sending
    resumed = open_job(services, directory, model)
    await resumed.refresh()
    assert len(batches(fake)) == 1 and resumed.state.submissions[0].batch_id is not None
    assert await resumed.rounds(drive(listwise(model)), go) == {}
    assert len(batches(fake)) == 1


async def test_a_keyed_pass_is_batched_in_a_second_round_when_the_orders_disagree(
    provider: str, services: Services, fake: FakeProvider, tmp_path: Path, open_job: OpenJob
) -> None:
    model = MODELS[provider]
    live_services = services_for(provider, fake)
    try:  # find a pair the judge's two orders disagree on (the fake's simulated judge is deterministic)
        for i in range(40):
            pair = PairwiseTask(
                f"Which is the better answer ({i})?", f"Answer one {i}.", f"Answer two {i}.", model=model
            )
            live = await live_services.judge.pairwise(pair)
            if live.keyed_pass is not None:
                break
        else:
            pytest.fail("no pair with disagreeing orders among 40")
    finally:
        await live_services.aclose()
    fake.reset()
    job = open_job(services, tmp_path / "batch", model)
    assert await job.rounds(drive([pair]), go) == {}
    first, second = job.state.submissions
    assert len(first.requests) == 2 and len(second.requests) == 1
    assert "keyed" in next(iter(second.requests.values()))
    result = await services.judge.pairwise(pair)
    assert result.backend_calls == 0 and judgments(result) == judgments(live)


async def test_the_cost_is_estimated_at_the_batch_price_and_confirmed(
    services: Services, provider: str, fake: FakeProvider, tmp_path: Path, open_job: OpenJob
) -> None:
    model = MODELS[provider]
    job = open_job(services, tmp_path / "batch", model)
    todo = job.to_submit(await job.plan(drive(listwise(model))))
    shown: list[str] = []

    def refuse(estimate: str) -> str:
        shown.append(estimate)
        return "no"

    with pytest.raises(BatchError, match="no"):
        await job.submit(todo, refuse)
    assert "6 calls" in shown[0] and "at the batch price (50% of PCFJ_PRICES" in shown[0]
    with pytest.raises(BatchError, match="--yes"):  # no terminal under pytest: a paid batch needs --yes
        await job.submit(todo, job.gate(yes=False))
    assert batches(fake) == []
    await job.rounds(drive(listwise(model)), job.gate(yes=True))
    cost = job.cost()
    assert cost.usage.input_tokens > 0 and cost.batch_usd is not None and cost.live_usd is not None
    assert cost.batch_usd == pytest.approx(cost.live_usd / 2, abs=1e-6)


async def test_the_discount_is_a_setting(fake: FakeProvider, tmp_path: Path, open_job: OpenJob) -> None:
    services = services_for("openai", fake, batch_price_factor=0.25)
    try:
        job = open_job(services, tmp_path / "batch", MODELS["openai"])
        await job.rounds(drive(listwise(MODELS["openai"], n=1)), go)
        cost = job.cost()
        assert cost.batch_usd == pytest.approx(cost.live_usd * 0.25, abs=1e-6)  # type: ignore[operator]
    finally:
        await services.aclose()


async def test_one_directory_batches_one_model(
    services: Services, provider: str, tmp_path: Path, open_job: OpenJob
) -> None:
    job = open_job(services, tmp_path / "batch", MODELS[provider])
    await job.submit(job.to_submit(await job.plan(drive(listwise(MODELS[provider], n=1)))), go)
    with pytest.raises(BatchError, match="holds batches for"):
        BatchJob(services, tmp_path / "batch", "sim:default")
    with pytest.raises(BatchError, match="batches need an openai: model"):
        BatchJob(services, tmp_path / "other", "sim:default")
    assert BatchState.load(tmp_path / "batch" / STATE) is not None


async def test_a_windowed_judgment_is_batched_one_step_per_round_and_judges_as_live(
    provider: str, services: Services, fake: FakeProvider, tmp_path: Path, open_job: OpenJob
) -> None:
    """40 candidates past one window (issue 30): the first submission holds the first uniform round (3 windows), each
    later one a stage's or a boundary step's windows, planned from the answers collected; judged from the cache, the
    result is the live one."""
    model = MODELS[provider]
    texts = [f"Candidate {i}: the Berlin Wall fell in {1980 + i % 15}." for i in range(40)]
    ids = [str(i) for i in range(40)]
    task = ListwiseTask("In which year did the Berlin Wall fall?", ids, texts, k=4, model=model)
    task = dataclasses.replace(task, windows=WindowOptions(top_n=1))
    job = open_job(services, tmp_path / "batch", model)
    assert await job.rounds(drive([task]), go) == {}
    submissions = job.state.submissions
    assert len(submissions[0].requests) == 3 and len(submissions) >= 2
    from_cache = await services.judge.listwise(task)
    assert from_cache.backend_calls == 0 and from_cache.windows is not None
    assert from_cache.cache_hits == sum(len(s.requests) for s in submissions) == from_cache.windows.windows_judged
    live_services = services_for(provider, fake)
    try:
        live = await live_services.judge.listwise(task)
    finally:
        await live_services.aclose()
    assert judgments(from_cache) == judgments(live) and from_cache.consensus == live.consensus
