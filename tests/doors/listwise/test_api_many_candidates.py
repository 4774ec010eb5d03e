"""/judge/listwise past one window (issue 30): rounds of windows fitted onto one scale, every candidate ranked and
scored, each window an ordinary cached run, every limit before any call, cancellation of every window."""

from __future__ import annotations

import asyncio
import dataclasses
import json
from collections import Counter
from collections.abc import Sequence
from typing import Any

import pytest
from pcfjudge.backends.registry import ResolvedModel
from pcfjudge.doors.listwise.listwise_plan import build_task
from pcfjudge.doors.listwise.listwise_protocol import ListwiseRequest
from pcfjudge.engine.progress import Watch
from pcfjudge.engine.runner import CallOutcome, CallRunner, CallSpec
from pcfjudge.errors import Refusal
from pcfjudge.settings import Settings
from pcfjudge.types import CacheMode
from prometheus_client import REGISTRY

from tests.support.inprocess import app_with_services

QUESTION = "Which answer states the boiling point of water at sea level correctly?"
CANDIDATES = [f"Answer {i}: water boils at {90 + i % 20} degrees Celsius at sea level." for i in range(40)]
BODY: dict[str, Any] = {"question": QUESTION, "candidates": CANDIDATES}


class Counting:
    """A runner that counts the calls handed to it and whether a step was cancelled while in flight."""

    def __init__(self, inner: CallRunner) -> None:
        self.inner, self.calls, self.cancelled = inner, 0, 0
        self.started = asyncio.Event()

    async def run(
        self, specs: Sequence[CallSpec], model: ResolvedModel, *, watch: Watch, cache_mode: CacheMode = "use"
    ) -> list[CallOutcome]:
        self.calls += len(specs)
        self.started.set()
        try:
            return await self.inner.run(specs, model, watch=watch, cache_mode=cache_mode)
        except asyncio.CancelledError:
            self.cancelled += len(specs)
            raise


async def test_forty_candidates_are_all_ranked_and_scored_on_one_scale() -> None:
    async with app_with_services() as (client, _):
        response = await client.post("/judge/listwise", json=BODY)
        assert response.status_code == 200, response.text
        data = response.json()
    ids = [str(i) for i in range(40)]
    assert sorted(data["ranking"]) == sorted(ids) and len(data["candidates"]) == 40
    assert data["winners"] and set(data["winners"]) <= set(ids)
    windows = data["diagnostics"]["windows"]
    assert windows["window"] == 16 and windows["windows_per_round"] == 3 and windows["rounds"] == 4
    assert windows["calls_budgeted"] == 12 and windows["stopped"] in ("certified", "budget")
    assert windows["windows_judged"] == data["diagnostics"]["runs_made"] == len(data["runs"])
    for c in data["candidates"]:  # one uniform round each; those still in contention more often
        assert c["appearances"] >= 1 and c["standard_error"] > 0
    assert max(c["appearances"] for c in data["candidates"]) >= 2
    assert sum(c["appearances"] for c in data["candidates"]) == sum(len(r["order"]) for r in data["runs"])
    for run in data["runs"]:  # each run is one window: at most 16 candidates, each mapped back to its id
        assert 2 <= len(run["order"]) <= 16 and set(run["judgments"]) == set(run["order"])
    by_id = {c["id"]: c["consensus"] for c in data["candidates"]}
    assert [by_id[i] for i in data["ranking"]] == sorted(by_id.values(), reverse=True)
    shown = Counter(cid for run in data["runs"] for cid in run["order"])
    assert {c["id"]: c["appearances"] for c in data["candidates"]} == shown


async def test_windowed_judgments_are_counted_by_how_they_stopped_and_each_round_as_it_ends() -> None:
    """The metrics hear the judgment's own events (``Judge.run``): a ``round`` as each round of windows ends, and
    its ``stopped`` event (why its rounds ended, the windows it took)."""

    def value(name: str, **labels: str) -> float:
        return REGISTRY.get_sample_value(name, labels) or 0.0

    stopped_before = {
        s: value("pcfjudge_windowed_judgments_total", stopped=s)
        for s in ("rounds", "certified", "budget", "deadline", "failed")
    }
    rounds_before = value("pcfjudge_window_rounds_total")
    windows_before = value("pcfjudge_windows_per_judgment_sum")
    async with app_with_services() as (client, _):
        data = (await client.post("/judge/listwise", json={**BODY, "include_runs": False})).json()
        metrics = (await client.get("/metrics")).text
    windows = data["diagnostics"]["windows"]
    assert f'pcfjudge_windowed_judgments_total{{stopped="{windows["stopped"]}"}}' in metrics
    assert (
        value("pcfjudge_windowed_judgments_total", stopped=windows["stopped"]) == stopped_before[windows["stopped"]] + 1
    )
    assert value("pcfjudge_window_rounds_total") == rounds_before + windows["steps"]
    assert value("pcfjudge_windows_per_judgment_sum") == windows_before + windows["windows_judged"]


async def test_the_same_request_again_is_the_same_answer_from_the_cache() -> None:
    async with app_with_services() as (client, _):
        first = (await client.post("/judge/listwise", json=BODY)).json()
        again = (await client.post("/judge/listwise", json=BODY)).json()
    assert again["usage"]["backend_calls"] == 0 and again["usage"]["cache_hits"] == first["usage"]["backend_calls"]
    assert again["candidates"] == first["candidates"] and again["ranking"] == first["ranking"]


async def test_a_window_is_an_ordinary_run_a_plain_request_of_its_candidates_reuses() -> None:
    async with app_with_services() as (client, _):
        data = (await client.post("/judge/listwise", json=BODY)).json()
        order = data["runs"][0]["order"]
        plain = {"question": QUESTION, "candidates": [CANDIDATES[int(i)] for i in order], "k": 1}
        reused = (await client.post("/judge/listwise", json=plain)).json()
    assert reused["usage"] == {**reused["usage"], "backend_calls": 0, "cache_hits": 1}


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"mode": "direct"}, "mode"),
        ({"executions": 2}, "executions"),
        ({"k": "auto"}, "k"),
        ({"k": 1}, "k"),
        ({"permutations": [list(range(40))]}, "permutations"),
        ({"max_cost_usd": 1.0}, "max_cost_usd"),
        ({"max_calls": 3}, "max_calls"),
    ],
)
async def test_what_applies_to_one_window_only_is_a_422_naming_the_field(change: dict[str, Any], field: str) -> None:
    async with app_with_services() as (client, _):
        response = await client.post("/judge/listwise", json={**BODY, **change})
    assert response.status_code == 422, response.text
    assert response.json()["errors"][0]["field"] == field


async def test_over_max_items_is_a_413_naming_the_limit() -> None:
    async with app_with_services(Settings(max_items=30)) as (client, _):
        response = await client.post("/judge/listwise", json=BODY)
    assert response.status_code == 413 and response.json()["error"] == "too_many_candidates"
    assert "PCFJ_MAX_ITEMS" in response.json()["detail"]


@pytest.mark.parametrize(
    ("settings", "status", "names"),
    [
        ({"max_calls_per_request": 11}, 422, "needs 12 backend calls; the limit is 11"),
        ({"max_input_tokens_per_request": 2000}, 422, "PCFJ_MAX_INPUT_TOKENS_PER_REQUEST"),
        ({"quota_calls_per_min": 5}, 429, ""),
    ],
)
async def test_every_limit_refuses_before_a_single_call(settings: dict[str, Any], status: int, names: str) -> None:
    async with app_with_services(Settings(**settings)) as (client, services):
        counting = Counting(services.judge.runner)
        services.judge = services.judge.using(runner=counting)
        response = await client.post("/judge/listwise", json=BODY)
    assert response.status_code == status, response.text
    assert names in response.json()["detail"] and counting.calls == 0


async def test_an_in_process_task_with_one_round_is_refused_before_a_call() -> None:
    async with app_with_services() as (_, services):
        counting = Counting(services.judge.runner)
        judge = services.judge.using(runner=counting)
        task = build_task(ListwiseRequest.model_validate(BODY), services.settings, judge)
        with pytest.raises(Refusal) as refused:
            await judge.listwise(dataclasses.replace(task, k=1))
    assert refused.value.kind == "validation_error" and refused.value.field == "k" and counting.calls == 0


async def test_max_calls_bounds_the_rounds() -> None:
    async with app_with_services() as (client, _):
        data = (await client.post("/judge/listwise", json={**BODY, "max_calls": 6, "include_runs": False})).json()
    assert data["diagnostics"]["windows"]["calls_budgeted"] == 6 and 4 <= data["diagnostics"]["runs_made"] <= 6


async def test_a_judge_that_always_fails_is_a_502_and_no_made_up_ranking() -> None:
    async with app_with_services(Settings(sim_fail_rate=1.0, max_retries=0)) as (client, _):
        response = await client.post("/judge/listwise", json=BODY)
    assert response.status_code == 502, response.text
    assert "window runs succeeded" in response.json()["detail"]


async def test_cancelling_the_request_cancels_every_window_in_flight() -> None:
    async with app_with_services(Settings(sim_latency_ms=30_000)) as (_, services):
        counting = Counting(services.judge.runner)
        judge = services.judge.using(runner=counting)
        task = build_task(ListwiseRequest.model_validate(BODY), services.settings, judge)
        judging = asyncio.create_task(judge.listwise(task))
        await counting.started.wait()
        judging.cancel()
        with pytest.raises(asyncio.CancelledError):
            await judging
    assert counting.cancelled == counting.calls == 3  # the first round's 3 windows, all in flight


async def test_a_stream_of_forty_candidates_sends_an_event_per_window_and_round_then_the_result() -> None:
    body = {"question": "Which is best?", "candidates": [f"answer {i}" for i in range(40)], "stream": True}
    async with app_with_services() as (client, _), client.stream("POST", "/judge/listwise", json=body) as reply:
        text = "".join([chunk async for chunk in reply.aiter_text()])
    events = [line.partition(":")[2].strip() for line in text.splitlines() if line.startswith("event:")]
    data = [json.loads(line[5:]) for line in text.splitlines() if line.startswith("data:")]
    assert reply.status_code == 200 and events[-1] == "result"
    windows = data[-1]["diagnostics"]["windows"]
    assert events.count("run") == windows["windows_judged"] and events.count("run") >= 2 * -(-40 // 16)  # two rounds
    rounds = [d for e, d in zip(events, data, strict=True) if e == "round"]
    assert [r["step"] for r in rounds] == list(range(1, windows["steps"] + 1))  # one round event as each round ends
    assert rounds[-1]["windows_judged"] == windows["windows_judged"] and events[-2] == "round"
    first = events.index("round")
    assert events[:first] == ["run"] * rounds[0]["windows"]  # a round's event follows its windows' run events


async def test_a_stream_reports_each_window_as_its_call_ends_not_with_its_round() -> None:
    """Issue 49 row 9: a 40-document stream sent a round's run events together once the whole round had ended."""
    async with app_with_services(Settings(sim_latency_ms=100)) as (_, services):
        inner = services.judge.runner
        returned = 0  # the rounds whose calls the runner has handed back

        class Rounds:
            async def run(self, specs: Sequence[CallSpec], model: ResolvedModel, **kw: Any) -> list[CallOutcome]:
                nonlocal returned
                made = await inner.run(specs, model, **kw)
                returned += 1
                return made

        judge = services.judge.using(runner=Rounds())  # type: ignore[arg-type]
        task = build_task(ListwiseRequest.model_validate(BODY), services.settings, judge)
        runs: list[tuple[int, int]] = []  # each run event's round and the rounds handed back by then
        listener = lambda e: e.kind == "run" and runs.append((e.data["step"], returned))  # noqa: E731
        result = await judge.listwise(task, Watch(listener=listener))
    assert result.windows is not None and len(runs) == result.windows.windows_judged
    assert {step for step, _ in runs} == set(range(1, result.windows.steps + 1))
    assert all(back == step - 1 for step, back in runs), runs  # heard while its round's calls were still running


async def test_a_hundred_candidates_get_consensus_values_on_the_0_100_scale() -> None:
    """Issue 48: /judge/listwise with 100 candidates gave consensus values of 108.6 and 113.8 (7 of 15 requests).
    Every value is now on 0–100, the order that of the fit, and the map that put it there is reported."""
    async with app_with_services() as (client, _):
        for i in range(15):
            body = {
                "question": f"Which number is the largest? ({i})",
                "candidates": [f"Candidate {c}: {c * 37 % 101}" for c in range(100)],
                "include_runs": False,
            }
            data = (await client.post("/judge/listwise", json=body)).json()
            values = {c["id"]: c["consensus"] for c in data["candidates"]}
            assert all(0 <= v <= 100 for v in values.values()), sorted(values.values())[-3:]
            assert [values[cid] for cid in data["ranking"]] == sorted(values.values(), reverse=True)
            scale = data["diagnostics"]["windows"]["scale"]
            assert scale["factor"] <= 1  # on_scale's map (tests/judging/test_window_fit.py works it by hand)
