"""The span of one judgment, ``judge listwise`` / ``judge pairwise`` / ``judge chat`` (``telemetry.tracing``): with tracing
on, ``Judge.run`` starts one (``begin``) for every judgment in a sampled trace, lets it hear the judgment's light
events and tells it how the judgment ended (this module is imported only then).

The span is made from the judgment's events (``spans.Judgment``): the first ``calling`` (the runner is about to wait
for calls: its own or another request's in flight) starts it, dated from the judgment's start; a judgment the cache
answers whole makes none, and is one event of the same name and attributes on the request's span (measured: a second
span per warm request was most of what tracing cost it, docs/operations/tracing.md).

Attributes: ``gen_ai.request.model`` (the model string a front door resolved, ``provider:model``, or the jury's name,
with ``pcfjudge.jurors``), ``pcfjudge.k`` and ``pcfjudge.candidates`` (``pcfjudge.cache_mode`` when not "use") at the start; at the end
``pcfjudge.runs.ok`` / ``.failed`` (runs or passes), ``pcfjudge.backend_calls``, ``pcfjudge.cache_hits`` (the event of a
judgment the cache answered whole: ``pcfjudge.cache_hits`` only), ``pcfjudge.stopped`` when runs stopped early and ``pcfjudge.cost_usd`` when priced; ``error.type`` (the failure's kind)
when it fails. A chat judgment (``POST /v1/chat/completions``) names its ``pcfjudge.template`` (``none``: passed
through), ``pcfjudge.orders`` (the orders each juror judges) and ``pcfjudge.candidates`` at the start, and
``pcfjudge.split`` (its orders disagreed) at the end.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import TypeVar

from pcfjudge.backends.registry import Jury, ResolvedModel
from pcfjudge.engine.chat_values import ChatResult, ChatTask
from pcfjudge.engine.listwise_runs import ListwiseResult, ListwiseTask
from pcfjudge.engine.pairwise_passes import PairwiseResult, PairwiseTask
from pcfjudge.engine.progress import RunEvent
from pcfjudge.telemetry import spans, tracing

R = TypeVar("R", bound=ListwiseResult | PairwiseResult | ChatResult)


def begin(task: ListwiseTask | PairwiseTask | ChatTask) -> JudgmentSpan | None:
    """The span of a judgment of ``task`` about to start (``Judge.run``, with tracing on): ``heard`` hears its light
    events, ``around`` awaits it and ends the span. None in a trace not sampled (``tracing.unsampled``)."""
    if tracing.unsampled():
        return None
    return JudgmentSpan(_NAMES[task.__class__], task_attributes(task))


_NAMES = {ListwiseTask: "judge listwise", PairwiseTask: "judge pairwise", ChatTask: "judge chat"}


_SPAN_EVENTS = {"cached": "cache hit", "round": "round finished", "juror": "juror finished"}


class JudgmentSpan(spans.Judgment):
    """``spans.Judgment`` hearing the judgment's events and its end."""

    __slots__ = ()

    def heard(self, event: RunEvent) -> None:
        """A light event of the judgment (``progress.LIGHT``): ``calling`` makes its span; ``cache hit`` (the runs
        one lookup answered), ``round finished`` and ``juror finished`` are events on it (``stopped`` is not: the
        span's attributes say how it ended)."""
        if event.kind == "calling":
            self.calling()
            return
        name = _SPAN_EVENTS.get(event.kind)
        if name is not None:
            self.event(name, event.data)

    async def around(self, judged: Awaitable[R]) -> R:
        """``judged`` awaited; the span told how it ended: its result, or its failure (its kind, or its class's
        name, is the span's ``error.type``; cancelled, the span, if any, ends unmarked)."""
        try:
            result = await judged
        except Exception as exc:
            self.ended({}, str(getattr(exc, "kind", "") or type(exc).__name__))
            raise
        except BaseException:
            self.ended({})
            raise
        self.ended(result_attributes(result, "gen_ai.request.model" in self.attributes, cached=self.span is None))
        return result


def task_attributes(task: ListwiseTask | PairwiseTask | ChatTask) -> tracing.Attributes:
    out: tracing.Attributes = {}
    model = task.model
    if isinstance(model, Jury):
        out["gen_ai.request.model"] = model.name
        out["pcfjudge.jurors"] = [m.string for m in model.jurors]
    elif isinstance(model, ResolvedModel):
        out["gen_ai.request.model"] = model.string
    elif isinstance(model, str):
        out["gen_ai.request.model"] = model
    if isinstance(task, ListwiseTask):
        out["pcfjudge.k"] = task.k
        out["pcfjudge.candidates"] = len(task.ids)
        if task.auto is not None:
            out["pcfjudge.k_auto"] = True
    elif isinstance(task, ChatTask):
        found = task.found
        out["pcfjudge.template"] = found.template.name if found is not None else "none"
        out["pcfjudge.orders"] = len(task.orders)
        out["pcfjudge.candidates"] = len(found.spans) if found is not None else 0
    else:
        out["pcfjudge.candidates"] = 2
        out["pcfjudge.keyed"] = task.keyed
    if task.cache_mode != "use":
        out["pcfjudge.cache_mode"] = task.cache_mode
    return out


def result_attributes(
    result: ListwiseResult | PairwiseResult | ChatResult, named: bool = False, *, cached: bool = False
) -> tracing.Attributes:
    """What a judgment did (``named``: its model was named at the start already; ``cached``: the cache answered
    every run, so its runs are its cache hits and it made no call and had no failure: only ``pcfjudge.cache_hits``
    says so). Each attribute costs a little to record and more to export (docs/operations/tracing.md): what a field
    of the response already says in another way (``degraded``: some run failed) is left out."""
    out: tracing.Attributes = {"pcfjudge.cache_hits": result.cache_hits}
    if not cached:
        runs = result.passes if isinstance(result, PairwiseResult) else result.runs
        failed = sum(1 for r in runs if r.error)
        out["pcfjudge.runs.ok"] = len(runs) - failed
        out["pcfjudge.runs.failed"] = failed
        out["pcfjudge.backend_calls"] = result.backend_calls
    if not named:
        out["gen_ai.request.model"] = result.model
    if result.stopped is not None:
        out["pcfjudge.stopped"] = str(result.stopped)
    if result.cost_usd is not None:
        out["pcfjudge.cost_usd"] = result.cost_usd
    if isinstance(result, ChatResult):
        if result.decision is not None:
            out["pcfjudge.split"] = result.decision.split
    elif result.jury is not None:
        out["pcfjudge.jurors"] = [j.model for j in result.jury.jurors]
    return out
