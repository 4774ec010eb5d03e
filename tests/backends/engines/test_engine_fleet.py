"""A judge fleet of two real engines (issue 39): a models file (PCFJ_MODELS_FILE, LiteLLM's ``model_list``) with one
model name whose two entries are the two llama-server processes of ``engine_pair`` (SmolLM2-135M as shipped and as
Q4_0, the jury's engines: the suite starts none for this), named ``fleet:smol`` at every front door of a real
``pcfjudge serve``. Each door answers 200 with a usable body, and each door's calls went to both endpoints (the
per-endpoint metrics): a judgment's calls start together, and the least busy endpoint takes the next."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from tests.backends.engines.test_engine_llamacpp import ANSWERS, QUESTION, ok
from tests.doors.chat.framework_prompts import mt_bench
from tests.support.engine import MODEL_NAME, PAIR_SERVICE_ENV, SECOND_MODEL_NAME
from tests.support.processes import serve_process

pytestmark = [pytest.mark.slow, pytest.mark.engine, pytest.mark.timeout(1500)]
FLEET = "fleet:smol"
ENDPOINTS = {"smol-q41", "smol-q40"}
# The chat door passes the caller's response_format on: a schema the engine's grammar holds SmolLM2 to, so its
# answer always carries a verdict MT-Bench's parser reads ("[[A]]" in the answer).
VERDICT = {
    "type": "json_schema",
    "json_schema": {
        "name": "verdict",
        "schema": {
            "type": "object",
            "properties": {"verdict": {"enum": ["[[A]]", "[[B]]", "[[C]]"]}},
            "required": ["verdict"],
        },
    },
}


def models_file(path: Path, first: str, second: str) -> Path:
    entries = [
        (f"hosted_vllm/{MODEL_NAME}", first, "smol-q41"),
        (f"openai/{SECOND_MODEL_NAME}", second, "smol-q40"),
    ]
    model_list = [
        {"model_name": "smol", "litellm_params": {"model": model, "api_base": base}, "model_info": {"id": ident}}
        for model, base, ident in entries
    ]
    path.write_text(yaml.safe_dump({"model_list": model_list}))
    return path


@pytest.fixture(scope="module")
def service(engine_pair: tuple[str, str], tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    models = models_file(tmp_path_factory.mktemp("fleet") / "models.yaml", *engine_pair)
    env = {"PCFJ_MODELS_FILE": str(models), "PCFJ_DEFAULT_MODEL": FLEET, **PAIR_SERVICE_ENV}
    with serve_process(env=env) as url:
        yield url


def calls(client: httpx.Client, outcome: str | None = None) -> Counter[str]:
    """The fleet's calls so far per endpoint (of one outcome, or all), from /metrics."""
    counts: Counter[str] = Counter()
    for family in text_string_to_metric_families(client.get("/metrics").text):
        for sample in family.samples:
            labels = sample.labels
            ours = sample.name == "pcfjudge_fleet_calls_total" and labels["fleet"] == "smol"
            if ours and outcome in (None, labels["outcome"]):
                counts[labels["endpoint"]] += int(sample.value)
    return counts


def test_every_front_door_judges_with_a_fleet_of_two_engines(service: str) -> None:
    took: dict[str, Counter[str]] = {}
    with httpx.Client(base_url=service, timeout=1300) as client:

        def door(name: str, path: str, body: dict[str, Any], **params: str) -> dict[str, Any]:
            before = calls(client)
            answer = ok(client.post(path, json=body, params=params))
            took[name] = calls(client) - before
            return answer

        question = QUESTION + " (fleet)"  # no cache hit from another module's judgments
        listwise = door("listwise", "/judge/listwise", {"question": question, "candidates": ANSWERS, "model": FLEET})
        pair = {"question": question, "response_a": ANSWERS[0], "response_b": ANSWERS[1], "model": FLEET}
        pairwise = door("pairwise", "/judge/pairwise", pair)
        query = question + " (rerank)"  # else the listwise judgment's cache answers it
        rerank = door("rerank", "/v2/rerank", {"model": FLEET, "query": query, "documents": ANSWERS, "top_n": 2})
        prompt = "Q: " + question + "\nA: "
        rollouts = {"query": [prompt + a for a in ANSWERS], "prompts": [prompt, prompt]}
        # OpenRLHF's own client gives up after 180 s, so the door answers by 170 s unless told otherwise; this client
        # waits 1300 s for two small engines sharing two slow cores, so it says so.
        reward = door("reward", "/get_reward", rollouts, model=FLEET, deadline_ms="1200000")
        messages = mt_bench(question, *ANSWERS)
        chat_body = {"model": FLEET, "messages": messages, "max_tokens": 40, "temperature": 0}
        chat = door("chat", "/v1/chat/completions", chat_body | {"response_format": VERDICT})
        ready = ok(client.get("/readyz"))
        answered = calls(client, "ok")
    assert listwise["model"] == FLEET and len(listwise["ranking"]) == 2 and listwise["diagnostics"]["runs_ok"] >= 1
    assert pairwise["model"] == FLEET and pairwise["winner"] in ("A", "B", "tie")
    assert rerank["model"] == FLEET and sorted(r["index"] for r in rerank["results"]) == [0, 1]
    assert len(reward["rewards"]) == 2 and all(isinstance(r, float) for r in reward["rewards"])
    verdict = chat["pcfjudge"]
    assert chat["model"] == FLEET and verdict["template"] == "mt-bench-pair-v2" and len(verdict["orders"]) == 2
    assert verdict["verdict"] in ("A>B", "B>A", "A=B")
    assert {name: set(endpoints) for name, endpoints in took.items()} == dict.fromkeys(took, ENDPOINTS), took
    assert set(answered) == ENDPOINTS  # each endpoint answered
    fleet = ready["fleets"]["smol"]
    assert fleet["unhealthy"] == [] and set(fleet["endpoints"]) == ENDPOINTS
