"""Traces (``pcfjudge.telemetry.tracing``): spans exported by the OpenTelemetry SDK's own OTLP/HTTP exporter to a real
receiver on a free port (``pcfjudge_lab.otlp_receiver``: an HTTP server that decodes the protobuf
``ExportTraceServiceRequest`` with opentelemetry-proto), never an in-memory exporter.

* ``pcfjudge serve`` as a subprocess, with ``OTEL_EXPORTER_OTLP_ENDPOINT``, judging through the fake provider:
  request → judgment → K call spans in the caller's trace, GenAI attributes, a cache miss then hits, a retry; the
  trace id in ``X-Trace-Id``, the access log and the OpenMetrics exemplars; the provider receives each call span's
  ``traceparent``;
* in process: the call tasks the runner starts (single flight) carry the right parent, a request that joins another
  request's calls records them as shared, and the SDK transports (OpenAI's ``sdk``, Anthropic's) pass the trace on;
* off: no header, no span, no exporter thread, the SDK not even imported.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from pcfjudge.telemetry import tracing
from pcfjudge_lab.otlp_receiver import OtlpReceiver, ReceivedSpan

from tests.support.basics import CANDIDATES, OPENAI_KEY, QUESTION
from tests.support.inprocess import FakeProvider, app_client, provider_settings, running_fake
from tests.support.processes import clean_env, serve_process
from tests.support.waits import wait_until

CALLER_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
CALLER_SPAN = "00f067aa0ba902b7"
SECOND_TRACE = "0af7651916cd43dd8448eb211c80319c"
THIRD_TRACE = "a3ce929d0e0e47364bf92f3577b34da6"
LISTWISE = {"question": QUESTION, "candidates": CANDIDATES, "k": 3, "include_runs": False}


def traceparent(trace_id: str, span_id: str = CALLER_SPAN) -> str:
    return f"00-{trace_id}-{span_id}-01"


def of_trace(spans: list[ReceivedSpan], trace_id: str) -> list[ReceivedSpan]:
    return [s for s in spans if s.trace_id == trace_id]


def one(spans: list[ReceivedSpan], kind: str, name: str) -> ReceivedSpan:
    found = [s for s in spans if s.kind == kind and s.name == name]
    assert len(found) == 1, (kind, name, [(s.kind, s.name) for s in spans])
    return found[0]


def tree(spans: list[ReceivedSpan]) -> str:
    """The spans as an indented tree (printed by the tests: ``pytest -s`` shows what the receiver got)."""
    ids = {s.span_id for s in spans}
    children: dict[str | None, list[ReceivedSpan]] = {}
    for s in sorted(spans, key=lambda s: s.start_ns):
        children.setdefault(s.parent_span_id if s.parent_span_id in ids else None, []).append(s)
    lines: list[str] = []

    def walk(parent: str | None, depth: int) -> None:
        for s in children.get(parent, []):
            keep = ("pcfjudge.cache", "pcfjudge.retries", "pcfjudge.cache_hits", "gen_ai.usage.input_tokens")
            shown = {k: v for k, v in s.attributes.items() if k in keep}
            events = f" events={s.event_names()}" if s.events else ""
            above = f" (parent {s.parent_span_id})" if depth == 0 and s.parent_span_id else ""
            lines.append(
                f"{'  ' * depth}{s.kind} {s.name!r} trace={s.trace_id} span={s.span_id}{above} {shown}{events}"
            )
            walk(s.span_id, depth + 1)

    walk(None, 0)
    return "\n".join(lines)


@pytest.fixture
def receiver() -> Iterator[OtlpReceiver]:
    with OtlpReceiver() as running:
        yield running


# ── pcfjudge serve, exporting ────────────────────────────────────────────────────────────────────────────────────


@pytest.mark.slow
def test_serve_exports_request_judgment_and_call_spans_in_the_callers_trace(
    receiver: OtlpReceiver, tmp_path: Path
) -> None:
    log = tmp_path / "serve.log"
    env = {
        "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url,
        "OTEL_BSP_SCHEDULE_DELAY": "50",
        "OPENAI_API_KEY": OPENAI_KEY,
        "PCFJ_DEFAULT_MODEL": "openai:judge-x",
        "PCFJ_RETRY_BASE_S": "0.01",
    }
    with running_fake() as fake:
        env["PCFJ_OPENAI_BASE_URL"] = f"{fake.url}/v1"
        with serve_process("--log-level", "info", env=env, log_path=log) as url:
            first = httpx.post(
                f"{url}/judge/listwise", json=LISTWISE, headers={"traceparent": traceparent(CALLER_TRACE)}, timeout=60
            )
            served = fake.calls(last=10)["requests"]
            scraped = httpx.get(f"{url}/metrics", headers={"accept": "application/openmetrics-text; version=1.0.0"})
            plain = httpx.get(f"{url}/metrics")
            second = httpx.post(
                f"{url}/judge/listwise", json=LISTWISE, headers={"traceparent": traceparent(SECOND_TRACE)}, timeout=60
            )
            fake.faults(["429"], retry_after=0)  # the next call is refused once, then retried
            retried = httpx.post(
                f"{url}/judge/listwise",
                json={**LISTWISE, "question": "Which year did the Wall fall, again?", "k": 1},
                headers={"traceparent": traceparent(THIRD_TRACE)},
                timeout=60,
            )
            spans = receiver.wait_for(
                lambda got: all(
                    any(s.kind == "SERVER" for s in of_trace(got, t)) for t in (CALLER_TRACE, SECOND_TRACE, THIRD_TRACE)
                ),
                what="the three requests' spans",
            )
    for response in (first, second, retried):
        assert response.status_code == 200, response.text
    print(*(tree(of_trace(spans, t)) for t in (CALLER_TRACE, SECOND_TRACE, THIRD_TRACE)), sep="\n")

    # request → judgment → K calls, in the caller's trace
    traced = of_trace(spans, CALLER_TRACE)
    request = one(traced, "SERVER", "POST /judge/listwise")
    judgment = one(traced, "INTERNAL", "judge listwise")
    calls = [s for s in traced if s.kind == "CLIENT"]
    assert request.parent_span_id == CALLER_SPAN and request.service == "pcfjudge" and request.scope == "pcfjudge"
    assert request.attributes | {"pcfjudge.request_id": "…"} == {
        "http.request.method": "POST",
        "url.path": "/judge/listwise",
        "url.scheme": "http",
        "http.route": "/judge/listwise",
        "http.response.status_code": 200,
        "pcfjudge.api_key.name": "anonymous",
        "pcfjudge.request_id": "…",
    }
    assert request.attributes["pcfjudge.request_id"] == first.headers["x-request-id"]
    assert judgment.parent_span_id == request.span_id
    assert {k: judgment.attributes[k] for k in ("gen_ai.request.model", "pcfjudge.k", "pcfjudge.candidates")} == {
        "gen_ai.request.model": "openai:judge-x",
        "pcfjudge.k": 3,
        "pcfjudge.candidates": 3,
    }
    assert judgment.attributes["pcfjudge.runs.ok"] == 3 and judgment.attributes["pcfjudge.runs.failed"] == 0
    assert judgment.attributes["pcfjudge.backend_calls"] == 3 and judgment.attributes["pcfjudge.cache_hits"] == 0
    assert len(calls) == 3 and {c.name for c in calls} == {"chat judge-x"}
    for call in calls:
        assert call.parent_span_id == judgment.span_id and call.status == "UNSET"
        a = call.attributes
        assert (a["gen_ai.operation.name"], a["gen_ai.provider.name"], a["gen_ai.system"]) == (
            "chat",
            "openai",
            "openai",
        )
        assert (a["gen_ai.request.model"], a["pcfjudge.model"]) == ("judge-x", "openai:judge-x")
        assert a["gen_ai.request.temperature"] == 0.0 and a["gen_ai.request.max_tokens"] > 0
        assert a["gen_ai.usage.input_tokens"] > 0 and a["gen_ai.usage.output_tokens"] > 0
        assert a["pcfjudge.cache"] == "miss" and a["pcfjudge.retries"] == 0 and a["pcfjudge.queued_ms"] >= 0
    assert first.headers["x-trace-id"] == CALLER_TRACE

    # the provider got each call span's context as its traceparent
    assert sorted(r["traceparent"] for r in served) == sorted(traceparent(CALLER_TRACE, c.span_id) for c in calls)

    # sent again: the same request in another trace, all K runs from the cache: no judgment span, no call span; the
    # judgment is one event on the request's span, with the attributes its span would have had
    again = of_trace(spans, SECOND_TRACE)
    assert second.headers["x-trace-id"] == SECOND_TRACE
    assert [s.kind for s in again] == ["SERVER"]
    (judged_again,) = [
        attrs for name, attrs in one(again, "SERVER", "POST /judge/listwise").events if name == "judge listwise"
    ]
    assert judged_again == {
        "gen_ai.request.model": "openai:judge-x",
        "pcfjudge.k": 3,
        "pcfjudge.candidates": 3,
        "pcfjudge.cache_hits": 3,  # its runs, no call made and none failed: what "answered by the cache" means
    }

    # a 429 then an answer: one call span, one retry
    (call,) = [s for s in of_trace(spans, THIRD_TRACE) if s.kind == "CLIENT"]
    assert call.attributes["pcfjudge.retries"] == 1 and call.events == [("retry", {"error.type": "rate_limited"})]
    assert call.status == "UNSET"

    # the exemplars: a slow bucket links to its trace (OpenMetrics only; the Prometheus text format stays the default)
    assert scraped.headers["content-type"].startswith("application/openmetrics-text")
    request_buckets = [
        line for line in scraped.text.splitlines() if line.startswith("pcfjudge_request_duration_seconds_bucket")
    ]
    assert any(
        f'trace_id="{CALLER_TRACE}"' in line and 'endpoint="/judge/listwise"' in line for line in request_buckets
    )
    call_buckets = [
        line for line in scraped.text.splitlines() if line.startswith("pcfjudge_backend_call_duration_seconds_bucket")
    ]
    assert any(f'trace_id="{CALLER_TRACE}"' in line for line in call_buckets)
    assert plain.headers["content-type"].startswith("text/plain") and "trace_id" not in plain.text

    # the access log line; a clean start and stop (the spans queued at shutdown exported, no export error)
    text = log.read_text()
    lines = [line for line in text.splitlines() if "pcfjudge.access" in line and "/judge/listwise" in line]
    assert f"trace_id={CALLER_TRACE}" in lines[0] and f"request_id={first.headers['x-request-id']}" in lines[0]
    assert f"tracing on: spans go over OTLP/HTTP to {receiver.url}/v1/traces" in text
    assert "Traceback" not in text and "Failed to export" not in text, text


# ── in process: tasks, single flight, the SDK transports ─────────────────────────────────────────────────────────


@pytest.fixture
def tracing_on(receiver: OtlpReceiver, monkeypatch: pytest.MonkeyPatch) -> Iterator[OtlpReceiver]:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.url)
    monkeypatch.setenv("OTEL_BSP_SCHEDULE_DELAY", "20")
    yield receiver
    assert not tracing.on()  # the app's lifespan turned it off again


@pytest.mark.parametrize("provider", ["anthropic", "openai-sdk"])
async def test_concurrent_requests_share_calls_and_the_sdks_carry_the_trace(
    provider: str, tracing_on: OtlpReceiver, fake: FakeProvider
) -> None:
    """Two requests for the same judgment at once: the call tasks the first starts are children of its judgment (the
    runner's tasks copy the context); the second joins them (three ``shared call`` events, no call span)."""
    name = provider.split("-")[0]
    overrides = {"openai_transport": "sdk"} if provider == "openai-sdk" else {}
    fake.faults(latency_ms=1000)  # the second request arrives while the first's calls are in flight
    async with app_client(provider_settings(name, fake, **overrides)) as client:
        headers = [{"traceparent": traceparent(t)} for t in (CALLER_TRACE, SECOND_TRACE)]
        first = asyncio.create_task(client.post("/judge/listwise", json=LISTWISE, headers=headers[0]))
        started = lambda: fake.calls(0)["calls"].get(name, 0) >= 3  # noqa: E731 - the first's calls reached the fake
        await asyncio.to_thread(wait_until, started, what="the first request's calls", timeout_s=20, interval_s=0.01)
        second = await client.post("/judge/listwise", json=LISTWISE, headers=headers[1])
        assert (await first).status_code == 200 and second.status_code == 200
    spans = tracing_on.wait_for(lambda got: len(of_trace(got, SECOND_TRACE)) >= 2, what="both requests' spans")
    print(tree(of_trace(spans, CALLER_TRACE)), tree(of_trace(spans, SECOND_TRACE)), sep="\n")
    judgment = one(of_trace(spans, CALLER_TRACE), "INTERNAL", "judge listwise")
    calls = [s for s in of_trace(spans, CALLER_TRACE) if s.kind == "CLIENT"]
    assert len(calls) == 3 and all(c.parent_span_id == judgment.span_id for c in calls)
    assert {c.attributes["gen_ai.provider.name"] for c in calls} == {name}
    joined = one(of_trace(spans, SECOND_TRACE), "INTERNAL", "judge listwise")
    assert not [s for s in of_trace(spans, SECOND_TRACE) if s.kind == "CLIENT"]
    shared = [attrs for event, attrs in joined.events if event == "shared call"]
    assert len(shared) == 3 and {(a["pcfjudge.cache"], a["pcfjudge.shared_by"]) for a in shared} == {
        ("shared", "request")
    }
    sent = [r["traceparent"] for r in fake.calls(last=10)["requests"]]
    assert sorted(sent) == sorted(traceparent(CALLER_TRACE, c.span_id) for c in calls)


async def test_a_judgments_own_events_are_events_on_its_span(tracing_on: OtlpReceiver) -> None:
    """The judgment span hears the judgment's events (``engine.progress``): a jury of two over 20 candidates (rounds
    of windows) adds a ``round finished`` event per round of each juror and a ``juror finished`` event per juror."""
    body = {
        "question": QUESTION,
        "candidates": [f"answer {i}" for i in range(20)],
        "model": ["sim:default", "sim:oracle"],
    }
    async with app_client() as client:
        reply = await client.post("/judge/listwise", json=body, headers={"traceparent": traceparent(CALLER_TRACE)})
    assert reply.status_code == 200, reply.text
    spans = tracing_on.wait_for(
        lambda got: any(s.name == "judge listwise" for s in of_trace(got, CALLER_TRACE)), what="the judgment span"
    )
    judgment = one(of_trace(spans, CALLER_TRACE), "INTERNAL", "judge listwise")
    jurors = [a for name, a in judgment.events if name == "juror finished"]
    rounds = [a for name, a in judgment.events if name == "round finished"]
    assert sorted(a["pcfjudge.model"] for a in jurors) == ["sim:default", "sim:oracle"]
    assert all(a["pcfjudge.delivered"] is True for a in jurors)
    for juror in ("sim:default", "sim:oracle"):
        steps = [a["pcfjudge.step"] for a in rounds if a["pcfjudge.model"] == juror]
        assert steps == list(range(1, len(steps) + 1)) and len(steps) >= 2  # each of its rounds, in order
    assert judgment.event_names().index("juror finished") > judgment.event_names().index("round finished")


async def test_a_chat_judgment_has_its_span_like_every_other_door(tracing_on: OtlpReceiver) -> None:
    """POST /v1/chat/completions judges in ``Judge.run``'s span, ``judge chat``: the template recognised, the orders
    each juror judges, the jurors; at the end its runs (every juror's orders), calls and whether the orders split."""
    from tests.doors.chat import framework_prompts as fp

    messages = fp.mt_bench(QUESTION, CANDIDATES[0], CANDIDATES[1])
    body = {"model": ["sim:default", "sim:oracle"], "messages": messages}
    async with app_client() as client:
        reply = await client.post("/v1/chat/completions", json=body, headers={"traceparent": traceparent(THIRD_TRACE)})
    assert reply.status_code == 200, reply.text
    spans = tracing_on.wait_for(
        lambda got: any(s.name == "judge chat" for s in of_trace(got, THIRD_TRACE)), what="the chat judgment span"
    )
    judgment = one(of_trace(spans, THIRD_TRACE), "INTERNAL", "judge chat")
    a = judgment.attributes
    assert a["pcfjudge.template"] == "mt-bench-pair-v2" and a["pcfjudge.orders"] == 2 and a["pcfjudge.candidates"] == 2
    assert a["gen_ai.request.model"] == "sim:default,sim:oracle"
    assert list(a["pcfjudge.jurors"]) == ["sim:default", "sim:oracle"]
    assert (a["pcfjudge.runs.ok"], a["pcfjudge.runs.failed"], a["pcfjudge.backend_calls"]) == (4, 0, 4)
    assert a["pcfjudge.split"] is reply.json()["pcfjudge"]["split"]
    parent = next(s for s in spans if s.span_id == judgment.parent_span_id)
    assert parent.kind == "SERVER" and "/v1/chat/completions" in parent.name  # the request's own span


# ── off ──────────────────────────────────────────────────────────────────────────────────────────────────────────


def test_off_unless_the_standard_variables_name_an_endpoint() -> None:
    endpoint = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318/"}
    assert tracing.exporting({}) is None
    assert tracing.exporting(endpoint) == "http://collector:4318/v1/traces"
    assert tracing.exporting({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://c:4318/x"}) == "http://c:4318/x"
    assert tracing.exporting(endpoint | {"OTEL_SDK_DISABLED": "true"}) is None
    assert tracing.exporting(endpoint | {"OTEL_TRACES_EXPORTER": "none"}) is None
    assert tracing.exporting(endpoint | {"OTEL_TRACES_EXPORTER": "otlp"}) is not None


def test_off_there_is_no_header_no_exporter_thread_and_no_tracing_sdk() -> None:
    """In a fresh interpreter, the app on embedded defaults with no OTEL_* variable: a request with a caller's
    traceparent gets no X-Trace-Id, and the process holds no provider, no export thread, and neither the SDK's tracing
    nor the exporter is imported (redis-py imports the SDK's *metrics* module by itself when the SDK is installed)."""
    script = textwrap.dedent(
        f"""
        import asyncio, json, sys, threading
        import httpx
        from asgi_lifespan import LifespanManager
        from pcfjudge.api.app import create_app
        from pcfjudge.telemetry import tracing

        async def main():
            app = create_app()
            async with LifespanManager(app) as manager:
                transport = httpx.ASGITransport(app=manager.app)
                async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
                    reply = await client.post(
                        "/judge/listwise", json={LISTWISE!r},
                        headers={{"traceparent": "{traceparent(CALLER_TRACE)}"}},
                    )
                    return reply.status_code, dict(reply.headers), tracing.on(), [t.name for t in threading.enumerate()]

        status, headers, on, threads = asyncio.run(main())
        sdk = sorted(m for m in sys.modules if m.startswith(("opentelemetry.sdk.trace", "opentelemetry.exporter")))
        print(json.dumps({{"status": status, "headers": headers, "on": on, "threads": threads, "sdk": sdk}}))
        """
    )
    out = subprocess.run(
        [sys.executable, "-W", "error", "-c", script], capture_output=True, text=True, timeout=120, env=clean_env()
    )
    assert out.returncode == 0, out.stderr
    seen = json.loads(out.stdout.strip().splitlines()[-1])
    assert seen["status"] == 200 and "x-request-id" in seen["headers"]
    assert "x-trace-id" not in seen["headers"] and seen["on"] is False
    assert seen["sdk"] == [] and not [t for t in seen["threads"] if "Otel" in t or "Span" in t], seen


async def test_a_failed_judgment_marks_its_calls_its_judgment_and_its_request(
    tracing_on: OtlpReceiver, fake: FakeProvider
) -> None:
    fake.faults(always="500")
    async with app_client(provider_settings("openai", fake, max_retries=1)) as client:
        reply = await client.post("/judge/listwise", json=LISTWISE, headers={"traceparent": traceparent(CALLER_TRACE)})
    assert reply.status_code == 502 and reply.headers["x-trace-id"] == CALLER_TRACE
    spans = of_trace(
        tracing_on.wait_for(lambda got: any(s.kind == "SERVER" for s in got), what="the spans"), CALLER_TRACE
    )
    print(tree(spans))
    request = one(spans, "SERVER", "POST /judge/listwise")
    judgment = one(spans, "INTERNAL", "judge listwise")
    calls = [s for s in spans if s.kind == "CLIENT"]
    assert (request.status, request.attributes["error.type"], request.attributes["http.response.status_code"]) == (
        "ERROR",
        "502",
        502,
    )
    assert (judgment.status, judgment.attributes["error.type"]) == ("ERROR", "backend_error")
    assert len(calls) == 3
    for call in calls:
        assert (call.status, call.attributes["error.type"], call.attributes["pcfjudge.retries"]) == (
            "ERROR",
            "provider_error",
            1,
        )
        assert call.events == [("retry", {"error.type": "provider_error"})]


async def test_a_trace_the_caller_did_not_sample_makes_no_span_yet_carries_the_trace(
    tracing_on: OtlpReceiver, fake: FakeProvider
) -> None:
    """Parent-based sampling (the default): a caller's ``traceparent`` with the sampled flag off makes no span of the
    request, its judgment or its calls (none is started: ``tracing.unsampled``), while the answer still names the trace
    and each provider request carries it on, unsampled. A sampled request after it is traced whole."""
    async with app_client(provider_settings("openai", fake)) as client:
        quiet = await client.post(
            "/judge/listwise", json=LISTWISE, headers={"traceparent": f"00-{SECOND_TRACE}-{CALLER_SPAN}-00"}
        )
        sent = [r["traceparent"] for r in fake.calls(last=10)["requests"]]
        loud = await client.post(
            "/judge/listwise",
            json={**LISTWISE, "question": "And the third moon?"},
            headers={"traceparent": traceparent(CALLER_TRACE)},
        )
    assert quiet.status_code == loud.status_code == 200 and quiet.headers["x-trace-id"] == SECOND_TRACE
    assert len(sent) == 3 and all(t.startswith(f"00-{SECOND_TRACE}-") and t.endswith("-00") for t in sent), sent
    spans = tracing_on.wait_for(lambda got: len(of_trace(got, CALLER_TRACE)) >= 5, what="the sampled request's spans")
    assert not of_trace(spans, SECOND_TRACE)
    assert sorted(s.kind for s in of_trace(spans, CALLER_TRACE)) == ["CLIENT"] * 3 + ["INTERNAL", "SERVER"]
