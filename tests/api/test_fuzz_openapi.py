"""Issue 11: schemathesis fuzzes every operation of a real ``pcfjudge serve`` from its own OpenAPI document:
no server error, every response (success or error) on the schema, invalid requests rejected; at least 1,000
generated requests in all."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from pcfjudge.api.app import create_app
from pcfjudge.settings import Settings
from schemathesis import checks

from tests.support.processes import serve_process

pytestmark = pytest.mark.slow
SENT: Counter[str] = Counter()
CHECKS = [
    checks.not_a_server_error,
    checks.status_code_conformance,
    checks.content_type_conformance,
    checks.response_schema_conformance,
    checks.negative_data_rejection,
]


@pytest.fixture(scope="module")
def fuzzed_url() -> Iterator[str]:
    # cheap to judge: no simulated latency; the caps and limits stay at their defaults
    # reward requests may ask to be held for a group up to 10 minutes: the operator's cap keeps the fuzz quick
    with serve_process(env={"PCFJ_SIM_LATENCY_MS": "0", "PCFJ_REWARD_MAX_WAIT_MS": "1000"}) as url:
        yield url


# The document the server publishes (the same one openapi/openapi.json holds; test_openapi checks they match).
# A request outside the schema must be refused with a 4xx that names the problem; 413 (a body over the size
# limit, refused before it is parsed) counts as such a refusal too.
REFUSALS = [400, 401, 403, 404, 405, 406, 409, 413, 415, 422, 428, 429]
CONFIG = schemathesis.Config.from_dict({"checks": {"negative_data_rejection": {"expected-statuses": REFUSALS}}})
schema = schemathesis.openapi.from_dict(create_app(Settings()).openapi(), config=CONFIG)


@schema.parametrize()
@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large],
    database=None,
)
def test_every_operation_holds_its_schema(case: schemathesis.Case, fuzzed_url: str) -> None:
    SENT[f"{case.method} {case.path}"] += 1
    case.call_and_validate(base_url=fuzzed_url, checks=CHECKS, timeout=60)


def test_at_least_1000_requests_were_generated() -> None:
    assert sum(SENT.values()) >= 1000, dict(SENT)
