"""Each framework's own code, installed from PyPI, judging one pair against a ``pcfjudge serve`` in both orders:
``python -m tests.doors.chat.framework_packages <framework> <base_url> <question> <first> <second>`` prints
``{"winners": [...], "parsed": [...]}``, the winning text (or "tie") the framework's own parser read for each order.

Run in a subprocess by tests/doors/chat/test_chat_framework_packages.py: the frameworks' imports (and their warnings,
and LiteLLM's model-cost map, read from its own package copy, never the internet) stay out of pytest's process.

* ``alpaca-eval`` (alpaca_eval 0.6.6): ``alpaca_eval_gpt4``'s prompt file and ``weighted_alpaca_eval_gpt4_turbo``'s,
  filled by ``utils.make_prompts``, sent by ``decoders.openai.openai_completions`` (its own OpenAI client, pointed
  here by ``OPENAI_API_BASE``) with the configs' decoding arguments, read by ``completion_parsers.ranking_parser`` and
  ``completion_parsers.logprob_parser``. alpaca_eval imports ``pkg_resources`` (gone from setuptools 81 and later)
  for two version helpers it does not call here: a stand-in giving those two is installed when the real one is absent.
* ``prometheus-eval`` (prometheus_eval 0.1.20): ``PrometheusEval.relative_grade`` with its ``LiteLLM`` model
  (``openai/<judge>``, ``api_base`` this server), its own prompt, retries and ``parser``.
* ``litellm``: ``litellm.completion(model="openai/<judge>", api_base=...)`` with Arena-Hard-Auto's prompt.
* ``rewardbench`` (rewardbench 0.1.4, in ``.venv/rewardbench``): ``generative.run_judge_pair``, its default prompt
  (``MTBENCH_V2`` with ``prompt_v2``) in FastChat's ``chatgpt`` conversation, sent by its ``chat_completion_openai``
  (the openai SDK's ``OpenAI()``, pointed here by ``OPENAI_BASE_URL``), read by its ``process_judgement``. It only
  sends a model named in its ``OPENAI_MODEL_LIST``: the server names a one-judge jury after one (``REWARDBENCH_MODEL``).
  ``rewardbench/generative.py`` is loaded from its file: the package's ``__init__`` imports torch and transformers
  for the reward models, which the generative path does not use. Everything the module imports is installed.
* ``deepeval`` (deepeval 4.3.1, in ``.venv/deepeval``: its pytest plugin stays out of the venv): ``ArenaGEval``
  (``measure``, synchronous) with its ``OpenAIModel`` (``base_url`` this server; ``DEEPEVAL_MODEL``, a model whose
  structured outputs it uses), its prompts, its JSON parsing and its reason rewrite. DeepEval shuffles the contestants
  (and their masked names) itself with ``random``; seeded alike for both caller orders, it shows them in opposite
  orders, so the two orders the test compares are the two orders the judge saw.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import os
import sys
import types
from collections.abc import Callable
from importlib.resources import files
from typing import Any

JUDGE = "sim:default"
REWARDBENCH_MODEL = "gpt-4o-2024-08-06"  # in rewardbench's OPENAI_MODEL_LIST; the server's jury of JUDGE
DEEPEVAL_MODEL = "gpt-4.1"  # DeepEval sends it response_format json_schema; the server's jury of JUDGE


def _pkg_resources_stand_in() -> None:
    try:
        import pkg_resources  # noqa: F401
    except ImportError:
        from packaging.version import parse

        module = types.ModuleType("pkg_resources")
        module.parse_version = parse  # type: ignore[attr-defined]
        module.get_distribution = lambda name: types.SimpleNamespace(version=importlib.metadata.version(name))  # type: ignore[attr-defined]
        sys.modules["pkg_resources"] = module


def _alpaca_prompt(config: str, question: str, first: str, second: str) -> str:
    import pandas as pd
    from alpaca_eval import utils

    template = (files("alpaca_eval") / "evaluators_configs" / config).read_text()
    frame = pd.DataFrame([{"instruction": question, "output_1": first, "output_2": second}])
    prompts, _ = utils.make_prompts(frame, template)
    return str(prompts[0])


def alpaca_eval_gpt4(base: str, question: str, first: str, second: str) -> tuple[str, Any]:
    from alpaca_eval import completion_parsers
    from alpaca_eval.decoders.openai import openai_completions

    prompt = _alpaca_prompt("alpaca_eval_gpt4/alpaca_eval.txt", question, first, second)
    out = openai_completions([prompt], model_name=JUDGE, max_tokens=100, temperature=0)  # the config's arguments
    (rank,) = completion_parsers.ranking_parser(out["completions"][0])
    return {1: "first", 2: "second"}[rank], rank


def weighted_alpaca_eval_gpt4_turbo(base: str, question: str, first: str, second: str) -> tuple[str, Any]:
    from alpaca_eval import completion_parsers
    from alpaca_eval.decoders.openai import openai_completions

    prompt = _alpaca_prompt("alpaca_eval_clf_gpt4_turbo/alpaca_eval_clf.txt", question, first, second)
    out = openai_completions(
        [prompt], model_name=JUDGE, max_tokens=1, temperature=1, logprobs=True, top_logprobs=5
    )  # the config's arguments
    (preference,) = completion_parsers.logprob_parser(
        out["completions_all"][0], numerator_token="m", denominator_tokens=["m", "M"], is_binarize=False
    )
    p = round(float(preference), 6)  # AlpacaEval's preference, 2 - P(m): 1 the first output, 2 the second
    return ("first" if p < 1.5 else "second" if p > 1.5 else "tie"), p


def prometheus_eval(base: str, question: str, first: str, second: str) -> tuple[str, Any]:
    from prometheus_eval import PrometheusEval
    from prometheus_eval.litellm import LiteLLM
    from prometheus_eval.prompts import HELPFULNESS_RUBRIC, RELATIVE_PROMPT_WO_REF

    judge = PrometheusEval(
        model=LiteLLM(f"openai/{JUDGE}", api_base=f"{base}/v1"), relative_grade_template=RELATIVE_PROMPT_WO_REF
    )
    _, scores = judge.relative_grade(
        instructions=[question], responses_A=[first], responses_B=[second], rubric=HELPFULNESS_RUBRIC
    )
    return {"A": "first", "B": "second"}[scores[0]], scores[0]


def litellm_arena_hard(base: str, question: str, first: str, second: str) -> tuple[str, Any]:
    import litellm

    from tests.doors.chat import framework_prompts as fp

    reply = litellm.completion(
        model=f"openai/{JUDGE}", api_base=f"{base}/v1", messages=fp.arena_hard(question, first, second), temperature=0
    )
    label = fp.arena_hard_score(reply.choices[0].message.content)
    return {"A>>B": "first", "A>B": "first", "A=B": "tie", "B>A": "second", "B>>A": "second"}[str(label)], label


def rewardbench(base: str, question: str, first: str, second: str) -> tuple[str, Any]:
    spec = importlib.util.find_spec("rewardbench")
    assert spec is not None and spec.origin is not None, "rewardbench is not on the path (.venv/rewardbench)"
    path = os.path.join(os.path.dirname(spec.origin), "generative.py")
    module_spec = importlib.util.spec_from_file_location("rewardbench_generative", path)
    assert module_spec is not None and module_spec.loader is not None
    generative = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(generative)
    answer_a = [{"role": "user", "content": question}, {"role": "assistant", "content": first}]
    answer_b = [{"role": "user", "content": question}, {"role": "assistant", "content": second}]
    winner, _, judgment = generative.run_judge_pair(question, answer_a, answer_b, REWARDBENCH_MODEL)
    assert winner in ("A", "B"), judgment  # process_judgement's "error": no [[A]] or [[B]] in the reply
    return {"A": "first", "B": "second"}[winner], winner


def deepeval(base: str, question: str, first: str, second: str) -> tuple[str, Any]:
    import random

    os.environ.update(DEEPEVAL_TELEMETRY_OPT_OUT="1", DEEPEVAL_DISABLE_DOTENV="1")
    from deepeval.metrics import ArenaGEval
    from deepeval.models import OpenAIModel
    from deepeval.test_case import ArenaTestCase, Contestant, LLMTestCase, SingleTurnParams

    model = OpenAIModel(model=DEEPEVAL_MODEL, base_url=f"{base}/v1", api_key="unused")
    metric = ArenaGEval(
        name="Helpfulness",
        evaluation_params=[SingleTurnParams.INPUT, SingleTurnParams.ACTUAL_OUTPUT],
        evaluation_steps=["Prefer the answer that responds to the input correctly and helpfully."],
        model=model,
        async_mode=False,
    )
    contestants = [
        Contestant(name=name, test_case=LLMTestCase(input=question, actual_output=text))
        for name, text in (("first", first), ("second", second))
    ]
    random.seed(0)  # DeepEval's own shuffle: the same draw for both caller orders shows them reversed
    winner = metric.measure(ArenaTestCase(contestants=contestants), _show_indicator=False)
    return winner, winner


FRAMEWORKS: dict[str, Callable[[str, str, str, str], tuple[str, Any]]] = {
    "alpaca-eval-gpt4": alpaca_eval_gpt4,
    "weighted-alpaca-eval-gpt4-turbo": weighted_alpaca_eval_gpt4_turbo,
    "prometheus-eval": prometheus_eval,
    "litellm-arena-hard": litellm_arena_hard,
    "rewardbench": rewardbench,
    "deepeval": deepeval,
}


def main(framework: str, base: str, question: str, a: str, b: str) -> dict[str, Any]:
    os.environ.update(OPENAI_API_BASE=f"{base}/v1", OPENAI_BASE_URL=f"{base}/v1", OPENAI_API_KEY="unused")
    os.environ.update(LITELLM_LOCAL_MODEL_COST_MAP="True")
    _pkg_resources_stand_in()
    winners, parsed = [], []
    for first, second in ((a, b), (b, a)):
        side, label = FRAMEWORKS[framework](base, question, first, second)
        winners.append({"first": first, "second": second, "tie": "tie"}[side])
        parsed.append(label)
    return {"winners": winners, "parsed": parsed}


if __name__ == "__main__":
    print(json.dumps(main(*sys.argv[1:6])))
