"""AlpacaEval's pairwise annotator prompts: tatsu-lab/alpaca_eval (https://github.com/tatsu-lab/alpaca_eval,
Apache-2.0), ``src/alpaca_eval/evaluators_configs/``.

* ``alpaca_eval_clf_gpt4_turbo/alpaca_eval_clf.txt``: the prompt of ``weighted_alpaca_eval_gpt4_turbo`` (AlpacaEval
  2.0's default annotator) and ``alpaca_eval_clf_gpt4_turbo``. The judge answers one token, ``m`` (the first output,
  ``model_identifier`` m) or ``M``; AlpacaEval reads it with ``logprob_parser`` (numerator ``m``, denominators ``m``,
  ``M``) from the answer's ``logprobs``, so the chat door answers the token and, when the request asks for
  ``logprobs``, top log-probabilities of ``m`` and ``M`` made from the orders' agreement.
* ``alpaca_eval_gpt4/alpaca_eval.txt`` (``alpaca_eval_gpt4``): the judge answers a Python list of
  ``{'model': 'model_1'|'model_2', 'rank': 1|2}``; ``ranking_parser`` reads ``model_1``'s rank with
  ``ast.literal_eval``.
"""

from __future__ import annotations

import ast
import re

from pcfjudge.judging.templates.template_base import Origin, Template
from pcfjudge.judging.templates.template_verdicts import Tokens, Verdict, Verdicts, replies

SOURCE = "https://github.com/tatsu-lab/alpaca_eval/blob/main/src/alpaca_eval/evaluators_configs/"
CLF_SLOTS = re.compile(
    r'"instruction": """(?P<q>.*?)""",.*?'
    r'"model_identifier": "m",\s*"output": """(?P<a>.*?)"""\s*\},\s*\{\s*'
    r'"model_identifier": "M",\s*"output": """(?P<b>.*?)"""',
    re.S,
)
RANKING_SLOTS = re.compile(
    r'"instruction": """(?P<q>.*?)""",.*?'
    r'"model": "model_1",\s*"answer": """(?P<a>.*?)"""\s*\},\s*\{\s*'
    r'"model": "model_2",\s*"answer": """(?P<b>.*?)"""',
    re.S,
)
ONE_LETTER = re.compile(r"(?<![A-Za-z])[mM](?![A-Za-z])")
MODEL = re.compile(r"model_[12]")


def read_ranking(answer: str, labels: tuple[str, ...] = ()) -> Verdict | None:
    """``ranking_parser``: ``model_1``'s rank (1 or 2) in the literal list."""
    try:
        ranked = ast.literal_eval(answer.strip())
        rank = next(c for c in ranked if c["model"] == "model_1")["rank"]  # ranking_parser's [...][0]
    except (ValueError, SyntaxError, TypeError, KeyError, StopIteration, MemoryError, RecursionError):
        return None
    return 1 if rank == 1 else -1 if rank == 2 else None


def ranked(first: int) -> str:
    return f"[{{'model': 'model_1', 'rank': {first}}}, {{'model': 'model_2', 'rank': {3 - first}}}]"


ALPACA_EVAL_CLF = Template(
    "alpaca-eval-clf",
    Origin(
        "AlpacaEval 2.0 (weighted_alpaca_eval_gpt4_turbo, alpaca_eval_clf_gpt4_turbo)",
        SOURCE + "alpaca_eval_clf_gpt4_turbo/alpaca_eval_clf.txt",
    ),
    ('"model_identifier": "m"', '"model_identifier": "M"'),
    CLF_SLOTS,
    # the token as ``logprob_parser`` binarises it (``m``: the first output)
    Verdicts(Tokens((("m", 1), ("M", -1)), "whole"), replies({1: "m", -1: "M"}), ONE_LETTER, ONE_LETTER, tie=False),
    labels=("m", "M"),
)
ALPACA_EVAL_RANKING = Template(
    "alpaca-eval-ranking",
    Origin("AlpacaEval (alpaca_eval_gpt4)", SOURCE + "alpaca_eval_gpt4/alpaca_eval.txt"),
    ('"model": "model_1"', '"model": "model_2"'),
    RANKING_SLOTS,
    Verdicts(read_ranking, replies({1: ranked(1), -1: ranked(2)}), MODEL, MODEL, tie=False),
    labels=("model_1", "model_2"),
)
