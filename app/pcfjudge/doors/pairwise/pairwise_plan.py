"""/judge/pairwise's request as an APOCJudge task (422 naming the field for anything the service cannot do)."""

from __future__ import annotations

from pcfjudge.doors.checks import check_texts, resolve_model
from pcfjudge.doors.pairwise.pairwise_protocol import PairwiseRequest
from pcfjudge.engine.judge import Judge, prompt_style
from pcfjudge.engine.pairwise_passes import PairwiseTask
from pcfjudge.engine.plan import Plan
from pcfjudge.settings import Settings

TASK_FIELDS = {"question", "response_a", "response_b", "keyed", "estimation", "oracle_best"}
"""The request fields a pairwise task takes as they are."""


def build_plan(body: PairwiseRequest, settings: Settings, judge: Judge) -> Plan[PairwiseTask]:
    """The request's plan, checked once at intake (every mode: answered now, streamed, or queued as a job)."""
    return judge.checked(build_task(body, settings, judge))


def build_task(body: PairwiseRequest, settings: Settings, judge: Judge) -> PairwiseTask:
    """Turn a request into a pairwise task, refusing (422, naming the field) anything the service cannot do. The
    model is resolved here, once: the task carries the resolved model to ``judge.pairwise``.

    Identical responses are allowed (a consistent judge calls them a tie).
    """
    check_texts(settings.limits, body.question, {"response_a": body.response_a, "response_b": body.response_b})
    model = resolve_model(judge, body.model, body.oracle_best)
    return PairwiseTask(
        **body.model_dump(include=TASK_FIELDS),
        cache_mode=body.cache,
        model=model,
        style=prompt_style(settings.prompting, body.rationales),
    )
