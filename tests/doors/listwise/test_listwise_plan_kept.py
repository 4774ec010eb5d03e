"""``build_plan`` keeps the plan of a body the lean handler shares (a request repeated byte for byte): the same body
with the same settings and judge is planned once; another body, other settings or another judge are planned anew."""

from __future__ import annotations

import asyncio

from pcfjudge.doors.listwise.listwise_plan import build_plan
from pcfjudge.doors.listwise.listwise_protocol import ListwiseRequest
from pcfjudge.services import Services
from pcfjudge.settings import Settings

BODY = {"question": "Which planet is closest to the Sun?", "candidates": ["Venus.", "Mercury."], "k": 3}


def test_a_body_is_planned_once_per_settings_and_judge() -> None:
    async def main() -> None:
        one, two = Services.build(Settings()), Services.build(Settings(default_k=5))
        try:
            body = ListwiseRequest.model_validate(BODY)
            plan = build_plan(body, one.settings, one.judge)
            assert build_plan(body, one.settings, one.judge) is plan
            equal = ListwiseRequest.model_validate(BODY)  # an equal body, another object: planned anew, equally
            assert build_plan(equal, one.settings, one.judge) is not plan
            assert build_plan(equal, one.settings, one.judge).task.k == plan.task.k == 3
            other = build_plan(body, two.settings, two.judge)
            assert other is not plan and other.task.k == 3
            defaulted = ListwiseRequest.model_validate({**BODY, "k": None})
            assert build_plan(defaulted, two.settings, two.judge).task.k == 5
            assert build_plan(defaulted, one.settings, one.judge).task.k == 7
        finally:
            await one.aclose()
            await two.aclose()

    asyncio.run(main())
