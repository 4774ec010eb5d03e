"""Reranking as PCFJudge: the documents are the candidates of one listwise judgment, judged through
``services.judge``; a document's relevance is its consensus (0–100). Shared by ``/rerank`` (TEI shape) and
``/v1/rerank`` + ``/v2/rerank`` (Cohere/Jina shape).

Up to ``PCFJ_MAX_CANDIDATES`` (default 16, one prompt's window) documents are one listwise judgment over K
permutations; more, up to ``PCFJ_MAX_ITEMS`` (default 10,000), are judged in rounds of windows fitted onto one scale
(``engine.window_runs``), so relevance scores are comparable across the whole list. With ``top_n``, one round and
a stage put every document on one scale, and the calls left go to those nearest a boundary of the top
(``judging.window_stages``); without it every round is uniform (every relevance score matters).
``pcfjudge.max_calls`` states the budget. More than ``PCFJ_MAX_ITEMS`` is a 413 naming the limit; none is a 400. A
document longer than ``max_tokens_per_doc`` (Cohere's default 4,096 tokens) is truncated, or with ``long_documents``
best_chunk split into chunks judged as candidates, the document scored by its best (``chunks``, ``best_chunks``).

One document (retrievers return one all the time, and Cohere and TEI accept it) is judged pointwise, exactly as a
reward group of one is (``pcfjudge.reward.scoring``): the same listwise task with a single candidate, one call (there
is no order to permute), and relevance = the judge's score / 100. A consensus of one candidate would be inflated by
its Borda share and top vote, which are 100% with nobody to compare against, so it is not used.
"""

from __future__ import annotations

from dataclasses import dataclass

from pcfjudge.backends.registry import Jury, ResolvedModel
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
from pcfjudge.engine.window_runs import off_loop
from pcfjudge.errors import ApiError, client_error
from pcfjudge.judging import consensus as cons
from pcfjudge.judging.waves import Budget
from pcfjudge.judging.window_rounds import WindowOptions, least_calls
from pcfjudge.kept import KeptFor
from pcfjudge.settings import Settings
from pcfjudge.telemetry.metrics import Door, Metrics

CHARS_PER_TOKEN = 4  # max_tokens_per_doc without a tokenizer for every judge model: a documented approximation
TOKENS_PER_DOC = 4096  # Cohere's default max_tokens_per_doc: a longer document is truncated, with a warning
CUT_WITH = {
    "documents": "send max_tokens_per_doc (about 4 characters a token) to have it cut",
    "texts": "send truncate: true to have it cut",
}


@dataclass(frozen=True, slots=True)
class Ranked:
    """Document indices best first, each with its score (0–100, rounded as in /judge/listwise): the consensus, or
    for a single document the judge's score (``pointwise``)."""

    order: list[int]
    consensus: dict[int, float]
    detail: ListwiseResponse
    pointwise: bool = False

    def relevance(self, index: int) -> float:
        """score / 100, within 0–1 (every consensus is on 0–100: past one window the fit is put there by
        ``window_fit.on_scale``, so nothing is clipped here): equal scores, equal relevance."""
        return round(min(1.0, max(0.0, self.consensus[index] / 100.0)), 6)


def check_count(s: Settings, n: int, field: str) -> None:
    """1 to max_items documents: 400 for none, 413 naming the limit for too many. Two or more must also be at
    least PCFJ_MIN_CANDIDATES (422); one is judged pointwise."""
    if n == 0:
        raise ApiError("empty", f"`{field}` cannot be empty; send 1 to {s.limits.max_items}")
    if 1 < n < s.limits.min_candidates:
        detail = f"send 1, or at least {s.limits.min_candidates} (got {n}): relevance is judged relative to the other {field}"
        raise client_error(field, detail)
    if n > s.limits.max_items:
        detail = (
            f"{n} {field} > maximum allowed {s.limits.max_items} per request (PCFJ_MAX_ITEMS); send at most {s.limits.max_items}, "
            f"e.g. the top {s.limits.max_items} of a first-stage retriever"
        )
        raise ApiError("too_many_documents", detail, field=field)


def judge_model(judge: Judge, named: str | list[str] | None, options: RerankOptions | None) -> ResolvedModel | Jury:
    """``pcfjudge.model``, else ``model`` resolved as every door resolves it (a provider:model, a fleet by
    ``fleet:<name>`` or its bare name, a jury), except a reranker's own name (``reranker_name``: rerank-v3.5,
    jina-reranker-v2-base-multilingual, BAAI/bge-reranker-v2-m3), which the server's default judge answers. Any other
    name that is not a judge of this server is a 422 naming what is."""
    explicit = options.model if options is not None else None
    if explicit is None and named is not None and not reranker_name(named, judge):
        explicit = named
    return resolve_model(judge, explicit, None)


def reranker_name(named: str | list[str], judge: Judge) -> bool:
    """A reranker's model name as Cohere's, Jina's and TEI's clients send it (it says ``rerank``, has no provider
    prefix, and is not a fleet or jury of this server)."""
    if not isinstance(named, str):
        return False
    s = judge.settings
    ours = named in s.jury.juries or named in judge.registry.fleets
    return not ours and ":" not in named and "," not in named and "rerank" in named.lower()


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


CHUNKS_PER_DOC = 10  # best_chunk: the most chunks of a document unless max_chunks_per_doc says


@dataclass(frozen=True, slots=True)
class Pieces:
    """What a Cohere-shaped request's documents become: the texts judged, the document each comes from, and the
    documents that were longer than ``doc_chars`` (cut or split: ``meta.warnings`` says so)."""

    texts: list[str]
    owner: list[int]
    long: list[int]


def chunks(body: CohereRerankRequest) -> Pieces:
    """Each document cut to ``doc_chars``, or with ``long_documents`` best_chunk split into up to
    ``max_chunks_per_doc`` chunks of that length."""
    limit = doc_chars(body)
    split = body.pcfjudge is not None and body.pcfjudge.long_documents == "best_chunk"
    most = (body.max_chunks_per_doc or CHUNKS_PER_DOC) if split else 1
    out = Pieces([], [], [])
    for i, document in enumerate(body.documents):
        text = document_text(document, body.rank_fields, i)
        pieces = [text[start : start + limit] for start in range(0, len(text), limit)][:most] or [text]
        out.texts.extend(pieces)
        out.owner.extend([i] * len(pieces))
        if len(text) > limit:
            out.long.append(i)
    return out


def best_chunks(ranked: Ranked, owner: list[int]) -> Ranked:
    """Chunks' consensus folded into their documents': each document's best chunk (its order and relevance)."""
    if len(set(owner)) == len(owner):
        return ranked
    best: dict[int, float] = {}
    for chunk, value in ranked.consensus.items():
        document = owner[chunk]
        best[document] = max(value, best.get(document, value))
    return Ranked(order_by_consensus(best), best, ranked.detail, ranked.pointwise)


def doc_chars(body: CohereRerankRequest) -> int:
    """The characters a document is cut to: ``max_tokens_per_doc`` (default Cohere's 4,096) tokens of 4."""
    return (body.max_tokens_per_doc or TOKENS_PER_DOC) * CHARS_PER_TOKEN


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
    check_texts(s.limits, query, {f"{field}.{i}": text for i, text in enumerate(texts)}, CUT_WITH.get(field, ""))
    opts = options or RerankOptions()
    try:
        weights = cons.resolve_weights(opts.weights)
    except ValueError as exc:
        raise client_error("pcfjudge.weights", str(exc)) from None
    windowed = n > s.limits.max_candidates
    if model.jury is not None and opts.executions != 1:
        raise client_error("pcfjudge.executions", "a jury's jurors are its executions: send executions 1")
    if windowed and opts.executions != 1:
        raise client_error(
            "pcfjudge.executions",
            f"more than {s.limits.max_candidates} documents are judged in rounds of "
            "windows: one execution only; raise pcfjudge.k (rounds) instead",
        )
    if windowed and opts.k is not None and opts.k < 2:
        raise client_error("pcfjudge.k", f"more than {s.limits.max_candidates} documents: k counts rounds, at least 2")
    boundary = top_n if top_n is not None and top_n < n else 0
    budget = None
    if opts.max_calls is not None:
        if not windowed:
            raise client_error("pcfjudge.max_calls", f"applies past {s.limits.max_candidates} documents; use k")
        need = least_calls(n, s.limits.max_candidates, boundary)
        if opts.max_calls < need:
            raise client_error("pcfjudge.max_calls", f"{n} documents need at least {need} calls; send {need} or more")
        budget = Budget(opts.max_calls)
    return ListwiseTask(
        question=query,
        ids=[str(i) for i in range(n)],
        texts=texts,
        k=opts.k or (s.limits.window_rounds if windowed else s.limits.default_k),
        weights=weights,
        executions=opts.executions,
        seed=opts.seed,
        cache_mode=opts.cache,
        model=model,
        style=prompt_style(s.prompting, opts.rationales, by_default=False),  # rerankers read scores
        windows=WindowOptions(top_n=boundary) if windowed else None,
        budget=budget,
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
    model = judge_model(judge, body.model, body.pcfjudge)
    texts = chunks(body).texts
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
    n = len(plan.task.ids)  # thousands: shaped in a worker thread (a hundred milliseconds at 10,000)
    detail = await off_loop(n, lambda: to_response(result, request_id, include_runs))
    if n == 1:  # pointwise, as a reward group of one: the judge's own score, clipped to 0–100
        only = detail.candidates[0]
        return Ranked([0], {0: min(100.0, max(0.0, only.mean_score))}, detail, pointwise=True)
    consensus = {int(c.id): c.consensus for c in detail.candidates}
    return Ranked(order=order_by_consensus(consensus), consensus=consensus, detail=detail)


def order_by_consensus(consensus: dict[int, float]) -> list[int]:
    """Document indices best first; equal consensus keeps the request order."""
    return sorted(consensus, key=lambda i: (-consensus[i], i))
