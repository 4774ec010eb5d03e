"""/v1/chat/completions like every other door: a prompt not recognised (passed on, or refused), the per-request caps
checked against its plan, the cache shared between the orders a framework sends, its metrics under door chat, a list
of marked candidates, AlpacaEval's log-probabilities and a jury."""

from __future__ import annotations

import math

import httpx
from pcfjudge.settings import Settings
from prometheus_client import REGISTRY

from tests.doors.chat import framework_prompts as fp
from tests.support.inprocess import FakeProvider, app_client, provider_settings

QUESTION = "Name a primary colour."
CLOSE = ("Blue is one.", "Red.")
URL = "/v1/chat/completions"


async def test_an_unrecognised_prompt_is_one_call_or_a_422_when_the_operator_says_so(client: httpx.AsyncClient) -> None:
    body = {"model": "sim:default", "messages": [{"role": "user", "content": "Write a haiku."}]}
    r = await client.post(URL, json=body)
    assert r.status_code == 200 and r.headers["x-pcfjudge-template"] == "none"
    judgment = r.json()["pcfjudge"]
    assert judgment["template"] is None and len(judgment["orders"]) == 1 and judgment["verdict"] is None
    async with app_client(Settings(chat_unrecognised="refuse")) as strict:
        refused = await strict.post(URL, json=body)
    error = refused.json()["error"]  # OpenAI's error shape
    assert refused.status_code == 400 and error["code"] == "unrecognised_prompt" and error["param"] == "messages"
    assert "<<<candidate A>>>" in error["message"]


async def test_the_guard_checks_the_chat_plan() -> None:
    messages = fp.mt_bench(QUESTION, *CLOSE)
    async with app_client(Settings(max_calls_per_request=1)) as capped:
        r = await capped.post(URL, json={"model": "sim:default", "messages": messages})
    assert r.status_code == 400 and r.json()["error"]["code"] == "over_limit"  # two orders, one call allowed
    async with app_client(Settings(allowed_models=["sim:oracle"])) as allowlisted:
        r = await allowlisted.post(URL, json={"model": "sim:default", "messages": messages})
    assert r.status_code == 400 and r.json()["error"]["code"] == "model_not_allowed"


async def test_the_other_order_is_served_from_the_cache_and_counted_for_door_chat(client: httpx.AsyncClient) -> None:
    def decisions() -> float:
        return sum(
            s.value
            for f in REGISTRY.collect()
            for s in f.samples
            if s.name == "pcfjudge_decisions_total" and s.labels.get("door") == "chat"
        )

    before = decisions()
    first = (await client.post(URL, json={"model": "sim:default", "messages": fp.arena_hard(QUESTION, *CLOSE)})).json()
    swapped = fp.arena_hard(QUESTION, *CLOSE[::-1])
    second = (await client.post(URL, json={"model": "sim:default", "messages": swapped})).json()
    assert first["pcfjudge"]["usage"]["backend_calls"] == 2
    assert second["pcfjudge"]["usage"] == first["pcfjudge"]["usage"] | {
        "backend_calls": 0, "cache_hits": 2, "input_tokens": 0, "output_tokens": 0,
    }  # fmt: skip
    assert second["usage"]["total_tokens"] == 0
    assert decisions() == before + 2


MARKED = """Rank the answers to "Name a primary colour." from best to worst; end with [[X>Y>Z]].

<<<candidate A>>>
Red.
<<<end>>>
<<<candidate B>>>
Blue is one.
<<<end>>>
<<<candidate C>>>
Yellow, for example.
<<<end>>>"""


async def test_marked_candidates_are_judged_in_k_orders_with_eq_1_to_5(client: httpx.AsyncClient) -> None:
    r = await client.post(URL, json={"model": "sim:default", "messages": [{"role": "user", "content": MARKED}]})
    body = r.json()
    assert r.status_code == 200 and r.headers["x-pcfjudge-template"] == "markers"
    judgment = body["pcfjudge"]
    assert len(judgment["orders"]) == Settings().chat.chat_orders
    assert judgment["orders"][0]["order"] == ["A", "B", "C"]  # the caller's own order first
    verdict = body["choices"][0]["message"]["content"]
    assert f"[[{judgment['verdict']}]]" in verdict
    assert sorted(judgment["verdict"].replace("=", ">").split(">")) == ["A", "B", "C"]


async def test_alpaca_eval_gets_log_probabilities_from_the_orders(client: httpx.AsyncClient) -> None:
    body = {"model": "sim:default", "messages": fp.alpaca_clf(QUESTION, *CLOSE), "logprobs": True, "top_logprobs": 5}
    choice = (await client.post(URL, json=body)).json()["choices"][0]
    preference = fp.alpaca_logprob_preference(choice)  # AlpacaEval's logprob_parser reads it
    assert math.isclose(preference, 0.5)  # a split: each order preferred the one it showed first
    assert choice["message"]["content"] in ("m", "M")


async def test_a_jury_judges_every_order_with_every_juror(client: httpx.AsyncClient) -> None:
    body = {"model": ["sim:default", "sim:oracle"], "messages": fp.mt_bench(QUESTION, *CLOSE)}
    r = await client.post(URL, json=body)
    judgment = r.json()["pcfjudge"]
    assert r.status_code == 200 and {o["model"] for o in judgment["orders"]} == {"sim:default", "sim:oracle"}
    assert len(judgment["orders"]) == 4 and fp.fastchat_winner(r.json()["choices"][0]["message"]["content"]) != "error"


async def test_a_deadline_in_the_body_or_prefer_wait_and_a_too_short_one_refused(fake: FakeProvider) -> None:
    """deadline_ms (pcfjudge's own field) or Prefer: wait, as at every other door: no order finished by then is a
    504 in OpenAI's error shape; one too short to judge anything is refused before any call."""
    fake.faults(always="slow", slow_seconds=3.0)
    messages = fp.mt_bench(QUESTION, *CLOSE)
    async with app_client(provider_settings("openai", fake)) as client:
        cut = await client.post(URL, json={"messages": messages, "deadline_ms": 500})
        waited = await client.post(URL, json={"messages": messages}, headers={"Prefer": "wait=0.5"})
        short = await client.post(URL, json={"messages": messages, "deadline_ms": 5})
    for reply in (cut, waited):
        assert reply.status_code == 504, reply.text
        assert reply.json()["error"]["message"].startswith("deadline: no order finished by the deadline")
    assert short.status_code == 400 and short.json()["error"]["param"] == "deadline_ms"
