"""``pcfjudge.integrations.verl`` and ``.trl`` called exactly as the frameworks call them, against ``pcfjudge serve``
over the fake provider.

verl and TRL need torch, so their calling code is reproduced from:
  * volcengine/verl@b178a3cd56f58b2d502255daba591e92833930a7 verl/trainer/ppo/reward.py ``get_custom_reward_fn``
    (``load_extern_object`` + ``partial(_call_with_kwargs_async, raw_fn, reward_kwargs)``),
    verl/experimental/reward_loop/reward_manager/naive.py ``run_single`` (the keywords, extra_info's added keys)
    gathered per sample as reward_loop.py ``compute_score_batch`` does, and verl/workers/reward_manager/batch.py;
  * huggingface/trl@f2cd57710ae345ea6428ae95363267fcf38a3dc8 trl/trainer/grpo_trainer.py ``_calculate_rewards``
    (sync call in the training thread; async functions gathered on ``self.async_loop`` in another thread).
"""

from __future__ import annotations

import asyncio
import importlib.util
import inspect
import math
import pickle
import threading
from collections.abc import Callable
from functools import partial
from typing import Any

import httpx
import pytest
from pcfjudge.integrations import verl as verl_integration
from pcfjudge.integrations.trl import PCFJudgeReward

from tests.conftest import K
from tests.support.flaky_proxy import FlakyProxy
from tests.support.inprocess import FakeProvider

pytestmark = pytest.mark.slow
QUESTION = "How many continents are there?"
ANSWERS = ["Seven.", "There are five continents.", "Seven, counting Antarctica.", "Six or seven, by convention."]


def direct(url: str, prompt: str, responses: list[str], reference: str | None = None) -> list[float | None]:
    samples = [{"prompt": prompt, "response": r, "reference": reference} for r in responses]
    reply = httpx.post(f"{url}/v1/reward", json={"samples": samples}, timeout=60)
    assert reply.status_code == 200 and reply.json()["usage"]["backend_calls"] == 0, reply.text
    rewards: list[float | None] = reply.json()["rewards"]
    return rewards


# ── verl ─────────────────────────────────────────────────────────────────────────────────────────────────────────


def verl_custom_reward_fn(reward_kwargs: dict[str, Any]) -> Callable[..., Any]:
    """get_custom_reward_fn for an async function: load the file by path, merge reward_kwargs (they win)."""
    spec = importlib.util.spec_from_file_location("custom_module_test", verl_integration.__file__)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    raw_fn = module.compute_score
    assert inspect.iscoroutinefunction(raw_fn)

    async def _call_with_kwargs_async(raw_fn, extra_kwargs, *args, **kwargs):  # type: ignore[no-untyped-def]
        merged_kwargs = {**kwargs, **extra_kwargs}
        return await raw_fn(*args, **merged_kwargs)

    return partial(_call_with_kwargs_async, raw_fn, reward_kwargs)


async def verl_run_single(compute_score: Callable[..., Any], row: dict[str, Any]) -> dict[str, Any]:
    """NaiveRewardManager.run_single from the decoded response on: the call and how its result is read."""
    extra_info = dict(row.get("extra_info", {}))
    extra_info["num_turns"] = None
    extra_info["rollout_reward_scores"] = {}
    result = await compute_score(
        data_source=row["data_source"],
        solution_str=row["response"],
        ground_truth=row["reward_model"]["ground_truth"],
        extra_info=extra_info,
    )
    reward_extra_info = {}
    if isinstance(result, dict):
        score = result["score"]
        for key, value in result.items():
            reward_extra_info[key] = value
    else:
        score = result
        reward_extra_info["acc"] = score
    return {"reward_score": score, "reward_extra_info": reward_extra_info}


def verl_rows(tag: str, answers: list[str]) -> list[dict[str, Any]]:
    extra = {"split": "train", "index": 17, "question": f"[{tag}] {QUESTION}"}
    return [
        {"data_source": "geo", "response": a, "reward_model": {"ground_truth": "7"}, "extra_info": extra}
        for a in answers
    ]


async def test_verl_async_compute_score_groups_a_prompts_rollouts(judge_url: str, fake: FakeProvider) -> None:
    compute_score = verl_custom_reward_fn({"url": judge_url, "group_size": 4, "group_wait_ms": 60_000})
    try:
        out = await asyncio.gather(*(verl_run_single(compute_score, row) for row in verl_rows("verl", ANSWERS)))
    finally:
        await verl_integration.aclose_clients()
    assert fake.calls(last=0)["calls"] == {"openai": K}  # the batch's 4 rollouts of the prompt: one judgment
    assert [o["reward_score"] for o in out] == direct(judge_url, f"[verl] {QUESTION}", ANSWERS, reference="7")
    for o in out:
        assert set(o["reward_extra_info"]) == {"score", "judge_score", "group_size", "pointwise", "order_sensitive"}
        assert o["reward_extra_info"]["group_size"] == 4.0 and o["reward_extra_info"]["pointwise"] == 0.0


def test_verl_batch_manager_calls_compute_score_batch_once(judge_url: str, fake: FakeProvider) -> None:
    rows = verl_rows("verl batch", ANSWERS)
    scores = verl_integration.compute_score_batch(
        data_sources=[r["data_source"] for r in rows],
        solution_strs=[r["response"] for r in rows],
        ground_truths=[r["reward_model"].get("ground_truth", None) for r in rows],
        extra_infos=[r["extra_info"] for r in rows],
        url=judge_url,
    )
    assert fake.calls(last=0)["calls"] == {"openai": K}
    assert [s["score"] for s in scores] == direct(judge_url, f"[verl batch] {QUESTION}", ANSWERS, reference="7")


async def test_verl_without_a_reward_raises_or_gives_nan_never_zero(judge_url: str, fake: FakeProvider) -> None:
    fake.faults(always="500")
    row = verl_rows("verl failing", ANSWERS[:1])[0]
    try:
        with pytest.raises(verl_integration.RewardUnavailable, match="backend_error"):
            await verl_run_single(verl_custom_reward_fn({"url": judge_url}), row)
        nan = await verl_run_single(verl_custom_reward_fn({"url": judge_url, "on_error": "nan"}), row)
    finally:
        await verl_integration.aclose_clients()
    assert math.isnan(nan["reward_score"]) and all(math.isnan(v) for v in nan["reward_extra_info"].values())


async def test_verl_needs_the_prompt_in_extra_info(judge_url: str) -> None:
    row = {**verl_rows("x", ["7"])[0], "extra_info": {"index": 1}}
    with pytest.raises(ValueError, match="prompt_key"):
        await verl_run_single(verl_custom_reward_fn({"url": judge_url}), row)


# ── TRL ──────────────────────────────────────────────────────────────────────────────────────────────────────────


def trl_calculate_rewards(
    reward_func: Callable[..., Any], inputs: list[dict[str, Any]], loop: asyncio.AbstractEventLoop | None = None
) -> list[float]:
    """_calculate_rewards for one reward function: the columns as kwargs, sync or async dispatch, None → NaN."""
    prompts = [x["prompt"] for x in inputs]
    completions = [x["completion"] for x in inputs]
    completion_ids_list = [[1, 2, 3] for _ in inputs]
    keys = [key for key in inputs[0] if key not in ["prompt", "completion", "completion_ids"]]
    reward_kwargs: dict[str, Any] = {key: [example[key] for example in inputs] for key in keys}
    reward_kwargs["trainer_state"] = object()
    metrics: dict[str, float] = {}
    reward_kwargs["log_extra"] = lambda column, values: None
    reward_kwargs["log_metric"] = metrics.__setitem__
    if inspect.iscoroutinefunction(reward_func):
        assert loop is not None

        async def _invoke_async() -> Any:
            return await reward_func(
                prompts=prompts, completions=completions, completion_ids=completion_ids_list, **reward_kwargs
            )

        output = asyncio.run_coroutine_threadsafe(_invoke_async(), loop).result()
    else:
        output = reward_func(
            prompts=prompts, completions=completions, completion_ids=completion_ids_list, **reward_kwargs
        )
    trl_calculate_rewards.metrics = metrics  # type: ignore[attr-defined]
    return [reward if reward is not None else math.nan for reward in output]


def trl_batch(tag: str) -> list[dict[str, Any]]:
    """Two prompts × 4 generations, conversational, each prompt's completions consecutive, plus an answer column."""
    rows = []
    for q, answer, completions in [
        (QUESTION, "7", ANSWERS),
        ("How many legs does a spider have?", "8", ["Eight.", "Six.", "8 legs.", "Ten."]),
    ]:
        for text in completions:
            prompt = [{"role": "user", "content": f"[{tag}] {q}"}]
            rows.append({"prompt": prompt, "completion": [{"role": "assistant", "content": text}], "answer": answer})
    return rows


def test_trl_sync_reward_func_posts_the_batch_grouped_by_prompt(judge_url: str, fake: FakeProvider) -> None:
    judge = PCFJudgeReward(judge_url, reference_column="answer", groups_per_request=1, max_concurrency=2)
    assert not inspect.iscoroutinefunction(judge) and judge.__name__ == "pcfjudge"
    rows = trl_batch("trl")
    rewards = trl_calculate_rewards(judge, rows)
    assert fake.calls(last=0)["calls"] == {"openai": 2 * K}  # two groups: 2·K calls for 8 completions
    first = direct(judge_url, f"[trl] {QUESTION}", ANSWERS, reference="7")
    second = direct(judge_url, "[trl] How many legs does a spider have?", ["Eight.", "Six.", "8 legs.", "Ten."], "8")
    assert rewards == first + second
    assert trl_calculate_rewards.metrics == {"pcfjudge/no_reward": 0.0}  # type: ignore[attr-defined]
    clone = pickle.loads(pickle.dumps(judge))  # TRL's picklable reward forms
    assert trl_calculate_rewards(clone, rows) == rewards


def test_trl_async_path_on_the_trainers_loop_thread(judge_url: str) -> None:
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    try:
        judge = PCFJudgeReward(judge_url, reference_column="answer")
        assert inspect.iscoroutinefunction(judge.acall)
        rows = trl_batch("trl async")
        rewards = trl_calculate_rewards(judge.acall, rows, loop)
        assert rewards == trl_calculate_rewards(judge, rows)  # the same judgments (now from the cache)
        asyncio.run_coroutine_threadsafe(judge.aclose(), loop).result()
    finally:
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
        loop.close()


def test_trl_retries_after_retry_after_and_failed_samples_are_none(judge_url: str, fake: FakeProvider) -> None:
    rows = trl_batch("trl retry")[:4]
    with FlakyProxy(judge_url, ["503"], retry_after="1") as proxy:
        rewards = trl_calculate_rewards(PCFJudgeReward(proxy.url), rows)
    assert [action for _, _, action in proxy.seen] == ["503", "forward"] and not any(map(math.isnan, rewards))
    fake.faults(always="500")
    failed = trl_calculate_rewards(PCFJudgeReward(judge_url), trl_batch("trl failing"))
    assert all(math.isnan(r) for r in failed)  # None from us, NaN in TRL: no reward, never 0
    assert trl_calculate_rewards.metrics == {"pcfjudge/no_reward": 1.0}  # type: ignore[attr-defined]


def test_trl_names_a_missing_reference_column(judge_url: str) -> None:
    with pytest.raises(KeyError, match="answer"):
        trl_calculate_rewards(PCFJudgeReward(judge_url, reference_column="solution"), trl_batch("x"))


def test_trl_a_grpo_group_of_64_completions_is_one_group_on_one_scale(judge_url: str, fake: FakeProvider) -> None:
    """GRPO's 64 completions of one prompt (past one window): one group judged in 4 rounds of 4 windows of 16, every
    completion rewarded on the group's one scale, the same as /v1/reward gives for those 64."""
    judge = PCFJudgeReward(judge_url, groups_per_request=1)
    question = f"[grpo64] {QUESTION}"
    completions = [f"Completion {i}: the answer is {i % 9}." for i in range(64)]
    rows = [
        {"prompt": [{"role": "user", "content": question}], "completion": [{"role": "assistant", "content": text}]}
        for text in completions
    ]
    rewards = trl_calculate_rewards(judge, rows)
    assert fake.calls(last=0)["calls"] == {"openai": 16}  # ceil(64 / 16) windows × 4 rounds (PCFJ_WINDOW_ROUNDS)
    assert rewards == direct(judge_url, question, completions)
    assert all(0 <= r <= 1 for r in rewards) and len(set(rewards)) > 32
