"""``pcfjudge eval … --batch`` and ``pcfjudge batch`` end to end on the fake provider: the same tables as a live run at
the batch price, a ``batch collect`` killed mid-download that resumes with no call lost or recorded twice, and
collected answers serving the HTTP service through the shared (Redis) cache."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from pcfjudge.batch.inputs import judge_items, read_requests
from pcfjudge.batch.job import BatchJob
from pcfjudge.batch.store import RESULTS
from pcfjudge.cli.main import main
from pcfjudge.engine.window_runs import BLAS_THREADS
from pcfjudge.services import Services
from threadpoolctl import threadpool_info, threadpool_limits

from tests.support.basics import OPENAI_KEY, ROOT
from tests.support.inprocess import FakeProvider, app_with_services, provider_settings
from tests.support.processes import clean_env
from tests.support.redis_server import RedisServer
from tests.support.waits import wait_until

PRICE = [2.0, 8.0]


def provider_env(fake: FakeProvider, provider: str = "openai") -> dict[str, str]:
    model = "openai:judge-x" if provider == "openai" else "anthropic:judge-y"
    env = {"PCFJ_PRICES": json.dumps({model: PRICE}), "PCFJ_BATCH_POLL_S": "0.01"}
    if provider == "openai":
        return env | {"OPENAI_API_KEY": OPENAI_KEY, "OPENAI_BASE_URL": f"{fake.url}/v1"}
    return env | {"ANTHROPIC_API_KEY": "sk-ant-test", "ANTHROPIC_BASE_URL": fake.url}


def log(out: Path) -> dict[tuple[str, str, int, int], dict[str, Any]]:
    lines = [json.loads(raw) for raw in (out / "runs.jsonl").read_text().splitlines() if raw.strip()]
    return {(x["item"], x["protocol"], x["execution"], x["index"]): x for x in lines}


def tables(out: Path) -> str:
    """The report's tables, without its cost section (a batch's calls are collected into the cache, so their
    latency and per-call figures are the batch's, not live calls')."""
    report = (out / "report.md").read_text()
    tables = report[report.index("## Table 1") :]
    start = tables.index("## Position bias and cost per judgment")
    end = tables.index("\n## ", start + 1)
    return tables[:start] + tables[end + 1 :]


@pytest.mark.slow
def test_eval_with_batch_gives_the_live_tables_at_the_batch_price(
    fake: FakeProvider, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for name, value in provider_env(fake).items():
        monkeypatch.setenv(name, value)
    common = ["eval", "rewardbench2", "--data", "synthetic:8", "--model", "openai:judge-x", "--k", "3,5"]
    common += ["--executions", "2", "--yes", "--concurrency", "8"]
    assert main([*common, "--out", str(tmp_path / "live")]) == 0
    live_calls = fake.calls()["completions"]["openai"]
    fake.reset()
    assert main([*common, "--out", str(tmp_path / "batch"), "--batch"]) == 0
    assert fake.calls()["completions"] == {}  # not one live call
    served = fake.control.get("/_control/batches").json()["served"]
    assert served == {"openai": live_calls}  # the same calls, each once

    live, batch = log(tmp_path / "live"), log(tmp_path / "batch")
    assert live.keys() == batch.keys()
    for key, line in live.items():
        assert batch[key]["judgments"] == line["judgments"] and batch[key]["answer"] == line["answer"]
        assert batch[key]["error"] is None and batch[key]["cached"] is True
    assert tables(tmp_path / "batch") == tables(tmp_path / "live")

    summary = json.loads((tmp_path / "batch" / "batch" / "summary.json").read_text())
    live_tokens = json.loads((tmp_path / "live" / "summary.json").read_text())["log"]
    assert summary["usage"]["input_tokens"] == live_tokens["input_tokens"]
    assert summary["usage"]["output_tokens"] == live_tokens["output_tokens"]
    live_usd = (live_tokens["input_tokens"] * PRICE[0] + live_tokens["output_tokens"] * PRICE[1]) / 1e6
    assert summary["cost_usd_live_equivalent"] == pytest.approx(live_usd, abs=1e-6)
    assert summary["cost_usd_batch"] == pytest.approx(live_usd / 2, abs=1e-6)
    print(f"measured: live ${live_usd:.4f}, batch ${summary['cost_usd_batch']:.4f} for {live_calls} calls")

    fake.reset()  # a rerun finds everything collected: nothing submitted, the same tables
    assert main([*common, "--out", str(tmp_path / "batch"), "--batch"]) == 0
    assert fake.control.get("/_control/batches").json()["batches"] == []
    assert tables(tmp_path / "batch") == tables(tmp_path / "live")


@pytest.mark.slow
def test_eval_batch_refuses_without_confirmation_and_through_a_server(
    fake: FakeProvider, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for name, value in provider_env(fake).items():
        monkeypatch.setenv(name, value)
    common = ["eval", "rewardbench2", "--data", "synthetic:2", "--model", "openai:judge-x", "--batch"]
    assert main([*common, "--out", str(tmp_path / "a")]) == 2  # no terminal to confirm on, no --yes
    assert "pass --yes" in capsys.readouterr().err
    assert fake.control.get("/_control/batches").json()["batches"] == []
    assert main([*common, "--out", str(tmp_path / "b"), "--server", "http://127.0.0.1:9", "--yes"]) == 2
    assert "drop --server" in capsys.readouterr().err


def requests_file(path: Path, n: int, k: int = 5) -> Path:
    lines = [
        {
            "question": f"Question {i}: in which year did the Berlin Wall fall?",
            "candidates": ["1989.", f"It fell in {1990 + i}.", "I am not sure; possibly the late 1980s."],
            "k": k,
        }
        for i in range(n)
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def pcfjudge(*args: str, env: dict[str, str]) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "pcfjudge.cli.main", *args],
        cwd=ROOT,
        env=clean_env(env),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )


def finished(proc: subprocess.Popen[bytes], timeout_s: float = 120) -> tuple[int, str]:
    out, _ = proc.communicate(timeout=timeout_s)
    return proc.returncode, out.decode(errors="replace")


def result_lines(out: Path) -> list[dict[str, Any]]:
    path = out / "batch" / RESULTS
    if not path.exists():
        return []
    return [json.loads(raw) for raw in path.read_text().splitlines() if raw.strip().endswith("}")]


@pytest.mark.slow
@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_a_killed_batch_collect_resumes_with_no_call_lost_or_duplicated(
    provider: str, fake: FakeProvider, tmp_path: Path
) -> None:
    env = provider_env(fake, provider)
    model = "openai:judge-x" if provider == "openai" else "anthropic:judge-y"
    requests, out = requests_file(tmp_path / "requests.jsonl", n=6), tmp_path / "out"
    code, text = finished(
        pcfjudge("batch", "submit", "--input", str(requests), "--out", str(out), "--model", model, "--yes", env=env)
    )
    assert code == 3, text  # submitted, still running
    assert "submitted 0001: 30 requests" in text

    fake.control.post("/_control/batches", json={"stall_after": 7}).raise_for_status()  # the download hangs
    collector = pcfjudge("batch", "collect", "--out", str(out), env=env)
    try:
        # the SDKs hand a line on once the next one starts arriving: 6 or 7 lines are recorded before the stall
        wait_until(lambda: len(result_lines(out)) >= 6, what="results recorded before the stall", timeout_s=60)
        assert collector.poll() is None  # still collecting (stalled mid-download)
        collector.send_signal(signal.SIGKILL)
        collector.wait(timeout=30)
    finally:
        if collector.poll() is None:
            collector.kill()
            collector.wait(timeout=30)
        assert collector.stdout is not None
        collector.stdout.close()
    assert collector.returncode == -signal.SIGKILL
    assert 6 <= len(result_lines(out)) <= 7

    fake.control.post("/_control/batches", json={"stall_after": None}).raise_for_status()
    code, text = finished(pcfjudge("batch", "collect", "--out", str(out), env=env))
    assert code == 0, text
    lines = result_lines(out)
    assert len(lines) == 30 and len({line["custom_id"] for line in lines}) == 30  # none lost, none twice
    assert all(line["ok"] for line in lines)
    shown = fake.control.get("/_control/batches").json()
    assert shown["served"] == {provider: 30} and len(shown["batches"]) == 1  # each call paid once
    judgments = [json.loads(raw) for raw in (out / "judgments.jsonl").read_text().splitlines()]
    assert [j["line"] for j in judgments] == [1, 2, 3, 4, 5, 6] and all("winners" in j for j in judgments)
    assert all(j["usage"]["backend_calls"] == 0 for j in judgments)

    code, text = finished(pcfjudge("batch", "status", "--out", str(out), "--json", env=env))
    assert code == 0, text
    summary = json.loads(text[text.index("{") :])
    assert summary["collected_ok"] == 30 and summary["submissions"][0]["status"] == "collected"
    assert summary["cost_usd_batch"] == pytest.approx(summary["cost_usd_live_equivalent"] / 2, abs=1e-6)


def test_a_batch_runs_blas_on_one_thread(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``pcfjudge batch`` fits many-candidate items as a served process does: numpy's BLAS on one thread
    (``window_runs.limit_blas``); the limit is restored after the test."""
    with threadpool_limits(limits=None):  # restores the process's limits on exit
        assert main(["batch", "status", "--out", str(tmp_path)]) == 2
        blas = [pool for pool in threadpool_info() if pool["user_api"] == "blas"]
        assert blas and all(pool["num_threads"] == BLAS_THREADS == 1 for pool in blas)
    assert "pass --input" in capsys.readouterr().err


def test_batch_commands_say_what_is_missing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["batch", "status", "--out", str(tmp_path)]) == 2
    assert "pass --input" in capsys.readouterr().err
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"question": "q", "candidates": ["only one"]}\n')
    assert main(["batch", "submit", "--input", str(bad), "--out", str(tmp_path / "o"), "--model", "sim:default"]) == 2
    assert "batches need an openai: model" in capsys.readouterr().err


async def test_collected_answers_serve_the_http_service_through_redis(
    fake: FakeProvider, redis_server: RedisServer, tmp_path: Path
) -> None:
    settings = provider_settings("openai", fake, redis_url=redis_server.url, prices={"openai:judge-x": (2.0, 8.0)})
    body = {"question": "Who wrote Hamlet?", "candidates": ["Shakespeare.", "Marlowe.", "Bacon."], "k": 3}
    (tmp_path / "requests.jsonl").write_text(json.dumps(body) + "\n")
    services = Services.build(settings)
    try:
        items = read_requests(tmp_path / "requests.jsonl", services, "openai:judge-x")  # as the service reads them
        job = BatchJob(services, tmp_path / "batch", "openai:judge-x")
        assert await job.rounds(partial(judge_items, items=items), lambda _estimate: None) == {}
        job.close()
    finally:
        await services.aclose()
    fake.reset()
    async with app_with_services(settings) as (client, _):  # a fresh service process would see the same Redis
        response = await client.post("/judge/listwise", json=body | {"model": "openai:judge-x"})
    assert response.status_code == 200
    assert response.json()["usage"]["backend_calls"] == 0 and response.json()["usage"]["cache_hits"] == 3
    assert fake.calls()["calls"] == {}


def test_a_provider_error_is_reported_without_the_key_and_the_rerun_goes_on(
    fake: FakeProvider, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for name, value in (provider_env(fake) | {"OPENAI_API_KEY": "sk-wrong-0123456789-SECRET"}).items():
        monkeypatch.setenv(name, value)
    fake.faults(expect_key=OPENAI_KEY)  # the fake's 401 echoes the key it was sent, as OpenAI's does
    requests, out = requests_file(tmp_path / "requests.jsonl", n=1, k=3), tmp_path / "out"
    submit = ["batch", "submit", "--input", str(requests), "--out", str(out), "--model", "openai:judge-x", "--yes"]
    assert main(submit) == 2
    err = capsys.readouterr().err
    assert "openai batch API failed" in err and "AuthenticationError" in err and "SECRET" not in err
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_KEY)
    assert main(submit) == 3  # the interrupted submission is sent now (once), and is running
    assert len(fake.control.get("/_control/batches").json()["batches"]) == 1
    assert main(["batch", "collect", "--out", str(out), "--wait"]) == 0
