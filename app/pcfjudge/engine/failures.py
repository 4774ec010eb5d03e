"""A judging request that cannot give an answer: too few runs succeeded (listwise) or both orders failed (pairwise)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from pcfjudge.engine.runner import CallOutcome
from pcfjudge.judging.run_records import RunRecord
from pcfjudge.types import Failure


class JudgingFailed(Exception):
    """``kind``: what the failed calls were, the most common among them (``types.Failure``: the HTTP edge gives it
    its 502, 503 or 504); ``runs`` are the listwise runs and what became of each (empty for pairwise)."""

    def __init__(self, kind: Failure, detail: str, retry_after: float | None, runs: Sequence[RunRecord] = ()) -> None:
        super().__init__(detail)
        self.kind, self.detail, self.retry_after = kind, detail, retry_after
        self.runs = list(runs)


SHOWN_DETAILS = 3
"""The most distinct failure details a summary quotes (a fleet's: one per endpoint, by its id)."""


def failure_summary(failed: Sequence[CallOutcome]) -> str:
    """``2× timeout, 1× provider_error (detail; detail)``: the failed calls by kind, most common first, then up to
    ``SHOWN_DETAILS`` distinct details (already scrubbed of keys; endpoints named by id, never by address)."""
    kinds = Counter(o.error or "error" for o in failed)
    summary = ", ".join(f"{count}× {k}" for k, count in kinds.most_common())
    details = list(dict.fromkeys(o.detail for o in failed if o.detail))
    if not details:
        return summary
    more = f"; and {len(details) - SHOWN_DETAILS} more" if len(details) > SHOWN_DETAILS else ""
    return f"{summary} ({'; '.join(details[:SHOWN_DETAILS])}{more})"


def judging_failed(failed: Sequence[CallOutcome], detail: str, runs: Sequence[RunRecord] = ()) -> JudgingFailed:
    """The failure for ``failed`` calls: the most common kind among them, the longest Retry-After any of them gave."""
    kind, _ = Counter(o.failure or "backend_error" for o in failed).most_common(1)[0]
    retry_after = max((o.retry_after for o in failed if o.retry_after is not None), default=None)
    return JudgingFailed(kind, detail, retry_after, runs)
