"""POST /v1/reward in process: a group is one listwise judgment (K calls, not K per sample), its rewards are exactly
that judgment's consensus, a group of one is scored pointwise, references switch the prompt, and a failed judgment
gives null rewards with an error, never a number."""

from __future__ import annotations

import json
import re
from typing import Any

import httpx
import pytest
from pcfjudge.reward.scoring import digest
from pcfjudge.settings import Settings

from tests.support.basics import ROOT
from tests.support.inprocess import app_client

PROMPT = "In which year did the Berlin Wall fall?"
RESPONSES = ["1989.", "It fell in 1991, on 3 October.", "I am not sure; possibly the late 1980s.", "1961."]


def samples(responses: list[str], prompt: str = PROMPT, **extra: Any) -> list[dict[str, Any]]:
    return [{"prompt": prompt, "response": r, **extra} for r in responses]


def canonical(responses: list[str]) -> list[str]:
    """The candidate order a group is judged in (by digest, whatever order its members came in)."""
    return sorted(set(responses), key=digest)


async def listwise(client: httpx.AsyncClient, responses: list[str], **options: Any) -> dict[str, dict[str, Any]]:
    """/judge/listwise of the group in canonical order (without rationales, as rewards are judged): each response's
    candidate entry, rank and winner flag."""
    order = canonical(responses)
    payload = {"question": PROMPT, "candidates": order, "rationales": False, **options}
    body = (await client.post("/judge/listwise", json=payload)).json()
    out = {}
    for c in body["candidates"]:
        text = order[int(c["id"])]
        out[text] = {**c, "rank": body["ranking"].index(c["id"]) + 1, "winner": c["id"] in body["winners"]}
        out[text]["cache_hits"] = body["usage"]["cache_hits"]
    return out


async def test_a_group_is_one_listwise_judgment_with_its_consensus_as_reward() -> None:
    async with app_client(Settings(default_k=5)) as client:
        reward = await client.post("/v1/reward", json={"samples": samples(RESPONSES)})
        judged = await listwise(client, RESPONSES, k=5)
    assert reward.status_code == 200, reward.text
    body = reward.json()
    assert body["usage"] == {**body["usage"], "groups": 1, "backend_calls": 5}  # K calls for 4 samples, not 4·K
    assert {j["cache_hits"] for j in judged.values()} == {5}  # the very same calls: same item, orders and prompt
    for i, sample in enumerate(body["samples"]):
        expected = judged[RESPONSES[i]]
        assert sample["reward"] == body["rewards"][i] == round(expected["consensus"] / 100, 6)
        assert sample["consensus"] == expected["consensus"]
        assert (sample["rank"], sample["winner"]) == (expected["rank"], expected["winner"])
        assert (sample["group_size"], sample["candidates"], sample["scoring"], sample["k"]) == (4, 4, "group", 5)
        assert sample["prompt_version"] == "listwise-v2-terse" and sample["reference"] is False
        assert sample["error"] is None and 0 <= sample["reward"] <= 1


@pytest.mark.parametrize(("mode", "field", "scale"), [("borda", "borda", 100), ("win", "top_vote", 1)])
async def test_reward_modes_read_borda_or_the_top_vote(mode: str, field: str, scale: float) -> None:
    async with app_client(Settings(default_k=4)) as client:
        reward = (await client.post("/v1/reward", json={"samples": samples(RESPONSES), "reward": mode})).json()
        judged = await listwise(client, RESPONSES)
    assert reward["reward"] == mode
    assert reward["rewards"] == [round(judged[r][field] / scale, 6) for r in RESPONSES]


async def test_the_order_samples_arrive_in_changes_nothing() -> None:
    async with app_client(Settings(default_k=4)) as client:
        forward = (await client.post("/v1/reward", json={"samples": samples(RESPONSES)})).json()
        backward = (await client.post("/v1/reward", json={"samples": samples(RESPONSES[::-1])})).json()
    assert backward["rewards"] == forward["rewards"][::-1] and backward["usage"]["cache_hits"] == 4


async def test_identical_responses_are_one_candidate_and_share_a_reward() -> None:
    async with app_client(Settings(default_k=3)) as client:
        body = (await client.post("/v1/reward", json={"samples": samples(["1989.", "1961.", "1989."])})).json()
    first, second, third = body["samples"]
    assert first == third and first["reward"] != second["reward"]
    assert (first["group_size"], first["candidates"]) == (3, 2)
    assert body["usage"]["backend_calls"] == 2  # two candidates have 2! = 2 distinct orders


async def test_a_group_of_one_is_scored_pointwise_and_prompts_group_samples_by_default() -> None:
    async with app_client(Settings(default_k=7)) as client:
        body = (
            await client.post(
                "/v1/reward",
                json={
                    "samples": [
                        *samples(RESPONSES[:2]),
                        {"prompt": "What is the capital of France?", "response": "Paris"},
                    ]
                },
            )
        ).json()
    alone = body["samples"][2]
    assert (alone["scoring"], alone["group_size"], alone["candidates"], alone["k"]) == ("pointwise", 1, 1, 1)
    assert alone["reward"] == round(alone["score"] / 100, 6)
    assert alone["consensus"] is None and alone["rank"] is None and alone["winner"] is None
    assert [s["scoring"] for s in body["samples"][:2]] == ["group", "group"]
    assert body["usage"]["groups"] == 2 and body["usage"]["backend_calls"] == 2 + 1


async def test_a_reference_switches_to_the_reference_prompt_and_the_judge_grades_against_it() -> None:
    responses = ["The answer is 1989.", "It was 1991.", "1961, when it was built."]
    async with app_client(Settings(default_k=3)) as client:
        graded = (await client.post("/v1/reward", json={"samples": samples(responses, reference="1989")})).json()
        other = (await client.post("/v1/reward", json={"samples": samples(responses, reference="1991")})).json()
        plain = (await client.post("/v1/reward", json={"samples": samples(responses)})).json()
    assert {s["prompt_version"] for s in graded["samples"]} == {"listwise-ref-v2-terse"}
    assert all(s["reference"] for s in graded["samples"]) and plain["samples"][0]["reference"] is False
    assert graded["samples"][0]["rank"] == 1 and other["samples"][1]["rank"] == 1  # the sim grades by the key
    # The reference is part of the cache identity: another reference (or none) makes new calls.
    assert [r["usage"]["cache_hits"] for r in (graded, other, plain)] == [0, 0, 0]


async def test_explicit_groups_split_a_prompt_and_must_share_prompt_and_reference() -> None:
    async with app_client(Settings(default_k=3)) as client:
        split = await client.post(
            "/v1/reward",
            json={"samples": [{**s, "group": f"g{i % 2}"} for i, s in enumerate(samples(RESPONSES))]},
        )
        mixed = await client.post(
            "/v1/reward",
            json={
                "samples": [
                    {"prompt": "a?", "response": "x", "group": "g"},
                    {"prompt": "b?", "response": "y", "group": "g"},
                ]
            },
        )
    assert {(s["group_size"], s["candidates"]) for s in split.json()["samples"]} == {(2, 2)}
    assert split.json()["usage"]["groups"] == 2
    assert mixed.status_code == 422 and mixed.json()["error"] == "validation_error"
    assert "samples.1.group" in mixed.json()["detail"]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"samples": []}, "samples"),
        ({"samples": samples(RESPONSES), "group_size": 257}, "group_size"),
        ({"samples": samples([f"answer {i}" for i in range(17)]), "k": 1}, "k"),
        ({"samples": samples(["x"]), "reward": "mean"}, "reward"),
        ({"samples": [{"prompt": " ", "response": "x"}]}, "samples.0.prompt"),
        ({"samples": samples(["x"], reference="y" * 40_000)}, "samples.0.reference"),
        ({"samples": samples(["x"]), "model": "nope:model"}, "model"),
    ],
)
async def test_client_mistakes_are_422_naming_the_field(body: dict[str, Any], field: str) -> None:
    async with app_client() as client:
        response = await client.post("/v1/reward", json=body)
    assert response.status_code == 422, response.text
    assert field in response.json()["detail"]


async def test_a_group_over_max_group_size_is_a_413_before_any_call() -> None:
    async with app_client(Settings(max_group_size=20)) as client:
        fits = await client.post("/v1/reward", json={"samples": samples([f"answer {i}" for i in range(20)])})
        over = await client.post("/v1/reward", json={"samples": samples([f"answer {i}" for i in range(21)])})
    assert fits.status_code == 200 and fits.json()["samples"][0]["candidates"] == 20  # past one window: one group
    assert over.status_code == 413 and over.json()["error"] == "group_too_large"
    assert "PCFJ_MAX_GROUP_SIZE" in over.json()["detail"]


async def test_a_failing_judge_gives_no_reward_at_all() -> None:
    async with app_client(Settings(sim_fail_rate=1.0, retry_base_s=0.001, retry_max_s=0.01)) as client:
        response = await client.post("/v1/reward", json={"samples": samples(RESPONSES)})
    assert response.status_code == 502, response.text
    assert response.json()["error"] == "backend_error" and "rewards" not in response.json()


async def test_a_group_over_the_per_request_cap_refuses_the_request_before_any_call() -> None:
    # A per-request call cap refuses the 4-candidate group (K=5 calls): its plan is checked at intake, as every
    # door's is, so the request is refused (loudly, naming the cap) instead of answered with silent nulls.
    async with app_client(Settings(default_k=5, max_calls_per_request=2)) as client:
        response = await client.post(
            "/v1/reward", json={"samples": [*samples(RESPONSES), {"prompt": "2+2?", "response": "4"}]}
        )
    assert response.status_code == 422, response.text
    body = response.json()
    assert body["error"] == "over_limit" and body["errors"][0]["field"] == "samples"
    assert "PCFJ_MAX_CALLS_PER_REQUEST" in body["detail"]  # names the cap


async def test_openapi_documents_the_reward_routes(client: httpx.AsyncClient) -> None:
    paths = (await client.get("/openapi.json")).json()["paths"]
    assert {"/v1/reward", "/get_reward", "/v1/reward/one"} <= set(paths)


async def test_the_readme_example_answers_what_the_readme_shows(client: httpx.AsyncClient) -> None:
    section = (ROOT / "README.md").read_text(encoding="utf-8").split("## Rewards for RL", 1)[1]
    payload = json.loads(re.search(r"-d '(\{.*?\})'\n", section).group(1))  # type: ignore[union-attr]
    shown = json.loads(re.search(r"```json\n(.*?)\n```", section, re.S).group(1))  # type: ignore[union-attr]
    got = (await client.post("/v1/reward", json=payload)).json()
    shown.pop("request_id")
    got.pop("request_id")
    assert got == shown


async def test_a_windowed_group_keeps_its_max_calls_and_too_few_is_a_422() -> None:
    """A group of 64 completions past one window: its 4 rounds are 16 calls; max_calls 8 keeps it to 2 rounds (the
    whole order's least); 7 is a 422 saying how many it needs."""
    responses = [f"answer {i}: {i * 7 % 64}" for i in range(64)]
    async with app_client() as client:
        lean = await client.post("/v1/reward", json={"samples": samples(responses), "max_calls": 8})
        full = await client.post("/v1/reward", json={"samples": samples(responses)})  # its 2 first rounds: cached
        few = await client.post("/v1/reward", json={"samples": samples(responses), "max_calls": 7})
    assert full.status_code == lean.status_code == 200, lean.text
    assert lean.json()["usage"]["backend_calls"] == 8 and full.json()["usage"]["backend_calls"] == 16 - 8
    assert few.status_code == 422 and "at least 8 calls" in few.json()["detail"]
