"""The estimation guard's heuristic: estimation-style prompts are caught, exact-answer prompts are not."""

from __future__ import annotations

import json

import pytest
from pcfjudge.judging.estimation import check_estimation, closed_answer, find_cue
from pcfjudge_lab.eval.data import bundled

JUDGEBENCH = [bundled(name) for name in ("judgebench:gpt-4o", "judgebench:claude-3-5-sonnet")]  # pcfjudge_lab/data/


@pytest.mark.parametrize(
    ("question", "cue"),
    [
        ("What's a ballpark figure for the cost of a new roof?", "ballpark"),
        ("Give me a ball-park number for the weight of a blue whale.", "ballpark"),
        ("Solve this Fermi problem: how many teachers work in the US?", "fermi"),
        ("Use a Fermi-style approach to size the market for pianos.", "fermi"),
        ("Within an order of magnitude, how old is the universe?", "order_of_magnitude"),
        ("Do a back-of-the-envelope calculation of US gasoline use per day.", "back_of_envelope"),
        ("Roughly how many golf balls fit in a school bus?", "approximate_quantity"),
        ("Approximately how much does the Earth weigh?", "approximate_quantity"),
        ("About how long would it take to walk around the equator?", "approximate_quantity"),
        ("around how many words does the average novel have", "approximate_quantity"),
        ("I need a rough estimate of the number of hairs on a head.", "rough_estimate"),
        ("Estimate the number of piano tuners in Chicago.", "estimate_quantity"),
        ("Estimate how many litres of water a person drinks in a lifetime.", "estimate_quantity"),
        ("Can you give me an estimate for the weight of Mount Everest?", "asks_for_estimate"),
        ("What is your best estimate for the global number of cats?", "asks_for_estimate"),
        ("How many piano tuners are there in Chicago?", "how_many_in_world"),
        ("How many trees are there on Earth?", "how_many_in_world"),
        ("How many ants exist in the world?", "how_many_in_world"),
        ("How many stars are there in the Milky Way?", "how_many_in_world"),
        ("How many people live in Tokyo?", "how_many_in_world"),
        ("How many ping-pong balls would fit into a Boeing 747?", "how_many_in_world"),
    ],
)
def test_estimation_prompts_are_detected(question: str, cue: str) -> None:
    assert find_cue(question) == cue
    check = check_estimation(question)
    assert check.estimation and check.source == "heuristic" and check.cue == cue


@pytest.mark.parametrize(
    "question",
    [
        "What is the capital of Australia?",
        "How many pieces are there after the cuts? Think step by step.",  # counting puzzle, no real-world scope
        "How many solutions are there of the equation x^2 = 4 with x > 0?",
        "How many cells are there in total in the grid?",
        "What is the Fermi level of intrinsic silicon?",  # physics term, not a Fermi problem
        "Obtain an estimate of the diameter of a helium molecule from b = 23.4 cm^3/mol.",  # a calculation
        "Use the van der Waals parameters to calculate approximate values of the radius.",
        "Which estimation techniques are available for over-identified systems?",
        "Compute the magnitude of the net electrostatic force on the grain.",
        "If you cannot determine the answer, take your best guess.",
        "Write a function that returns how many items are in the list.",
        "",
    ],
)
def test_exact_answer_prompts_are_not_estimation(question: str) -> None:
    assert find_cue(question) is None
    assert not check_estimation(question).estimation


def test_multiple_choice_questions_are_closed_answer_even_with_a_cue() -> None:
    question = "Approximately how many genes are in the series?\n(A) 2 genes\n(B) 5 genes\n(C) 9 genes\n(D) 12 genes"
    assert closed_answer(question)
    assert find_cue(question) is None
    assert find_cue(question.split("\n")[0]) == "approximate_quantity"  # the same question, open-ended
    assert not closed_answer("Is it (A) or (B)?")


def test_the_request_can_force_the_decision_either_way() -> None:
    forced_on = check_estimation("What is the capital of Australia?", True)
    assert forced_on.estimation and forced_on.source == "request" and forced_on.cue is None
    forced_off = check_estimation("Roughly how many golf balls fit in a school bus?", False)
    assert not forced_off.estimation and forced_off.source == "request"


def _judgebench_questions() -> list[tuple[str, str]]:
    out = []
    for path in JUDGEBENCH:
        with path.open(encoding="utf-8") as handle:
            out.extend((json.loads(line)["source"], json.loads(line)["question"]) for line in handle if line.strip())
    return out


# Real JudgeBench questions that contain estimation-looking words yet have exact answers; none may trigger.
JUDGEBENCH_PROBES = (
    "How many pieces are there after the cuts?",
    "how many quadrilaterals are there?",
    "find approximately how many genes are in the series",
    "Obtain an estimate of the diameter of a helium molecule",
    "calculate approximate values of the radius",
    "estimation techniques are available",
    "Keyence has N bases worldwide",
)


def test_real_judgebench_questions_do_not_trigger() -> None:
    questions = _judgebench_questions()
    probes = {probe: [q for _, q in questions if probe in q] for probe in JUDGEBENCH_PROBES}
    assert all(probes.values()), [p for p, qs in probes.items() if not qs]  # each probe is a real question
    for probe, matches in probes.items():
        for question in matches:
            assert find_cue(question) is None, (probe, question[:200])
    # JudgeBench is objective (exact answers): the heuristic stays silent on the whole set.
    flagged = [(source, q[:120]) for source, q in questions if find_cue(q)]
    assert flagged == []
