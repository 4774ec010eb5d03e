"""DeepEval's ArenaGEval winner prompt (two contestants, JSON-escaped, under masked names): recognised, rendered in
the other order with the names in place, its JSON winner read and written; three contestants are not recognised.
The simulated judge answers an unrecognised prompt that asks for a JSON schema with an object of that shape."""

from __future__ import annotations

import json

from pcfjudge.backends.sim import CHAT_UNKNOWN, _schema_filled
from pcfjudge.judging.templates.deepeval_template import DEEPEVAL_ARENA
from pcfjudge.judging.templates.template_registry import recognise


def prompt(*cases: tuple[str, str]) -> str:
    """generate_arena_winner.txt's Contestants block as ArenaGEval fills it (json.dumps of json.dumps)."""
    body = {"input": 'Say "hi".', "arena_test_cases": {n: json.dumps({"actual_output": t}, indent=2) for n, t in cases}}
    return (
        'Return a JSON object with two fields:\n\n- `"winner"`: the exact contestant name that is best aligned\n'
        f"Contestants:\n{json.dumps(body, indent=2)}\n\nParameters:\nInput and Actual Output\n\nJSON:\n"
    )


def test_two_contestants_are_found_and_swapped_with_their_names_in_place() -> None:
    found = recognise([("user", prompt(("Grace", 'He said "no".'), ("Bob", "Yes.")))])
    assert found is not None and found.template is DEEPEVAL_ARENA
    assert found.labels == ("Grace", "Bob") and found.question == 'Say \\"hi\\".'
    swapped = json.loads(found.render((1, 0))[0][1].split("Contestants:\n")[1].split("\n\nParameters")[0])
    cases = {name: json.loads(text)["actual_output"] for name, text in swapped["arena_test_cases"].items()}
    assert list(cases) == ["Grace", "Bob"] and cases == {"Grace": "Yes.", "Bob": 'He said "no".'}


def test_three_contestants_are_not_recognised() -> None:
    assert recognise([("user", prompt(("Grace", "a"), ("Bob", "b"), ("Iris", "c")))]) is None


def test_the_winner_is_read_written_and_relabelled() -> None:
    verdicts, labels = DEEPEVAL_ARENA.verdicts, ("Grace", "Bob")
    assert verdicts.read('{"winner": "$Bob$", "reason": "r"}', labels) == -1
    assert verdicts.read('JSON: {"winner": "Grace", "reason": "r"}', labels) == 1
    assert verdicts.read('{"winner": "Iris", "reason": "r"}', labels) is None
    assert verdicts.read("Grace", labels) is None
    written = verdicts.write(-1, labels)
    assert verdicts.read(written, labels) == -1
    swapped = verdicts.relabel(written, {"Grace": "Bob", "Bob": "Grace"})
    assert json.loads(swapped) == {"winner": "Grace", "reason": "$Grace$ is best aligned with the evaluation steps."}


def test_the_simulated_judge_fills_a_json_schema_it_is_asked_for() -> None:
    schema = {"type": "object", "properties": {"rewritten_reason": {"type": "string"}, "n": {"type": "integer"}}}
    fmt = json.dumps({"type": "json_schema", "json_schema": {"name": "RewrittenReason", "schema": schema}})
    assert json.loads(_schema_filled(fmt) or "") == {"rewritten_reason": CHAT_UNKNOWN, "n": 0}
    assert _schema_filled(json.dumps({"type": "json_object"})) is None
    assert _schema_filled(None) is None
