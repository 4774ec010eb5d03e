"""Juries at the HTTP front doors (issue 31): a PCFJ_JURIES name or a list of models wherever a model goes, pooled as
docs/juries.md says, every juror's result and the agreement in the response, faults and bounds before any call."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pcfjudge.settings import Settings

from tests.support.inprocess import app_with_services
from tests.support.waits import free_port

QUESTION = "What is the boiling point of water at sea level in degrees Celsius?"
ANSWERS = ["100 degrees.", "90 degrees.", "100 °C, at 1 atm.", "It depends; roughly 80."]
JURIES = {"panel": ["sim:default", "sim:oracle"], "trio": ["sim:default", "sim:oracle", "dead:judge"]}


def settings(**overrides: Any) -> Settings:
    dead = f"http://127.0.0.1:{free_port()}/v1"  # nothing listens: a juror whose calls fail
    base: dict[str, Any] = {"juries": JURIES, "engines": {"dead": dead}, "max_retries": 0, "default_k": 3}
    return Settings(**(base | overrides))


def body(**extra: Any) -> dict[str, Any]:
    return {"question": QUESTION, "candidates": ANSWERS, "include_runs": True, **extra}


async def test_a_named_jury_pools_its_jurors_and_reports_each() -> None:
    async with app_with_services(settings()) as (client, _):
        reply = await client.post("/judge/listwise", json=body(model="panel", oracle_best="2"))
        assert reply.status_code == 200, reply.text
        data = reply.json()
    jury = data["jury"]
    assert data["model"] == "panel" and jury["name"] == "panel" and jury["weights"] == "equal"
    assert [j["model"] for j in jury["jurors"]] == ["sim:default", "sim:oracle"]
    assert all(j["delivered"] and j["weight"] == 0.5 and j["runs_ok"] == 3 for j in jury["jurors"])
    assert data["usage"]["backend_calls"] == 6 and {r["model"] for r in data["runs"]} == {"sim:default", "sim:oracle"}
    for c in data["candidates"]:  # equal weights: the jury's consensus is the mean of the jurors'
        assert c["consensus"] == pytest.approx(sum(j["scores"][c["id"]] for j in jury["jurors"]) / 2, abs=1e-3)
    best = max(c["consensus"] for c in data["candidates"])
    assert data["winners"] == [c["id"] for c in data["candidates"] if c["consensus"] >= best - 0.5]
    oracle = jury["jurors"][1]
    assert oracle["winners"] == ["2"] and oracle["agrees"] == ("2" in data["winners"])
    assert 0 <= jury["kendalls_w"] <= 1 and jury["effective_jurors"] is None  # never calibrated together
    assert data["degraded"] is False and jury["quorum"] == 2


async def test_a_list_is_a_jury_and_every_juror_run_is_the_jurors_own_cache_entry() -> None:
    async with app_with_services(settings()) as (client, _):
        alone = (await client.post("/judge/listwise", json=body(model="sim:oracle"))).json()
        listed = (await client.post("/judge/listwise", json=body(model=["sim:oracle", "sim:default"]))).json()
        named = (await client.post("/judge/listwise", json=body(model="panel"))).json()
    assert alone["usage"]["backend_calls"] == 3
    assert listed["model"] == "sim:oracle,sim:default"
    assert (listed["usage"]["backend_calls"], listed["usage"]["cache_hits"]) == (3, 3)  # the oracle's runs reused
    assert (named["usage"]["backend_calls"], named["usage"]["cache_hits"]) == (0, 6)  # another jury, same jurors
    assert named["candidates"] == listed["candidates"]  # equal weights: the order of the jurors does not matter


async def test_pairwise_jury_votes_and_reports_fleiss_kappa() -> None:
    pair = {"question": "What is the chemical symbol for gold?", "response_a": "Ag.", "response_b": "Au (aurum)."}
    async with app_with_services(settings()) as (client, _):
        reply = await client.post("/judge/pairwise", json={**pair, "model": "panel", "oracle_best": "B"})
        assert reply.status_code == 200, reply.text
        data = reply.json()
    jury = data["jury"]
    assert data["decision"] == "jury" and data["model"] == "panel"
    assert jury["jurors"][1]["winners"] == ["B"] and jury["jurors"][1]["decision"] is not None
    votes = [j["winners"][0] for j in jury["jurors"]]
    assert data["winner"] == (votes[0] if votes[0] == votes[1] else "tie")
    assert jury["fleiss_kappa"] is not None and -1 <= jury["fleiss_kappa"] <= 1
    assert {r["model"] for r in data["runs"]} == {"sim:default", "sim:oracle"}
    assert 0 <= data["preference_a"] <= 1  # the jurors' shares of passes favouring A, weighted


async def test_rerank_and_reward_take_a_jury() -> None:
    async with app_with_services(settings()) as (client, _):
        ranked = await client.post("/v2/rerank", json={"model": "panel", "query": QUESTION, "documents": ANSWERS})
        listed = await client.post(
            "/v1/rerank",
            json={
                "model": "rerank-v3.5",
                "query": QUESTION,
                "documents": ANSWERS,
                "pcfjudge": {"model": "sim:default,sim:oracle"},
            },
        )
        samples = [{"prompt": QUESTION, "response": a} for a in ANSWERS]
        reward = await client.post("/v1/reward", json={"samples": samples, "model": ["sim:default", "sim:oracle"]})
    assert ranked.status_code == listed.status_code == reward.status_code == 200, (
        ranked.text,
        listed.text,
        reward.text,
    )
    assert ranked.json()["model"] == "panel" and listed.json()["model"] == "sim:default,sim:oracle"
    scores = [r["relevance_score"] for r in ranked.json()["results"]]
    assert scores == sorted(scores, reverse=True) and all(0 <= s <= 1 for s in scores)
    rewards = reward.json()
    assert len(rewards["samples"]) == 4 and all(s["reward"] is not None for s in rewards["samples"])


@pytest.mark.parametrize(
    ("model", "expect"),
    [
        ("panl", "PCFJ_JURIES: panel, trio"),
        ([], "at least one model"),
        (["sim:default", "sim:default"], "repeated: sim:default"),
        (["sim:default", "sim:oracle", "sim:default"], "repeated"),
        ([f"sim:{m}" for m in ("default", "oracle")] + [f"dead:m{i}" for i in range(4)], "at most 5 jurors"),
        (["sim:default", "nope:x"], "unknown provider 'nope'"),
    ],
)
async def test_a_bad_jury_is_a_422_naming_what_is_allowed(model: Any, expect: str) -> None:
    async with app_with_services(settings()) as (client, _):
        reply = await client.post("/judge/listwise", json=body(model=model))
    assert reply.status_code == 422 and expect in reply.json()["detail"], reply.text
    assert reply.json()["errors"][0]["field"] == "model"


async def test_a_juror_the_server_does_not_allow_is_refused_before_any_call() -> None:
    async with app_with_services(settings(allowed_models=["sim:default"])) as (client, _):
        refused = await client.post("/judge/listwise", json=body(model="panel"))
        after = await client.post("/judge/listwise", json=body(model="sim:default"))
    assert refused.status_code == 422 and refused.json()["error"] == "model_not_allowed"
    assert "sim:oracle" in refused.json()["detail"] and "sim:default" in refused.json()["detail"]
    assert after.json()["usage"]["backend_calls"] == 3  # nothing was judged (or cached) for the refused jury


async def test_every_jurors_calls_count_against_the_cap_before_work() -> None:
    async with app_with_services(settings(max_calls_per_request=8)) as (client, _):
        alone = await client.post("/judge/listwise", json=body(model="sim:default", k=7))
        jury = await client.post("/judge/listwise", json=body(model="panel", k=7))
    assert alone.status_code == 200
    assert jury.status_code in (413, 422) and "14" in jury.json()["detail"], jury.text


async def test_a_failing_juror_degrades_the_jury_above_quorum_and_fails_it_below() -> None:
    async with app_with_services(settings()) as (client, _):
        trio = await client.post("/judge/listwise", json=body(model="trio"))
        pair = await client.post(
            "/judge/pairwise",
            json={"question": QUESTION, "response_a": ANSWERS[0], "response_b": ANSWERS[1], "model": "trio"},
        )
        duo = await client.post("/judge/listwise", json=body(model=["sim:default", "dead:judge"]))
    assert trio.status_code == 200, trio.text
    data = trio.json()
    dead = data["jury"]["jurors"][2]
    assert data["degraded"] is True and data["jury"]["degraded"] is True and dead["delivered"] is False
    assert "provider_error" in dead["error"] and dead["runs_ok"] == 0
    assert [j["delivered"] for j in data["jury"]["jurors"][:2]] == [True, True]
    assert pair.status_code == 200 and pair.json()["jury"]["jurors"][2]["delivered"] is False
    assert duo.status_code == 502 and "only 1 of 2 jurors delivered (need 2)" in duo.json()["detail"], duo.text


async def test_adaptive_k_stops_on_the_jurys_certified_verdict() -> None:
    async with app_with_services(settings()) as (client, _):
        reply = await client.post("/judge/listwise", json=body(model="panel", k="auto", k_max=12, include_runs=False))
    data = reply.json()
    assert reply.status_code == 200 and data["diagnostics"]["stopped"] in ("certified", "k_max")
    assert data["diagnostics"]["runs_made"] == sum(j["runs"] for j in data["jury"]["jurors"])
    assert all(j["runs"] == data["jury"]["jurors"][0]["runs"] for j in data["jury"]["jurors"])  # lockstep


async def test_jurors_runs_are_shared_through_redis_across_replicas_and_juries(redis_server: Any) -> None:
    """Replica 1 judges with one jury; replica 2 (its own in-process cache) with another jury sharing a juror, and
    a juror alone: every run the shared juror made comes from Redis."""
    shared = settings(redis_url=redis_server.url, juries={"panel": ["sim:default", "sim:oracle"]})
    async with app_with_services(shared) as (first, _):
        one = (await first.post("/judge/listwise", json=body(model="panel"))).json()
    async with app_with_services(shared) as (second, _):
        other = await second.post("/judge/listwise", json=body(model=["sim:oracle", "dead:judge", "sim:default"]))
        alone = (await second.post("/judge/listwise", json=body(model="sim:default"))).json()
    assert one["usage"]["backend_calls"] == 6
    data = other.json()
    assert other.status_code == 200 and data["usage"]["cache_hits"] == 6  # both sim jurors' runs, from Redis
    assert [j["cache_hits"] for j in data["jury"]["jurors"]] == [3, 0, 3]
    assert alone["usage"]["cache_hits"] == 3 and alone["usage"]["backend_calls"] == 0


def record(model: str, correct: int, errors: list[int]) -> Any:
    from pcfjudge.judging.reliability import Reliability

    return Reliability(model, "listwise-v2", "test-slice", len(errors), correct, 0.9, 0.3, 40, 12, tuple(errors))


async def test_calibrated_weights_change_the_verdict_as_documented() -> None:
    """Two jurors who disagree: equal weights make it a tie; calibrated, the juror measured right 19 times in 20
    outweighs the one right 11 times in 20 (log-odds: ln(20/2) = 2.30 against ln(12/10) = 0.18), and the jury is worth
    the effective jurors its error correlation says."""
    pair = {"question": "Which is larger, 9.11 or 9.9?", "response_a": "9.11", "response_b": "9.9", "oracle_best": "B"}
    errors_default = [1] * 9 + [0] * 11
    errors_oracle = [1] + [0] * 19
    books = [record("sim:default", 11, errors_default), record("sim:oracle", 19, errors_oracle)]
    verdicts = {}
    for weights in ("equal", "calibrated"):
        async with app_with_services(settings(jury_weights=weights)) as (client, services):
            services.judge.reliability.replace(books)
            reply = await client.post("/judge/pairwise", json={**pair, "model": "panel", "include_runs": False})
            verdicts[weights] = reply.json()
    equal, calibrated = verdicts["equal"], verdicts["calibrated"]
    jurors = [j["winners"][0] for j in calibrated["jury"]["jurors"]]
    assert jurors[1] == "B" and jurors[0] != "B", "the simulated jurors disagree on this pair (seeded)"
    assert equal["jury"]["weights"] == "equal" and equal["winner"] == "tie"
    assert calibrated["jury"]["weights"] == "calibrated" and calibrated["winner"] == "B"
    assert [j["weight"] for j in calibrated["jury"]["jurors"]] == pytest.approx([0.0733, 0.9267], abs=1e-3)
    assert 1.0 <= calibrated["jury"]["effective_jurors"] < 2.0


@pytest.mark.parametrize("path", ["/judge/listwise", "/judge/pairwise"])
async def test_a_streamed_jury_sends_a_juror_event_as_each_juror_finishes(path: str) -> None:
    """The stream hears the judgment's ``juror`` events (docs/streaming.md): one per juror, after its runs (passes),
    the one that failed included, then the result (no ``stopped`` or ``cached`` event: the result says it)."""
    pair = {"question": QUESTION, "response_a": ANSWERS[0], "response_b": ANSWERS[1]}
    sent = (body() if path == "/judge/listwise" else pair) | {"model": "trio", "stream": True}
    async with (
        app_with_services(settings(jury_quorum=0.5)) as (client, _),
        client.stream("POST", path, json=sent) as reply,
    ):
        text = "".join([chunk async for chunk in reply.aiter_text()])
    events = [line.partition(":")[2].strip() for line in text.splitlines() if line.startswith("event:")]
    data = [json.loads(line[5:]) for line in text.splitlines() if line.startswith("data:")]
    assert reply.status_code == 200 and events[-1] == "result", text
    jurors = {d["model"]: d for e, d in zip(events, data, strict=True) if e == "juror"}
    assert set(jurors) == set(JURIES["trio"]) and set(events) == {
        "run" if "listwise" in path else "pass",
        "juror",
        "result",
    }
    assert [jurors[m]["delivered"] for m in JURIES["trio"]] == [True, True, False]
    assert jurors["sim:default"]["backend_calls"] + jurors["sim:default"]["cache_hits"] >= 2
    if path == "/judge/listwise":  # the jurors run in lockstep: every run, then each juror's verdict
        assert events.index("juror") > max(i for i, e in enumerate(events) if e == "run")
