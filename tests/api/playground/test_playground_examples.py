"""The playground's built-in examples show the method's mechanics on the simulated judge instead of looking like a bug.

When the service's default judge is simulated, the page judges each example with the simulated oracle (``sim:oracle``,
told the truly best answer through ``oracle_best``). Here every example is posted as the page posts it: the consensus
picks the truly best answer (at the page's seed, and at most others), and in the first example the direct verdict
(run 0, the canonical order) picks a wrong one, which is what the consensus is for.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from tests.support.basics import ROOT

EXAMPLES_JS = ROOT / "app" / "pcfjudge" / "static" / "examples.js"


def examples() -> list[dict[str, Any]]:
    """The EXAMPLES array of examples.js (kept as JSON after its ``export const EXAMPLES =``)."""
    text = EXAMPLES_JS.read_text(encoding="utf-8")
    array = text.split("export const EXAMPLES =", 1)[1].strip().removesuffix(";")
    loaded: list[dict[str, Any]] = json.loads(array)
    return loaded


def listwise_body(example: dict[str, Any], seed: int = 0) -> dict[str, Any]:
    """What the page sends for a listwise example on a simulated service (see playground.js requestFor)."""
    return {
        "question": example["question"],
        "candidates": [{"id": cid, "text": text} for cid, text in example["candidates"]],
        "model": "sim:oracle",
        "k": example["k"],
        "seed": seed,
        "mode": "consensus",
        "weights": "proposed",
        "include_runs": True,
        "oracle_best": example["oracle"],
    }


def test_every_example_names_its_truly_best_answer() -> None:
    loaded = examples()
    assert len(loaded) >= 3 and any(e.get("pairwise") for e in loaded)
    for example in loaded:
        assert example["oracle"] in [cid for cid, _ in example["candidates"]], example["name"]


@pytest.mark.parametrize("index", [i for i, e in enumerate(examples()) if not e.get("pairwise")])
async def test_the_consensus_picks_the_truly_best_answer(client: httpx.AsyncClient, index: int) -> None:
    example = examples()[index]
    response = await client.post("/judge/listwise", json=listwise_body(example))
    assert response.status_code == 200, response.text
    assert response.json()["winners"] == [example["oracle"]], example["name"]
    other_seeds = [
        (await client.post("/judge/listwise", json=listwise_body(example, seed))).json()["winners"]
        for seed in range(1, 10)
    ]
    assert sum(w == [example["oracle"]] for w in other_seeds) >= 8, other_seeds  # not a lucky seed


async def test_the_first_example_shows_the_consensus_recovering_from_a_wrong_direct_verdict(
    client: httpx.AsyncClient,
) -> None:
    first = examples()[0]
    result = (await client.post("/judge/listwise", json=listwise_body(first))).json()
    assert result["diagnostics"]["direct_winners"] != [first["oracle"]]
    assert result["winners"] == [first["oracle"]] and result["diagnostics"]["order_sensitive"]


async def test_the_pair_is_won_by_its_truly_best_response(client: httpx.AsyncClient) -> None:
    pair = next(e for e in examples() if e.get("pairwise"))
    (a, text_a), (_, text_b) = pair["candidates"]
    side = "A" if pair["oracle"] == a else "B"
    body = {"question": pair["question"], "response_a": text_a, "response_b": text_b, "model": "sim:oracle"}
    response = await client.post("/judge/pairwise", json={**body, "oracle_best": side})
    assert response.status_code == 200, response.text
    assert response.json()["winner"] == side
