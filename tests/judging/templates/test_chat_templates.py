"""The template registry on the frameworks' real prompts: recognised, re-rendered in the other order with nothing but
the candidates moved, a verdict relabelled so the framework's own parser reads the caller's order; the consensus
rules (the verdict that holds in both orders; a split: the tie, or an order-free coin)."""

from __future__ import annotations

import pytest
from pcfjudge.judging.templates.chat_consensus import decide, label_map, order_free_coin, to_caller
from pcfjudge.judging.templates.template_registry import BY_NAME, recognise

from tests.doors.chat import framework_prompts as fp

Q, A, B = "Name a primary colour.", "Blue is one.", "Red."
PROMPTS = {
    "mt-bench-pair-v2": fp.mt_bench(Q, A, B),
    "mt-bench-pair-math-v1": fp.mt_bench_math(Q, "Red, yellow or blue.", A, B),
    "rewardbench-generative": fp.rewardbench(Q, A, B),
    "arena-hard": fp.arena_hard(Q, A, B),
    "alpaca-eval-clf": fp.alpaca_clf(Q, A, B),
    "alpaca-eval-ranking": fp.alpaca_ranking_prompt(Q, A, B),
    "prometheus-relative": fp.prometheus(Q, A, B),
    "judgebench-vanilla": fp.judgebench(Q, A, B),
}


def pairs(messages: list[dict[str, str]]) -> list[tuple[str, str]]:
    return [(m["role"], m["content"]) for m in messages]


@pytest.mark.parametrize("name", list(PROMPTS))
def test_each_real_prompt_is_recognised_and_rendered_in_the_other_order(name: str) -> None:
    found = recognise(pairs(PROMPTS[name]))
    assert found is not None and found.template.name == name
    assert found.candidates == (A, B) and found.question == Q
    swapped = recognise(found.render((1, 0)))
    assert swapped is not None and swapped.candidates == (B, A)
    assert found.render((0, 1)) == tuple(pairs(PROMPTS[name]))  # the caller's order is the caller's prompt
    template = found.template.verdicts
    for verdict in (1, -1):  # each written verdict, relabelled to the other order, reads the other way round
        text = template.write(verdict, found.labels)
        assert template.read(text, found.labels) == verdict
        assert template.read(template.relabel(text, label_map(found.labels, (1, 0))), found.labels) == -verdict


def test_the_reference_answer_stays_put() -> None:
    found = recognise(pairs(PROMPTS["mt-bench-pair-math-v1"]))
    assert found is not None and found.reference == "Red, yellow or blue."
    assert "[The Start of Reference Answer]\nRed, yellow or blue." in found.render((1, 0))[1][1]


def test_relabelling_swaps_the_explanation_with_the_verdict() -> None:
    template = BY_NAME["arena-hard"].verdicts
    text = "Assistant A is concise; Assistant B rambles. My final verdict is: [[A>>B]]"
    swapped = template.relabel(text, {"A": "B", "B": "A"})
    assert swapped == "Assistant B is concise; Assistant A rambles. My final verdict is: [[B>>A]]"
    assert fp.arena_hard_score(swapped) == "B>>A"


def test_the_consensus_is_what_holds_in_both_orders() -> None:
    arena, rewardbench = BY_NAME["arena-hard"], BY_NAME["rewardbench-generative"]
    shown = [2, 1]  # order (A, B): A>>B; order (B, A): the first shown (B) slightly better
    verdicts = [to_caller(v, o) for v, o in zip(shown, [(0, 1), (1, 0)], strict=True)]
    assert verdicts == [2, -1] and decide(verdicts, arena, (A, B)).verdict == 0  # a split: the tie
    assert decide([2, 1], arena, (A, B)).verdict == 1  # both prefer A: at the weaker strength
    coin = decide([1, -1], rewardbench, (A, B))
    assert coin.coin and coin.verdict == order_free_coin((A, B)) == -order_free_coin((B, A))  # same text wins


def test_markers_read_rank_and_relabel() -> None:
    text = "Judge these.\n<<<candidate x>>>\none\n<<<end>>>\n<<<candidate y>>>\ntwo\n<<<end>>>\n<<<candidate z>>>\nthree\n<<<end>>>"
    found = recognise([("user", text)])
    assert found is not None and found.labels == ("x", "y", "z") and found.candidates == ("one", "two", "three")
    template = found.template.verdicts
    assert template.read("I think so. [[y>x=z]]", found.labels) == (2, 1, 2)
    assert template.read("[[y]]", found.labels) == (2, 1, 2)
    assert template.read("[[y>y]]", found.labels) is None and template.read("no verdict", found.labels) is None
    order = (2, 0, 1)  # shown: three, one, two under labels x, y, z
    assert to_caller((1, 2, 3), order) == (2, 3, 1)
    assert (
        template.relabel("Candidate x wins. [[x>y>z]]", label_map(found.labels, order)) == "Candidate z wins. [[z>x>y]]"
    )
    assert decide([(2, 3, 1), (2, 3, 1), (1, 3, 2)], found.template, found.candidates).verdict == (2, 3, 1)
