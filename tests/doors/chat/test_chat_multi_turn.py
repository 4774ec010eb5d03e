"""MT-Bench's multi-turn pairwise prompts (``pair-v2-multi-turn``, ``pair-math-v1-multi-turn``), the real text as
FastChat sends it: recognised with each assistant's two answers as one candidate (the headings stay put, the
conversations change places), straight to the simulated judge the first shown wins, and through the openai SDK
FastChat's own parser reads one verdict whichever order it sent the pair in (as FastChat's two games do)."""

from __future__ import annotations

from collections.abc import Iterator

import openai
import pytest
from pcfjudge.judging.templates.chat_consensus import label_map
from pcfjudge.judging.templates.template_registry import recognise

from tests.doors.chat import framework_prompts as fp
from tests.doors.chat.multi_turn_prompts import Turns, mt_bench_multi_turn
from tests.doors.chat.straight import straight

QUESTIONS = ("Name a primary colour.", "Now name another one.")
REFERENCE = ("Red, yellow or blue.", "Another of red, yellow and blue.")
# (reference, a close pair: the simulated judge (seed 0) prefers whichever it is shown first, a clear pair: the first
# conversation better in either order), for each template
CASES = {
    "mt-bench-pair-v2-multi-turn": (
        None,
        (("Blue is one.", "Red."), ("Red is one.", "Blue is another.")),
        (("Red.", "Blue."), ("Blue is one.", "Yellow, for example.")),
    ),
    "mt-bench-pair-math-v1-multi-turn": (
        REFERENCE,
        (("Red.", "Blue."), ("Red is one.", "Blue is another.")),
        (("Red.", "Blue."), ("Yellow.", "Green.")),
    ),
}


def pairs(messages: list[dict[str, str]]) -> tuple[tuple[str, str], ...]:
    return tuple((m["role"], m["content"]) for m in messages)


@pytest.mark.parametrize("name", list(CASES))
def test_each_conversation_is_one_candidate_moved_whole(name: str) -> None:
    reference, (a, b), _ = CASES[name]
    found = recognise(pairs(mt_bench_multi_turn(QUESTIONS, a, b, reference)))
    assert found is not None and found.template.name == name
    assert found.parts == (a, b) and found.question == "\n\n".join(QUESTIONS)
    assert found.reference == ("\n\n".join(reference) if reference else None)
    assert found.render((0, 1)) == pairs(mt_bench_multi_turn(QUESTIONS, a, b, reference))  # the caller's own
    assert found.render((1, 0)) == pairs(mt_bench_multi_turn(QUESTIONS, b, a, reference))  # as FastChat's game 2
    verdicts = found.template.verdicts
    text = "Assistant A answers the second question; Assistant B does not. [[A]]"
    assert fp.fastchat_winner(verdicts.relabel(text, label_map(found.labels, (1, 0)))) == "B"


def test_single_turn_prompts_are_not_taken_for_multi_turn_ones() -> None:
    for messages, name in (
        (fp.mt_bench("Q?", "x", "y"), "mt-bench-pair-v2"),
        (fp.mt_bench_math("Q?", "r", "x", "y"), "mt-bench-pair-math-v1"),
    ):
        found = recognise(pairs(messages))
        assert found is not None and found.template.name == name


@pytest.mark.parametrize("name", list(CASES))
async def test_straight_to_the_judge_the_first_shown_conversation_wins(name: str) -> None:
    reference, (a, b), _ = CASES[name]
    forward = fp.fastchat_winner(await straight(mt_bench_multi_turn(QUESTIONS, a, b, reference)))
    backward = fp.fastchat_winner(await straight(mt_bench_multi_turn(QUESTIONS, b, a, reference)))
    assert forward == backward == "A"  # the position, not the conversation


@pytest.fixture(scope="module")
def sdk(serve_url: str) -> Iterator[openai.OpenAI]:
    with openai.OpenAI(base_url=f"{serve_url}/v1", api_key="unused", max_retries=0) as client:
        yield client


def judged(sdk: openai.OpenAI, name: str, a: Turns, b: Turns, reference: Turns | None) -> tuple[str, dict[str, object]]:
    """FastChat's verdict on one request, and the reply's audit trail."""
    raw = sdk.chat.completions.with_raw_response.create(
        model="sim:default",
        messages=mt_bench_multi_turn(QUESTIONS, a, b, reference),  # type: ignore[arg-type]
        temperature=0,
        max_tokens=2048,
    )
    assert raw.headers["x-pcfjudge-template"] == name
    completion = raw.parse()
    return fp.fastchat_winner(completion.choices[0].message.content or ""), (completion.model_extra or {})["pcfjudge"]


@pytest.mark.parametrize("name", list(CASES))
def test_through_the_sdk_one_verdict_in_either_order(sdk: openai.OpenAI, name: str) -> None:
    reference, close, clear = CASES[name]
    a, b = close
    split = [judged(sdk, name, a, b, reference), judged(sdk, name, b, a, reference)]
    assert [verdict for verdict, _ in split] == ["tie", "tie"]  # a split is FastChat's [[C]] in both orders
    assert all(trail["split"] and len(trail["orders"]) == 2 for _, trail in split)  # type: ignore[arg-type]
    a, b = clear
    forward, backward = judged(sdk, name, a, b, reference), judged(sdk, name, b, a, reference)
    assert (forward[0], backward[0]) == ("A", "B")  # the same conversation wins, read by FastChat's parser
    assert backward[1]["reply"] == "judge"  # the judge's own answer, relabelled to the caller's order
