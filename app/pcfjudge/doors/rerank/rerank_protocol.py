"""HTTP models of the reranking routes, in the two wire formats rerankers are called with.

* ``POST /rerank``: text-embeddings-inference (TEI). Request ``{query, texts, raw_scores, return_text, truncate,
  truncation_direction}``; response a bare array ``[{index, score, text?}]`` best first; errors
  ``{"error": message, "error_type": kind}``.
* ``POST /v1/rerank`` and ``POST /v2/rerank``: Cohere (and Jina, which copies Cohere v1). Request ``{model, query,
  documents, top_n, return_documents, ...}``; response ``{id, results: [{index, relevance_score, document?}], meta}``.

Both take the extension field ``"pcfjudge": {...}`` (k, model, include_runs, ...) and accept no other unknown field.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, Field

from pcfjudge.doors.listwise.listwise_protocol import CandidateOut, ListwiseResponse
from pcfjudge.schemas.common import DEADLINE_MS, MODEL_OR_JURY, STREAM, Strict, Text, non_blank
from pcfjudge.types import MAX_K

CutText = Annotated[str, AfterValidator(non_blank), Field(min_length=1, json_schema_extra={"pattern": r"\S"})]
"""Text the request may ask to cut (TEI's truncate, Cohere's max_tokens_per_doc): non-blank, and no maxLength in the
schema, since a longer one is cut rather than refused when asked; otherwise PCFJ_MAX_*_CHARS apply (422)."""

TeiErrorType = Literal["Unhealthy", "Backend", "Overloaded", "Validation", "Tokenizer", "Empty"]


class RerankOptions(Strict):
    """``"pcfjudge": {...}``: how the documents are judged, and whether to return the full consensus detail."""

    model: str | list[str] | None = Field(default=None, description=f"{MODEL_OR_JURY} Default: the server's.")
    k: int | None = Field(default=None, ge=1, le=MAX_K, description="Permutations per execution; default 7.")
    executions: int = Field(default=1, ge=1, le=5, description="Independent executions; consensus is averaged.")
    max_calls: int | None = Field(
        default=None,
        ge=1,
        description="Past one window: the judge calls this ranking may make (default: k rounds' calls, at most "
        "PCFJ_MAX_WINDOW_CALLS). With top_n they go to the documents still in contention for it; fewer than the "
        "design needs is a 422 saying how many.",
    )
    seed: int = Field(default=0, ge=0, description="Selects the (deterministic) permutation schedule.")
    weights: str | dict[str, float] = Field(default="proposed", description="As in /judge/listwise.")
    cache: Literal["use", "refresh", "bypass"] = "use"
    include_runs: bool = Field(default=False, description="Include every run's judgments in the detail.")
    long_documents: Literal["truncate", "best_chunk"] = Field(
        default="truncate",
        description="A document longer than max_tokens_per_doc: truncate (judged by its start, as Cohere's v3 "
        "models) or best_chunk (split into chunks of max_tokens_per_doc, each judged as a candidate, the document "
        "scored by its best chunk, as Cohere's v4 models; the pcfjudge detail's candidate ids are then the chunks', "
        "in document order). /v1 and /v2/rerank only.",
    )
    rationales: bool | None = Field(
        default=None,
        description="Ask the judge for rationales (null: the server's default, PCFJ_RATIONALES; off for rerank). False saves "
        "output tokens and seconds per call.",
    )
    deadline_ms: int | None = Field(default=None, ge=1, le=86_400_000, description=DEADLINE_MS)
    stream: bool = Field(
        default=False, description=STREAM + " /v1 and /v2/rerank only (the result event is the Cohere response)."
    )


# ── text-embeddings-inference ───────────────────────────────────────────────────────────────────────────────────


class TeiRerankRequest(Strict):
    query: CutText = Field(
        description="The question the texts answer (the judging prompt). Longer than PCFJ_MAX_QUESTION_CHARS "
        "(default 32,000) is a 422 unless truncate is true."
    )
    texts: list[CutText] = Field(
        description="The candidate answers; 1 to PCFJ_MAX_ITEMS (default 10,000), more is a 413 naming the limit; past "
        "PCFJ_MAX_CANDIDATES (default 16) they are judged in rounds of windows fitted onto one scale. "
        "One text is judged pointwise (score = the judge's score / 100), as a reward group of one. A text longer than "
        "PCFJ_MAX_CANDIDATE_CHARS (default 32,000) is a 422 unless truncate is true."
    )
    raw_scores: bool = Field(default=False, description="Scores on the judge's 0–100 consensus scale, not 0–1.")
    return_text: bool = Field(default=False, description="Echo each text in its result.")
    truncate: bool | None = Field(
        default=False,
        description="Cut texts longer than PCFJ_MAX_CANDIDATE_CHARS (and a longer query) instead of refusing them.",
    )
    truncation_direction: Literal["left", "right", "Left", "Right"] = Field(
        default="right", description="right: keep the start of a truncated text; left: keep its end."
    )
    pcfjudge: RerankOptions | None = Field(
        default=None, description="Extension: judge options; when set, each result also carries its statistics."
    )


class TeiRank(BaseModel):
    index: int = Field(description="Position of the text in the request.")
    score: float = Field(
        description="consensus / 100 (0–1); raw_scores: the consensus itself (0–100). A single text: its score."
    )
    text: str | None = Field(default=None, description="The text (return_text only; absent otherwise).")
    pcfjudge: CandidateOut | None = Field(default=None, description="Extension: the candidate's consensus statistics.")


class TeiErrorResponse(BaseModel):
    error: str = Field(description="What went wrong and how to fix it.")
    error_type: TeiErrorType = Field(description="TEI's kind: Validation (422/413), Empty (400), Backend (424), …")


# ── Cohere / Jina ──────────────────────────────────────────────────────────────────────────────────────────────


class RelevantSpans(Strict):
    mode: Literal["enabled", "disabled"]
    threshold: float | None = None
    max_spans: int | None = None


class CohereRerankRequest(Strict):
    model: str | list[str] | None = Field(
        default=None,
        description="A judge of ours (provider:model, e.g. sim:default; a fleet of PCFJ_MODELS_FILE as fleet:<name> "
        "or its bare name; a PCFJ_JURIES name, or a list or comma-separated string of models: a jury), or a reranker's own name (it says "
        "'rerank', e.g. rerank-v3.5 or jina-reranker-v2-base-multilingual), which means the server's default judge; "
        "any other name is a 422 naming this server's judges.",
    )
    query: Text = Field(description="The question the documents answer (the judging prompt).")
    documents: list[CutText | dict[str, str]] = Field(
        description="Strings, or objects whose rank_fields (default: text) are judged; 1 to PCFJ_MAX_ITEMS "
        "(default 10,000), more is a 413 naming the limit; past PCFJ_MAX_CANDIDATES (default 16) they are judged in "
        "rounds of windows fitted onto one scale (top_n: the later rounds settle its boundary). One document is judged pointwise (relevance_score = the "
        "judge's score / 100), as a reward group of one. A document longer than max_tokens_per_doc is truncated to "
        "it, with a warning in meta.warnings, as Cohere does."
    )
    top_n: int | None = Field(
        default=None,
        ge=1,
        description="Return only the best top_n results (default: all); past one window, the rounds after the first "
        "two settle who is in the top_n.",
    )
    return_documents: bool | None = Field(
        default=None, description="Include each document in its result (default false, as Cohere)."
    )
    rank_fields: list[str] | None = Field(
        default=None, min_length=1, description='Object documents: the fields judged, as "field: value" lines.'
    )
    max_tokens_per_doc: int | None = Field(
        default=None,
        ge=1,
        description="Cut each document to about this many tokens (4 characters per token) before judging; default "
        "4,096, Cohere's (16,384 characters). Past PCFJ_MAX_CANDIDATE_CHARS (32,000) a cut document is still a 422 "
        "naming it.",
    )
    max_chunks_per_doc: int | None = Field(
        default=None,
        ge=1,
        description="With pcfjudge.long_documents best_chunk: the most chunks of max_tokens_per_doc a long document "
        "is split into (default 10; the rest is cut). Otherwise unused.",
    )
    priority: int | None = Field(default=None, ge=0, description="Accepted for compatibility; unused.")
    relevant_spans: RelevantSpans | None = Field(default=None, description="Only mode 'disabled' is supported.")
    pcfjudge: RerankOptions | None = Field(
        default=None, description="Extension: judge options; when set, the response carries the full consensus."
    )


class RerankResult(BaseModel):
    index: int = Field(description="Position of the document in the request.")
    relevance_score: float = Field(
        description="consensus / 100, in [0, 1]; tied documents get equal scores. A single document: its score / 100."
    )
    document: dict[str, Any] | None = Field(default=None, description="The document (return_documents only).")


class BilledUnits(BaseModel):
    search_units: int = Field(description="1 per 100 documents (at least 1), as Cohere counts them.")
    input_tokens: int = Field(description="Judge input tokens spent on this request (0 when served from the cache).")
    output_tokens: int = Field(description="Judge output tokens spent on this request.")


class RerankMeta(BaseModel):
    api_version: dict[str, str]
    billed_units: BilledUnits
    tokens: dict[str, int] = Field(description="input_tokens and output_tokens, as billed_units.")
    warnings: list[str] | None = Field(
        default=None,
        description="As Cohere's: what the client should know of this ranking, e.g. that the call budget ran out "
        "before the top top_n was certain (absent when there is nothing to say).",
    )


class RerankResponse(BaseModel):
    id: str = Field(description="The request id (also in the X-Request-ID header).")
    model: str = Field(description="The judge model that ranked the documents.")
    results: list[RerankResult] = Field(description="Best first; ties keep the request order.")
    meta: RerankMeta
    usage: dict[str, int] = Field(description='Jina\'s field: {"total_tokens": input + output judge tokens}.')
    pcfjudge: ListwiseResponse | None = Field(
        default=None,
        description="Extension (when the request set pcfjudge): the full /judge/listwise response; candidate ids "
        "are the document indices as strings.",
    )


# ── text-embeddings-inference's model info (GET /info) ─────────────────────────────────────────────────────────


class TeiClassifierModel(BaseModel):
    id2label: dict[str, str]
    label2id: dict[str, int]


class TeiModelType(BaseModel):
    """TEI's externally tagged ``model_type``: this service is a reranker."""

    reranker: TeiClassifierModel


class TeiInfo(BaseModel):
    """TEI's ``Info`` (router/src/lib.rs), every key of it: clients such as tei-client read it before any call."""

    model_id: str = Field(description="The default judge (provider:model) that ranks the texts.")
    model_sha: str | None = Field(description="Always null: a judge behind an API has no weights revision here.")
    model_dtype: str = Field(description="Always 'unknown' (the judge runs elsewhere).")
    served_model_name: str = Field(description="As model_id.")
    model_type: TeiModelType = Field(description='{"reranker": {...}}: what tei-client and others check.')
    max_concurrent_requests: int = Field(description="PCFJ_MAX_PENDING_REQUESTS: POST requests in flight per process.")
    max_input_length: int = Field(
        description="About PCFJ_MAX_CANDIDATE_CHARS / 4 tokens per text (longer texts are refused unless truncate)."
    )
    max_batch_tokens: int = Field(description="PCFJ_MAX_INPUT_TOKENS_PER_REQUEST: estimated input tokens per request.")
    max_batch_requests: int | None = Field(description="Always null (no batching across requests).")
    max_client_batch_size: int = Field(description="PCFJ_MAX_ITEMS: texts per /rerank request.")
    auto_truncate: bool = Field(description="Always false: a text that is too long is refused unless truncate=true.")
    tokenization_workers: int = Field(description="Always 0: no tokenizer runs here.")
    version: str = Field(description="The pcfjudge version.")
    sha: str | None = Field(description="Always null.")
    docker_label: str | None = Field(description="Always null.")
