"""Recover the judging task from a rendered prompt and answer it with the simulated judge (optionally broken).

A framework's own judge prompt (MT-Bench, Arena-Hard-Auto, AlpacaEval, RewardBench, Prometheus, JudgeBench, or
candidates between pcfjudge's markers: the service's chat templates, ``recognise_template``) is answered first, as the
simulated judge answers the service's chat calls: in that template's verdict format, preferring the answer shown
first (``chat_answer``).

The task is read back with ``read_blocks`` (QUESTION, an optional REFERENCE, then CANDIDATE <label> blocks for listwise
or RESPONSE A / RESPONSE B for pairwise and keyed prompts); the kind comes from the schema or tool name. Without one (JSON mode or
prompt-only JSON) it is guessed from the blocks: candidates → listwise; two responses → keyed when the prompt asks
for a resolved_answer, else pairwise. The sample index is unknown on the wire, so answers use sample 0.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

from pcfjudge.surface import (
    LABELS,
    CallKind,
    ChatPayload,
    JudgeCall,
    SimJudge,
    SimParams,
    listwise_schema_v2,
    pairwise_schema_v2,
    read_blocks,
    recognise_template,
    shaped,
)

KINDS: dict[str, CallKind] = {
    "listwise_judgment": "listwise",
    "pairwise_judgment": "pairwise",
    "keyed_judgment": "keyed",
}
_QUESTION_END = re.compile(r"<<<END QUESTION [0-9a-f]{16}>>>")


def chat_answer(messages: tuple[tuple[str, str], ...], seed: int) -> str | None:
    """A framework's judge prompt answered in its template's verdict format (the simulated judge's ``chat``, with
    its first-position preference), or None when ``messages`` hold no template the service knows."""
    found = recognise_template(messages)
    if found is None:
        return None
    call = JudgeCall(
        kind="chat",
        model="default",
        system="",
        prefix="",
        body="",
        schema_name="chat",
        schema={},
        question=found.question,
        displayed=found.candidates,
        reference=found.reference,
        chat=ChatPayload(messages, None, None, found.template.verdicts, found.labels),
    )
    text: str = SimJudge(SimParams(seed=seed)).chat(call)
    return text


def recover(system: str, user: str, schema_name: str | None, schema: dict[str, Any] | None = None) -> JudgeCall | None:
    """The call a prompt encodes, or None when it holds no recognisable task. ``schema``: the answer schema the
    request sent; without one (JSON mode, prompt-only) the shape is read from the prompt's own template."""
    blocks = read_blocks(user)
    question = next((text for kind, text in blocks if kind == "QUESTION"), None)
    reference = next((text for kind, text in blocks if kind == "REFERENCE"), None)
    candidates = [text for kind, text in blocks if kind.startswith("CANDIDATE ")]
    responses = [text for kind, text in blocks if kind in ("RESPONSE A", "RESPONSE B")]
    kind = KINDS.get(schema_name or "")
    if kind is None:
        kind = "listwise" if candidates else ("keyed" if "resolved_answer" in user else "pairwise")
    displayed = candidates if kind == "listwise" else responses
    if question is None or not displayed or (kind != "listwise" and len(displayed) != 2):
        return None
    return JudgeCall(
        kind=kind,
        model="default",
        system=system,
        prefix="",
        body="",
        schema_name=schema_name or "",
        schema=schema if schema is not None else _schema_from_prompt(user, kind, len(displayed)),
        question=question,
        displayed=tuple(displayed),
        reference=reference,
    )


def _schema_from_prompt(user: str, kind: CallKind, n: int) -> dict[str, Any]:
    """The v2 schema a prompt's answer template spells out, or {} for a v1 prompt (answered in v1's shape)."""
    rationales = '"rationale": "' in user
    if kind == "listwise":
        v2 = '{"candidates": {"A": {"score"' in user
        return listwise_schema_v2(LABELS[:n], rationales=rationales) if v2 else {}
    v2 = '{"verdict": ' in user or '{"resolved_answer": "...", "verdict"' in user
    return pairwise_schema_v2(keyed=kind == "keyed", rationales=rationales) if v2 else {}


def answer(call: JudgeCall, seed: int, fault: str | None) -> dict[str, Any]:
    """The simulated judge's answer in the shape the call's schema asks for, with ``wrong_labels`` /
    ``missing_label`` faults applied."""
    return shaped(_answer(call, seed, fault), call.schema)


def _answer(call: JudgeCall, seed: int, fault: str | None) -> dict[str, Any]:
    out = SimJudge(SimParams(seed=seed)).answer(call)
    if call.kind == "listwise":
        if fault == "wrong_labels":
            out["candidates"][0]["label"] = "Z"
        elif fault == "missing_label":
            dropped = out["candidates"].pop()["label"]
            out["ranking"] = [label for label in out["ranking"] if label != dropped]
    elif fault == "wrong_labels":
        out["verdict"] = "C"
    elif fault == "missing_label":
        out.pop("verdict")
    return out


def broken_json(data: dict[str, Any]) -> str:
    """Chatty, unparsable text around the answer (the ``bad_json`` fault)."""
    return f"Sure! Here is my judgment: {json.dumps(data)[:-1]} -- hope this helps."


def question_prefix(user: str) -> str:
    """The user text up to the end of the QUESTION block: the part all permutations of one request share."""
    match = _QUESTION_END.search(user)
    return user[: match.end()] if match else ""


def digest(*parts: object) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()


def tokens(text: str) -> int:
    """A rough token count (4 characters a token), at least 1 for non-empty text."""
    return (len(text) + 3) // 4
