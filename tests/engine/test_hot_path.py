"""The lean request path keeps its answers: a cache hit renders no prompt and validates its answer once per entry, the
parsed form never reaches Redis, and a stored answer that cannot be used is called again rather than failing."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from pcfjudge.backends.base import Completion, JudgeCall
from pcfjudge.backends.sim import SimJudge, SimParams
from pcfjudge.cache.interface import PARSED
from pcfjudge.cache.redis_cache import RedisCache
from pcfjudge.cache.redis_client import connect
from pcfjudge.engine import listwise_runs as listwise
from pcfjudge.judging import parse
from pcfjudge.settings import Settings

from tests.support.inprocess import ClientFactory, app_with_services
from tests.support.redis_server import RedisServer

BODY: dict[str, Any] = {
    "question": "Which planet is closest to the Sun?",
    "candidates": ["Venus.", "Mercury.", "I am not sure; maybe Mercury.", "Mars, at 0.39 AU."],
    "k": 7,
}


def counting(monkeypatch: pytest.MonkeyPatch, module: object, name: str) -> list[int]:
    """Count the calls of ``module.name`` (still calling it)."""
    calls = [0]
    original: Callable[..., Any] = getattr(module, name)

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        calls[0] += 1
        return original(*args, **kwargs)

    monkeypatch.setattr(module, name, wrapper)
    return calls


async def test_a_cached_request_renders_no_prompt_and_parses_no_answer(
    make_client: ClientFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    renders = counting(monkeypatch, listwise, "render_listwise")
    validations = counting(monkeypatch, listwise, "validate_listwise")
    async with make_client() as client:
        cold = await client.post("/judge/listwise", json=BODY)
        assert cold.status_code == 200 and cold.json()["usage"]["backend_calls"] == 7
        assert (renders[0], validations[0]) == (7, 7)  # one prompt and one validation per call
        for _ in range(3):
            warm = await client.post("/judge/listwise", json=BODY)
            assert warm.json()["usage"]["cache_hits"] == 7
            assert warm.json()["candidates"] == cold.json()["candidates"]
        assert (renders[0], validations[0]) == (7, 7)  # hits: nothing rendered, nothing validated again
        other_ids = {**BODY, "candidates": [{"id": f"c{i}", "text": t} for i, t in enumerate(BODY["candidates"])]}
        renamed = (await client.post("/judge/listwise", json=other_ids)).json()
        assert renamed["usage"]["cache_hits"] == 7 and validations[0] == 7  # same entries, the client's own ids
        assert [c["consensus"] for c in renamed["candidates"]] == [c["consensus"] for c in cold.json()["candidates"]]


class Answering:
    """The simulated judge's answers, counting calls."""

    provider = "sim"

    def __init__(self) -> None:
        self.calls = 0
        self.judge = SimJudge(SimParams())

    async def complete(self, call: JudgeCall, until: float | None = None) -> Completion:
        self.calls += 1
        return Completion(json.dumps(self.judge.answer(call)))

    async def aclose(self) -> None:
        return None


async def test_an_unusable_stored_answer_is_called_again() -> None:
    async with app_with_services(Settings()) as (client, services):
        backend = Answering()
        services.registry.backends["sim"] = backend
        assert (await client.post("/judge/listwise", json={**BODY, "k": 2})).status_code == 200
        keys = [run.key for run in services.judge.plan_listwise(_task(services, k=2)).runs]
        await services.cache.set(keys[0], {"answer": {"candidates": [], "ranking": []}, "usage": {}})  # broken entry
        again = await client.post("/judge/listwise", json={**BODY, "k": 2})
        assert again.status_code == 200, again.text
        usage = again.json()["usage"]
        assert (usage["backend_calls"], usage["cache_hits"]) == (1, 1)
        assert backend.calls == 3


def _task(services: Any, k: int) -> listwise.ListwiseTask:
    from pcfjudge.doors.listwise.listwise_plan import build_task
    from pcfjudge.doors.listwise.listwise_protocol import ListwiseRequest

    task: listwise.ListwiseTask = build_task(
        ListwiseRequest.model_validate({**BODY, "k": k}), services.settings, services.judge
    )
    return task


async def test_redis_stores_the_json_fields_only(redis_server: RedisServer) -> None:
    client = connect(redis_server.url, timeout_s=1, connect_timeout_s=1, max_connections=4, pool_timeout_s=1)
    cache = RedisCache(client, ttl_s=60)
    try:
        parsed = parse.validate_listwise(
            {
                "candidates": [
                    {
                        "label": "A",
                        "score": 1,
                        "rationale": "",
                        "major_error": False,
                        "hallucinated_specificity": False,
                        "calibrated_uncertainty": False,
                    },
                    {
                        "label": "B",
                        "score": 2,
                        "rationale": "",
                        "major_error": False,
                        "hallucinated_specificity": False,
                        "calibrated_uncertainty": False,
                    },
                ],
                "ranking": ["B", "A"],
            },
            ("A", "B"),
        )
        await cache.set("pcfj:{x}:k", {"answer": {"ranking": ["B", "A"]}, "usage": {}, PARSED: parsed})
        (stored,) = await cache.get_many(["pcfj:{x}:k"])
        assert stored == {"answer": {"ranking": ["B", "A"]}, "usage": {}}
    finally:
        await cache.aclose()
