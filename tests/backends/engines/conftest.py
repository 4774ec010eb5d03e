"""After every engine test: each engine still alive, or the test fails naming the signal it died of and the likely
cause (a dead engine otherwise shows up as a 502 "cannot reach the endpoint")."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.engine import RUNNING, died


@pytest.fixture(autouse=True)
def engine_alive() -> Iterator[None]:
    yield
    for name, proc in list(RUNNING.values()):
        if proc.poll() is not None:
            pytest.fail(str(died(name, proc, "during this test")), pytrace=False)
