"""Settings in groups (issue 47): ``settings.limits.max_items``, every field in exactly one group, the environment
names unchanged (each field ``PCFJ_<NAME>``, plus the providers' own names where a field says so), a flat
constructor as before, and a module handed the group it uses."""

from __future__ import annotations

import pytest
from pcfjudge.doors.checks import check_texts
from pcfjudge.errors import ApiError
from pcfjudge.settings import GROUPS, AccessAndSpend, RequestLimits, Settings
from pydantic import ValidationError


def test_every_field_is_in_exactly_one_group() -> None:
    owners: dict[str, list[str]] = {}
    for group in GROUPS:
        for name in group.model_fields:
            owners.setdefault(name, []).append(group.__name__)
    assert len(owners) > 100
    assert all(len(groups) == 1 for groups in owners.values()), owners
    assert [type(group) for group in Settings().groups()] == list(GROUPS)


def test_the_environment_names_and_the_flat_constructor_are_unchanged(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PCFJ_MAX_CALLS_PER_REQUEST", "7")
    monkeypatch.setenv("PCFJ_CACHE_TTL_S", "12")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")  # a provider's own name
    read = Settings()
    assert read.access.max_calls_per_request == 7 and read.cache.cache_ttl_s == 12
    key = read.providers.openai_api_key
    assert key is not None and key.get_secret_value() == "sk-test"
    given = Settings(max_calls_per_request=3, max_items=50)  # a flat name overrides the environment
    assert given.access.max_calls_per_request == 3 and given.limits.max_items == 50 and given.cache.cache_ttl_s == 12
    assert given.replaced(max_items=60).limits.max_items == 60 and given.limits.max_items == 50


def test_a_misspelt_or_contradictory_setting_is_refused() -> None:
    with pytest.raises(ValidationError, match="max_itemz"):
        Settings(max_itemz=5)
    with pytest.raises(ValidationError, match="min_candidates must not exceed max_candidates"):
        Settings(min_candidates=9, max_candidates=4)
    with pytest.raises(ValidationError, match="PCFJ_REWARD_GROUP_SIZE"):
        Settings(reward_group_size=9, max_group_size=4)  # across two groups


def test_a_whole_group_may_be_given_and_the_settings_are_frozen() -> None:
    settings = Settings(limits=RequestLimits(max_items=40))
    assert settings.limits.max_items == 40 and settings.limits.max_candidates == 16
    with pytest.raises(ValidationError, match="frozen"):
        settings.limits = RequestLimits()  # type: ignore[misc]


def test_a_module_is_handed_the_group_it_uses() -> None:
    limits = Settings(max_question_chars=10).limits
    with pytest.raises(ApiError, match="at most 10 characters"):
        check_texts(limits, "q" * 11, {})
    assert "redis_url" not in AccessAndSpend.model_fields  # a group holds only its own fields
