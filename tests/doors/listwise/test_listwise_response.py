"""The /judge/listwise answer is serialised once (orjson, no second validation) and is exactly what the declared
``ListwiseResponse`` model would have sent: same fields, order, types (a float stays a float) and bytes."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from fastapi.encoders import jsonable_encoder
from fastapi.responses import JSONResponse
from pcfjudge.doors.listwise.listwise_protocol import ListwiseResponse
from pcfjudge.settings import Settings

from tests.support.inprocess import ClientFactory

CANDIDATES = [
    {"id": "a", "text": "Venus is closest."},
    {"id": "b", "text": "Mercury is the closest planet to the Sun."},
    {"id": "c", "text": "Je ne suis pas sûr ; peut-être Mercure. 水星"},
    {"id": "d", "text": "Mars, at 0.39 AU according to the 1931 survey."},
]
CASES: list[dict[str, Any]] = [
    {"k": 7},
    {"k": 7, "include_runs": False},
    {"k": 3, "executions": 2, "weights": "score_only"},
    {"k": 5, "weights": {"score": 1, "borda": 0, "top_vote": 0, "uncertainty": 0}},
    {"k": "auto", "k_min": 3, "k_max": 7, "stop": "confident"},
    {"mode": "repeated_canonical", "k": 2, "max_calls": 1},
    {"mode": "direct", "model": "sim:oracle", "oracle_best": "b"},
]


def as_the_model_would(body: bytes) -> bytes:
    """What FastAPI sent before: the body validated into ``ListwiseResponse`` and encoded by its JSONResponse."""
    model = ListwiseResponse.model_validate_json(body)
    return bytes(JSONResponse(jsonable_encoder(model)).body)


@pytest.mark.parametrize("case", CASES, ids=lambda c: ",".join(f"{k}={v}" for k, v in c.items()))
async def test_the_answer_is_the_models_bytes(make_client: ClientFactory, case: dict[str, Any]) -> None:
    settings = Settings(prices={"sim:default": (1.25, 10.0)})
    async with make_client(settings) as client:
        for _ in range(2):  # cold, then from the cache
            resp = await client.post(
                "/judge/listwise", json={"question": "Closest planet?", "candidates": CANDIDATES, **case}
            )
            assert resp.status_code == 200, resp.text
            assert resp.headers["content-type"] == "application/json"
            assert resp.content == as_the_model_would(resp.content)
            assert resp.content == orjson.dumps(ListwiseResponse.model_validate_json(resp.content).model_dump())


async def test_degraded_answers_and_costs_keep_their_types(make_client: ClientFactory) -> None:
    """Failed runs (null judgments), a priced model (a float cost) and cache hits all survive the round trip."""
    settings = Settings(prices={"sim:default": (1.25, 10.0)}, sim_fail_rate=0.3, max_retries=0, quorum=0.1)
    async with make_client(settings) as client:
        seen_failed = False
        for i in range(6):
            body = {"question": f"Closest planet, take {i}?", "candidates": CANDIDATES, "k": 7}
            resp = await client.post("/judge/listwise", json=body)
            assert resp.status_code == 200, resp.text
            assert resp.content == as_the_model_would(resp.content)
            data = resp.json()
            assert isinstance(data["usage"]["cost_usd"], float)
            seen_failed |= any(r["error"] is not None and r["judgments"] is None for r in data["runs"])
        assert seen_failed
