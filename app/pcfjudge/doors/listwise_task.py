"""/judge/listwise's request as a judging task: every check the core cannot make (limits, ids, weights, explicit
permutations, adaptive K, budgets), each refused with a 422 naming the field. The CLI and ``pcfjudge batch`` take the
same request, so they build their tasks here too."""

from __future__ import annotations

from pcfjudge.doors.checks import check_texts, resolve_model
from pcfjudge.engine.judge import Judge, prompt_style
from pcfjudge.engine.listwise_runs import ListwiseTask
from pcfjudge.errors import client_error
from pcfjudge.judging import consensus as cons
from pcfjudge.judging import permutations as perms
from pcfjudge.judging.waves import Adaptive, Budget
from pcfjudge.schemas.listwise_schema import ListwiseRequest
from pcfjudge.settings import Settings
from pcfjudge.types import MAX_K


def build_task(body: ListwiseRequest, s: Settings, judge: Judge) -> ListwiseTask:
    """Turn a request into a judging task, refusing (422, naming the field) anything the service cannot do. The
    model is resolved here, once: the task carries the resolved model to ``judge.listwise``."""
    n = len(body.candidates)
    if not s.min_candidates <= n <= s.max_candidates:
        raise client_error("candidates", f"send between {s.min_candidates} and {s.max_candidates} candidates (got {n})")
    pairs = [(str(i), c) if isinstance(c, str) else (c.id, c.text) for i, c in enumerate(body.candidates)]
    ids = [cid for cid, _ in pairs]
    texts = [text for _, text in pairs]
    check_texts(s, body.question, {f"candidates.{i}": text for i, text in enumerate(texts)})
    duplicates = sorted({cid for cid in ids if ids.count(cid) > 1})
    if duplicates:
        raise client_error("candidates", f"candidate ids must be unique; repeated: {', '.join(duplicates)}")
    try:
        weights = cons.resolve_weights(body.weights)
    except ValueError as exc:
        raise client_error("weights", str(exc)) from None
    model = resolve_model(judge, body.model, body.oracle_best)
    explicit = None
    if body.permutations is not None:
        if body.mode != "consensus":
            raise client_error("permutations", "explicit permutations only apply to mode 'consensus'")
        if len(body.permutations) > MAX_K:
            raise client_error("permutations", f"at most {MAX_K} permutations")
        try:
            explicit = perms.validate_explicit(body.permutations, n)
        except ValueError as exc:
            raise client_error("permutations", str(exc)) from None
    if body.oracle_best is not None and body.oracle_best not in ids:
        raise client_error("oracle_best", f"{body.oracle_best!r} is not one of the candidate ids")
    k, auto = runs_per_execution(body, s)
    task = ListwiseTask(
        question=body.question,
        ids=ids,
        texts=texts,
        k=k,
        mode=body.mode,
        weights=weights,
        executions=body.executions,
        seed=body.seed,
        permutations=explicit,
        oracle_best=body.oracle_best,
        cache_mode=body.cache,
        model=model,
        auto=auto,
        budget=budget(body, s, model.string),
        style=prompt_style(s, body.rationales, "listwise"),
    )
    return task


def runs_per_execution(body: ListwiseRequest, settings: Settings) -> tuple[int, Adaptive | None]:
    """K (k_max with ``"k": "auto"``) and the adaptive-K settings; k_min, k_max and stop only go with auto."""
    if body.k != "auto":
        for name in ("k_min", "k_max", "stop"):
            if name in body.model_fields_set:
                raise client_error(name, 'applies only with "k": "auto" (adaptive K); remove it or set k to "auto"')
        return body.k or settings.default_k, None
    if body.mode != "consensus" or body.permutations is not None:
        raise client_error("k", '"auto" applies to mode consensus over the permutation schedule (no permutations)')
    k_max = body.k_max or settings.default_k
    k_min = body.k_min if "k_min" in body.model_fields_set else min(body.k_min, k_max)
    if k_min > k_max:
        raise client_error("k_min", f"must not exceed k_max ({k_max})")
    return k_max, Adaptive(k_min, body.stop)


def budget(body: ListwiseRequest, settings: Settings, model: str) -> Budget | None:
    """The request's spending limits; a cost budget needs the model's price."""
    if body.max_cost_usd is not None and model not in settings.prices:
        raise client_error(
            "max_cost_usd",
            f"model {model} has no price, so a cost budget cannot be kept; set PCFJ_PRICES (USD per million input "
            f'and output tokens, e.g. {{"{model}": [1.25, 10]}}) or use max_calls',
        )
    if body.max_calls is None and body.max_cost_usd is None:
        return None
    return Budget(body.max_calls, body.max_cost_usd)
