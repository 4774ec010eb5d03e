"""Parse and validate a listwise answer, then map it from displayed labels back to original candidate ids."""

from __future__ import annotations

import contextlib
import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

from pcfjudge.judging.consensus import ranks_from_scores, tops_of
from pcfjudge.judging.run_records import CandidateJudgment, RankSource, RunJudgments


class OutputError(ValueError):
    """The judge's answer cannot be used. ``kind`` is the run error recorded (invalid_json, wrong_labels, …)."""

    def __init__(self, kind: str, detail: str) -> None:
        super().__init__(f"{kind}: {detail}")
        self.kind = kind
        self.detail = detail


_FENCE = re.compile(r"```(?:json|JSON)?\s*\n?(.*?)```", re.S)


def answer_text(text: str) -> str:
    """The JSON part of a model's answer as real engines send it: after a reasoning block (``<think>…</think>``,
    as a reasoning model served without a reasoning parser writes it), inside a code fence, or between the first
    ``{`` and the last ``}`` of a chatty answer. A well-formed answer is returned as it is."""
    stripped = text.strip()
    if stripped.startswith("{") and stripped.endswith("}"):
        return stripped
    if "</think>" in stripped:
        stripped = stripped.rpartition("</think>")[2].strip()
    elif stripped.startswith("<think>"):
        raise OutputError("invalid_json", "the answer is an unfinished <think> block (no </think>, no JSON)")
    fence = _FENCE.search(stripped)
    if fence is not None:
        stripped = fence.group(1).strip()
    start, end = stripped.find("{"), stripped.rfind("}")
    return stripped[start : end + 1] if 0 <= start < end else stripped


def load_json_object(text: str) -> dict[str, Any]:
    """The single JSON object in ``text`` (see ``answer_text`` for what is tolerated around it)."""
    stripped = answer_text(text)
    try:
        data = orjson.loads(stripped)  # several times faster; what it refuses, json decides (and words the error)
    except orjson.JSONDecodeError:
        data = None
    try:
        # strict=False: a raw newline or tab inside a string (llama-cpp-python's grammar lets the model write one)
        # is the model's text, not a broken answer.
        data = json.loads(stripped, strict=False) if data is None else data
    except json.JSONDecodeError as exc:
        raise OutputError("invalid_json", f"answer is not valid JSON ({exc.msg} at char {exc.pos})") from None
    if not isinstance(data, dict):
        raise OutputError("invalid_json", "answer must be a JSON object")
    return data


def _flag(entry: dict[str, Any], name: str, label: str) -> bool:
    value = entry.get(name)
    if not isinstance(value, bool):
        raise OutputError("invalid_output", f"candidate {label}: {name} must be true or false")
    return value


MAPPED_PER_ANSWER = 64
"""Mappings ``ListwiseAnswer.in_input_order`` keeps per answer (a cached answer is read by few request shapes)."""


@dataclass(frozen=True, slots=True)
class ListwiseAnswer:
    """A validated listwise answer by displayed position (position ``p`` is label ``labels[p]``), before any ids.

    It depends only on the answer and the labels, so one cache entry's answer is decoded once and kept in this form
    in process (``runner.PARSED``); each request then only maps positions to its own ids (``for_ids``)."""

    judgments: tuple[CandidateJudgment, ...]
    rank_source: RankSource
    _mapped: dict[tuple[tuple[str, ...], tuple[str, ...]], RunJudgments] = field(
        default_factory=dict, compare=False, repr=False
    )

    def for_ids(self, ids: Sequence[str]) -> RunJudgments:
        """Judgments keyed by ``ids[p]``, the original id of the candidate shown at position ``p``."""
        return RunJudgments(judgments=dict(zip(ids, self.judgments, strict=True)), rank_source=self.rank_source)

    def in_input_order(self, shown: Sequence[str], ids: Sequence[str]) -> RunJudgments:
        """``for_ids(shown)`` with the judgments in the input order ``ids`` and the run's top set computed, kept per
        (shown, ids): a cached answer read again by the same request shape (the warm path) is mapped once."""
        key = (tuple(shown), tuple(ids))
        found = self._mapped.get(key)
        if found is None:
            by_id = dict(zip(shown, self.judgments, strict=True))
            judgments = {cid: by_id[cid] for cid in ids}
            found = RunJudgments(judgments, self.rank_source, tops_of(judgments))
            if len(self._mapped) < MAPPED_PER_ANSWER:
                self._mapped[key] = found
        return found


def parse_listwise(answer: str | dict[str, Any], labels: Sequence[str], ids: Sequence[str]) -> RunJudgments:
    """Validate a listwise answer for displayed ``labels`` and return judgments keyed by original ``ids``.

    ``ids[p]`` is the original id of the candidate shown at position ``p`` (label ``labels[p]``).
    """
    return validate_listwise(answer, labels).for_ids(ids)


def validate_listwise(answer: str | dict[str, Any], labels: Sequence[str]) -> ListwiseAnswer:
    """Validate a listwise answer for displayed ``labels``; ``OutputError`` says what is wrong with it.

    Every displayed label must be judged exactly once with a score in 0–100. Ranks come from the judge's
    ranking when it is a permutation of the labels, otherwise from the scores (ties share the average rank).
    """
    data = load_json_object(answer) if isinstance(answer, str) else answer
    by_label = _entries_by_label(data, labels)
    scores = {label: _score(by_label[label], label) for label in labels}
    ranking = data.get("ranking")
    if isinstance(ranking, list) and sorted(map(str, ranking)) == sorted(labels) and len(ranking) == len(labels):
        ranks: dict[str, float] = {str(label): float(pos + 1) for pos, label in enumerate(ranking)}
        rank_source: RankSource = "judge"
    else:
        ranks, rank_source = ranks_from_scores(scores), "scores"
    judgments = []
    for label in labels:
        entry = by_label[label]
        rationale = entry.get("rationale", "")
        judgments.append(
            CandidateJudgment(
                score=scores[label],
                rank=ranks[label],
                major_error=_flag(entry, "major_error", label),
                hallucinated_specificity=_flag(entry, "hallucinated_specificity", label),
                calibrated_uncertainty=_flag(entry, "calibrated_uncertainty", label),
                rationale=rationale if isinstance(rationale, str) else str(rationale),
            )
        )
    return ListwiseAnswer(tuple(judgments), rank_source)


def _entries_by_label(data: dict[str, Any], labels: Sequence[str]) -> dict[str, dict[str, Any]]:
    """The answer's candidate entries by label: every displayed label exactly once, nothing else. ``candidates`` is
    an object keyed by label (v2) or a list of entries that carry their label (v1)."""
    entries = data.get("candidates")
    if isinstance(entries, dict):
        for label, entry in entries.items():
            if not isinstance(entry, dict):
                raise OutputError("invalid_output", f"candidate {label} must be an object of score and flags")
        entries = [{**entry, "label": label} for label, entry in entries.items()]
    if not isinstance(entries, list):
        raise OutputError("invalid_output", "answer has no 'candidates' object or list")
    by_label: dict[str, dict[str, Any]] = {}
    for entry in entries:
        label = entry.get("label") if isinstance(entry, dict) else None
        if not isinstance(label, str) or label not in labels:
            raise OutputError("wrong_labels", f"judged label {label!r} was not displayed")
        if label in by_label:
            raise OutputError("wrong_labels", f"label {label} judged more than once")
        assert isinstance(entry, dict)
        by_label[label] = entry
    missing = [label for label in labels if label not in by_label]
    if missing:
        raise OutputError("wrong_labels", f"labels not judged: {', '.join(missing)}")
    return by_label


def _score(entry: dict[str, Any], label: str) -> float:
    score = entry.get("score")
    if isinstance(score, str):  # "85": salvaged, as an unconstrained small model writes it
        with contextlib.suppress(ValueError):
            score = float(score.strip())
    if isinstance(score, bool) or not isinstance(score, int | float) or not math.isfinite(score):
        raise OutputError("invalid_output", f"candidate {label}: score must be a number")
    if not 0 <= score <= 100:
        raise OutputError("invalid_output", f"candidate {label}: score {score} is outside 0-100")
    return float(score)
