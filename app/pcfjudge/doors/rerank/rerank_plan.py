"""Reranking as PCFJudge: the documents are the candidates of one listwise judgment, judged through
``services.judge``; a document's relevance is its consensus (0–100). Shared by ``/rerank`` (TEI shape) and
``/v1/rerank`` + ``/v2/rerank`` (Cohere/Jina shape).

Up to ``PCFJ_MAX_CANDIDATES`` (default 16, one prompt's window) documents are one listwise judgment over K
permutations; more, up to ``PCFJ_MAX_ITEMS`` (default 1,000), are judged in rounds of windows fitted onto one scale
(``engine.window_runs``), so relevance scores are comparable across the whole list. With ``top_n`` the rounds after
the first two go to the documents still uncertain at the ``top_n`` boundary; without it every round is uniform
(every relevance score matters). More than ``PCFJ_MAX_ITEMS`` is a 413 naming the limit; none is a 400.

One document (retrievers return one all the time, and Cohere and TEI accept it) is judged pointwise, exactly as a
reward group of one is (``pcfjudge.reward.scoring``): the same listwise task with a single candidate, one call (there
is no order to permute), and relevance = the judge's score / 100. A consensus of one candidate would be inflated by
its Borda share and top vote, which are 100% with nobody to compare against, so it is not used.
"""

from __future__ import annotations

from dataclasses import dataclass

from pcfjudge.backends.registry import KNOWN_PROVIDERS, Jury, ResolvedModel
from pcfjudge.doors.checks import check_texts, resolve_model
from pcfjudge.doors.decisions import judged, record_listwise
from pcfjudge.doors.listwise.listwise_protocol import ListwiseResponse
from pcfjudge.doors.listwise.listwise_response import to_response
from pcfjudge.doors.rerank.rerank_protocol import CohereRerankRequest, RerankOptions
from pcfjudge.engine import turns
from pcfjudge.engine.judge import Judge, prompt_style
from pcfjudge.engine.listwise_runs import ListwiseTask
from pcfjudge.engine.plan import Plan
from pcfjudge.engine.progress import Watch
from pcfjudge.errors import ApiError, client_error
from pcfjudge.judging import consensus as cons
from pcfjudge.judging.window_rounds import WindowOptions
from pcfjudge.kept import KeptFor
from pcfjudge.settings import Settings
from pcfjudge.telemetry.metrics import Door, Metrics

CHARS_PER_TOKEN = 4  # max_tokens_per_doc without a tokenizer for every judge model: a documented approximation


@dataclass(frozen=True, slots=True)
class Ranked:
    """Document indices best first, each with its score (0–100, rounded as in /judge/listwise): the consensus, or
    for a single document the judge's score (``pointwise``)."""

    order: list[int]
    consensus: dict[int, float]
    detail: ListwiseResponse
    pointwise: bool = False

    def relevance(self, index: int) -> float:
        """score / 100, within 0–1 (a fitted consensus past one window may stray past 0–100; the order does not
        change: it follows the unclipped consensus): equal scores, equal relevance."""
        return round(min(1.0, max(0.0, self.consensus[index] / 100.0)), 6)


def check_count(s: Settings, n: int, field: str) -> None:
    """1 to max_items documents: 400 for none, 413 naming the limit for too many. Two or more must also be at
    least PCFJ_MIN_CANDIDATES (422); one is judged pointwise."""
    if n == 0:
        raise ApiError("empty", f"`{field}` cannot be empty; send 1 to {s.max_items}")
    if 1 < n < s.min_candidates:
        detail = f"send 1, or at least {s.min_candidates} (got {n}): relevance is judged relative to the other {field}"
        raise client_error(field, detail)
    if n > s.max_items:
        detail = (
            f"{n} {field} > maximum allowed {s.max_items} per request (PCFJ_MAX_ITEMS); send at most {s.max_items}, "
            f"e.g. the top {s.max_items} of a first-stage retriever"
        )
        raise ApiError("too_many_documents", detail, field=field)


def judge_model(judge: Judge, named: str | None, options: RerankOptions | None) -> ResolvedModel | Jury:
    """``pcfjudge.model``, else ``model`` when it names judges of ours (provider:model with a provider of ours, a
    PCFJ_JURIES name, or comma-separated models: a jury), else the server's default; a judge of ours that cannot
    be served is a 422."""
    explicit = options.model if options is not None else None
    if explicit is None and named is not None and _ours(named, judge.settings):
        explicit = named
    return resolve_model(judge, explicit, None)


def _ours(named: str, s: Settings) -> bool:
    providers = (*KNOWN_PROVIDERS, *s.engines)
    parts = named.split(",")
    return named in s.juries or all(":" in p and p.strip().partition(":")[0] in providers for p in parts)


def document_text(document: str | dict[str, str], rank_fields: list[str] | None, index: int) -> str:
    """A string as is; an object's rank_fields (default ``text``): the text, or ``field: value`` lines."""
    if isinstance(document, str):
        return document
    fields = rank_fields or ["text"]
    missing = [f for f in fields if f not in document]
    if missing:
        detail = f"has no field {missing[0]!r}; send it, or name the fields to judge in rank_fields"
        raise client_error(f"documents.{index}", detail)
    text = document["text"] if fields == ["text"] else "\n".join(f"{f}: {document[f]}" for f in fields)
    if not text.strip():
        raise client_error(f"documents.{index}", "must not be empty or only whitespace")
    return text


def cut(text: str, limit: int, keep_end: bool = False) -> str:
    return text if len(text) <= limit else (text[-limit:] if keep_end else text[:limit])


def build_task(
    s: Settings,
    query: str,
    texts: list[str],
    options: RerankOptions | None,
    model: ResolvedModel | Jury,
    field: str,
    top_n: int | None = None,
) -> ListwiseTask:
    """A listwise task over the documents (ids "0", "1", …), validated with the listwise route's checks; past one
    window, ``k`` counts rounds (default PCFJ_WINDOW_ROUNDS) and ``top_n`` is the boundary the later rounds settle."""
    n = len(texts)
    check_count(s, n, field)
    check_texts(s, query, {f"{field}.{i}": text for i, text in enumerate(texts)})
    opts = options or RerankOptions()
    try:
        weights = cons.resolve_weights(opts.weights)
    except ValueError as exc:
        raise client_error("pcfjudge.weights", str(exc)) from None
    windowed = n > s.max_candidates
    if isinstance(model, Jury) and opts.executions != 1:
        raise client_error("pcfjudge.executions", "a jury's jurors are its executions: send executions 1")
    if windowed and opts.executions != 1:
        raise client_error(
            "pcfjudge.executions",
            f"more than {s.max_candidates} documents are judged in rounds of "
            "windows: one execution only; raise pcfjudge.k (rounds) instead",
        )
    if windowed and opts.k is not None and opts.k < 2:
        raise client_error("pcfjudge.k", f"more than {s.max_candidates} documents: k counts rounds, at least 2")
    boundary = top_n if top_n is not None and top_n < n else 0
    return ListwiseTask(
        question=query,
        ids=[str(i) for i in range(n)],
        texts=texts,
        k=opts.k or (s.window_rounds if windowed else s.default_k),
        weights=weights,
        executions=opts.executions,
        seed=opts.seed,
        cache_mode=opts.cache,
        model=model,
        style=prompt_style(s, opts.rationales, "rerank"),
        windows=WindowOptions(top_n=boundary) if windowed else None,
    )


def build_plan(body: CohereRerankRequest, s: Settings, judge: Judge) -> Plan[ListwiseTask]:
    """A Cohere-shaped request's plan (``/v1/rerank``, ``/v2/rerank``), checked once at intake: answered now,
    streamed or queued as a job, the same checks refuse it. Planned once per body, as /judge/listwise's
    (``doors.listwise.listwise_plan.build_plan``)."""
    return _PLANNED.derive(body, (s, judge), lambda: _build_plan(body, s, judge))


_PLANNED: KeptFor[CohereRerankRequest, Plan[ListwiseTask]] = KeptFor(512)


def _build_plan(body: CohereRerankRequest, s: Settings, judge: Judge) -> Plan[ListwiseTask]:
    if body.relevant_spans is not None and body.relevant_spans.mode == "enabled":
        raise client_error("relevant_spans", "relevant spans are not supported; send mode 'disabled' or omit it")
    texts = [document_text(doc, body.rank_fields, i) for i, doc in enumerate(body.documents)]
    if body.max_tokens_per_doc is not None:
        texts = [cut(text, body.max_tokens_per_doc * CHARS_PER_TOKEN) for text in texts]
    model = judge_model(judge, body.model, body.pcfjudge)
    return judge.checked(build_task(s, body.query, texts, body.pcfjudge, model, "documents", body.top_n))


async def rerank(
    judge: Judge,
    metrics: Metrics,
    request_id: str,
    plan: Plan[ListwiseTask],
    include_runs: bool,
    door: Door,
    watch: Watch,
) -> Ranked:
    """Judge the (checked) plan as ``watch`` says: the documents best first, with the full listwise detail (its
    metrics under ``door``)."""
    result = await judged(door, judge.run(plan, watch))
    record_listwise(result, metrics, door)
    if result.windows is not None:  # hundreds of documents: their response is a step of its own (``turns``)
        await turns.take()
    detail = to_response(result, request_id, include_runs)
    if len(plan.task.ids) == 1:  # pointwise, as a reward group of one: the judge's own score, clipped to 0–100
        only = detail.candidates[0]
        return Ranked([0], {0: min(100.0, max(0.0, only.mean_score))}, detail, pointwise=True)
    consensus = {int(c.id): c.consensus for c in detail.candidates}
    return Ranked(order=order_by_consensus(consensus), consensus=consensus, detail=detail)


def order_by_consensus(consensus: dict[int, float]) -> list[int]:
    """Document indices best first; equal consensus keeps the request order."""
    return sorted(consensus, key=lambda i: (-consensus[i], i))
