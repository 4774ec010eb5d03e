"""What a batch directory (``OUT/batch/``) remembers, so any command can be killed and re-run safely.

    state.json       the submissions (written whole, atomically: a crash leaves the old or the new file)
    results.jsonl    one line per collected request, appended and flushed the moment it is parsed
    input-NNNN.jsonl the provider input of submission NNNN (OpenAI / vLLM batch JSONL, or Anthropic requests)
    output-NNNN.jsonl where ``vllm run-batch`` is told to write submission NNNN's results

A submission moves ``writing`` (its requests and input file recorded, the provider not yet known to have it) →
``submitted`` (the provider's batch id recorded) → ``ended`` (the provider finished it) → ``collected`` (every
result line recorded). ``abandoned``: an interrupted submission the provider never received. A request is *in
flight* while its submission is not collected or abandoned; it is never planned again until then, so it is never
paid twice.

A results line is ``{"submission", "custom_id", "key", "ok", "value" | "error" + "detail", "usage"}``; ``value`` is
the cache value the runner stores for a live call. A torn last line (a crash mid-write) is skipped; a (submission,
custom id) already recorded is never recorded again, so a re-run collection neither loses nor duplicates a call.
"""

from __future__ import annotations

import json
import os
import secrets
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from pcfjudge.jsonl import JsonlAppender
from pcfjudge.types import Usage

STATE = "state.json"
RESULTS = "results.jsonl"
Via = Literal["openai", "anthropic", "vllm"]
Status = Literal["writing", "submitted", "ended", "collected", "abandoned"]
IN_FLIGHT: frozenset[str] = frozenset({"writing", "submitted", "ended"})


@dataclass
class Submission:
    """One batch sent (or being sent) to a provider: its requests by custom id (each a cache key)."""

    local_id: str
    via: Via
    model: str
    input: str  # file name in the batch directory
    requests: dict[str, str]  # custom_id -> cache key
    created: float
    status: Status = "writing"
    batch_id: str | None = None
    file_id: str | None = None
    provider_status: str | None = None
    counts: dict[str, int] = field(default_factory=dict)
    output: str | None = None  # vLLM: where ``vllm run-batch`` writes its results (relative: in the directory)
    result_files: list[str] = field(default_factory=list)  # OpenAI: the output and error file ids

    @property
    def in_flight(self) -> bool:
        return self.status in IN_FLIGHT


@dataclass
class BatchState:
    """``state.json``: the directory's token (tags its batches at the provider), model and submissions."""

    token: str
    model: str
    input: str | None = None  # ``pcfjudge batch``'s requests file, when it made the submissions
    submissions: list[Submission] = field(default_factory=list)

    @classmethod
    def load(cls, path: Path) -> BatchState | None:
        if not path.exists():
            return None
        data = json.loads(path.read_text(encoding="utf-8"))
        subs = [Submission(**s) for s in data.get("submissions", [])]
        return cls(data["token"], data["model"], data.get("input"), subs)

    @classmethod
    def new(cls, model: str, input_path: str | None = None) -> BatchState:
        return cls(secrets.token_hex(8), model, input_path)

    def save(self, path: Path) -> None:
        """Write the whole state atomically (temp file, fsync, rename)."""
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        with tmp.open("w", encoding="utf-8") as handle:
            json.dump(asdict(self), handle, indent=1, sort_keys=True)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)

    def next_id(self) -> str:
        return f"{len(self.submissions) + 1:04d}"

    def in_flight(self) -> dict[str, Submission]:
        """Cache key -> the unfinished submission holding it."""
        return {key: s for s in self.submissions if s.in_flight for key in s.requests.values()}

    def get(self, local_id: str) -> Submission | None:
        return next((s for s in self.submissions if s.local_id == local_id), None)


@dataclass
class Results:
    """``results.jsonl``: the collected requests, indexed, and an appender."""

    path: Path
    values: dict[str, dict[str, Any]] = field(default_factory=dict)  # key -> cache value (successes)
    errors: dict[str, str] = field(default_factory=dict)  # key -> "kind: detail" of its latest failure
    seen: set[tuple[str, str]] = field(default_factory=set)  # (submission, custom_id) recorded
    usage: dict[str, Usage] = field(default_factory=dict)  # submission -> tokens of its results
    outcomes: dict[str, Counter[str]] = field(default_factory=dict)  # submission -> "ok" / error kind -> count
    skipped: int = 0
    _appender: JsonlAppender | None = None

    @classmethod
    def open(cls, path: Path) -> Results:
        results = cls(path)
        if path.exists():
            with path.open(encoding="utf-8") as handle:
                for raw in handle:
                    try:
                        line = json.loads(raw)
                    except json.JSONDecodeError:
                        results.skipped += 1  # a torn line from a crash
                        continue
                    if isinstance(line, dict) and {"submission", "custom_id", "key", "ok"} <= line.keys():
                        results._index(line)
                    else:
                        results.skipped += 1
        return results

    def _index(self, line: dict[str, Any]) -> None:
        sub, key = str(line["submission"]), str(line["key"])
        self.seen.add((sub, str(line["custom_id"])))
        self.usage[sub] = self.usage.get(sub, Usage()) + Usage.from_dict(line.get("usage"))
        self.outcomes.setdefault(sub, Counter())["ok" if line["ok"] else str(line.get("error"))] += 1
        if line["ok"] and isinstance(line.get("value"), dict):
            self.values[key] = line["value"]
            self.errors.pop(key, None)
        elif key not in self.values and line.get("error") != "superseded":
            self.errors[key] = f"{line.get('error')}: {line.get('detail')}"

    def record(self, line: dict[str, Any]) -> bool:
        """Append one result line (flushed now); False (nothing written) if its (submission, custom id) is known."""
        if (str(line["submission"]), str(line["custom_id"])) in self.seen:
            return False
        self._writer().write(line)
        self._index(line)
        return True

    def total_usage(self) -> Usage:
        return sum(self.usage.values(), Usage())

    def _writer(self) -> JsonlAppender:
        if self._appender is None:
            self._appender = JsonlAppender(self.path)
        return self._appender

    def close(self) -> None:
        if self._appender is not None:
            self._appender.close()
