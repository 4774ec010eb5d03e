"""verl reward functions backed by a pcfjudge service (httpx + standard library only).

    custom_reward_function.path=pkg://pcfjudge.integrations.verl custom_reward_function.name=compute_score
    +custom_reward_function.reward_kwargs.url=http://judge:8000
    +custom_reward_function.reward_kwargs.group_size=8        # = actor_rollout_ref.rollout.n

verl calls ``compute_score(data_source=, solution_str=, ground_truth=, extra_info=, **reward_kwargs)`` once per
sample (verl/trainer/ppo/reward.py ``get_custom_reward_fn`` merges ``reward_kwargs`` in; the reward loop's naive
manager awaits an ``async def`` for every sample of a batch at once), so a prompt's n rollouts reach the service
together and, with ``group_size`` = n, are judged as one group. verl passes no prompt: it is read from
``extra_info[prompt_key]`` (default: the first of question, prompt, problem, query). Samples group by
``extra_info["index"]`` (the same for a prompt's rollouts) and data source, else by prompt. ``ground_truth`` is the
reference.

The result is ``{"score": reward, "judge_score", "group_size", "pointwise", "order_sensitive"}`` (verl logs the
extra keys). A sample without a reward (its judgment failed after the retries) raises ``RewardUnavailable``, or
gives NaN everywhere with ``on_error="nan"``: never a made-up 0; either way it is logged as a WARNING and counted in
``pcfjudge.integrations.service.FAILURES``. A request the service refuses as a client error (4xx: a bad option, a
group over PCFJ_MAX_GROUP_SIZE, a batch over a limit) raises ``RewardRequestRefused`` with the service's detail,
whatever ``on_error`` says. ``reward_kwargs``: url, api_key (default PCFJ_URL,
PCFJ_API_KEY), model, k, reward (consensus|borda|win), group_size, group_wait_ms, timeout_s, retries, prompt_key,
on_error. ``compute_score_batch`` does the same for verl's ``batch`` reward manager (lists in, one dict each out; the
batch's groups go in a few requests, ``max_concurrency`` at once).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import httpx

from pcfjudge.client.http import ServiceError
from pcfjudge.integrations.batches import Chunk, chunk_groups, outcomes, post_chunks
from pcfjudge.integrations.service import (
    FAILURES,
    RewardRequestRefused,
    RewardService,
    RewardUnavailable,
    aclose_clients,
    note_failed_request,
    note_missing_rewards,
    reference_text,
    refusal,
)

__all__ = [
    "FAILURES",
    "RewardRequestRefused",
    "RewardUnavailable",
    "aclose_clients",
    "compute_score",
    "compute_score_batch",
]

PROMPT_KEYS = ("question", "prompt", "problem", "query")
EXTRA_KEYS = ("judge_score", "group_size", "pointwise", "order_sensitive")


async def compute_score(
    data_source: str,
    solution_str: str,
    ground_truth: Any,
    extra_info: Mapping[str, Any] | None = None,
    **kwargs: Any,
) -> dict[str, float]:
    """One sample's reward from the service (see the module docstring)."""
    service = RewardService.from_kwargs(kwargs)
    sample = _sample(data_source, solution_str, ground_truth, extra_info, kwargs)
    try:
        result = await service.apost([sample])
    except (ServiceError, httpx.HTTPError) as exc:
        if (refused := refusal(exc)) is not None:
            raise refused from exc
        note_failed_request(exc, 1)
        return _failed(str(exc), kwargs)
    out = result["samples"][0]
    if out.get("reward") is None:
        note_missing_rewards([str((out.get("error") or {}).get("error", "error"))])
    return _score(out, kwargs)


def compute_score_batch(
    data_sources: Sequence[str],
    solution_strs: Sequence[str],
    ground_truths: Sequence[Any],
    extra_infos: Sequence[Mapping[str, Any] | None],
    **kwargs: Any,
) -> list[dict[str, float]]:
    """Every sample's reward for verl's ``batch`` reward manager: the batch's groups in a few requests (whole groups,
    bounded size, ``max_concurrency`` at once, default 4); same keywords as ``compute_score``."""
    service = RewardService.from_kwargs(kwargs)
    rows = zip(data_sources, solution_strs, ground_truths, extra_infos, strict=True)
    groups: dict[str, Chunk] = {}
    for i, (source, solution, truth, extra) in enumerate(rows):
        sample = _sample(source, solution, truth, extra, kwargs)
        groups.setdefault(sample.get("group") or sample["prompt"], []).append((i, sample))
    chunks = chunk_groups(list(groups.values()))
    results = post_chunks(service, chunks, int(kwargs.get("max_concurrency") or 4))
    out = outcomes(len(data_sources), chunks, results)
    return [
        _score(o, kwargs) if o is not None else _failed("its request failed after the retries", kwargs) for o in out
    ]


def _sample(
    data_source: str, solution: str, ground_truth: Any, extra_info: Mapping[str, Any] | None, kwargs: Mapping[str, Any]
) -> dict[str, Any]:
    extra = extra_info or {}
    keys = (kwargs["prompt_key"],) if kwargs.get("prompt_key") else PROMPT_KEYS
    prompt = next((extra[k] for k in keys if isinstance(extra.get(k), str) and extra[k].strip()), None)
    if prompt is None:
        raise ValueError(
            f"pcfjudge needs the prompt, and verl passes it only in extra_info: put it under one of {list(keys)} "
            "in your dataset's extra_info (or name the key with reward_kwargs.prompt_key)"
        )
    sample: dict[str, Any] = {"prompt": prompt, "response": solution, "reference": reference_text(ground_truth)}
    if extra.get("index") is not None:
        sample["group"] = f"{data_source}:{reference_text(extra['index'])}"
    return sample


def _score(out: Mapping[str, Any], kwargs: Mapping[str, Any]) -> dict[str, float]:
    if out.get("reward") is None:
        error = out.get("error") or {}
        return _failed(f"{error.get('error', 'error')}: {error.get('detail', 'no reward')}", kwargs)
    return {
        "score": float(out["reward"]),
        "judge_score": float(out.get("score") or 0.0),
        "group_size": float(out["group_size"]),
        "pointwise": float(out["scoring"] == "pointwise"),
        "order_sensitive": float(bool(out.get("order_sensitive"))),
    }


def _failed(why: str, kwargs: Mapping[str, Any]) -> dict[str, float]:
    if kwargs.get("on_error", "raise") == "nan":
        return {"score": math.nan, **dict.fromkeys(EXTRA_KEYS, math.nan)}
    raise RewardUnavailable(f"pcfjudge gave no reward for this sample ({why})")
