"""The append-only run log (``DIR/runs.jsonl``) every evaluation number is computed from.

One JSON line per raw judge run, written and flushed as the run finishes, so a crash or Ctrl-C loses nothing
that finished. A line is keyed by (item, protocol, execution, index); rerunning reads the log first and only
asks for keys that have no successful line yet (failed runs are logged too and retried on the next run; the
analysis uses the last successful line of a key). A torn final line from a crash is skipped and reported.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from pcfjudge.surface import CallOutcome, CandidateJudgment, JsonlAppender, RunJudgments, Usage

LOG_NAME = "runs.jsonl"
RunKey = tuple[str, str, int, int]  # item, protocol, execution, index
ReplayKey = tuple[str, str, int, tuple[str, ...]]  # item, call kind, sample, displayed order of ids


def run_key(line: Mapping[str, Any]) -> RunKey:
    return (str(line["item"]), str(line["protocol"]), int(line["execution"]), int(line["index"]))


def judgments_to_json(run: RunJudgments) -> dict[str, dict[str, Any]]:
    """A run's judgments as logged: each ``CandidateJudgment``'s fields, in their declaration order."""
    return {cid: asdict(j) for cid, j in run.judgments.items()}


def judgments_from_json(data: Mapping[str, Mapping[str, Any]], rank_source: str | None) -> RunJudgments:
    """Rebuild a run's judgments from its log line (inverse of ``judgments_to_json``)."""
    judgments = {
        cid: CandidateJudgment(
            score=float(j["score"]),
            rank=float(j["rank"]),
            major_error=bool(j["major_error"]),
            hallucinated_specificity=bool(j["hallucinated_specificity"]),
            calibrated_uncertainty=bool(j["calibrated_uncertainty"]),
            rationale=str(j.get("rationale", "")),
        )
        for cid, j in data.items()
    }
    return RunJudgments(judgments, "scores" if rank_source == "scores" else "judge")


@dataclass(frozen=True, slots=True)
class PlannedCall:
    """One backend call of the judge's plan as the log knows it.

    ``cache_key`` is the plan's key of the call (how ``ReplayRunner`` recognises it); ``key`` is its log key and
    ``replay_key`` what answers it from the log. ``optional`` calls (APOCJudge's keyed pass) are made only when
    needed, so the progress bar's initial total leaves them out.
    """

    cache_key: str
    key: RunKey
    replay_key: ReplayKey
    order: tuple[str, ...]
    sample: int
    optional: bool = False


def call_line(call: PlannedCall, model: str, **fields: Any) -> dict[str, Any]:
    """A log line for ``call``: the fields every line has (as for a call not yet made), then ``fields``."""
    item, protocol, execution, index = call.key
    line: dict[str, Any] = {
        "item": item,
        "protocol": protocol,
        "kind": call.replay_key[1],
        "execution": execution,
        "index": index,
        "order": list(call.order),
        "sample": call.sample,
        "model": model,
        "answer": None,
        "error": None,
        "cached": False,
        "latency_ms": 0.0,
        "usage": Usage().as_dict(),
    }
    line.update(fields)
    return line


def outcome_fields(outcome: CallOutcome) -> dict[str, Any]:
    """The line fields of an in-process call's outcome: error (None on success), cached, latency, usage."""
    return {
        "error": None if outcome.answer is not None else outcome.error_text,
        "cached": outcome.cached,
        "latency_ms": outcome.latency_ms,
        "usage": outcome.usage.as_dict(),
    }


def service_fields(run: Mapping[str, Any], *, ok: bool) -> dict[str, Any]:
    """The same fields from a run of a service response (``runs[]``; ``ok``: the run has an answer)."""
    return {
        "error": None if ok else (run.get("error") or "failed"),
        "cached": bool(run.get("cached")),
        "latency_ms": float(run.get("latency_ms") or 0.0),
        "usage": Usage.from_dict(run).as_dict(),
    }


def read_lines(path: Path) -> tuple[list[dict[str, Any]], int]:
    """All parseable log lines and the number of torn/invalid lines skipped (a crash can tear the last one)."""
    if not path.exists():
        return [], 0
    lines: list[dict[str, Any]] = []
    skipped = 0
    with path.open(encoding="utf-8") as handle:
        for raw in handle:
            if not raw.strip():
                continue
            try:
                record = json.loads(raw)
            except json.JSONDecodeError:
                skipped += 1
                continue
            if isinstance(record, dict) and {"item", "protocol", "execution", "index"} <= record.keys():
                lines.append(record)
            else:
                skipped += 1
    return lines, skipped


@dataclass
class RunLog:
    """The log of one output directory: what is done, what can be replayed, and an appender."""

    path: Path
    lines: list[dict[str, Any]] = field(default_factory=list)
    skipped: int = 0
    done: set[RunKey] = field(default_factory=set)
    replay: dict[ReplayKey, dict[str, Any]] = field(default_factory=dict)
    latest: dict[RunKey, dict[str, Any]] = field(default_factory=dict)  # as ``latest_success``
    _appender: JsonlAppender | None = None

    @classmethod
    def open(cls, path: Path) -> RunLog:
        log = cls(path)
        log.lines, log.skipped = read_lines(path)
        for line in log.lines:
            log._index(line)
        return log

    def _index(self, line: dict[str, Any]) -> None:
        key = run_key(line)
        if line.get("error") is None or self.latest.get(key, {}).get("error", "missing") is not None:
            self.latest[key] = line
        if line.get("error") is None:
            self.done.add(run_key(line))
            answer = line.get("answer")
            if isinstance(answer, dict):
                kind = str(line.get("kind", "listwise"))
                order = tuple(str(cid) for cid in line["order"])
                self.replay[(str(line["item"]), kind, int(line["sample"]), order)] = answer

    def append(self, line: dict[str, Any]) -> None:
        """Write one line and flush it now; a line for a key already done is dropped (never duplicated)."""
        if line.get("error") is None and run_key(line) in self.done:
            return
        self._writer().write(line)
        self.lines.append(line)
        self._index(line)

    def _writer(self) -> JsonlAppender:
        if self._appender is None:
            self._appender = JsonlAppender(self.path)
        return self._appender

    def close(self) -> None:
        if self._appender is not None:
            self._appender.close()

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return iter(self.lines)


def latest_success(lines: Iterable[Mapping[str, Any]]) -> dict[RunKey, Mapping[str, Any]]:
    """Per key, the last successful line; keys whose every line failed map to their last failed line."""
    out: dict[RunKey, Mapping[str, Any]] = {}
    for line in lines:
        key = run_key(line)
        if line.get("error") is None or key not in out or out[key].get("error") is not None:
            out[key] = line
    return out
