"""/judge/listwise's request as a judging task: every check the core cannot make (limits, ids, weights, explicit
permutations, adaptive K, budgets), each refused with a 422 naming the field. The CLI and ``pcfjudge batch`` take the
same request, so they build their tasks here too."""

from __future__ import annotations

from collections import Counter

from pcfjudge.backends.registry import Jury, ResolvedModel
from pcfjudge.doors.checks import check_texts, resolve_model
from pcfjudge.doors.listwise.listwise_protocol import ListwiseRequest
from pcfjudge.engine.judge import Judge, prompt_style
from pcfjudge.engine.listwise_runs import ListwiseTask
from pcfjudge.engine.plan import Plan
from pcfjudge.errors import ApiError, client_error
from pcfjudge.judging import consensus as cons
from pcfjudge.judging import permutations as perms
from pcfjudge.judging.waves import Adaptive, Budget
from pcfjudge.judging.window_rounds import WindowOptions, least_calls
from pcfjudge.kept import KeptFor
from pcfjudge.settings import Settings
from pcfjudge.types import MAX_K


def build_plan(body: ListwiseRequest, s: Settings, judge: Judge) -> Plan[ListwiseTask]:
    """The request's plan, checked once at intake (every mode: answered now, streamed, or queued as a job). A body
    the lean handler shares (a request repeated byte for byte: ``http.read_body``) is planned and checked once: its
    plan depends on nothing else but the settings and the judge's models, which do not change while it serves."""
    return _PLANNED.derive(body, (s, judge), lambda: judge.checked(build_task(body, s, judge)))


_PLANNED: KeptFor[ListwiseRequest, Plan[ListwiseTask]] = KeptFor(512)
"""The last plans built, each while its body lives (``build_plan``)."""


def build_task(body: ListwiseRequest, s: Settings, judge: Judge) -> ListwiseTask:
    """Turn a request into a judging task, refusing (422, naming the field) anything the service cannot do. The
    model is resolved here, once: the task carries the resolved model to ``judge.listwise``."""
    n = len(body.candidates)
    if n > s.limits.max_items:
        detail = f"{n} candidates > the limit of {s.limits.max_items} per request (PCFJ_MAX_ITEMS); send at most {s.limits.max_items}"
        raise ApiError("too_many_candidates", detail, field="candidates")
    if n < s.limits.min_candidates:
        raise client_error(
            "candidates", f"send between {s.limits.min_candidates} and {s.limits.max_items} candidates (got {n})"
        )
    pairs = [(str(i), c) if isinstance(c, str) else (c.id, c.text) for i, c in enumerate(body.candidates)]
    ids = [cid for cid, _ in pairs]
    texts = [text for _, text in pairs]
    if (
        len(body.question) > s.limits.max_question_chars or max(map(len, texts)) > s.limits.max_candidate_chars
    ):  # names the field
        check_texts(s.limits, body.question, {f"candidates.{i}": text for i, text in enumerate(texts)})
    if len(set(ids)) != len(ids):  # O(n): up to PCFJ_MAX_ITEMS ids
        duplicates = sorted(cid for cid, count in Counter(ids).items() if count > 1)
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
    if model.jury is not None and body.executions != 1:
        raise client_error("executions", "a jury's jurors are its executions (each judges its own K): send 1")
    if body.oracle_best is not None and body.oracle_best not in ids:
        raise client_error("oracle_best", f"{body.oracle_best!r} is not one of the candidate ids")
    k, auto = runs_per_execution(body, s) if n <= s.limits.max_candidates else (windowed_rounds(body, s, n), None)
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
        budget=budget(body, s, model),
        style=prompt_style(s.prompting, body.rationales),
        windows=WindowOptions(top_n=1) if n > s.limits.max_candidates else None,  # best-of-N: the winner's boundary
    )
    return task


def windowed_rounds(body: ListwiseRequest, s: Settings, n: int) -> int:
    """Past one window (docs/method.md): ``k`` counts rounds of windows; what applies to one prompt's permutations
    (explicit permutations, other modes, adaptive K, executions, a cost budget) is refused naming the field."""
    window = f"more than {s.limits.max_candidates} candidates (PCFJ_MAX_CANDIDATES) are judged in rounds of windows"
    if body.mode != "consensus":
        raise client_error(
            "mode", f"{window}, in mode consensus only; send at most {s.limits.max_candidates} for {body.mode}"
        )
    for name in ("permutations", "max_cost_usd"):
        if getattr(body, name) is not None:
            raise client_error(name, f"{window}; {name} applies to one window: remove it (max_calls bounds the rounds)")
    if body.k == "auto" or body.executions != 1:
        field = "k" if body.k == "auto" else "executions"
        raise client_error(field, f"{window}; k counts rounds there (at least 2, default {s.limits.window_rounds})")
    rounds = body.k or s.limits.window_rounds
    if rounds < 2:
        raise client_error("k", f"{window}; k counts rounds there and must be at least 2 (the fit needs two)")
    need = least_calls(n, s.limits.max_candidates, top_n=1)
    if body.max_calls is not None and body.max_calls < need:
        detail = f"{window}; {n} candidates need at least {need} calls (one round, then its stages)"
        raise client_error("max_calls", detail)
    return rounds


def runs_per_execution(body: ListwiseRequest, settings: Settings) -> tuple[int, Adaptive | None]:
    """K (k_max with ``"k": "auto"``) and the adaptive-K settings; k_min, k_max and stop only go with auto."""
    if body.k != "auto":
        for name in ("k_min", "k_max", "stop"):
            if name in body.model_fields_set:
                raise client_error(name, 'applies only with "k": "auto" (adaptive K); remove it or set k to "auto"')
        return body.k or settings.limits.default_k, None
    if body.mode != "consensus" or body.permutations is not None:
        raise client_error("k", '"auto" applies to mode consensus over the permutation schedule (no permutations)')
    k_max = body.k_max or settings.limits.default_k
    k_min = body.k_min if "k_min" in body.model_fields_set else min(body.k_min, k_max)
    if k_min > k_max:
        raise client_error("k_min", f"must not exceed k_max ({k_max})")
    return k_max, Adaptive(k_min, body.stop)


def budget(body: ListwiseRequest, settings: Settings, model: ResolvedModel | Jury) -> Budget | None:
    """The request's spending limits; a cost budget needs the model's (every juror's) price."""
    if body.max_calls is None and body.max_cost_usd is None:
        return None
    jurors = model.jurors
    unpriced = [m.string for m in jurors if m.string not in settings.prompting.prices]
    if body.max_cost_usd is not None and unpriced:
        first = unpriced[0]
        raise client_error(
            "max_cost_usd",
            f"model {first} has no price, so a cost budget cannot be kept; set PCFJ_PRICES (USD per million input "
            f'and output tokens, e.g. {{"{first}": [1.25, 10]}}) or use max_calls',
        )
    return Budget(body.max_calls, body.max_cost_usd)
