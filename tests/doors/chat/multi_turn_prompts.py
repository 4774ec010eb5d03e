"""MT-Bench's multi-turn pairwise judge prompts, as FastChat sends them: each assistant's whole two-turn conversation,
with the reference's two turns above them for ``pair-math-v1-multi-turn``. FastChat's wheel (fschat 0.2.36) does
not carry its judge_prompts.jsonl; the text is copied from the repository (lm-sys/FastChat, Apache-2.0):
https://github.com/lm-sys/FastChat/blob/main/fastchat/llm_judge/data/judge_prompts.jsonl, "pair-v2-multi-turn" and
"pair-math-v1-multi-turn". The messages are built as ``fastchat/llm_judge/common.py`` ``run_judge_pair`` builds them
with ``multi_turn=True`` for an OpenAI judge (its system prompt, then the formatted template); FastChat reads the
answer with ``tests.doors.chat.framework_prompts.fastchat_winner``.
"""

from __future__ import annotations

Turns = tuple[str, str]

MT_BENCH_MULTI_SYSTEM = (
    "Please act as an impartial judge and evaluate the quality of the responses provided by two AI assistants to "
    "the user questions. You should choose the assistant that follows the user's instructions and answers the "
    "user's questions better. Your evaluation should consider factors such as the helpfulness, relevance, "
    "accuracy, depth, creativity, and level of detail of their responses. You should focus on who provides a "
    "better answer to the second user question. Begin your evaluation by comparing the responses of the two "
    "assistants and provide a short explanation. Avoid any positional biases and ensure that the order in which "
    "the responses were presented does not influence your decision. Do not allow the length of the responses to "
    "influence your evaluation. Do not favor certain names of the assistants. Be as objective as possible. After "
    'providing your explanation, output your final verdict by strictly following this format: "[[A]]" if assistant '
    'A is better, "[[B]]" if assistant B is better, and "[[C]]" for a tie.'
)
MT_BENCH_MULTI_TEMPLATE = (
    "<|The Start of Assistant A's Conversation with User|>\n\n### User:\n{question_1}\n\n### Assistant A:\n"
    "{answer_a_1}\n\n### User:\n{question_2}\n\n### Assistant A:\n{answer_a_2}\n\n<|The End of Assistant A's "
    "Conversation with User|>\n\n\n<|The Start of Assistant B's Conversation with User|>\n\n### User:\n"
    "{question_1}\n\n### Assistant B:\n{answer_b_1}\n\n### User:\n{question_2}\n\n### Assistant B:\n{answer_b_2}\n"
    "\n<|The End of Assistant B's Conversation with User|>"
)
MT_BENCH_MATH_MULTI_SYSTEM = (
    "Please act as an impartial judge and evaluate the quality of the responses provided by two AI assistants to "
    "the user questions. Your evaluation should consider correctness and helpfulness. You will be given reference "
    "answers, the assistant A's answers, the assistant B's answers. Your job is to determine which assistant "
    "provides correct and helpful answers to the second user question. Begin your evaluation by comparing both "
    "assistants' answers with the reference answers. Identify and correct any mistakes. Avoid any positional "
    "biases and ensure that the order in which the responses were presented does not influence your decision. Do "
    "not allow the length of the responses to influence your evaluation. Do not favor certain names of the "
    "assistants. Be as objective as possible. After providing your explanation, output your final verdict by "
    'strictly following this format: "[[A]]" if assistant A is better, "[[B]]" if assistant B is better, and '
    '"[[C]]" for a tie.'
)
MT_BENCH_MATH_MULTI_TEMPLATE = (
    "<|The Start of Reference Answer|>\n\n### User:\n{question_1}\n\n### Reference answer:\n{ref_answer_1}\n\n### "
    "User:\n{question_2}\n\n### Reference answer:\n{ref_answer_2}\n\n<|The End of Reference Answer|>\n\n\n<|The "
    "Start of Assistant A's Conversation with User|>\n\n### User:\n{question_1}\n\n### Assistant A:\n{answer_a_1}\n"
    "\n### User:\n{question_2}\n\n### Assistant A:\n{answer_a_2}\n\n<|The End of Assistant A's Conversation with "
    "User|>\n\n\n<|The Start of Assistant B's Conversation with User|>\n\n### User:\n{question_1}\n\n### Assistant "
    "B:\n{answer_b_1}\n\n### User:\n{question_2}\n\n### Assistant B:\n{answer_b_2}\n\n<|The End of Assistant B's "
    "Conversation with User|>"
)


def mt_bench_multi_turn(questions: Turns, a: Turns, b: Turns, reference: Turns | None = None) -> list[dict[str, str]]:
    """``run_judge_pair(..., multi_turn=True)``'s messages: ``pair-math-v1-multi-turn`` when there is a reference."""
    system, template = (
        (MT_BENCH_MULTI_SYSTEM, MT_BENCH_MULTI_TEMPLATE)
        if reference is None
        else (MT_BENCH_MATH_MULTI_SYSTEM, MT_BENCH_MATH_MULTI_TEMPLATE)
    )
    kwargs = {} if reference is None else {"ref_answer_1": reference[0], "ref_answer_2": reference[1]}
    user = template.format(
        question_1=questions[0],
        question_2=questions[1],
        answer_a_1=a[0],
        answer_b_1=b[0],
        answer_a_2=a[1],
        answer_b_2=b[1],
        **kwargs,
    )
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]
