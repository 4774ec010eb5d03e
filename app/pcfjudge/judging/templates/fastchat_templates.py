"""MT-Bench's pairwise judge prompts (FastChat) and RewardBench's generative prompt, which reuses their body.

* MT-Bench ``pair-v2`` and ``pair-math-v1`` (with a reference answer): lm-sys/FastChat,
  ``fastchat/llm_judge/data/judge_prompts.jsonl`` (https://github.com/lm-sys/FastChat, Apache-2.0). Parser
  (``fastchat/llm_judge/common.py`` ``run_judge_pair``, output format ``[[A]]``): ``"[[A]]" in judgment`` → A, else
  ``"[[B]]"`` → B, else ``"[[C]]"`` → tie, else error.
* RewardBench generative (``prompt_v2`` with ``MTBENCH_V2``'s template, no tie): allenai/reward-bench,
  ``rewardbench/generative.py`` (https://github.com/allenai/reward-bench, Apache-2.0). Parser
  (``process_judgement``): ``"[[A]]" in judgment`` → A, else ``"[[B]]"`` → B, else error.
"""

from __future__ import annotations

import re

from pcfjudge.judging.templates.template_base import Template, Verdict

SLOTS = re.compile(
    r"\[User Question\]\n(?P<q>.*?)\n\n"
    r"(?:\[The Start of Reference Answer\]\n(?P<ref>.*?)\n\[The End of Reference Answer\]\n\n)?"
    r"\[The Start of Assistant A's Answer\]\n(?P<a>.*?)\n\[The End of Assistant A's Answer\]\n\n"
    r"\[The Start of Assistant B's Answer\]\n(?P<b>.*?)\n\[The End of Assistant B's Answer\]",
    re.S,
)
MENTION = re.compile(r"\[\[[AB]\]\]|[Aa]ssistant [AB]\b")
REFERENCE = "[The Start of Reference Answer]"
FASTCHAT = "https://github.com/lm-sys/FastChat/blob/main/fastchat/llm_judge/data/judge_prompts.jsonl"
REWARDBENCH = "https://github.com/allenai/reward-bench/blob/main/rewardbench/generative.py"


def read_mt_bench(answer: str, labels: tuple[str, ...] = ()) -> Verdict | None:
    """FastChat's ``[[A]]`` parser."""
    if "[[A]]" in answer:
        return 1
    if "[[B]]" in answer:
        return -1
    if "[[C]]" in answer:
        return 0
    return None


def read_rewardbench(answer: str, labels: tuple[str, ...] = ()) -> Verdict | None:
    """RewardBench's ``process_judgement`` (no tie)."""
    if "[[A]]" in answer:
        return 1
    if "[[B]]" in answer:
        return -1
    return None


def write_pair(verdict: Verdict, labels: tuple[str, ...] = ()) -> str:
    if verdict == 0:
        return "Both assistants answer equally well. [[C]]"
    better = "A" if isinstance(verdict, int) and verdict > 0 else "B"
    return f"Assistant {better}'s answer is better. [[{better}]]"


MT_BENCH = Template(
    name="mt-bench-pair-v2",
    framework="MT-Bench (FastChat llm_judge)",
    source=FASTCHAT + " (pair-v2)",
    licence="Apache-2.0",
    needles=('"[[C]]" for a tie',),
    absent=(REFERENCE,),
    slots=SLOTS,
    labels=("A", "B"),
    read=read_mt_bench,
    write=write_pair,
    mention=MENTION,
)
MT_BENCH_REFERENCE = Template(
    name="mt-bench-pair-math-v1",
    framework="MT-Bench (FastChat llm_judge), with a reference answer",
    source=FASTCHAT + " (pair-math-v1)",
    licence="Apache-2.0",
    needles=('"[[C]]" for a tie', REFERENCE),
    slots=SLOTS,
    labels=("A", "B"),
    read=read_mt_bench,
    write=write_pair,
    mention=MENTION,
)
REWARDBENCH_GENERATIVE = Template(
    name="rewardbench-generative",
    framework="RewardBench (generative judges)",
    source=REWARDBENCH + " (prompt_v2, MTBENCH_V2)",
    licence="Apache-2.0",
    needles=('"[[A]]" if assistant A is better',),
    absent=("[[C]]",),
    slots=SLOTS,
    labels=("A", "B"),
    read=read_rewardbench,
    write=write_pair,
    mention=MENTION,
    tie=False,
)
