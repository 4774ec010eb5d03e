"""Issue 11: schemathesis fuzzes every operation of a real ``pcfjudge serve`` from its own OpenAPI document:
no server error, every response (success or error) on the schema, invalid requests rejected; at least 1,000
generated requests in all. Issue 37: hypothesis also sends every POST route bodies nested up to 200,000 deep and heads
up to 200 KB and 400 headers, over a plain socket: never a server error, and each refused as its limit says (431 for
the head, 422 for the nesting)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pcfjudge.api.app import create_app
from pcfjudge.settings import Settings
from schemathesis import checks

from tests.support.processes import serve_process
from tests.support.raw_http import raw_request

# alone: its count test reads what the fuzz test before it sent; and schemathesis gives every operation's test the same
# node id, which xdist's scheduler (a map by node id) runs once: tried on every core, it fuzzed one operation only.
pytestmark = [pytest.mark.slow, pytest.mark.alone]
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


POSTS = sorted(path for path, item in create_app(Settings()).openapi()["paths"].items() if "post" in item)
DEPTHS = st.one_of(st.integers(0, 80), st.sampled_from([63, 64, 65, 1000, 5000, 100_000, 200_000]))
BRACKETS = st.sampled_from([("[", "]"), ('{"a":', "}"), ('[{"k":', "}]")])
CONTENT_TYPES = st.sampled_from([("Content-Type", "application/json"), ("Content-Type", "text/plain"), None])


def nested(depth: int, brackets: tuple[str, str]) -> tuple[bytes, int]:
    """A body ``depth`` units deep, and its depth in arrays and objects."""
    opening, closing = brackets
    levels = depth * (opening.count("[") + opening.count("{"))
    return (opening * depth + "1" + closing * depth).encode(), levels


@given(
    path=st.sampled_from(POSTS),
    depth=DEPTHS,
    brackets=BRACKETS,
    content_type=CONTENT_TYPES,
    pad=st.one_of(st.integers(0, 70_000), st.sampled_from([65_000, 66_000, 200_000])),
    count=st.one_of(st.integers(0, 300), st.sampled_from([250, 257, 400])),
)
@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow], database=None)
def test_deep_json_and_large_heads_are_refused_never_a_server_error(
    fuzzed_url: str,
    path: str,
    depth: int,
    brackets: tuple[str, str],
    content_type: tuple[str, str] | None,
    pad: int,
    count: int,
) -> None:
    body, levels = nested(depth, brackets)
    headers = [("X-Pad", "p" * pad), *((f"X-H{i}", "v") for i in range(count))]
    headers += [content_type] if content_type else []
    answer = raw_request(fuzzed_url, "POST", path, headers, body, patient_after=60_000)
    sent = [("Host", "127.0.0.1:65535"), ("Connection", "close"), ("Content-Length", str(len(body))), *headers]
    size = len(path) + sum(len(name) + len(value) + 4 for name, value in sent)  # as the limit counts it
    head_over = size > 65_536 + 64 or len(sent) > 256  # a margin either side of the byte limit
    head_within = size < 65_536 - 64 and len(sent) <= 256
    assert 0 < answer.status < 500, answer
    if head_over:
        assert answer.status == 431, answer
    elif head_within and levels > 64 and content_type != ("Content-Type", "text/plain"):
        refused = 400 if path == "/v1/chat/completions" else 422  # the chat door: OpenAI's 400 for an invalid request
        assert answer.status == refused and b"PCFJ_MAX_JSON_DEPTH" in answer.body, answer
