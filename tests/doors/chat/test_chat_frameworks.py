"""Each framework's own prompt, as the framework sends it: straight to the simulated judge (one call) its verdict
follows the order; through /v1/chat/completions the framework's own parser reads the same winner whichever order it
sent the pair in. The pairs are fixed texts on which the simulated judge (seed 0) shows its first-position
preference, and one on which the quality difference outweighs it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx
import pytest

from tests.doors.chat import framework_prompts as fp
from tests.doors.chat.straight import straight

Build = Callable[[str, str, str], list[dict[str, str]]]
QUESTION = "Name a primary colour."
CLOSE = ("Blue is one.", "Red.")  # the simulated judge picks whichever it is shown first
CLEAR = ("Blue is one.", "Yellow, for example.")  # the first clearly better: the same verdict in both orders


def winner_of(label: Any, first: str) -> str:
    """A framework's parsed verdict as the winning text's side: 'first', 'second' or 'tie' (of the caller's order)."""
    table = {
        "A": "first", "B": "second", "tie": "tie", "A>>B": "first", "A>B": "first", "A=B": "tie", "B>A": "second",
        "B>>A": "second", "m": "first", "M": "second", 1: "first", 2: "second",
    }  # fmt: skip
    return table[label]


FRAMEWORKS: dict[str, tuple[Build, Callable[[str], Any], str]] = {
    "mt-bench": (fp.mt_bench, fp.fastchat_winner, "mt-bench-pair-v2"),
    "arena-hard": (fp.arena_hard, fp.arena_hard_score, "arena-hard"),
    "rewardbench": (fp.rewardbench, fp.rewardbench_winner, "rewardbench-generative"),
    "prometheus": (fp.prometheus, fp.prometheus_result, "prometheus-relative"),
    "judgebench": (fp.judgebench, fp.judgebench_vanilla, "judgebench-vanilla"),
    "alpaca-eval-clf": (fp.alpaca_clf, lambda text: text.strip(), "alpaca-eval-clf"),
    "alpaca-eval-ranking": (fp.alpaca_ranking_prompt, fp.alpaca_ranking, "alpaca-eval-ranking"),
}


def picked(side: str, order: tuple[str, str]) -> str:
    """The text a side names (``tie`` stays ``tie``)."""
    return {"first": order[0], "second": order[1]}.get(side, "tie")


@pytest.mark.parametrize("framework", list(FRAMEWORKS))
async def test_straight_to_the_judge_the_verdict_follows_the_order(framework: str) -> None:
    build, parse, _ = FRAMEWORKS[framework]
    a, b = CLOSE
    forward = picked(winner_of(parse(await straight(build(QUESTION, a, b))), a), (a, b))
    backward = picked(winner_of(parse(await straight(build(QUESTION, b, a))), b), (b, a))
    assert forward == a and backward == b  # each order's first shown wins: the position, not the answer


@pytest.mark.parametrize("framework", list(FRAMEWORKS))
async def test_through_the_endpoint_the_verdict_is_the_same_in_either_order(
    framework: str, client: httpx.AsyncClient
) -> None:
    build, parse, template = FRAMEWORKS[framework]
    for pair in (CLOSE, CLEAR):
        winners = set()
        for order in (pair, pair[::-1]):
            r = await client.post(
                "/v1/chat/completions", json={"model": "sim:default", "messages": build(QUESTION, *order)}
            )
            assert r.status_code == 200, r.text
            assert r.headers["x-pcfjudge-template"] == template
            body = r.json()
            parsed = parse(body["choices"][0]["message"]["content"])  # the framework's own parser reads the reply
            assert parsed is not None and parsed != "error", body["choices"][0]["message"]["content"]
            winners.add(picked(winner_of(parsed, order[0]), order))
            assert len(body["pcfjudge"]["orders"]) == 2
        assert len(winners) == 1, (framework, pair, winners)
        if pair == CLEAR:
            assert winners == {pair[0]}  # a difference the judge can see survives
        elif framework in ("mt-bench", "arena-hard"):
            assert winners == {"tie"}  # a split is the template's tie
