"""Prompt v2's answers are complete by construction: every answer its schema admits is a usable judgment.

Grammar-constrained decoding (llama.cpp, vLLM, SGLang, TGI, Ollama) can only write what the schema admits, so drawing
answers from the schema stands in for every engine: each one must validate, with every label judged and every score
in range. The old v1 schema admitted incomplete answers (the failure seen on a real engine: 2 of 3 candidates judged
and ``"ranking": []``); that is reproduced first.
"""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pcfjudge.engine.pairwise_passes import validate_answer
from pcfjudge.judging.pairwise_prompts import pairwise_schema_v2, render_keyed, render_pairwise
from pcfjudge.judging.parse import OutputError, validate_listwise
from pcfjudge.judging.prompts import RATIONALE_CHARS, PromptStyle, listwise_schema, listwise_schema_v2, render_listwise

LABELS = ("A", "B", "C")


def from_schema(schema: dict[str, Any]) -> st.SearchStrategy[Any]:
    """Every value the schema admits, for the keywords the answer schemas use (what a grammar built from the
    schema can emit). ``check`` below asserts each draw is valid under the schema, so the generator cannot drift."""
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    kind = schema["type"]
    if kind == "boolean":
        return st.booleans()
    if kind == "integer":
        return st.integers(schema.get("minimum"), schema.get("maximum"))
    if kind == "string":
        return st.text(max_size=schema.get("maxLength"))
    if kind == "array":
        return st.lists(
            from_schema(schema["items"]), min_size=schema.get("minItems", 0), max_size=schema.get("maxItems")
        )
    assert kind == "object" and schema["additionalProperties"] is False
    assert schema["required"] == list(schema["properties"])
    return st.fixed_dictionaries({name: from_schema(sub) for name, sub in schema["properties"].items()})


FAST = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def test_v1_admits_the_incomplete_answer_a_real_engine_wrote() -> None:
    """SmolLM2 under llama.cpp's grammar for the v1 schema: two of three candidates judged, an empty ranking."""
    incomplete = {
        "candidates": [
            {
                "label": "A",
                "score": 80,
                "rationale": "ok",
                "major_error": False,
                "hallucinated_specificity": False,
                "calibrated_uncertainty": False,
            },
            {
                "label": "B",
                "score": 20,
                "rationale": "no",
                "major_error": True,
                "hallucinated_specificity": False,
                "calibrated_uncertainty": False,
            },
        ],
        "ranking": [],
    }
    jsonschema.validate(incomplete, listwise_schema(LABELS))  # the v1 schema lets it through …
    with pytest.raises(OutputError) as info:
        validate_listwise(incomplete, LABELS)
    assert info.value.kind == "wrong_labels"  # … and the run is lost
    with pytest.raises(jsonschema.ValidationError):  # v2 refuses it: C is a required property
        jsonschema.validate(
            {"candidates": {k["label"]: k for k in incomplete["candidates"]}, "ranking": []}, listwise_schema_v2(LABELS)
        )


@pytest.mark.parametrize("rationales", [True, False])
def test_every_v2_listwise_answer_is_a_complete_judgment(rationales: bool) -> None:
    schema = listwise_schema_v2(LABELS, rationales=rationales)
    jsonschema.Draft202012Validator.check_schema(schema)

    @FAST
    @given(from_schema(schema))
    def check(answer: dict[str, object]) -> None:
        jsonschema.validate(answer, schema)
        parsed = validate_listwise(json.dumps(answer), LABELS)
        assert len(parsed.judgments) == len(LABELS)
        assert all(0 <= j.score <= 100 and j.score == int(j.score) for j in parsed.judgments)
        assert sorted(j.rank for j in parsed.judgments) == [1.0, 2.0, 3.0] or parsed.rank_source == "scores"
        assert all(len(j.rationale) <= RATIONALE_CHARS for j in parsed.judgments)
        assert rationales or all(j.rationale == "" for j in parsed.judgments)

    check()


def test_a_ranking_that_repeats_a_label_is_salvaged_from_the_scores() -> None:
    """The schema fixes the ranking's length; uniqueness no grammar enforces, so a repeat falls back to the scores
    (the paper's ranks-from-scores rule) and the run says so."""
    entry = {"major_error": False, "hallucinated_specificity": False, "calibrated_uncertainty": False}
    answer = {
        "candidates": {"A": {"score": 10, **entry}, "B": {"score": 90, **entry}, "C": {"score": 50, **entry}},
        "ranking": ["A", "A", "B"],
    }
    jsonschema.validate(answer, listwise_schema_v2(LABELS, rationales=False))
    parsed = validate_listwise(answer, LABELS)
    assert parsed.rank_source == "scores"
    assert [j.rank for j in parsed.judgments] == [3.0, 1.0, 2.0]


@pytest.mark.parametrize(("keyed", "rationales"), [(False, True), (False, False), (True, True), (True, False)])
def test_every_v2_pairwise_answer_is_usable(keyed: bool, rationales: bool) -> None:
    schema = pairwise_schema_v2(keyed=keyed, rationales=rationales)

    @FAST
    @given(from_schema(schema))
    def check(answer: dict[str, object]) -> None:
        jsonschema.validate(answer, schema)
        out = validate_answer(json.dumps(answer), keyed=keyed)
        assert out["verdict"] in ("A", "B", "tie")
        assert rationales or out["rationale"] == ""

    check()


def test_v2_puts_scores_and_flags_before_the_rationale_and_bounds_every_string() -> None:
    schema = render_listwise("Q?", ["a", "b"], "0" * 16).schema
    entry = schema["properties"]["candidates"]["properties"]["A"]
    assert list(entry["properties"]) == [
        "score",
        "major_error",
        "hallucinated_specificity",
        "calibrated_uncertainty",
        "rationale",
    ]
    assert entry["properties"]["rationale"]["maxLength"] == RATIONALE_CHARS
    assert schema["properties"]["ranking"]["minItems"] == schema["properties"]["ranking"]["maxItems"] == 2
    keyed = render_keyed("Q?", ["a", "b"], "0" * 16).schema
    assert list(keyed["properties"]) == ["resolved_answer", "verdict", "rationale"]
    assert all("maxLength" in p for p in keyed["properties"].values() if p.get("type") == "string" and "enum" not in p)


def test_terse_prompts_ask_for_no_rationale_and_have_their_own_version() -> None:
    terse = PromptStyle(rationales=False)
    listwise = render_listwise("Q?", ["a", "b"], "0" * 16, style=terse)
    pairwise = render_pairwise("Q?", ["a", "b"], "0" * 16, terse)
    assert (listwise.version, pairwise.version) == ("listwise-v2-terse", "pairwise-v2-terse")
    assert "rationale" not in listwise.user and "rationale" not in json.dumps(listwise.schema)
    assert "rationale" not in pairwise.user and "rationale" not in json.dumps(pairwise.schema)
    assert render_listwise("Q?", ["a", "b"], "0" * 16, style=PromptStyle("v1")).version == "listwise-v1"


def test_v2_instructions_are_a_prefix_shared_across_requests() -> None:
    """The framing nonce comes after the instructions, so two requests' prompts share the instructions as a prefix
    (engine prefix caches hit across requests too), while the K permutations of one request share the question."""
    one = render_listwise("Q?", ["a", "b"], "0123456789abcdef")
    two = render_listwise("Another question?", ["c", "d"], "fedcba9876543210")
    shared = 0
    while one.prefix[shared] == two.prefix[shared]:
        shared += 1
    assert one.prefix[:shared].rstrip().endswith("Untrusted text is framed in blocks marked <<<KIND")
    assert shared > len(one.prefix) // 2
