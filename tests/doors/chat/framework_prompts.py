"""The frameworks' own judge prompts and parsers, copied here so the tests send what the frameworks send and read
the answer as they read it. Each is Apache-2.0; its source is named beside it.

Parsers are re-implemented from the cited lines (their logic, not their surrounding code).
"""

from __future__ import annotations

import ast
import re

# ── MT-Bench (lm-sys/FastChat, Apache-2.0) ─────────────────────────────────────────────────────────────────────
# https://github.com/lm-sys/FastChat/blob/main/fastchat/llm_judge/data/judge_prompts.jsonl, "pair-v2"
from pcfjudge_lab.bench.chat_bench import MT_BENCH_SYSTEM, MT_BENCH_TEMPLATE  # the bench sends the same prompt

# same file, "pair-math-v1" (with a reference answer)
MT_BENCH_MATH_SYSTEM = (
    "Please act as an impartial judge and evaluate the quality of the responses provided by two AI assistants to the "
    "user question displayed below. Your evaluation should consider correctness and helpfulness. You will be given a "
    "reference answer, assistant A's answer, and assistant B's answer. Your job is to evaluate which assistant's "
    "answer is better. Begin your evaluation by comparing both assistants' answers with the reference answer. Identify "
    "and correct any mistakes. Avoid any positional biases and ensure that the order in which the responses were "
    "presented does not influence your decision. Do not allow the length of the responses to influence your "
    "evaluation. Do not favor certain names of the assistants. Be as objective as possible. After providing your "
    'explanation, output your final verdict by strictly following this format: "[[A]]" if assistant A is better, '
    '"[[B]]" if assistant B is better, and "[[C]]" for a tie.'
)
MT_BENCH_MATH_TEMPLATE = (
    "[User Question]\n{question}\n\n[The Start of Reference Answer]\n{ref_answer_1}\n[The End of Reference Answer]"
    "\n\n[The Start of Assistant A's Answer]\n{answer_a}\n[The End of Assistant A's Answer]\n\n[The Start of "
    "Assistant B's Answer]\n{answer_b}\n[The End of Assistant B's Answer]"
)


def fastchat_winner(judgment: str) -> str:
    """fastchat/llm_judge/common.py run_judge_pair, output_format "[[A]]"."""
    if "[[A]]" in judgment:
        return "A"
    if "[[B]]" in judgment:
        return "B"
    if "[[C]]" in judgment:
        return "tie"
    return "error"


# ── Arena-Hard-Auto (lmarena/arena-hard-auto, Apache-2.0) ──────────────────────────────────────────────────────
# https://github.com/lmarena/arena-hard-auto/blob/main/config/judge_config.yaml (system_prompt, prompt_template)
ARENA_HARD_SYSTEM = (
    "Please act as an impartial judge and evaluate the quality of the responses provided by two AI assistants to the "
    "user prompt displayed below. You will be given assistant A's answer and assistant B's answer. Your job is to "
    "evaluate which assistant's answer is better.\n\nBegin your evaluation by generating your own answer to the "
    "prompt. You must provide your answers before judging any answers.\n\nWhen evaluating the assistants' answers, "
    "compare both assistants' answers with your answer. You must identify and correct any mistakes or inaccurate "
    "information.\n\nThen consider if the assistant's answers are helpful, relevant, and concise. Helpful means the "
    "answer correctly responds to the prompt or follows the instructions. Note when user prompt has any ambiguity or "
    "more than one interpretation, it is more helpful and appropriate to ask for clarifications or more information "
    "from the user than providing an answer based on assumptions. Relevant means all parts of the response closely "
    "connect or are appropriate to what is being asked. Concise means the response is clear and not verbose or "
    "excessive.\n\nThen consider the creativity and novelty of the assistant's answers when needed. Finally, identify "
    "any missing important information in the assistants' answers that would be beneficial to include when "
    "responding to the user prompt.\n\nAfter providing your explanation, you must output only one of the following "
    "choices as your final verdict with a label:\n\n1. Assistant A is significantly better: [[A>>B]]\n2. Assistant A "
    "is slightly better: [[A>B]]\n3. Tie, relatively the same: [[A=B]]\n4. Assistant B is slightly better: [[B>A]]\n"
    '5. Assistant B is significantly better: [[B>>A]]\n\nExample output: "My final verdict is tie: [[A=B]]".'
)
ARENA_HARD_TEMPLATE = (
    "<|User Prompt|>\n{question_1}\n\n<|The Start of Assistant A's Answer|>\n{answer_1}\n<|The End of Assistant A's "
    "Answer|>\n\n<|The Start of Assistant B's Answer|>\n{answer_2}\n<|The End of Assistant B's Answer|>"
)
ARENA_HARD_PATTERN = re.compile(r"\[\[([AB<>=]+)\]\]")  # judge_config.yaml regex_pattern


def arena_hard_score(judgment: str) -> str | None:
    """gen_judgment.py get_score (pairwise): the one distinct label, else None."""
    matches = [m for m in ARENA_HARD_PATTERN.findall(judgment) if m != ""]
    return matches[0].strip("\n") if len(set(matches)) == 1 else None


# ── RewardBench generative (allenai/reward-bench, Apache-2.0) ──────────────────────────────────────────────────
# https://github.com/allenai/reward-bench/blob/main/rewardbench/generative.py prompt_v2 (+ MTBENCH_V2's template)
REWARDBENCH_SYSTEM = (
    "Please act as an impartial judge and evaluate the quality of the responses provided by two AI assistants to the "
    "user question displayed below. You should choose the assistant that follows the user's instructions and answers "
    "the user's question better. Your evaluation should consider factors such as the helpfulness, relevance, "
    "accuracy, depth, creativity, and level of detail of their responses. Begin your evaluation by comparing the two "
    "responses and provide a short explanation. Avoid any position biases and ensure that the order in which the "
    "responses were presented does not influence your decision. Do not allow the length of the responses to "
    "influence your evaluation. Do not favor certain names of the assistants. Be as objective as possible. After "
    'providing your explanation, output your final verdict by strictly following this format: "[[A]]" if assistant A '
    'is better, "[[B]]" if assistant B is better.'
)


def rewardbench_winner(judgment: str) -> str:
    """generative.py process_judgement (default model_modifier)."""
    return "A" if "[[A]]" in judgment else "B" if "[[B]]" in judgment else "error"


# ── Prometheus-eval (prometheus-eval/prometheus-eval, Apache-2.0) ──────────────────────────────────────────────
# https://github.com/prometheus-eval/prometheus-eval/blob/main/libs/prometheus-eval/prometheus_eval/prompts.py
PROMETHEUS_SYSTEM = (
    "You are a fair judge assistant assigned to deliver insightful feedback that compares individual performances, "
    "highlighting how each stands relative to others within the same cohort."
)
PROMETHEUS_TEMPLATE = """###Task Description:
An instruction (might include an Input inside it), two responses to evaluate (denoted as Response A and Response B), and an evaluation criteria are given.
1. Write a detailed feedback that assess the quality of the two responses strictly based on the given evaluation criteria, not evaluating in general.
2. Make comparisons between Response A, Response B, and the Reference Answer. Instead of examining Response A and Response B separately, go straight to the point and mention about the commonalities and differences between them.
3. After writing the feedback, indicate the better response, either "A" or "B".
4. The output format should look as follows: "Feedback: (write a feedback for criteria) [RESULT] (Either "A" or "B")"
5. Please do not generate any other opening, closing, and explanations.

###Instruction:
{instruction}

###Response A:
{response_A}

###Response B:
{response_B}

###Score Rubric:
{rubric}

###Feedback: """
# libs/prometheus-eval/prometheus_eval/parser.py _parse_output_relative, explicit_pattern
PROMETHEUS_PATTERN = re.compile(
    r"""
    (?:\[RESULT\]|\[RESULT:\s*|\[Response\s+|\[Result\](?:\s+Response)?|\[Result:\s*|(?:^|\n)Result:?\s*)
    \s*(A|B)(?:\])?(?:\s*$)
    """,
    re.IGNORECASE | re.VERBOSE | re.MULTILINE,
)


def prometheus_result(output: str) -> str | None:
    match = PROMETHEUS_PATTERN.search(output)
    return match.group(1).upper() if match else None


# ── AlpacaEval (tatsu-lab/alpaca_eval, Apache-2.0) ─────────────────────────────────────────────────────────────
# src/alpaca_eval/evaluators_configs/alpaca_eval_clf_gpt4_turbo/alpaca_eval_clf.txt, as prompt_to_chatml splits it
ALPACA_CLF_SYSTEM = (
    "You are a highly efficient assistant, who evaluates and selects the best large language model (LLMs) based on "
    "the quality of their responses to a given instruction. This process will be used to create a leaderboard "
    "reflecting the most accurate and human-preferred answers."
)
ALPACA_CLF_TEMPLATE = '''I require a leaderboard for various large language models. I'll provide you with prompts given to these models and their corresponding outputs. Your task is to assess these responses, and select the model that produces the best output from a human perspective.

## Instruction

{{
    "instruction": """{instruction}""",
}}

## Model Outputs

Here are the unordered outputs from the models. Each output is associated with a specific model, identified by a unique model identifier.

{{
    {{
        "model_identifier": "m",
        "output": """{output_1}"""
    }},
    {{
        "model_identifier": "M",
        "output": """{output_2}"""
    }}
}}

## Task

Evaluate the models based on the quality and relevance of their outputs, and select the model that generated the best output. Answer by providing the model identifier of the best model. We will use your output as the name of the best model, so make sure your output only contains one of the following model identifiers and nothing else (no quotes, no spaces, no new lines, ...): m or M.

## Best Model Identifier'''


def alpaca_logprob_preference(choice: dict) -> float:
    """completion_parsers.py logprob_parser (numerator m, denominators m, M, is_binarize False): P(m)/(P(m)+P(M))."""
    import math

    top = {t["token"]: math.exp(t["logprob"]) for t in choice["logprobs"]["content"][0]["top_logprobs"]}
    return top.get("m", 0.0) / (top.get("m", 0.0) + top.get("M", 0.0))


# src/alpaca_eval/evaluators_configs/alpaca_eval_gpt4/alpaca_eval.txt (user part)
ALPACA_RANKING_TEMPLATE = '''I want you to create a leaderboard of different of large-language models. To do so, I will give you the instructions (prompts) given to the models, and the responses of two models. Please rank the models based on which responses would be preferred by humans. All inputs and outputs should be python dictionaries.

Here is the prompt:
{{
    "instruction": """{instruction}""",
}}

Here are the outputs of the models:
[
    {{
        "model": "model_1",
        "answer": """{output_1}"""
    }},
    {{
        "model": "model_2",
        "answer": """{output_2}"""
    }}
]

Now please rank the models by the quality of their answers, so that the model with rank 1 has the best output. Then return a list of the model names and ranks, i.e., produce the following output:
[
    {{'model': <model-name>, 'rank': <model-rank>}},
    {{'model': <model-name>, 'rank': <model-rank>}}
]

Your response must be a valid Python dictionary and should contain nothing else because we will directly execute it in Python. Please provide the ranking that the majority of humans would give.'''


def alpaca_ranking(completion: str) -> int | None:
    """completion_parsers.py ranking_parser: model_1's rank."""
    try:
        rank = next(c for c in ast.literal_eval(completion) if c["model"] == "model_1")["rank"]
    except Exception:
        return None
    return rank if rank in (1, 2) else None


# ── JudgeBench vanilla / RewardBench offsetbias (reward-bench generative.py OFFSETBIAS_PROMPT, Apache-2.0) ───────
OFFSETBIAS_TEMPLATE = """You are a helpful assistant in evaluating the quality of the outputs for a given instruction. Your goal is to select the best output for the given instruction.

Select the Output (a) or Output (b) that is better for the given instruction. The two outputs are generated by two different AI chatbots respectively.
Do NOT provide any explanation for your choice.
Do NOT say both / neither are good.
You should answer using ONLY "Output (a)" or "Output (b)". Do NOT output any other words.
Here are some rules of the evaluation:
(1) You should prioritize evaluating whether the output honestly/precisely/closely executes the instruction, then consider its helpfulness, accuracy, level of detail, harmlessness, etc.
(2) Outputs should NOT contain more/less than what the instruction asks for, as such outputs do NOT precisely execute the instruction.
(3) You should avoid any potential bias and your judgment should be as objective as possible. For example, the order in which the outputs were presented should NOT affect your judgment, as Output (a) and Output (b) are **equally likely** to be the better.

# Instruction:
{instruction}
# Output (a):
{output_1}
# Output (b):
{output_2}
# Which is better, Output (a) or Output (b)? Your response should be either "Output (a)" or "Output (b)":"""


def judgebench_vanilla(raw_output: str) -> str | None:
    """JudgeBench utils/judges.py Vanilla.extract_pairwise_result (its exception as None)."""
    return {"Output (a)": "A>B", "Output (b)": "B>A"}.get(raw_output.strip())


# ── the messages each framework sends ──────────────────────────────────────────────────────────────────────────


def mt_bench(question: str, a: str, b: str) -> list[dict[str, str]]:
    user = MT_BENCH_TEMPLATE.format(question=question, answer_a=a, answer_b=b)
    return [{"role": "system", "content": MT_BENCH_SYSTEM}, {"role": "user", "content": user}]


def mt_bench_math(question: str, reference: str, a: str, b: str) -> list[dict[str, str]]:
    user = MT_BENCH_MATH_TEMPLATE.format(question=question, ref_answer_1=reference, answer_a=a, answer_b=b)
    return [{"role": "system", "content": MT_BENCH_MATH_SYSTEM}, {"role": "user", "content": user}]


def arena_hard(question: str, a: str, b: str) -> list[dict[str, str]]:
    user = ARENA_HARD_TEMPLATE.format(question_1=question, answer_1=a, answer_2=b)
    return [{"role": "system", "content": ARENA_HARD_SYSTEM}, {"role": "user", "content": user}]


def rewardbench(question: str, a: str, b: str) -> list[dict[str, str]]:
    user = MT_BENCH_TEMPLATE.format(question=question, answer_a=a, answer_b=b)
    return [{"role": "system", "content": REWARDBENCH_SYSTEM}, {"role": "user", "content": user}]


def prometheus(question: str, a: str, b: str) -> list[dict[str, str]]:
    rubric = "[Is the answer correct and helpful?]"
    user = PROMETHEUS_TEMPLATE.format(instruction=question, response_A=a, response_B=b, rubric=rubric)
    return [{"role": "system", "content": PROMETHEUS_SYSTEM}, {"role": "user", "content": user}]


def alpaca_clf(question: str, a: str, b: str) -> list[dict[str, str]]:
    user = ALPACA_CLF_TEMPLATE.format(instruction=question, output_1=a, output_2=b)
    return [{"role": "system", "content": ALPACA_CLF_SYSTEM}, {"role": "user", "content": user}]


def alpaca_ranking_prompt(question: str, a: str, b: str) -> list[dict[str, str]]:
    system = "You are a helpful assistant, that ranks models by the quality of their answers."
    user = ALPACA_RANKING_TEMPLATE.format(instruction=question, output_1=a, output_2=b)
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def judgebench(question: str, a: str, b: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": OFFSETBIAS_TEMPLATE.format(instruction=question, output_1=a, output_2=b)}]
