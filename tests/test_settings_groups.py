"""Settings in groups (issue 36): every field in exactly one group, the environment names unchanged (each field
``PCFJ_<NAME>``, plus the providers' own names where a field says so), a flat constructor as before, and a module
that takes one group sees only that group's fields."""

from __future__ import annotations

import pytest
from pcfjudge.settings import GROUPS, AccessAndSpend, Settings


def test_every_field_is_in_exactly_one_group() -> None:
    owners: dict[str, list[str]] = {}
    for group in GROUPS:
        for name in group.__annotations__:
            owners.setdefault(name, []).append(group.__name__)
    assert set(owners) == set(Settings.model_fields)
    assert all(len(groups) == 1 for groups in owners.values()), owners


def test_the_environment_names_and_the_flat_constructor_are_unchanged(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PCFJ_MAX_CALLS_PER_REQUEST", "7")
    monkeypatch.setenv("PCFJ_CACHE_TTL_S", "12")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")  # a provider's own name
    read = Settings()
    assert read.max_calls_per_request == 7 and read.cache_ttl_s == 12
    assert read.openai_api_key is not None and read.openai_api_key.get_secret_value() == "sk-test"
    assert Settings(max_calls_per_request=3).max_calls_per_request == 3


def test_a_group_is_what_a_module_that_needs_it_takes() -> None:
    settings = Settings()
    access: AccessAndSpend = settings  # the settings are each of their groups
    assert access.max_calls_per_request == settings.max_calls_per_request
    assert "redis_url" not in AccessAndSpend.model_fields  # and a group holds only its own
