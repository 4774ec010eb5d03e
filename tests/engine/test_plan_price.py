"""A plan's price (issue 36 item 1): the most a judgment may cost at PCFJ_PRICES, worked by hand from its calls, their
estimated input tokens and their output caps, each juror at its own price; and the cap that refuses a plan past it."""

from __future__ import annotations

import pytest
from pcfjudge.doors.listwise.listwise_plan import build_task
from pcfjudge.doors.listwise.listwise_protocol import ListwiseRequest
from pcfjudge.security.guard import estimate_input_tokens
from pcfjudge.settings import Settings

from tests.support.inprocess import app_with_services

BODY = {"question": "When was the Peace of Westphalia signed?", "candidates": ["In 1648.", "In 1658.", "1648"], "k": 3}
PRICES = {"sim:default": (2.0, 10.0), "sim:oracle": (1.0, 4.0)}  # USD per million (input, output) tokens


async def test_one_models_plan_costs_its_calls_tokens_and_output_caps_at_its_price() -> None:
    settings = Settings(prices=PRICES, max_output_tokens=1000)
    async with app_with_services(settings) as (_client, services):
        judge = services.judge
        plan = judge.plan(build_task(ListwiseRequest.model_validate(BODY), settings, judge))
    texts = [BODY["question"], *BODY["candidates"]]
    tokens = estimate_input_tokens(texts, 3)  # the guard's own estimate of the three calls' input
    assert plan.calls == 3
    assert plan.price_usd == pytest.approx((tokens * 2.0 + 3 * 1000 * 10.0) / 1_000_000)


async def test_a_jurys_plan_prices_each_jurors_share_at_its_own_price_and_an_unpriced_juror_leaves_it_open() -> None:
    both = BODY | {"model": "sim:default,sim:oracle"}
    prices: list[float | None] = []
    for table in (PRICES, {"sim:default": PRICES["sim:default"]}):  # both jurors priced; the oracle unpriced
        settings = Settings(prices=table, max_output_tokens=1000)
        async with app_with_services(settings) as (_client, services):
            plan = services.judge.plan(build_task(ListwiseRequest.model_validate(both), settings, services.judge))
        assert plan.calls == 6
        prices.append(plan.price_usd)
    tokens = estimate_input_tokens([BODY["question"], *BODY["candidates"]], 3)  # each juror's three calls
    assert prices[0] == pytest.approx((tokens * 3.0 + 3 * 1000 * 14.0) / 1_000_000)
    assert prices[1] is None


async def test_no_prices_no_price_and_the_cap_refuses_only_past_it() -> None:
    async with app_with_services(Settings()) as (client, services):
        plan = services.judge.plan(build_task(ListwiseRequest.model_validate(BODY), services.settings, services.judge))
        assert plan.price_usd is None
        assert (await client.post("/judge/listwise", json=BODY)).status_code == 200
    priced = Settings(prices=PRICES, max_output_tokens=1000)
    async with app_with_services(priced) as (_client, services):
        price = services.judge.plan(build_task(ListwiseRequest.model_validate(BODY), priced, services.judge)).price_usd
    assert price is not None
    for cap, status in ((price * 1.01, 200), (price * 0.99, 422)):
        async with app_with_services(priced.replaced(max_cost_usd_per_request=cap)) as (client, _s):
            reply = await client.post("/judge/listwise", json=BODY)
        assert reply.status_code == status, reply.text
        if status == 422:
            assert "PCFJ_MAX_COST_USD_PER_REQUEST" in reply.json()["detail"]
