"""A judging request that cannot give an answer: too few runs succeeded (listwise) or both orders failed (pairwise)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from pcfjudge.engine.runner import CallOutcome
from pcfjudge.judging.run_records import RunRecord
from pcfjudge.types import FAILURE_KINDS


class JudgingFailed(Exception):
    """``status`` is 502, 503 or 504 (the most common among the failed calls); ``kind`` names it; ``runs`` are the
    listwise runs and what became of each (empty for pairwise)."""

    def __init__(self, status: int, detail: str, retry_after: float | None, runs: Sequence[RunRecord] = ()) -> None:
        super().__init__(detail)
        self.status, self.kind, self.detail, self.retry_after = status, FAILURE_KINDS[status], detail, retry_after
        self.runs = list(runs)


def failure_summary(failed: Sequence[CallOutcome]) -> str:
    """``2× timeout, 1× provider_error``: the failed calls by kind, most common first."""
    kinds = Counter(o.error or "error" for o in failed)
    return ", ".join(f"{count}× {k}" for k, count in kinds.most_common())


def judging_failed(failed: Sequence[CallOutcome], detail: str, runs: Sequence[RunRecord] = ()) -> JudgingFailed:
    """The failure for ``failed`` calls: status by the most common one, the longest Retry-After any of them gave."""
    status, _ = Counter(o.status if o.status in FAILURE_KINDS else 502 for o in failed).most_common(1)[0]
    retry_after = max((o.retry_after for o in failed if o.retry_after is not None), default=None)
    return JudgingFailed(status, detail, retry_after, runs)
