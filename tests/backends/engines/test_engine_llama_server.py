"""Judging through llama.cpp's own ``llama-server`` (built from the sources llama-cpp-python vendors, by
``scripts/llama_server.sh``): the OpenAI ``json_schema`` dialect that vLLM, SGLang and Ollama also speak, learned by
``auto`` on the first call, and llama.cpp's other dialect (``json_object`` + ``schema``) pinned; then
``pcfjudge bench engine`` against it, whose prompt-token figures need the cached-token counts llama-server reports."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from pcfjudge.tooling.bench.engine_bench import EngineBench, format_report, run

from tests.backends.engines.test_engine_llamacpp import ANSWERS, QUESTION, ok, service_env
from tests.support.engine import MODEL_NAME, llama_server
from tests.support.processes import serve_process

pytestmark = [pytest.mark.slow, pytest.mark.engine, pytest.mark.timeout(1500)]


@pytest.fixture(scope="module")
def engine() -> Iterator[str]:
    with llama_server() as url:
        yield url


@pytest.mark.parametrize(("mode", "dialect"), [("auto", "json_schema"), ("json_object_schema", "json_object_schema")])
def test_both_llama_cpp_dialects_give_complete_judgments(engine: str, mode: str, dialect: str) -> None:
    env = service_env(engine, PCFJ_OPENAI_OUTPUT_MODE=mode)
    with serve_process(env=env) as url, httpx.Client(base_url=url, timeout=1300) as client:
        question = f"{QUESTION} ({mode})"  # a fresh item per dialect: no cache hit between them
        body: dict[str, Any] = ok(client.post("/judge/listwise", json={"question": question, "candidates": ANSWERS}))
        assert all(run["error"] is None for run in body["runs"]) and body["usage"]["backend_calls"] == 2
        ready = ok(client.get("/readyz"))
        assert ready["structured_output"]["openai"] == {"mode": mode, "dialect": dialect, "learned": True}
        pair = ok(
            client.post(
                "/judge/pairwise", json={"question": question, "response_a": ANSWERS[0], "response_b": ANSWERS[1]}
            )
        )
        assert all(run["error"] is None for run in pair["runs"])


async def test_bench_engine_reports_every_figure(engine: str) -> None:
    bench = EngineBench(engine, MODEL_NAME, items=2, k=3, candidates=3, concurrency=2, max_output_tokens=400)
    passes = await run(bench)
    assert [p.judgments for p in passes] == [2, 2, 2] and all(p.failed_runs == 0 for p in passes)
    report = format_report(bench, passes)
    assert "throughput pcfjudge / bare client:" in report
    assert "× one call's" in report  # llama-server reports cached prompt tokens
    assert passes[1].usage.output_tokens < passes[2].usage.output_tokens  # rationales cost output tokens
