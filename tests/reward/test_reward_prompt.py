"""The reference-aware prompt ``listwise-ref-v2-terse``: framed like every prompt, keyed into the cache, read back by the
fake provider and graded by the simulated judge; and the text helpers the reward adapters use."""

from __future__ import annotations

from pcfjudge.backends.sim import SimJudge, SimParams, reference_agreement
from pcfjudge.engine.listwise_runs import ListwiseTask, plan_runs
from pcfjudge.judging.prompts import LISTWISE_REF_VERSION, read_blocks, render_listwise
from pcfjudge.reward.text import chat_text, strip_end_tokens
from pcfjudge.types import DecodingParams
from pcfjudge_lab.fakeprovider import fake_task as task

QUESTION = "What is the chemical symbol for gold?"


def test_the_reference_sits_in_its_own_block_in_the_shared_prefix() -> None:
    prompt = render_listwise(QUESTION, ["Au.", "Ag."], "0123456789abcdef", reference="Au")
    assert prompt.version == LISTWISE_REF_VERSION == "listwise-ref-v2"
    assert "<<<REFERENCE 0123456789abcdef>>>\nAu\n<<<END REFERENCE 0123456789abcdef>>>" in prompt.prefix
    assert [kind for kind, _ in read_blocks(prompt.user)] == ["QUESTION", "REFERENCE", "CANDIDATE A", "CANDIDATE B"]
    assert prompt.schema == render_listwise(QUESTION, ["Au.", "Ag."], "0123456789abcdef").schema  # same answer shape
    assert "reference" in prompt.system and "reference" not in render_listwise(QUESTION, ["a"], "0" * 16).system


def test_the_reference_is_part_of_every_cache_key() -> None:
    params = DecodingParams()
    keys = [
        {
            r.key
            for r in plan_runs(
                ListwiseTask(QUESTION, ["0", "1"], ["Au.", "Ag."], k=2, reference=ref), "sim:default", params
            ).runs
        }
        for ref in (None, "Au", "Ag")
    ]
    assert len(set().union(*keys)) == 6  # three disjoint sets of two keys
    assert all(LISTWISE_REF_VERSION in key for key in keys[1])


def test_the_fake_provider_reads_the_reference_and_a_single_candidate() -> None:
    prompt = render_listwise(QUESTION, ["Au, from the Latin aurum."], "fedcba9876543210", reference="Au")
    call = task.recover(prompt.system, prompt.user, prompt.schema_name)
    assert call is not None and call.reference == "Au" and call.displayed == ("Au, from the Latin aurum.",)
    answer = task.answer(call, seed=0, fault=None)
    assert list(answer["candidates"]) == ["A"] and answer["ranking"] == ["A"]


def test_the_simulated_judge_grades_by_agreement_with_the_reference() -> None:
    assert reference_agreement("The symbol is AU.", "Au") == 1.0
    assert reference_agreement("Silver", "Au") == 0.0
    assert reference_agreement("It is gold, Au", "gold (Au)") == 1.0
    assert reference_agreement("gold", "gold (Au)") == 0.5
    prompt = render_listwise(QUESTION, ["Ag.", "Au."], "0" * 16, reference="Au")
    call = task.recover(prompt.system, prompt.user, prompt.schema_name)
    assert call is not None
    scores = SimJudge(SimParams()).scores(call)
    assert scores[1] > scores[0]


def test_chat_prompts_and_end_markers() -> None:
    assert chat_text("plain") == "plain"
    assert chat_text([{"role": "user", "content": "Hi?"}]) == "Hi?"
    messages = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": [{"type": "text", "text": "Hi?"}]},
    ]
    assert chat_text(messages) == "system: Be brief.\n\nuser: Hi?"
    assert strip_end_tokens("Paris.<|im_end|>") == "Paris."
    assert strip_end_tokens("Paris. </s>\n<|endoftext|>") == "Paris."
    assert strip_end_tokens("a </s> b ") == "a </s> b "  # only at the very end
