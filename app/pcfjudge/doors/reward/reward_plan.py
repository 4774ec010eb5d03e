"""Reward requests below their routes: samples (from /v1/reward or a framework adapter) grouped and checked into a
``Groups`` value, then judged through the service's ``Rewards`` (which collects incomplete groups across requests) into one result
per sample. A failed group gives its samples ``reward: null`` and an ``error``.

Limits, checked before any work (every reward front door goes through ``check_samples`` and ``plan``):
``PCFJ_MAX_SAMPLES_PER_REQUEST`` samples (413), ``PCFJ_MAX_REWARD_CALLS_PER_REQUEST`` backend calls for all the
groups together (422; each group also within ``PCFJ_MAX_CALLS_PER_REQUEST``, retries included at run time), and
``PCFJ_MAX_WAITING_MEMBERS_PER_KEY`` samples of one key waiting for their groups' other members (503).
"""

from __future__ import annotations

import asyncio
import weakref
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace

from pcfjudge import context
from pcfjudge.doors.checks import resolve_model
from pcfjudge.doors.reward.reward_protocol import (
    RewardMode,
    RewardOptions,
    RewardRequest,
    RewardSampleResult,
    RewardUsage,
    SampleError,
)
from pcfjudge.engine.judge import Judge
from pcfjudge.engine.progress import PLAIN, Watch
from pcfjudge.engine.spend import Meter
from pcfjudge.errors import ApiError, Overloaded, client_error
from pcfjudge.judging import permutations as perms
from pcfjudge.judging.window_rounds import budget_calls, least_calls
from pcfjudge.reward.collector import note_of
from pcfjudge.reward.rewards import GroupRequest, Rewards
from pcfjudge.reward.scoring import Failure, GroupSpec, GroupUsage, GroupVerdict, MemberOutcome, Recorder, group_k
from pcfjudge.settings import AccessAndSpend, Settings


@dataclass(frozen=True, slots=True)
class Item:
    """One sample as every front door hands it over."""

    prompt: str
    response: str
    reference: str | None = None
    group: str | None = None


@dataclass(frozen=True, slots=True)
class Groups:
    """A validated reward request: its groups, each sample's group, and how long incomplete groups wait. Each group
    becomes one judgment's ``engine.plan.Plan`` when it is judged (its members may come from other requests); at
    intake each is checked as a plan is (``Judge.check_spend``)."""

    model: str
    mode: RewardMode
    size: int
    wait_s: float
    groups: list[GroupRequest]
    where: list[int]  # sample index → group index
    items: list[Item]


@dataclass(frozen=True, slots=True)
class Judged:
    model: str
    samples: list[RewardSampleResult]
    usage: RewardUsage
    failures: list[Failure]  # one per sample without a reward


def check_samples(access: AccessAndSpend, n: int, field: str) -> None:
    """At most PCFJ_MAX_SAMPLES_PER_REQUEST samples (413 naming the limit), checked before anything is done."""
    limit = access.max_samples_per_request
    if n > limit:
        detail = (
            f"{field}: {n} samples > the limit of {limit} per request (PCFJ_MAX_SAMPLES_PER_REQUEST); send the batch "
            "in several requests, whole groups in each"
        )
        raise ApiError("too_many_samples", detail, field=field)


def plan(s: Settings, judge: Judge, options: RewardOptions, items: Sequence[Item], field: str) -> Groups:
    """Group and check the samples (422 naming the field for anything the service cannot do). The model is
    resolved here to refuse a bad one; groups carry its string, since a group may be judged by another replica
    (the Redis rendezvous), whose judge resolves it there."""
    check_samples(s.access, len(items), field)
    model = resolve_model(judge, options.model, None)
    size = options.group_size or s.reward.reward_group_size
    if size > s.limits.max_group_size:
        raise client_error("group_size", f"at most {s.limits.max_group_size} (PCFJ_MAX_GROUP_SIZE); got {size}")
    wait_ms = options.group_wait_ms if options.group_wait_ms is not None else s.reward.reward_group_wait_ms
    wait_ms = min(wait_ms, s.reward.reward_max_wait_ms)  # the operator's cap on how long a request is held
    k, tenant = options.k, context.key_name()  # None: the default for the group's size (scoring.group_k)
    index: dict[tuple[str, str, str | None] | str, int] = {}
    groups: list[GroupRequest] = []
    where: list[int] = []
    for i, item in enumerate(items):
        _check_lengths(s, item, f"{field}.{i}")
        reference = item.reference if item.reference and item.reference.strip() else None
        key = item.group if item.group is not None else ("", item.prompt, reference)
        if key not in index:
            index[key] = len(groups)
            groups.append(
                GroupRequest(
                    GroupSpec(item.prompt, reference, model.string, k, tenant, options.max_calls), item.group or "", []
                )
            )
        group = groups[index[key]]
        if (group.spec.prompt, group.spec.reference) != (item.prompt, reference):
            detail = f"group {item.group!r} already has another prompt or reference; a group's members share both"
            raise client_error(f"{field}.{i}.group", detail)
        group.texts.append(item.response)
        where.append(index[key])
    for group in groups:
        distinct = len(set(group.texts))
        if distinct > s.limits.max_group_size:
            where_ = f"group {group.label!r}" if group.label else "a prompt"
            detail = (
                f"{where_} has {distinct} distinct responses; at most {s.limits.max_group_size} (PCFJ_MAX_GROUP_SIZE)"
            )
            raise ApiError("group_too_large", detail, field=field)
    # Each group's K, fixed now for its expected size (members meet only with the same spec, so K is resolved before
    # they do): the request's k, else PCFJ_DEFAULT_K in one window, PCFJ_WINDOW_ROUNDS rounds past it.
    groups = [replace(g, spec=replace(g.spec, k=group_k(s.limits, k, members(g, size)))) for g in groups]
    if k == 1 and any(members(g, size) > s.limits.max_candidates for g in groups):
        detail = (
            f"a group of more than {s.limits.max_candidates} (PCFJ_MAX_CANDIDATES) is judged in rounds: k is at least 2"
        )
        raise client_error("k", detail)
    if options.max_calls is not None:
        cut = s.limits.max_candidates
        need = max((least_calls(members(g, size), cut) for g in groups if members(g, size) > cut), default=0)
        if options.max_calls < need:
            raise client_error("max_calls", f"a group of this request needs at least {need} calls (two rounds)")
    calls = sum(planned_calls(g, size, s) for g in groups)
    if calls > s.access.max_reward_calls_per_request:
        detail = (
            f"{field}: this request's {len(groups)} groups need up to {calls} backend calls; the limit is "
            f"{s.access.max_reward_calls_per_request} per request (PCFJ_MAX_REWARD_CALLS_PER_REQUEST); send fewer groups "
            "per request or lower k"
        )
        raise ApiError("over_limit", detail, field=field)
    jurors = model.jurors
    judge.allow(jurors)
    for g in groups:  # each group is one judgment: checked as Judge.check checks a plan (every juror's calls)
        window = s.limits.max_candidates if members(g, size) > s.limits.max_candidates else None
        calls, texts = planned_calls(g, size, s) * len(jurors), [g.spec.prompt, *g.texts]
        judge.check_spend(jurors, calls, texts, field=field, window=window)
    return Groups(model.string, options.reward, size, wait_ms / 1000, groups, where, list(items))


def plan_request(s: Settings, judge: Judge, body: RewardRequest) -> Groups:
    """``POST /v1/reward``'s plan, checked once at intake: answered now, streamed or queued as a job."""
    check_samples(s.access, len(body.samples), "samples")
    items = [Item(x.prompt, x.response, x.reference, x.group) for x in body.samples]
    return plan(s, judge, body, items, "samples")


def members(group: GroupRequest, size: int) -> int:
    """The distinct responses ``group`` will be judged with: a group that waits for other requests' members is
    counted at the size it waits for."""
    distinct = len(set(group.texts))
    return max(distinct, size) if len(group.texts) < size else distinct


def planned_calls(group: GroupRequest, size: int, s: Settings) -> int:
    """The most backend calls judging ``group`` can take: K in one window (1 for a lone response), else its K
    rounds of windows."""
    n, k = members(group, size), group.spec.k or s.limits.default_k
    if n <= s.limits.max_candidates:
        return min(k, perms.max_k(n))
    return budget_calls(n, s.limits.max_candidates, k, group.spec.max_calls)


def _check_lengths(s: Settings, item: Item, field: str) -> None:
    if len(item.prompt) > s.limits.max_question_chars:
        raise client_error(
            f"{field}.prompt", f"at most {s.limits.max_question_chars} characters (got {len(item.prompt)})"
        )
    for name, text in (("response", item.response), ("reference", item.reference or "")):
        if len(text) > s.limits.max_candidate_chars:
            raise client_error(
                f"{field}.{name}", f"at most {s.limits.max_candidate_chars} characters (got {len(text)})"
            )


async def judge_plan(
    s: Settings, rewards: Rewards, plan: Groups, record: Recorder | None = None, watch: Watch = PLAIN
) -> Judged:
    """Judge (or collect) every group and shape one result per sample, in order; the groups this request judges run
    as ``watch`` says, within the request's own call allowance (PCFJ_MAX_REWARD_CALLS_PER_REQUEST), and are awaited
    through ``record`` (``doors.decisions.listwise_recorder``: their metrics under the request's door)."""
    allowance = Meter(s.access.max_reward_calls_per_request, "PCFJ_MAX_REWARD_CALLS_PER_REQUEST", watch.meter)
    wait_s = plan.wait_s
    if (by := watch.answer_by) is not None:  # the caller's deadline: a group closes in time to be judged
        wait_s = min(wait_s, max(0.0, (by.at - asyncio.get_running_loop().time()) / 2))
    with _waiting(s, rewards, plan):
        verdicts = await rewards.judge_groups(
            plan.groups, size=plan.size, wait_s=wait_s, record=record, watch=replace(watch, meter=allowance)
        )
    samples, failures = [], []
    for item, g in zip(plan.items, plan.where, strict=True):
        outcome = verdicts[g].outcome(item.response)
        assert outcome is not None  # Rewards judges any member a collected verdict lacks
        result = sample_result(outcome, plan.mode, plan.groups[g].spec.reference is not None)
        result.group_note = note_of(verdicts[g])
        samples.append(result)
        if outcome.failure is not None:
            failures.append(outcome.failure)
    return Judged(plan.model, samples, _usage(verdicts), failures)


_WAITING: weakref.WeakKeyDictionary[Rewards, Counter[str]] = weakref.WeakKeyDictionary()
"""Samples waiting for their groups' other members, per API key (tenant), per app's rewards."""


@contextmanager
def _waiting(s: Settings, rewards: Rewards, plan: Groups) -> Iterator[None]:
    """Count this request's samples that wait for other requests' members against its key's
    PCFJ_MAX_WAITING_MEMBERS_PER_KEY while they wait (503 with Retry-After past it)."""
    collected = [g for g in plan.groups if len(g.texts) < plan.size]
    n = sum(len(g.texts) for g in collected)
    if n == 0:
        yield
        return
    tenant = collected[0].spec.tenant
    waiting = _WAITING.setdefault(rewards, Counter())
    limit = s.access.max_waiting_members_per_key
    if waiting[tenant] + n > limit:
        raise Overloaded(
            f"this API key has {waiting[tenant]} samples waiting for their groups' other members; at most {limit} "
            "may wait (PCFJ_MAX_WAITING_MEMBERS_PER_KEY); retry once groups have filled",
            retry_after=max(1.0, min(plan.wait_s, 30.0)),
        )
    waiting[tenant] += n
    try:
        yield
    finally:
        waiting[tenant] -= n
        if waiting[tenant] <= 0:
            del waiting[tenant]


def sample_result(outcome: MemberOutcome, mode: RewardMode, reference: bool) -> RewardSampleResult:
    failure = outcome.failure
    return RewardSampleResult(
        reward=outcome.reward(mode),
        score=outcome.score,
        consensus=outcome.consensus,
        rank=outcome.rank,
        winner=outcome.winner,
        group_size=outcome.group_size,
        candidates=outcome.candidates,
        scoring=outcome.scoring,
        reference=reference,
        order_sensitive=outcome.order_sensitive,
        k=outcome.k,
        prompt_version=outcome.prompt_version,
        stopped=outcome.stopped,
        error=SampleError(error=failure.kind, detail=failure.detail, retry_after=failure.retry_after)
        if failure
        else None,
    )


def _usage(verdicts: Sequence[GroupVerdict]) -> RewardUsage:
    distinct = list({id(v): v for v in verdicts}.values())
    total = sum((v.usage for v in distinct), GroupUsage())
    return RewardUsage(
        groups=len(distinct),
        backend_calls=total.backend_calls,
        cache_hits=total.cache_hits,
        input_tokens=total.input_tokens,
        output_tokens=total.output_tokens,
        cached_tokens=total.cached_tokens,
        cost_usd=total.cost_usd,
    )
