"""Every door is visible: each judging door (listwise, pairwise, rerank, reward) moves the judgment metrics under its own
``door`` label, its route as ``endpoint`` and its ``mode`` (now, stream, job), and no other door's; static files get
the route label ``static``. In process, read from this process's registry (deltas: the registry is process-wide)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from pcfjudge.settings import Settings
from prometheus_client import REGISTRY

from tests.support.inprocess import app_with_services, running_fake

PRICED = Settings(prices={"sim:default": (1.0, 2.0)})  # so the cost counter moves for the sim judge
LISTWISE = {"question": "2+2?", "candidates": ["4", "5", "four", "22"], "k": 4}
PAIRWISE = {"question": "2+2?", "response_a": "4", "response_b": "5"}
COHERE = {"model": "rerank-v3.5", "query": "Capital of France?", "documents": ["Paris.", "Lyon.", "Nice."]}
TEI = {"query": "Capital of France?", "texts": ["Paris.", "Lyon.", "Nice."]}
REWARD = {"samples": [{"prompt": "2+2?", "response": r} for r in ("4.", "5.", "22.")], "k": 3}
OPENRLHF = {"query": ["2+2? 4.", "2+2? 5.", "2+2? 22."], "prompts": ["2+2?"] * 3}
SLIME = {"prompt": "2+2?", "response": "4."}
DOORS = ("listwise", "pairwise", "rerank", "reward")
MODES = ("now", "stream", "job")


def total(name: str, **labels: str) -> float:
    """The sum of ``name``'s samples whose labels include ``labels``."""
    wanted = labels.items()
    return sum(
        s.value
        for family in REGISTRY.collect()
        for s in family.samples
        if s.name == name and wanted <= s.labels.items()
    )


JUDGMENT_FAMILIES = (
    "pcfjudge_decisions_total",
    "pcfjudge_top_pick_position_total",
    "pcfjudge_judgment_duration_seconds_count",
    "pcfjudge_cost_usd_total",
)


def snapshot() -> dict[tuple[str, str, str, str], float]:
    """Every judgment family's total by (family, door, mode, endpoint)."""
    out: dict[tuple[str, str, str, str], float] = {}
    for family in REGISTRY.collect():
        for s in family.samples:
            if s.name in JUDGMENT_FAMILIES or s.name == "pcfjudge_run_agreement_count":
                key = (s.name, s.labels.get("door", ""), s.labels.get("mode", ""), s.labels.get("endpoint", ""))
                out[key] = out.get(key, 0.0) + s.value
    return out


def moved(before: dict[tuple[str, str, str, str], float]) -> dict[tuple[str, str, str, str], float]:
    after = snapshot()
    return {k: after[k] - before.get(k, 0.0) for k in after if after[k] != before.get(k, 0.0)}


@dataclass(frozen=True)
class Case:
    path: str
    body: dict[str, Any]
    door: str
    mode: str
    query: str = ""  # the adapters' options ride in the query string

    @property
    def id(self) -> str:
        return f"{self.path}-{self.mode}"


CASES = [
    Case("/judge/listwise", LISTWISE, "listwise", "now"),
    Case("/judge/listwise", {**LISTWISE, "stream": True}, "listwise", "stream"),
    Case("/judge/pairwise", PAIRWISE, "pairwise", "now"),
    Case("/judge/pairwise", {**PAIRWISE, "stream": True}, "pairwise", "stream"),
    Case("/v1/rerank", COHERE, "rerank", "now"),
    Case("/v2/rerank", COHERE, "rerank", "now"),
    Case("/v2/rerank", {**COHERE, "pcfjudge": {"stream": True}}, "rerank", "stream"),
    Case("/rerank", TEI, "rerank", "now"),
    Case("/v1/reward", REWARD, "reward", "now"),
    Case("/v1/reward", {**REWARD, "stream": True}, "reward", "stream"),
    Case("/get_reward", OPENRLHF, "reward", "now", "?k=3"),
    Case("/v1/reward/one", SLIME, "reward", "now"),
]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
async def test_each_door_moves_its_own_judgment_metrics(case: Case) -> None:
    async with app_with_services(PRICED) as (client, _):
        before = snapshot()
        response = await client.post(case.path + case.query, json=case.body)
        assert response.status_code == 200, response.text
        if case.mode == "stream":
            assert response.headers["content-type"].startswith("text/event-stream")
        delta = moved(before)
    labels = {"door": case.door, "mode": case.mode, "endpoint": case.path}
    assert_one_judgment(delta, case.door, case.mode, case.path, one_candidate=case.path == "/v1/reward/one")
    assert total("pcfjudge_decisions_total", **labels) >= 1
    if case.door != "pairwise":  # listwise doors: one consensus decision, its agreement observed
        assert delta[("pcfjudge_run_agreement_count", case.door, case.mode, "")] == 1


def assert_one_judgment(
    delta: dict[tuple[str, str, str, str], float], door: str, mode: str, endpoint: str, one_candidate: bool = False
) -> None:
    """Exactly one judgment, under (door, mode, endpoint) in every judgment family; no other door or mode moved. A
    judgment of one candidate (slime's one sample) had no position to prefer: it moves no top pick."""
    assert delta[("pcfjudge_decisions_total", door, mode, endpoint)] == 1, delta
    assert delta[("pcfjudge_judgment_duration_seconds_count", door, mode, "")] == 1, delta
    picks = delta.get(("pcfjudge_top_pick_position_total", door, mode, endpoint), 0.0)
    assert (picks == 0) if one_candidate else (picks >= 1), delta
    assert delta[("pcfjudge_cost_usd_total", door, mode, "")] > 0, delta
    others = {k: v for k, v in delta.items() if (k[1], k[2]) != (door, mode)}
    assert others == {}, others
    assert {k[3] for k in delta} <= {endpoint, ""}, delta


async def finished(client: httpx.AsyncClient, location: str) -> dict[str, Any]:
    for _ in range(600):
        job: dict[str, Any] = (await client.get(location)).json()
        if job["status"] not in ("queued", "running"):
            return job
        await asyncio.sleep(0.02)
    raise AssertionError(f"job still {job['status']}: {job}")


@pytest.mark.parametrize(
    ("endpoint", "request_body", "door"),
    [("/judge/listwise", LISTWISE, "listwise"), ("/v1/reward", REWARD, "reward"), ("/v2/rerank", COHERE, "rerank")],
)
async def test_a_jobs_judgment_is_recorded_in_mode_job(endpoint: str, request_body: dict[str, Any], door: str) -> None:
    async with app_with_services(PRICED) as (client, _):
        before = snapshot()
        accepted = await client.post("/v1/jobs", json={"endpoint": endpoint, "request": request_body})
        assert accepted.status_code == 202, accepted.text
        job = await finished(client, accepted.json()["location"])
        assert job["status"] == "succeeded", job
        delta = moved(before)
    assert_one_judgment(delta, door, "job", endpoint)


async def test_prefer_respond_async_is_a_job_too() -> None:
    """The 202 is counted under the judging route (not an internal one), the job's judgment in mode job."""
    async with app_with_services(PRICED) as (client, _):
        before = snapshot()
        accepted_before = total("pcfjudge_requests_total", endpoint="/judge/pairwise", status="202")
        accepted = await client.post("/judge/pairwise", json=PAIRWISE, headers={"Prefer": "respond-async"})
        assert accepted.status_code == 202, accepted.text
        assert (await finished(client, accepted.headers["location"]))["status"] == "succeeded"
        delta = moved(before)
    assert_one_judgment(delta, "pairwise", "job", "/judge/pairwise")
    assert total("pcfjudge_requests_total", endpoint="/judge/pairwise", status="202") == accepted_before + 1
    assert total("pcfjudge_requests_total", endpoint="/_internal/respond-async") == 0


async def test_the_internal_async_route_sent_to_directly_is_counted_as_unmatched() -> None:
    """Only the middleware sends to /_internal/respond-async: a direct POST is a 404 under "unmatched"."""
    async with app_with_services(PRICED) as (client, _):
        before = total("pcfjudge_requests_total", endpoint="unmatched", status="404")
        assert (await client.post("/_internal/respond-async", json=PAIRWISE)).status_code == 404
    assert total("pcfjudge_requests_total", endpoint="unmatched", status="404") == before + 1
    assert total("pcfjudge_requests_total", endpoint="/_internal/respond-async") == 0


async def test_a_refusal_before_routing_is_counted_under_the_doors_route() -> None:
    """A body over PCFJ_MAX_BODY_BYTES on /v2/rerank is refused before any route runs: counted under /v2/rerank."""
    async with app_with_services(Settings(max_body_bytes=1024)) as (client, _):
        before = total("pcfjudge_requests_total", endpoint="/v2/rerank", status="413")
        large = {"query": "q", "documents": ["x" * 2048]}
        assert (await client.post("/v2/rerank", json=large)).status_code == 413
    assert total("pcfjudge_requests_total", endpoint="/v2/rerank", status="413") == before + 1


async def test_a_fleets_calls_carry_its_name(tmp_path: Path) -> None:
    """A fleet's model label is its name (fleet:<model_name>), not "other"."""
    with running_fake() as fake:
        models = tmp_path / "models.yaml"
        models.write_text(
            f"model_list:\n  - model_name: judge\n    litellm_params:\n      model: hosted_vllm/x\n"
            f"      api_base: {fake.url}/v1\n"
        )
        async with app_with_services(Settings(models_file=models, retry_base_s=0.001)) as (client, _):
            before = total("pcfjudge_backend_calls_total", model="fleet:judge")
            body = {**LISTWISE, "model": "judge"}
            assert (await client.post("/judge/listwise", json=body)).status_code == 200
    assert total("pcfjudge_backend_calls_total", model="fleet:judge") > before


async def test_a_collected_reward_group_is_one_judgment_of_the_request_that_opened_it() -> None:
    """Two /v1/reward requests, each with two members of one group of four: judged once, recorded once."""
    half = [{"prompt": "2+2?", "response": r, "group": "g"} for r in ("4.", "5.")]
    other = [{"prompt": "2+2?", "response": r, "group": "g"} for r in ("22.", "four")]
    options = {"group_size": 4, "group_wait_ms": 30_000, "k": 3}
    async with app_with_services(PRICED) as (client, _):
        before = snapshot()
        first, second = await asyncio.gather(
            client.post("/v1/reward", json={**options, "samples": half}),
            client.post("/v1/reward", json={**options, "samples": other, "stream": True}),
        )
        assert first.status_code == second.status_code == 200, first.text + second.text
        delta = moved(before)
    decisions = {k: v for k, v in delta.items() if k[0] == "pcfjudge_decisions_total"}
    assert sum(decisions.values()) == 1, decisions
    ((_, door, mode, endpoint),) = decisions
    assert (door, endpoint) == ("reward", "/v1/reward") and mode in ("now", "stream")


async def test_a_failed_judgment_is_counted_for_its_door() -> None:
    """A reward group whose judgment fails (an unreachable backend) is a failure of door reward, not a decision."""
    settings = Settings(
        openai_api_key="sk-test",
        openai_base_url="http://127.0.0.1:9/v1",  # discard port: refused at once, never the internet
        max_retries=0,
        request_timeout_s=5.0,
    )
    async with app_with_services(settings) as (client, _):
        before = total("pcfjudge_failed_requests_total", door="reward", mode="now", endpoint="/v1/reward")
        decided = total("pcfjudge_decisions_total", door="reward")
        response = await client.post("/v1/reward", json={**REWARD, "model": "openai:gpt-5.4"})
        assert response.status_code >= 500, response.text
        after = total("pcfjudge_failed_requests_total", door="reward", mode="now", endpoint="/v1/reward")
    assert after - before == 1
    assert total("pcfjudge_decisions_total", door="reward") == decided


STATIC_PATHS = (
    "/",
    "/static/playground.js",
    "/static/vendor/swagger-ui.css",
    "/docs",
    "/docs/oauth2-redirect",
    "/redoc",
    "/openapi.json",
)


async def test_static_files_are_labelled_static_not_unmatched() -> None:
    async with app_with_services() as (client, _):
        static, unmatched = total_requests("static"), total_requests("unmatched")
        models = total_requests("/playground/models")
        for path in STATIC_PATHS:
            assert (await client.get(path)).status_code == 200, path
        assert (await client.get("/playground/models")).status_code == 200
        assert total_requests("static") - static == len(STATIC_PATHS)
        assert total_requests("unmatched") == unmatched
        assert total_requests("/playground/models") - models == 1  # an API route keeps its template
        await client.get("/no/such/path")
        assert total_requests("unmatched") - unmatched == 1


def total_requests(endpoint: str) -> float:
    return total("pcfjudge_requests_total", endpoint=endpoint)


@pytest.mark.parametrize(
    ("path", "body", "door"), [("/judge/listwise", LISTWISE, "listwise"), ("/v2/rerank", COHERE, "rerank")]
)
async def test_a_jurys_jurors_are_counted_under_its_door(path: str, body: dict[str, Any], door: str) -> None:
    jury = ["sim:default", "sim:oracle"]
    body = {**body, "pcfjudge": {"model": ",".join(jury)}} if path == "/v2/rerank" else {**body, "model": jury}
    labels = {"door": door, "mode": "now", "model": "sim:oracle"}
    before = (
        total("pcfjudge_juror_judgments_total", **labels),
        total("pcfjudge_juror_top_pick_position_total", **labels),
    )
    async with app_with_services() as (client, _):
        reply = await client.post(path, json=body)
    assert reply.status_code == 200, reply.text
    after = total("pcfjudge_juror_judgments_total", **labels), total("pcfjudge_juror_top_pick_position_total", **labels)
    assert after[0] - before[0] == 1  # one juror judgment, delivered
    assert after[1] - before[1] > 0  # its runs' top picks, under its door
