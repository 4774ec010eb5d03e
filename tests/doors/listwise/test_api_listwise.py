"""The /judge/listwise contract on embedded defaults: fields, consensus recomputable from runs, every bad input."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from pcfjudge.judging import consensus as cons
from pcfjudge.judging.run_records import CandidateJudgment, RunJudgments
from pcfjudge.settings import Settings

from tests.support.inprocess import ClientFactory

QUESTION = "Which planet is closest to the Sun?"
CANDIDATES = [
    {"id": "a", "text": "Venus is closest."},
    {"id": "b", "text": "Mercury is the closest planet to the Sun."},
    {"id": "c", "text": "I am not sure; it may be Mercury."},
    {"id": "d", "text": "Mars, at 0.39 AU according to the 1931 survey."},
]


def recompute(body: dict[str, Any]) -> cons.Consensus:
    """Eq. 1–5 applied to the response's own runs."""
    ids = [c["id"] for c in body["candidates"]]
    executions: dict[int, list[RunJudgments]] = {}
    for r in body["runs"]:
        if r["error"] is not None:
            continue
        judgments = {
            cid: CandidateJudgment(
                j["score"], j["rank"], j["major_error"], j["hallucinated_specificity"], j["calibrated_uncertainty"]
            )
            for cid, j in r["judgments"].items()
        }
        executions.setdefault(r["execution"], []).append(RunJudgments(judgments))
    return cons.aggregate(ids, list(executions.values()), cons.resolve_weights(body["weights"]))


async def test_consensus_response_has_the_contract_fields_and_recomputes(client: httpx.AsyncClient) -> None:
    resp = await client.post("/judge/listwise", json={"question": QUESTION, "candidates": CANDIDATES, "k": 7})
    assert resp.status_code == 200, resp.text
    body = resp.json()
    for field in (
        "request_id",
        "model",
        "prompt_version",
        "mode",
        "k",
        "weights",
        "winners",
        "ranking",
        "candidates",
        "runs",
        "diagnostics",
        "usage",
        "degraded",
    ):
        assert field in body
    assert body["model"] == "sim:default" and body["mode"] == "consensus" and body["k"] == 7
    assert body["prompt_version"] == "listwise-v2"
    assert resp.headers["x-request-id"] == body["request_id"]
    assert len(body["runs"]) == 7
    assert body["runs"][0]["order"] == ["a", "b", "c", "d"]  # run 0 is canonical
    for run in body["runs"]:
        assert set(run["judgments"]) == {"a", "b", "c", "d"}
        assert run["rank_source"] in ("judge", "scores")
        assert run["cached"] is False and run["error"] is None
    diag = body["diagnostics"]
    assert set(diag) >= {"runs_ok", "runs_failed", "agreement", "direct_winners", "order_sensitive"}
    assert diag["runs_ok"] == 7 and diag["runs_failed"] == 0
    assert diag["direct_winners"] == body["runs"][0]["top_set"]
    assert body["usage"]["backend_calls"] == 7 and body["usage"]["cache_hits"] == 0
    assert body["usage"]["input_tokens"] > 0
    again = recompute(body)
    assert sorted(again.winners) == sorted(body["winners"])
    assert again.ranking == body["ranking"]
    for cand in body["candidates"]:
        mine = again.candidates[cand["id"]]
        assert cand["consensus"] == pytest.approx(mine.consensus, abs=1e-3)
        assert cand["borda"] == pytest.approx(mine.borda, abs=1e-3)
        assert cand["top_vote"] == pytest.approx(mine.top_vote, abs=1e-3)
        assert cand["major_error"] == pytest.approx(mine.major_error, abs=1e-3)
    tops = [run["top_set"] for run in body["runs"]]
    agreeing = sum(1 for t in tops if set(t) & set(body["winners"]))
    assert diag["agreement"] == pytest.approx(agreeing / 7, abs=1e-3)
    assert diag["order_sensitive"] == (len({tuple(sorted(t)) for t in tops}) > 1)


async def test_second_identical_request_is_served_from_cache(client: httpx.AsyncClient) -> None:
    req = {"question": QUESTION, "candidates": CANDIDATES, "k": 3}
    first = (await client.post("/judge/listwise", json=req)).json()
    second = (await client.post("/judge/listwise", json={**req, "k": 5})).json()
    assert first["usage"]["backend_calls"] == 3
    # K=5 reuses K=3's entries (prefix property): 3 hits, 2 new calls.
    assert second["usage"] == {**second["usage"], "cache_hits": 3, "backend_calls": 2}
    assert [r["cached"] for r in second["runs"]] == [True, True, True, False, False]
    bypass = (await client.post("/judge/listwise", json={**req, "cache": "bypass"})).json()
    assert bypass["usage"]["cache_hits"] == 0 and bypass["usage"]["backend_calls"] == 3


async def test_modes_executions_and_plain_strings(client: httpx.AsyncClient) -> None:
    texts = [c["text"] for c in CANDIDATES]
    direct = (
        await client.post("/judge/listwise", json={"question": QUESTION, "candidates": texts, "mode": "direct"})
    ).json()
    assert direct["k"] == 1 and [c["id"] for c in direct["candidates"]] == ["0", "1", "2", "3"]
    assert direct["winners"] == direct["diagnostics"]["direct_winners"]
    rc = (
        await client.post(
            "/judge/listwise", json={"question": QUESTION, "candidates": texts, "mode": "repeated_canonical", "k": 4}
        )
    ).json()
    assert all(r["order"] == ["0", "1", "2", "3"] for r in rc["runs"])
    assert [r["sample"] for r in rc["runs"]] == [0, 1, 2, 3]
    ex = (
        await client.post(
            "/judge/listwise",
            json={"question": QUESTION, "candidates": texts, "k": 3, "executions": 2, "include_runs": True},
        )
    ).json()
    assert ex["executions"] == 2 and len(ex["runs"]) == 6
    assert sorted(recompute(ex).winners) == sorted(ex["winners"])
    no_runs = (
        await client.post("/judge/listwise", json={"question": QUESTION, "candidates": texts, "include_runs": False})
    ).json()
    assert no_runs["runs"] is None


async def test_k_is_capped_at_n_factorial_and_explicit_permutations(client: httpx.AsyncClient) -> None:
    two = [{"id": "x", "text": "yes"}, {"id": "y", "text": "no"}]
    capped = (await client.post("/judge/listwise", json={"question": "q", "candidates": two, "k": 7})).json()
    assert capped["k"] == 2 and capped["diagnostics"]["k_capped"] is True
    explicit = (
        await client.post(
            "/judge/listwise",
            json={"question": "q", "candidates": CANDIDATES, "permutations": [[3, 2, 1, 0], [0, 1, 2, 3]]},
        )
    ).json()
    assert [r["order"] for r in explicit["runs"]] == [["d", "c", "b", "a"], ["a", "b", "c", "d"]]


async def test_weights_preset_and_object(client: httpx.AsyncClient) -> None:
    base = {"question": QUESTION, "candidates": CANDIDATES, "k": 3}
    uniform = (await client.post("/judge/listwise", json={**base, "weights": "uniform"})).json()
    assert uniform["weights"] == {"score": 0.25, "borda": 0.25, "top_vote": 0.25, "uncertainty": 0.25}
    obj = {"score": 0.6, "borda": 0.0, "top_vote": 0.4, "uncertainty": 0.0}
    custom = (await client.post("/judge/listwise", json={**base, "weights": obj})).json()
    assert custom["weights"] == obj


BAD_INPUTS: list[tuple[str, Any, int, str, str]] = [
    ("one candidate", {"question": "q", "candidates": ["only"]}, 422, "candidates", "between 2 and 10000"),
    (
        "duplicate ids",
        {"question": "q", "candidates": [{"id": "a", "text": "x"}, {"id": "a", "text": "y"}]},
        422,
        "candidates",
        "unique",
    ),
    ("k < 1", {"question": "q", "candidates": ["x", "y"], "k": 0}, 422, "k", "greater than or equal to 1"),
    ("k > 64", {"question": "q", "candidates": ["x", "y"], "k": 65}, 422, "k", "less than or equal to 64"),
    (
        "weights sum",
        {
            "question": "q",
            "candidates": ["x", "y"],
            "weights": {"score": 1, "borda": 1, "top_vote": 0, "uncertainty": 0},
        },
        422,
        "weights",
        "sum to 1",
    ),
    (
        "negative weight",
        {
            "question": "q",
            "candidates": ["x", "y"],
            "weights": {"score": 1.5, "borda": -0.5, "top_vote": 0, "uncertainty": 0},
        },
        422,
        "weights",
        "non-negative",
    ),
    ("unknown preset", {"question": "q", "candidates": ["x", "y"], "weights": "best"}, 422, "weights", "proposed"),
    ("unknown mode", {"question": "q", "candidates": ["x", "y"], "mode": "fast"}, 422, "mode", "consensus"),
    (
        "unknown provider",
        {"question": "q", "candidates": ["x", "y"], "model": "acme:judge"},
        422,
        "model",
        "unknown provider",
    ),
    (
        "unconfigured provider",
        {"question": "q", "candidates": ["x", "y"], "model": "openai:gpt-5.4"},
        422,
        "model",
        "OPENAI_API_KEY",
    ),
    (
        "model without provider",
        {"question": "q", "candidates": ["x", "y"], "model": "gpt"},
        422,
        "model",
        "provider:model",
    ),
    ("wrong type", {"question": "q", "candidates": ["x", "y"], "k": "seven"}, 422, "k", "integer"),
    ("candidates not a list", {"question": "q", "candidates": "x"}, 422, "candidates", ""),
    ("missing question", {"candidates": ["x", "y"]}, 422, "question", "required"),
    ("empty question", {"question": "", "candidates": ["x", "y"]}, 422, "question", ""),
    ("unknown field", {"question": "q", "candidates": ["x", "y"], "K": 3}, 422, "K", "unknown field"),
    ("executions", {"question": "q", "candidates": ["x", "y"], "executions": 6}, 422, "executions", ""),
    (
        "bad permutation",
        {"question": "q", "candidates": ["x", "y"], "permutations": [[0, 0]]},
        422,
        "permutations",
        "each exactly once",
    ),
    (
        "oracle on default",
        {"question": "q", "candidates": ["x", "y"], "oracle_best": "0"},
        422,
        "oracle_best",
        "sim:oracle",
    ),
    ("body not an object", ["q"], 422, "body", "JSON object"),
]


@pytest.mark.parametrize(("name", "payload", "status", "field", "text"), BAD_INPUTS, ids=[b[0] for b in BAD_INPUTS])
async def test_bad_input_is_a_clear_4xx(
    client: httpx.AsyncClient, name: str, payload: Any, status: int, field: str, text: str
) -> None:
    resp = await client.post("/judge/listwise", json=payload)
    assert resp.status_code == status, resp.text
    body = resp.json()
    assert body["error"] == "validation_error"
    assert text in body["detail"]
    assert any(e["field"].split(".")[0] == field for e in body["errors"]), body


async def test_malformed_json_is_400(client: httpx.AsyncClient) -> None:
    resp = await client.post(
        "/judge/listwise", content=b'{"question": "q", "candidates": [', headers={"content-type": "application/json"}
    )
    assert resp.status_code == 400
    assert resp.json()["error"] == "invalid_json"
    assert "valid JSON" in resp.json()["detail"]


async def test_oversized_body_is_413(make_client: ClientFactory) -> None:
    async with make_client(Settings(max_body_bytes=4096)) as client:
        big = {"question": "q", "candidates": ["x" * 5000, "y"]}
        resp = await client.post("/judge/listwise", json=big)
        assert resp.status_code == 413
        assert resp.json()["error"] == "body_too_large"
        assert "PCFJ_MAX_BODY_BYTES" in resp.json()["detail"]


async def test_oversized_texts_name_the_limit(make_client: ClientFactory) -> None:
    async with make_client(Settings(max_candidate_chars=10, max_question_chars=5)) as client:
        resp = await client.post("/judge/listwise", json={"question": "q", "candidates": ["x" * 11, "y"]})
        assert resp.status_code == 422 and "limit is 10" in resp.json()["detail"]
        resp = await client.post("/judge/listwise", json={"question": "q" * 6, "candidates": ["x", "y"]})
        assert resp.status_code == 422 and resp.json()["errors"][0]["field"] == "question"


async def test_unknown_route_and_method_are_json(client: httpx.AsyncClient) -> None:
    resp = await client.get("/judge/nothing")
    assert resp.status_code == 404 and resp.json()["error"] == "not_found"
    resp = await client.get("/judge/listwise")
    assert resp.status_code == 405 and resp.json()["error"] == "method_not_allowed"


async def test_backend_failures_degrade_or_fail_honestly(make_client: ClientFactory) -> None:
    async with make_client(Settings(sim_fail_rate=1.0, max_retries=0)) as client:
        resp = await client.post("/judge/listwise", json={"question": "q", "candidates": ["x", "y", "z"], "k": 3})
        assert resp.status_code == 502
        body = resp.json()
        assert body["error"] == "backend_error" and "0 of 3" in body["detail"]


async def test_health_and_readiness(client: httpx.AsyncClient) -> None:
    assert (await client.get("/healthz")).json() == {"status": "ok"}
    ready = (await client.get("/readyz")).json()
    assert ready["default_model"] == "sim:default"
    assert "sim" in ready["backends"]
