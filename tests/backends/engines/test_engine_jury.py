"""A jury of two real engines (issue 31): two llama-server processes (``engine_pair``), each serving its own
model — SmolLM2-135M as shipped (Q4_1) and re-quantized to Q4_0 (scripts/second_model.sh) — named by PCFJ_ENGINES and
pooled by PCFJ_JURIES, through every front door of a real ``pcfjudge serve``; every juror run an ordinary
structured-output call, cached by its model, so a jury listed the other way round costs nothing."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pcfjudge
import pytest

from tests.backends.engines.test_engine_llamacpp import ANSWERS, QUESTION, ok
from tests.support.engine import MODEL_NAME, PAIR_SERVICE_ENV, SECOND_MODEL_NAME
from tests.support.processes import serve_process

pytestmark = [pytest.mark.slow, pytest.mark.engine, pytest.mark.timeout(1500)]
JURORS = [f"q41:{MODEL_NAME}", f"q40:{SECOND_MODEL_NAME}"]


@pytest.fixture(scope="module")
def service(engine_pair: tuple[str, str]) -> Iterator[str]:
    first, second = engine_pair
    env = {
        "PCFJ_ENGINES": json.dumps({"q41": first, "q40": second}),
        "PCFJ_JURIES": json.dumps({"smol": JURORS}),
        "PCFJ_DEFAULT_MODEL": JURORS[0],
        **PAIR_SERVICE_ENV,
    }
    with serve_process(env=env) as url:
        yield url


def jury_of(body: dict[str, Any]) -> dict[str, Any]:
    jury: dict[str, Any] = body["jury"]
    assert [j["model"] for j in jury["jurors"]] == JURORS or [j["model"] for j in jury["jurors"]] == JURORS[::-1]
    return jury


def test_every_front_door_judges_with_a_jury_of_two_engines(service: str) -> None:
    with httpx.Client(base_url=service, timeout=1300) as client:
        listwise = ok(
            client.post("/judge/listwise", json={"question": QUESTION, "candidates": ANSWERS, "model": "smol"})
        )
        again = ok(
            client.post("/judge/listwise", json={"question": QUESTION, "candidates": ANSWERS, "model": JURORS[::-1]})
        )
        pair = ok(
            client.post(
                "/judge/pairwise",
                json={"question": QUESTION, "response_a": ANSWERS[0], "response_b": ANSWERS[1], "model": JURORS},
            )
        )
        cohere = ok(client.post("/v2/rerank", json={"model": "smol", "query": QUESTION, "documents": ANSWERS}))
        tei = client.post("/rerank", json={"query": QUESTION, "texts": ANSWERS, "pcfjudge": {"model": "smol"}})
        samples = [{"prompt": QUESTION + " (reward)", "response": a} for a in ANSWERS]
        reward = ok(client.post("/v1/reward", json={"samples": samples, "model": JURORS}))
        prompt = "Q: " + QUESTION + "\nA: "
        query = {"query": [prompt + a for a in ANSWERS], "prompts": [prompt, prompt]}
        # OpenRLHF's own client gives up after 180 s, so the door answers by 170 s unless told otherwise; this client
        # waits 1300 s for two small engines sharing two slow cores, so it says so.
        openrlhf = ok(client.post("/get_reward?model=smol&deadline_ms=1200000", json=query))
    jury = jury_of(listwise)
    assert listwise["model"] == "smol" and all(j["runs"] == 2 for j in jury["jurors"])
    assert {r["model"] for r in listwise["runs"] if r["error"] is None} <= set(JURORS)
    assert all(r["error"] is None for r in listwise["runs"]) or listwise["degraded"]
    assert again["usage"]["backend_calls"] == 0 and again["usage"]["cache_hits"] == 4  # the same juror runs, cached
    assert again["candidates"] == listwise["candidates"]  # equal weights: the order of the jurors does not matter
    assert jury_of(pair) and pair["decision"] == "jury" and pair["winner"] in ("A", "B", "tie")
    assert cohere["model"] == "smol" and len(cohere["results"]) == 2
    assert tei.status_code == 200 and len(tei.json()) == 2
    assert reward["model"] == ",".join(JURORS) and len(reward["rewards"]) == 2
    assert len(openrlhf["rewards"]) == 2


def test_the_typed_client_and_a_stream_with_a_jury_of_two_engines(service: str) -> None:
    question = QUESTION + " (client)"
    with pcfjudge.Client(service, timeout=1300) as judge:
        events = list(judge.listwise_stream(question, ANSWERS, model="smol", k=2))
    runs = [e for e in events if e.kind == "run"]
    final = events[-1].response
    assert final is not None and final.jury is not None and len(runs) == 4
    assert {e.data["model"] for e in runs} == set(JURORS)
    assert runs[-1].data["winners"] == final.winners
