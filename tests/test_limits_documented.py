"""Every limit the README and docs state is the default that enforces it, and the defaults admit the ordinary sizes
(issue 36 item 6).

The numbers are read from the pages' text, so changing a default without its pages (or a page without the code) fails
here: each "`PCFJ_X` (N)" / "`PCFJ_X` (default N)" / "default `PCFJ_X` N" anywhere in README.md and docs/ must be
``Settings``' default for X, and the plain-language sizes ("up to 1,000 documents", "up to 256 on one scale", "past
one prompt's 16", "2–1,000 candidates", "windows of at most 16") must be the settings behind them. Then the call
arithmetic: each size users hit with no setting changed plans within the limits, with room for retries.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from pcfjudge.doors.reward.reward_plan import planned_calls
from pcfjudge.judging.window_rounds import STEP_WINDOWS, budget_calls, least_calls, windows_per_round
from pcfjudge.reward.rewards import GroupRequest
from pcfjudge.reward.scoring import GroupSpec, group_k
from pcfjudge.security.guard import estimate_input_tokens
from pcfjudge.settings import FIELDS, Settings

from tests.support.basics import ROOT

PAGES = [ROOT / "README.md", *sorted(p for p in (ROOT / "docs").rglob("*.md") if "hooks" not in p.parts)]
STATED = re.compile(
    r"(?P<before>default )?`PCFJ_(?P<name>[A-Z_]+)`(?P<paren> \((?:default )?| )(?P<number>\d[\d,]*(?:\.\d+)?)"
    r"(?P<unit> ?(?:MB|ms|s)\b)?"
)
# A value a page gives as an example setting, not as the default.
EXAMPLES = {("docs/operations/kubernetes.md", "SHUTDOWN_GRACE_S", 65.0)}
UNITS = {"MB": 1_000_000}


def default(name: str) -> Any:
    return FIELDS[name].get_default(call_default_factory=True)


def text(page: str) -> str:
    return (ROOT / page).read_text(encoding="utf-8")


def number(found: str) -> int:
    return int(found.replace(",", ""))


def stated_defaults() -> list[tuple[str, str, float, int]]:
    """(page, setting name, number, line) for every default a page states."""
    found = []
    for page in PAGES:
        body = page.read_text(encoding="utf-8")
        for m in STATED.finditer(body):
            if not (m["before"] or m["paren"].startswith(" (")):
                continue  # "`PCFJ_X` 60" without "default" or a parenthesis: a value in a sentence, not a default
            name = m["name"].lower()
            if name not in FIELDS:
                continue  # a client-side variable (PCFJ_URL, PCFJ_CLIENT_TIMEOUT_S), not a service setting
            value = float(m["number"].replace(",", "")) * UNITS.get((m["unit"] or "").strip(), 1)
            found.append((str(page.relative_to(ROOT)), name, value, body.count("\n", 0, m.start()) + 1))
    return found


def test_every_stated_default_is_the_code_default() -> None:
    stated = stated_defaults()
    names = {name for _, name, _, _ in stated}
    assert {"max_items", "max_group_size", "max_calls_per_request", "max_reward_calls_per_request"} <= names
    assert {"max_samples_per_request", "max_candidates", "max_queued_calls", "max_input_tokens_per_request"} <= names
    wrong = [
        f"{page}:{line}: PCFJ_{name.upper()} is stated as {value:g}, its default is {default(name)}"
        for page, name, value, line in stated
        if (page, name.upper(), value) not in EXAMPLES and value != default(name)
    ]
    assert not wrong, "\n".join(wrong)


def test_the_sizes_in_words_are_the_limits() -> None:
    readme = text("README.md")
    items, group, window = default("max_items"), default("max_group_size"), default("max_candidates")
    assert [number(n) for n in re.findall(r"up to ([\d,]+) documents", readme)] == [items]
    assert [number(n) for n in re.findall(r"up to ([\d,]+) on one scale", readme)] == [group]
    past = re.findall(r"past one prompt's (\d+)", readme + text("docs/api/listwise.md"))
    assert len(past) >= 2 and {number(n) for n in past} == {window}
    everything = "\n".join(page.read_text(encoding="utf-8") for page in PAGES)
    ranges = re.findall(r"(\d+)–([\d,]+) (?:candidate|answers)", everything)
    assert len(ranges) >= 4 and {(number(a), number(b)) for a, b in ranges} == {(default("min_candidates"), items)}
    assert [number(n) for n in re.findall(r"windows of at most (\d+)", text("docs/rerank.md"))] == [window]
    rewards = text("docs/rewards.md")
    assert (
        f"`PCFJ_MAX_GROUP_SIZE` ({group}" in rewards and f"`PCFJ_WINDOW_ROUNDS` {default('window_rounds')}" in rewards
    )


def test_the_group_size_setting_is_bounded_by_the_group_limit() -> None:
    assert Settings(reward_group_size=default("max_group_size")).reward.reward_group_size == default("max_group_size")
    with pytest.raises(ValueError, match="PCFJ_MAX_GROUP_SIZE"):
        Settings(reward_group_size=default("max_group_size") + 1)


def test_the_services_own_messages_and_schema_agree() -> None:
    """The OpenAPI document bounds no group_size below PCFJ_MAX_GROUP_SIZE (it was 26) and states its default."""
    document = json.loads(text("openapi/openapi.json"))
    reward = document["components"]["schemas"]["RewardRequest"]["properties"]["group_size"]
    assert all("maximum" not in choice for choice in reward["anyOf"])
    assert f"PCFJ_MAX_GROUP_SIZE (default {default('max_group_size')}" in reward["description"]


# ── the call arithmetic of the ordinary sizes ───────────────────────────────────────────────────────────────────


def reward_calls(s: Settings, groups: int, size: int) -> int:
    """What ``reward_plan.plan`` counts for ``groups`` groups of ``size`` distinct responses at the default k."""
    spec = GroupSpec("prompt", None, "sim:default", group_k(s.limits, None, size), "")
    group = GroupRequest(spec, "", [f"response {i}" for i in range(size)])
    return groups * planned_calls(group, size, s)


def test_the_ordinary_sizes_plan_within_the_defaults_with_room_for_retries() -> None:
    s = Settings(**{name: default(name) for name in FIELDS})  # the defaults, whatever the environment says
    window, rounds = s.limits.max_candidates, s.limits.window_rounds
    # one judgment: every attempt (retries included) counts, so each plan leaves at least as many again
    assert budget_calls(1000, window, rounds) == 252  # the cohere SDK's 1,000 documents: 63 windows × 4 rounds
    assert budget_calls(100, window, rounds) == 28  # /judge/listwise with 100 candidates
    assert budget_calls(128, window, rounds) == 32 and budget_calls(256, window, rounds) == 64  # TRL groups
    # Cohere's 10,000 documents: past PCFJ_MAX_WINDOW_CALLS a judgment plans that many, with as many again to spare
    most = s.access.max_window_calls
    assert budget_calls(s.limits.max_items, window, rounds) == 2500 > most == 2048
    assert least_calls(s.limits.max_items, window) <= most and least_calls(s.limits.max_items, window, 10) <= most
    assert 2 * most <= s.access.max_calls_per_request < budget_calls(s.limits.max_items, window, 9)  # 9 rounds: refused
    # reward requests: all their groups together
    assert reward_calls(s, 32, 8) == 224 and reward_calls(s, 16, 16) == 112  # OpenRLHF 32 × 8, 16 × 16
    assert reward_calls(s, 64, 4) == 448  # verl's 256 samples, the costliest whole groups (groups of 4)
    assert reward_calls(s, 1, 64) == 16 and reward_calls(s, 1, 128) == 32  # TRL group_size 64, 128
    assert 2 * reward_calls(s, 32, 8) <= s.access.max_reward_calls_per_request
    n = s.access.max_samples_per_request
    worst = max(  # n samples in groups of one size, the rest in one smaller group
        reward_calls(s, n // size, size) + (reward_calls(s, 1, n % size) if n % size else 0)
        for size in range(1, s.limits.max_group_size + 1)
    )
    assert worst <= s.access.max_reward_calls_per_request  # any request of whole groups the sample limit admits
    assert s.limits.max_group_size >= 128  # TRL group_size 128 is admitted
    # one request the limits admit fits the call slots of an idle backend (its groups reserve their calls at once)
    slots = s.fanout.backend_concurrency + s.access.max_queued_calls
    assert slots >= s.access.max_reward_calls_per_request
    assert slots >= max(STEP_WINDOWS, windows_per_round(s.limits.max_items, window))  # a windowed judgment's step
    # 1,000 documents that fill the old 2 MB body limit, and 10,000 of 1,000 characters: their estimates are admitted
    docs = ["d" * 1996] * 1000
    assert estimate_input_tokens(["q" * 100, *docs], 252, window) <= s.access.max_input_tokens_per_request
    docs = ["d" * 1000] * 10_000
    assert len(json.dumps({"query": "q" * 100, "documents": docs})) <= s.limits.max_body_bytes
    assert estimate_input_tokens(["q" * 100, *docs], most, window) <= s.access.max_input_tokens_per_request


@pytest.mark.parametrize(
    ("setting", "needle"),
    [("max_calls_per_request", "2,048"), ("max_reward_calls_per_request", "224"), ("max_group_size", "64 calls")],
)
def test_each_setting_description_shows_its_arithmetic(setting: str, needle: str) -> None:
    description = FIELDS[setting].description or ""
    assert needle in description, description
