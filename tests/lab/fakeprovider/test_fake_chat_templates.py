"""The fake provider learns the chat door's templates: a framework's own judge prompt sent to it straight is answered
in that template's verdict format with the simulated judge's first-position preference (on either wire); sent through
``/v1/chat/completions`` with the fake as the judge, the same pair gets one verdict in either order, and a caller's
deadline answers from the orders finished."""

from __future__ import annotations

from typing import Any

import httpx

from tests.doors.chat import framework_prompts as fp
from tests.doors.chat.multi_turn_prompts import mt_bench_multi_turn
from tests.support.basics import ANTHROPIC_KEY, OPENAI_KEY
from tests.support.inprocess import FakeProvider, app_client, provider_settings

QUESTION = "Name a primary colour."
CLOSE = ("Blue is one.", "Red.")  # the simulated judge (seed 0) prefers whichever it is shown first
CLEAR = ("Blue is one.", "Yellow, for example.")


def straight_openai(fake: FakeProvider, messages: list[dict[str, str]]) -> str:
    body = {"model": "judge-x", "messages": messages, "temperature": 0}
    headers = {"Authorization": f"Bearer {OPENAI_KEY}"}
    reply = httpx.post(f"{fake.url}/v1/chat/completions", json=body, headers=headers, timeout=10)
    assert reply.status_code == 200, reply.text
    content: str = reply.json()["choices"][0]["message"]["content"]
    return content


def straight_anthropic(fake: FakeProvider, messages: list[dict[str, str]]) -> str:
    system = "\n".join(m["content"] for m in messages if m["role"] == "system")
    body: dict[str, Any] = {"model": "judge-y", "max_tokens": 512, "system": system}
    body["messages"] = [m for m in messages if m["role"] != "system"]
    headers = {"x-api-key": ANTHROPIC_KEY, "anthropic-version": "2023-06-01"}
    reply = httpx.post(f"{fake.url}/v1/messages", json=body, headers=headers, timeout=10)
    assert reply.status_code == 200, reply.text
    text: str = reply.json()["content"][0]["text"]
    return text


def test_straight_to_the_fake_a_framework_prompt_gets_its_format_and_the_first_shown_wins(fake: FakeProvider) -> None:
    mt = [fp.fastchat_winner(straight_openai(fake, fp.mt_bench(QUESTION, a, b))) for a, b in (CLOSE, CLOSE[::-1])]
    arena = [
        fp.arena_hard_score(straight_anthropic(fake, fp.arena_hard(QUESTION, a, b))) for a, b in (CLOSE, CLOSE[::-1])
    ]
    prometheus = [
        fp.prometheus_result(straight_openai(fake, fp.prometheus(QUESTION, a, b))) for a, b in (CLOSE, CLOSE[::-1])
    ]
    assert mt == ["A", "A"] and prometheus == ["A", "A"]  # each order: whichever it showed first
    assert arena[0] in ("A>B", "A>>B") and arena[1] in ("A>B", "A>>B")
    clear = [fp.fastchat_winner(straight_openai(fake, fp.mt_bench(QUESTION, a, b))) for a, b in (CLEAR, CLEAR[::-1])]
    assert clear == ["A", "B"]  # quality outweighs the position


async def test_through_the_chat_door_the_fakes_bias_is_gone(fake: FakeProvider) -> None:
    async with app_client(provider_settings("openai", fake)) as client:
        replies = [
            (await client.post("/v1/chat/completions", json={"messages": fp.mt_bench(QUESTION, a, b)})).json()
            for a, b in (CLOSE, CLOSE[::-1])
        ]
    assert [fp.fastchat_winner(r["choices"][0]["message"]["content"]) for r in replies] == ["tie", "tie"]
    assert all(r["pcfjudge"]["split"] and r["pcfjudge"]["template"] == "mt-bench-pair-v2" for r in replies)
    assert [r["pcfjudge"]["usage"]["backend_calls"] for r in replies] == [2, 0]  # the second: both orders cached
    assert fake.calls()["calls"]["openai"] == 2


async def test_mt_bench_multi_turn_straight_and_through_the_door(fake: FakeProvider) -> None:
    questions = (QUESTION, "Now name another one.")
    close = (("Blue is one.", "Red."), ("Red is one.", "Blue is another."))  # the first shown wins straight
    straight = [
        fp.fastchat_winner(straight_openai(fake, mt_bench_multi_turn(questions, a, b))) for a, b in (close, close[::-1])
    ]
    assert straight == ["A", "A"]
    async with app_client(provider_settings("openai", fake)) as client:
        replies = [
            (await client.post("/v1/chat/completions", json={"messages": mt_bench_multi_turn(questions, a, b)})).json()
            for a, b in (close, close[::-1])
        ]
    assert [fp.fastchat_winner(r["choices"][0]["message"]["content"]) for r in replies] == ["tie", "tie"]
    assert {r["pcfjudge"]["template"] for r in replies} == {"mt-bench-pair-v2-multi-turn"}


async def test_a_deadline_answers_with_the_order_finished(fake: FakeProvider) -> None:
    fake.faults(["ok"], always="slow", slow_seconds=3.0)  # the first call answers at once, the second is slow
    async with app_client(provider_settings("openai", fake, max_retries=0)) as client:
        reply = await client.post(
            "/v1/chat/completions", json={"messages": fp.mt_bench(QUESTION, *CLEAR), "deadline_ms": 800}
        )
    assert reply.status_code == 200, reply.text
    judgment = reply.json()["pcfjudge"]
    assert judgment["stopped"] == "deadline" and judgment["degraded"] is True
    assert sorted(o["error"] is None for o in judgment["orders"]) == [False, True]  # whichever arrived first
    assert fp.fastchat_winner(reply.json()["choices"][0]["message"]["content"]) == "A"
