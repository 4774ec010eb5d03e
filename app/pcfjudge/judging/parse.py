"""Parse and validate a listwise answer, then map it from displayed labels back to original candidate ids."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from pcfjudge.judging.consensus import ranks_from_scores
from pcfjudge.judging.types import CandidateJudgment, RankSource, RunJudgments


class OutputError(ValueError):
    """The judge's answer cannot be used. ``kind`` is the run error recorded (invalid_json, wrong_labels, …)."""

    def __init__(self, kind: str, detail: str) -> None:
        super().__init__(f"{kind}: {detail}")
        self.kind = kind
        self.detail = detail


def load_json_object(text: str) -> dict[str, Any]:
    """The single JSON object in ``text`` (a ```json fence around it is tolerated)."""
    stripped = text.strip()
    if stripped.startswith("```"):
        stripped = stripped.strip("`").removeprefix("json").strip()
    try:
        data = orjson.loads(stripped)  # several times faster; what it refuses, json decides (and words the error)
    except orjson.JSONDecodeError:
        data = None
    try:
        data = json.loads(stripped) if data is None else data
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


@dataclass(frozen=True, slots=True)
class ListwiseAnswer:
    """A validated listwise answer by displayed position (position ``p`` is label ``labels[p]``), before any ids.

    It depends only on the answer and the labels, so one cache entry's answer is decoded once and kept in this form
    in process (``runner.PARSED``); each request then only maps positions to its own ids (``for_ids``)."""

    judgments: tuple[CandidateJudgment, ...]
    rank_source: RankSource

    def for_ids(self, ids: Sequence[str]) -> RunJudgments:
        """Judgments keyed by ``ids[p]``, the original id of the candidate shown at position ``p``."""
        return RunJudgments(judgments=dict(zip(ids, self.judgments, strict=True)), rank_source=self.rank_source)


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
    """The answer's candidate entries by label: every displayed label exactly once, nothing else."""
    entries = data.get("candidates")
    if not isinstance(entries, list):
        raise OutputError("invalid_output", "answer has no 'candidates' list")
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
    if isinstance(score, bool) or not isinstance(score, int | float) or not math.isfinite(score):
        raise OutputError("invalid_output", f"candidate {label}: score must be a number")
    if not 0 <= score <= 100:
        raise OutputError("invalid_output", f"candidate {label}: score {score} is outside 0-100")
    return float(score)
