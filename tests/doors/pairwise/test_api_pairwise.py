"""The /judge/pairwise contract on the sim backend: every field explained from runs, caching, every bad input."""

from __future__ import annotations

import json
import re
from typing import Any

import httpx
import pytest
from pcfjudge.judging import apoc
from pcfjudge.settings import Settings

from tests.support.basics import ROOT
from tests.support.inprocess import ClientFactory

QUESTION = "What is the boiling point of water at sea level in Celsius?"
GOOD = "Water boils at 100 degrees Celsius at sea level."
BAD = "Water boils at 90 degrees Celsius at sea level."
FIELDS = {
    "request_id",
    "model",
    "prompt_version",
    "prompt_versions",
    "winner",
    "label",
    "direct",
    "order_consistent",
    "override",
    "keyed",
    "runs",
    "preference_a",
    "usage",
    "degraded",
}


def explain(body: dict[str, Any], *, keyed_enabled: bool = True) -> None:
    """Re-derive every decision field of a response from its own runs by the APOCJudge rules."""
    runs = {r["pass"]: r for r in body["runs"]}
    direct, swapped = runs["direct"], runs["swapped"]
    assert direct["order"] == ["A", "B"] and swapped["order"] == ["B", "A"]
    assert swapped["verdict"] == apoc.unswap(swapped["raw_verdict"]) if swapped["verdict"] else True
    assert direct["verdict"] == direct["raw_verdict"]
    d, s = direct["verdict"], swapped["verdict"]
    assert body["direct"] == d and body["swapped"] == s
    keyed = body["keyed"]
    disagree = d is not None and s is not None and d != s
    assert keyed["needed"] == disagree
    assert keyed["ran"] == ("keyed" in runs)
    assert keyed["ran"] == (disagree and keyed_enabled and not body["estimation"]["estimation"])
    k = runs["keyed"]["verdict"] if "keyed" in runs else None
    if "keyed" in runs:
        assert runs["keyed"]["order"] == ["A", "B"] and runs["keyed"]["prompt_version"] == "keyed-v2"
        assert keyed["winner"] == k and keyed["resolved_answer"] == runs["keyed"]["resolved_answer"]
    assert body["order_consistent"] == (d == s if d is not None and s is not None else None)
    assert body["override"] == (keyed["ran"] and k is not None and k == s)
    assert body["winner"] == (s if body["override"] or d is None else d)
    assert body["label"] == {"A": "A>B", "B": "B>A", "tie": "A=B"}[body["winner"]]
    verdicts = [r["verdict"] for r in body["runs"] if r["verdict"] is not None]
    assert body["preference_a"] == pytest.approx(
        sum({"A": 1, "B": 0, "tie": 0.5}[v] for v in verdicts) / len(verdicts), abs=1e-4
    )
    assert body["degraded"] == any(r["error"] for r in body["runs"])
    usage = body["usage"]
    assert usage["backend_calls"] + usage["cache_hits"] == len(body["runs"])
    assert usage["cache_hits"] == sum(r["cached"] for r in body["runs"])
    assert usage["input_tokens"] == sum(r["input_tokens"] for r in body["runs"])


async def test_response_has_the_contract_fields_and_is_explained_by_its_runs(client: httpx.AsyncClient) -> None:
    resp = await client.post("/judge/pairwise", json={"question": QUESTION, "response_a": GOOD, "response_b": BAD})
    assert resp.status_code == 200, resp.text
    body = resp.json()
    assert set(body) >= FIELDS
    assert body["model"] == "sim:default" and body["prompt_version"] == "pairwise-v2"
    assert body["prompt_versions"] == {"pairwise": "pairwise-v2", "keyed": "keyed-v2"}
    assert set(body["keyed"]) >= {"ran", "skipped", "resolved_answer", "winner"}
    assert resp.headers["x-request-id"] == body["request_id"]
    for run in body["runs"]:
        assert set(run) >= {"pass", "order", "verdict", "raw_verdict", "rationale", "cached", "latency_ms", "error"}
        assert run["cached"] is False and run["error"] is None and run["rationale"]
    explain(body)


async def test_many_pairs_cover_every_branch_and_each_is_explained(client: httpx.AsyncClient) -> None:
    """On the sim judge, 60 pairs hit consistent, confirmed and rejected overrides; all explainable from runs."""
    seen: set[str] = set()
    for i in range(60):
        payload = {"question": f"Q{i}: what is {i} + {i}?", "response_a": f"It is {2 * i}.", "response_b": f"{i + 1}"}
        body = (await client.post("/judge/pairwise", json=payload)).json()
        explain(body)
        seen.add(body["decision"])
    assert {"consistent", "override_confirmed", "override_rejected"} <= seen


async def test_estimation_prompt_skips_the_keyed_pass(client: httpx.AsyncClient) -> None:
    # Find a pair the sim judges inconsistently, then ask it as an estimation question (forced) and detected.
    for i in range(100):
        payload = {"question": f"Q{i}: capital of France?", "response_a": f"Paris {i}", "response_b": f"Lyon {i}"}
        body = (await client.post("/judge/pairwise", json=payload)).json()
        if body["keyed"]["needed"]:
            break
    else:
        pytest.fail("the sim judge never disagreed with itself across orders")
    forced = (await client.post("/judge/pairwise", json={**payload, "estimation": True})).json()
    assert forced["keyed"] == {
        "ran": False,
        "needed": True,
        "skipped": "estimation",
        "resolved_answer": None,
        "winner": None,
        "error": None,
    }
    assert forced["winner"] == forced["direct"] and not forced["override"]
    assert forced["estimation"] == {"estimation": True, "source": "request", "cue": None}
    assert [r["pass"] for r in forced["runs"]] == ["direct", "swapped"]
    explain(forced)
    disabled = (await client.post("/judge/pairwise", json={**payload, "keyed": False})).json()
    assert disabled["keyed"]["skipped"] == "disabled" and disabled["winner"] == disabled["direct"]
    explain(disabled, keyed_enabled=False)
    detected = (
        await client.post("/judge/pairwise", json={**payload, "question": "Roughly how many cats are in Paris?"})
    ).json()
    assert detected["estimation"] == {"estimation": True, "source": "heuristic", "cue": "approximate_quantity"}
    explain(detected)


async def test_second_identical_request_is_served_from_cache(client: httpx.AsyncClient) -> None:
    payload = {"question": QUESTION, "response_a": GOOD, "response_b": BAD}
    first = (await client.post("/judge/pairwise", json=payload)).json()
    second = (await client.post("/judge/pairwise", json=payload)).json()
    assert first["usage"]["backend_calls"] == len(first["runs"]) and first["usage"]["cache_hits"] == 0
    assert second["usage"]["backend_calls"] == 0
    assert second["usage"]["cache_hits"] == len(first["runs"]) in (2, 3)
    assert all(r["cached"] for r in second["runs"])
    for key in ("winner", "direct", "swapped", "override", "keyed", "preference_a"):
        assert second[key] == first[key]
    refreshed = (await client.post("/judge/pairwise", json={**payload, "cache": "refresh"})).json()
    assert refreshed["usage"]["cache_hits"] == 0 and refreshed["winner"] == first["winner"]
    # The same pair in the other order is a different item: new calls.
    flipped = (await client.post("/judge/pairwise", json={**payload, "response_a": BAD, "response_b": GOOD})).json()
    assert flipped["usage"]["cache_hits"] == 0


async def test_identical_responses_and_include_runs_false(client: httpx.AsyncClient) -> None:
    body = (
        await client.post(
            "/judge/pairwise",
            json={"question": QUESTION, "response_a": GOOD, "response_b": GOOD, "include_runs": False},
        )
    ).json()
    assert body["runs"] is None
    # Identical texts score the same but for the position bias (5 points to the first slot, above the 3-point tie
    # margin), so each order prefers whatever it shows first: direct A, swapped B. That disagreement runs the keyed
    # pass, far less swayed by order (1 point): a tie, which overrides nothing, so the direct verdict A stands.
    assert (body["direct"], body["swapped"], body["order_consistent"]) == ("A", "B", False)
    assert body["keyed"]["ran"] and body["keyed"]["winner"] == "tie" and body["override"] is False
    assert (body["winner"], body["label"]) == ("A", "A>B")
    assert body["usage"]["backend_calls"] == 3


async def test_sim_oracle_with_oracle_best(client: httpx.AsyncClient) -> None:
    payload = {"question": QUESTION, "response_a": BAD, "response_b": GOOD, "model": "sim:oracle", "oracle_best": "B"}
    resp = await client.post("/judge/pairwise", json=payload)
    assert resp.status_code == 200, resp.text
    assert resp.json()["model"] == "sim:oracle"
    explain(resp.json())


async def test_readyz_lists_the_pairwise_prompt_versions(client: httpx.AsyncClient) -> None:
    versions = (await client.get("/readyz")).json()["prompt_versions"]
    assert {"pairwise-v2", "keyed-v2"} <= set(versions)


README = (ROOT / "README.md").read_text(encoding="utf-8")
VALID = {"question": QUESTION, "response_a": GOOD, "response_b": BAD}


@pytest.mark.parametrize(
    ("payload", "status", "field"),
    [
        ({"question": QUESTION, "response_a": GOOD}, 422, "response_b"),
        ({**VALID, "response_a": 123}, 422, "response_a"),
        ({**VALID, "response_b": ["x"]}, 422, "response_b"),
        ({**VALID, "keyed": "maybe"}, 422, "keyed"),
        ({**VALID, "estimation": "sometimes"}, 422, "estimation"),
        ({**VALID, "cache": "sometimes"}, 422, "cache"),
        ({**VALID, "question": ""}, 422, "question"),
        ({**VALID, "sample": 3}, 422, "sample"),
        ({**VALID, "candidates": ["a", "b"]}, 422, "candidates"),
        ({**VALID, "model": "nonsense"}, 422, "model"),
        ({**VALID, "model": "acme:judge-1"}, 422, "model"),
        ({**VALID, "model": "sim:nope"}, 422, "model"),
        ({**VALID, "model": "openai:gpt-5.4"}, 422, "model"),  # not configured in tests
        ({**VALID, "oracle_best": "B"}, 422, "oracle_best"),  # only for sim:oracle
        ({**VALID, "oracle_best": "C", "model": "sim:oracle"}, 422, "oracle_best"),
    ],
)
async def test_bad_input_is_a_4xx_json_naming_the_field(
    client: httpx.AsyncClient, payload: dict[str, Any], status: int, field: str
) -> None:
    resp = await client.post("/judge/pairwise", json=payload)
    assert resp.status_code == status, resp.text
    body = resp.json()
    assert body["error"] == "validation_error" and field in body["detail"]
    assert any(e["field"] == field for e in body["errors"])


async def test_non_json_and_non_object_bodies(client: httpx.AsyncClient) -> None:
    resp = await client.post("/judge/pairwise", content=b"{not json", headers={"content-type": "application/json"})
    assert resp.status_code == 400 and resp.json()["error"] == "invalid_json"
    resp = await client.post("/judge/pairwise", json=["a", "b"])
    assert resp.status_code == 422 and resp.json()["error"] == "validation_error"


async def test_oversized_inputs_are_refused(make_client: ClientFactory) -> None:
    settings = Settings(max_question_chars=50, max_candidate_chars=40, max_body_bytes=4096)
    async with make_client(settings) as client:
        short = {"question": "short?", "response_a": "a", "response_b": "b"}
        for field, text, limit in (
            ("question", "q" * 51, 50),
            ("response_a", "a" * 41, 40),
            ("response_b", "b" * 41, 40),
        ):
            resp = await client.post("/judge/pairwise", json={**short, field: text})
            assert resp.status_code == 422, resp.text
            body = resp.json()
            assert body["errors"][0]["field"] == field
            assert str(limit) in body["detail"]
        resp = await client.post("/judge/pairwise", json={**VALID, "response_a": "x" * 5000})
        assert resp.status_code == 413 and resp.json()["error"] == "body_too_large"


async def test_backend_failure_is_a_5xx_json(make_client: ClientFactory) -> None:
    async with make_client(Settings(sim_fail_rate=1.0, max_retries=0)) as client:
        resp = await client.post("/judge/pairwise", json=VALID)
    assert resp.status_code == 502, resp.text
    body = resp.json()
    assert body["error"] == "backend_error" and "both order passes" in body["detail"]


async def test_readme_pairwise_example_matches(client: httpx.AsyncClient) -> None:
    """The README's pairwise curl example returns what it shows (request_id and latencies aside)."""
    section = README.split("### Pairwise: APOCJudge", 1)[1]
    payload = json.loads(re.search(r"-d '(\{.*?\})'\n", section).group(1))  # type: ignore[union-attr]
    shown = json.loads(re.search(r"```json\n(.*?)\n```", section, re.S).group(1))  # type: ignore[union-attr]
    got = (await client.post("/judge/pairwise", json=payload)).json()
    for body in (shown, got):
        body.pop("request_id")
        for run in body["runs"] or []:  # the README sends include_runs false
            run.pop("latency_ms")
    assert got == shown and payload["include_runs"] is False and got["runs"] is None
    full = (await client.post("/judge/pairwise", json={**payload, "include_runs": True})).json()
    explain(full)  # the shown decision, re-derived from its runs (served from the cache: the same runs)
    assert {k: v for k, v in full.items() if k not in ("request_id", "runs", "usage")} == {
        k: v for k, v in got.items() if k not in ("runs", "usage")
    }
