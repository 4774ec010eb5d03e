"""``"k": "auto"`` and budgets over HTTP on the simulated judge: stop reasons, cache sharing with fixed K, 422s."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from pcfjudge.settings import Settings
from pcfjudge.types import usd

from tests.doors.listwise.test_api_listwise import recompute
from tests.support.inprocess import ClientFactory

ITEMS = [
    (
        "Which planet is closest to the Sun?",
        [
            "Venus is closest.",
            "Mercury is the closest planet to the Sun.",
            "I am not sure; it may be Mercury.",
            "Mars.",
        ],
    ),
    ("Who wrote Middlemarch?", ["George Eliot.", "Charlotte Bronte.", "George Eliot, in 1871-72.", "Jane Austen."]),
    ("What is 7 x 8?", ["56", "54", "It is 56, since 7 x 8 = 56.", "58, roughly"]),
    ("Capital of Australia?", ["Sydney.", "Canberra.", "Melbourne, I think.", "Canberra, since 1913."]),
    ("Boiling point of water at sea level?", ["100 C.", "90 C.", "212 F, that is 100 C.", "It depends."]),
]


def body(question: str, texts: list[str], **fields: Any) -> dict[str, Any]:
    return {"question": question, "candidates": texts, **fields}


async def post(client: httpx.AsyncClient, payload: dict[str, Any]) -> dict[str, Any]:
    resp = await client.post("/judge/listwise", json=payload)
    assert resp.status_code == 200, resp.text
    data: dict[str, Any] = resp.json()
    return data


@pytest.mark.parametrize("model", ["sim:default", "sim:oracle"])
async def test_certified_auto_gives_the_fixed_k_winners_from_the_same_cache_entries(
    client: httpx.AsyncClient, model: str
) -> None:
    """Fixed K=7 first: every auto run is one of its cache entries (prefix property), and the winners agree."""
    fewer = 0
    for question, texts in ITEMS:
        extra = {"oracle_best": "1"} if model == "sim:oracle" else {}
        fixed = await post(client, body(question, texts, k=7, model=model, **extra))
        auto = await post(client, body(question, texts, k="auto", model=model, **extra))
        diag = auto["diagnostics"]
        assert fixed["diagnostics"]["stopped"] is None and fixed["diagnostics"]["runs_made"] == 7
        assert diag["stopped"] in ("certified", "k_max") and diag["k_requested"] == 7
        assert sorted(auto["winners"]) == sorted(fixed["winners"])
        made = diag["runs_made"]
        assert 3 <= made <= 7 and auto["k"] == made == len(auto["runs"])
        assert [r["order"] for r in auto["runs"]] == [r["order"] for r in fixed["runs"][:made]]
        assert auto["usage"]["backend_calls"] == 0 and auto["usage"]["cache_hits"] == made
        assert sorted(recompute(auto).winners) == sorted(auto["winners"])  # the consensus of the runs made
        fewer += 7 - made
    assert fewer > 0  # on these items certification saved calls
    metrics = (await client.get("/metrics")).text
    assert 'pcfjudge_listwise_stops_total{reason="certified"}' in metrics


async def test_auto_first_then_fixed_k_reuses_its_runs(client: httpx.AsyncClient) -> None:
    question, texts = ITEMS[0]
    auto = await post(client, body(question, texts, k="auto", stop="confident"))
    made = auto["diagnostics"]["runs_made"]
    assert auto["usage"]["backend_calls"] == made
    fixed = await post(client, body(question, texts, k=7))
    assert fixed["usage"]["cache_hits"] == made and fixed["usage"]["backend_calls"] == 7 - made
    assert [r["cached"] for r in fixed["runs"]] == [True] * made + [False] * (7 - made)


async def test_confident_stops_on_agreeing_runs_and_executions_stay_in_step(client: httpx.AsyncClient) -> None:
    for question, texts in ITEMS:
        data = await post(client, body(question, texts, k="auto", stop="confident", executions=2, k_min=2))
        diag = data["diagnostics"]
        made, runs = diag["runs_made"], data["runs"]
        assert made % 2 == 0 and made >= 4 and data["k"] == made // 2
        assert [r["index"] for r in runs if r["execution"] == 0] == [r["index"] for r in runs if r["execution"] == 1]
        if diag["stopped"] == "confident":
            agreeing = sum(set(r["top_set"]) == set(data["winners"]) for r in runs)
            assert agreeing == made or agreeing > 7  # unanimous, or a majority of all 14 planned runs
            scores = sorted((c["consensus"] for c in data["candidates"]), reverse=True)
            assert scores[0] - scores[1] >= 10


async def test_max_calls_spends_in_schedule_order_and_cache_hits_are_free(client: httpx.AsyncClient) -> None:
    question, texts = ITEMS[1]
    cut = await post(client, body(question, texts, k=7, executions=2, max_calls=3))
    assert cut["diagnostics"]["stopped"] == "budget" and cut["diagnostics"]["runs_made"] == 3
    assert [(r["execution"], r["index"]) for r in cut["runs"]] == [(0, 0), (0, 1), (1, 0)]  # plan order
    assert cut["usage"]["backend_calls"] == 3
    assert sorted(recompute(cut).winners) == sorted(cut["winners"])
    # The three runs are cached now: the same budget pays for three more calls.
    more = await post(client, body(question, texts, k=7, executions=2, max_calls=3))
    assert more["usage"]["cache_hits"] == 3 and more["usage"]["backend_calls"] == 3
    assert more["diagnostics"]["runs_made"] == 6 and more["diagnostics"]["stopped"] == "budget"
    auto = await post(client, body(question, texts, k="auto", max_calls=1, cache="bypass"))
    assert auto["diagnostics"]["stopped"] == "budget" and auto["diagnostics"]["runs_made"] == 1


async def test_max_cost_usd_is_kept(make_client: ClientFactory) -> None:
    price = (1.0, 10.0)
    async with make_client(Settings(prices={"sim:default": list(price)}, max_output_tokens=256)) as client:
        question, texts = ITEMS[2]
        data = await post(client, body(question, texts, k=7, max_cost_usd=0.01, cache="bypass"))
        costs = [usd(r["input_tokens"], r["output_tokens"], price) for r in data["runs"]]
        assert data["diagnostics"]["stopped"] == "budget" and 1 <= len(costs) < 7
        assert data["usage"]["cost_usd"] == pytest.approx(sum(costs), abs=1e-6)
        assert sum(costs) <= 0.01 < sum(costs) + max(costs)  # kept, and one more call would not fit
        roomy = await post(client, body(question, texts, k="auto", max_cost_usd=1.0, cache="bypass"))
        assert roomy["diagnostics"]["stopped"] in ("certified", "k_max")


BAD = [
    ({"k": True}, "k", "integer"),
    ({"k": "7"}, "k", '"auto"'),
    ({"k": "AUTO"}, "k", '"auto"'),
    ({"k": 7.0}, "k", "integer"),
    ({"k": 0}, "k", "greater than or equal to 1"),
    ({"k": 65}, "k", "less than or equal to 64"),
    ({"k": 7, "k_min": 2}, "k_min", '"k": "auto"'),
    ({"k_max": 5}, "k_max", '"k": "auto"'),
    ({"stop": "confident"}, "stop", '"k": "auto"'),
    ({"k": "auto", "stop": "sometimes"}, "stop", ""),
    ({"k": "auto", "k_min": 5, "k_max": 4}, "k_min", "k_max (4)"),
    ({"k": "auto", "k_min": True}, "k_min", ""),
    ({"k": "auto", "k_max": 65}, "k_max", ""),
    ({"k": "auto", "mode": "direct"}, "k", "consensus"),
    ({"k": "auto", "permutations": [[0, 1, 2, 3]]}, "k", "permutations"),
    ({"max_calls": 0}, "max_calls", ""),
    ({"max_calls": True}, "max_calls", ""),
    ({"max_cost_usd": "1"}, "max_cost_usd", ""),
    ({"max_cost_usd": 0}, "max_cost_usd", ""),
    ({"max_cost_usd": 1.0}, "max_cost_usd", "PCFJ_PRICES"),  # sim:default has no price here
]


@pytest.mark.parametrize(("fields", "field", "text"), BAD, ids=[str(b[0]) for b in BAD])
async def test_bad_adaptive_and_budget_fields_are_422(
    client: httpx.AsyncClient, fields: dict[str, Any], field: str, text: str
) -> None:
    question, texts = ITEMS[0]
    resp = await client.post("/judge/listwise", json=body(question, texts, **fields))
    assert resp.status_code == 422, resp.text
    data = resp.json()
    assert data["error"] == "validation_error" and text in data["detail"]
    assert any(e["field"] == field for e in data["errors"]), data


async def test_a_cost_budget_below_one_call_is_422(make_client: ClientFactory) -> None:
    async with make_client(Settings(prices={"sim:default": [1.0, 10.0]})) as client:
        question, texts = ITEMS[0]
        resp = await client.post("/judge/listwise", json=body(question, texts, max_cost_usd=0.001))
        assert resp.status_code == 422, resp.text
        assert resp.json()["errors"][0]["field"] == "max_cost_usd"
        assert "does not pay for one judge call" in resp.json()["detail"]
