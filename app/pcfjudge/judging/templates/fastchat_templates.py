"""MT-Bench's pairwise judge prompts (FastChat) and RewardBench's generative prompt, which reuses their body.

* MT-Bench ``pair-v2``, ``pair-math-v1`` (with a reference answer) and their multi-turn forms
  ``pair-v2-multi-turn`` and ``pair-math-v1-multi-turn`` (each assistant's whole two-turn conversation, the
  reference's two turns above them): lm-sys/FastChat, ``fastchat/llm_judge/data/judge_prompts.jsonl``
  (https://github.com/lm-sys/FastChat, Apache-2.0). Parser (``fastchat/llm_judge/common.py`` ``run_judge_pair``,
  output format ``[[A]]``, single- and multi-turn alike): ``"[[A]]" in judgment`` → A, else ``"[[B]]"`` → B, else
  ``"[[C]]"`` → tie, else error.
* RewardBench generative (``prompt_v2`` with ``MTBENCH_V2``'s template, no tie): allenai/reward-bench,
  ``rewardbench/generative.py`` (https://github.com/allenai/reward-bench, Apache-2.0). Parser
  (``process_judgement``): ``"[[A]]" in judgment`` → A, else ``"[[B]]"`` → B, else error.
"""

from __future__ import annotations

import re

from pcfjudge.judging.templates.template_base import Origin, Template
from pcfjudge.judging.templates.template_verdicts import Tokens, Verdicts, replies

SLOTS = re.compile(
    r"\[User Question\]\n(?P<q>.*?)\n\n"
    r"(?:\[The Start of Reference Answer\]\n(?P<ref>.*?)\n\[The End of Reference Answer\]\n\n)?"
    r"\[The Start of Assistant A's Answer\]\n(?P<a>.*?)\n\[The End of Assistant A's Answer\]\n\n"
    r"\[The Start of Assistant B's Answer\]\n(?P<b>.*?)\n\[The End of Assistant B's Answer\]",
    re.S,
)
REFERENCE = "[The Start of Reference Answer]"
CONVERSATION = "<|The Start of Assistant A's Conversation with User|>"
REFERENCE_TURNS = "<|The Start of Reference Answer|>"
TIE = '"[[C]]" for a tie'
FASTCHAT = "https://github.com/lm-sys/FastChat/blob/main/fastchat/llm_judge/data/judge_prompts.jsonl"
REWARDBENCH = "https://github.com/allenai/reward-bench/blob/main/rewardbench/generative.py"


def conversation(heading: str, speaker: str, answers: str, questions: tuple[str, str]) -> str:
    """One two-turn block of a multi-turn prompt, as a pattern: ``answers`` names its answers' groups (``a``:
    ``a``, ``a2``); ``questions``, the patterns of the user's two turns (captured in the first block, then the
    same text again)."""
    start, end = re.escape(f"<|The Start of {heading}|>"), re.escape(f"<|The End of {heading}|>")
    turns = (
        rf"### User:\n{q}\n\n### {speaker}:\n(?P<{g}>.*?)\n\n"
        for q, g in zip(questions, (answers, f"{answers}2"), strict=True)
    )
    return rf"{start}\n\n{''.join(turns)}{end}"


def multi_turn(reference: bool) -> re.Pattern[str]:
    """``pair-v2-multi-turn``'s slots, or with the reference's turns first ``pair-math-v1-multi-turn``'s."""
    captured, seen = (r"(?P<q>.*?)", r"(?P<q2>.*?)"), (r"(?P=q)", r"(?P=q2)")
    blocks = [conversation("Reference Answer", "Reference answer", "ref", captured)] if reference else []
    for label in ("A", "B"):
        asked = seen if blocks else captured
        blocks.append(
            conversation(f"Assistant {label}'s Conversation with User", f"Assistant {label}", label.lower(), asked)
        )
    return re.compile("\n\n\n".join(blocks), re.S)


MT_BENCH_VERDICTS = Verdicts(
    Tokens((("[[A]]", 1), ("[[B]]", -1), ("[[C]]", 0))),
    replies(
        {
            1: "Assistant A's answer is better. [[A]]",
            -1: "Assistant B's answer is better. [[B]]",
            0: "Both assistants answer equally well. [[C]]",
        }
    ),
    re.compile(r"\[\[[AB]\]\]|[Aa]ssistant [AB]\b"),
)


def mt_bench(variant: str, needle: str, slots: re.Pattern[str], without: str | None = None) -> Template:
    """MT-Bench's ``variant`` prompt of judge_prompts.jsonl: recognised by its tie instruction and ``needle``."""
    origin = Origin(f"MT-Bench (FastChat llm_judge), {variant}", f"{FASTCHAT} ({variant})")
    return Template(
        f"mt-bench-{variant}", origin, (TIE, needle), slots, MT_BENCH_VERDICTS, absent=(without,) if without else ()
    )


MT_BENCH = mt_bench("pair-v2", "[User Question]", SLOTS, without=REFERENCE)
MT_BENCH_REFERENCE = mt_bench("pair-math-v1", REFERENCE, SLOTS)
MT_BENCH_MULTI_TURN = mt_bench("pair-v2-multi-turn", CONVERSATION, multi_turn(False), without=REFERENCE_TURNS)
MT_BENCH_MULTI_TURN_REFERENCE = mt_bench("pair-math-v1-multi-turn", REFERENCE_TURNS, multi_turn(True))
REWARDBENCH_GENERATIVE = Template(
    "rewardbench-generative",
    Origin("RewardBench (generative judges)", REWARDBENCH + " (prompt_v2, MTBENCH_V2)"),
    ('"[[A]]" if assistant A is better',),
    SLOTS,
    Verdicts(Tokens((("[[A]]", 1), ("[[B]]", -1))), MT_BENCH_VERDICTS.write, MT_BENCH_VERDICTS.mention, tie=False),
    absent=("[[C]]",),
)
