"""``pcfjudge bench http`` on tiny numbers: it starts its processes, measures every figure beside its reference and
prints the table and the JSON report. Only structure and positivity are asserted, never a speed."""

from __future__ import annotations

import json

import pytest
from pcfjudge.cli.main import main
from pcfjudge_lab.bench.http_report import figures

pytestmark = pytest.mark.slow

# --calls 140: the service's CPU over them is several of /proc's 10 ms ticks (28 calls once read as 0 ms)
TINY = [
    "--latency-ms", "20", "--sequential", "2", "--calls", "140", "--cold-concurrency", "2", "--burst", "3",
    "--burst-requests", "6", "--warm-items", "3", "--warm-requests", "30", "--single-requests", "10",
    "--rss-requests", "1100", "--backend-concurrency", "64",
]  # fmt: skip
FIGURES = [
    "fan-out: K=7 p50 / K=1 p50, one request at a time",
    "calls/s, cold K=7 × 2 concurrent",
    "client CPU per backend call",
    "3 concurrent K=1: p50",
    "3 concurrent K=7: p99",
    "warm hits: req/s at 32 concurrent",
    "warm hits: p50 at concurrency 1",
    "RSS after 1,100 warm requests",
    "--workers 2: warm req/s at 32 concurrent",
    "--workers 2: cold calls/s (K=7)",
]


def test_the_json_report_has_every_figure_beside_its_reference(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "http", *TINY, "--workers", "1", "2", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["machine"]["cores"] >= 1 and len(report["machine"]["load_average_start"]) == 3
    names = [f["name"] for f in report["figures"]]
    for name in FIGURES:
        assert name in names, names
    clients = {f["reference_name"] for f in report["figures"] if f["name"] == "client CPU per backend call"}
    assert clients == {"sdk-httpx2 alone", "sdk-aiohttp alone", "backend alone"}
    for figure in report["figures"]:
        assert figure["service"] > 0 and figure["reference"] > 0 and figure["ratio"] > 0, figure
        assert figure["met"] in (True, False, None)
    one = report["workers_1"]
    assert one["cold"]["calls"] == 140 and one["cold"]["ok"] == 20  # 20 K=7 requests, every call made
    assert one["warm_32"]["backend_calls"] == 0 and one["warm_32"]["ok"] == 30  # warm: all from the cache
    assert one["echo_32"]["ok"] == 30 and one["echo_1"]["ok"] == 10
    assert report["workers_2"]["warm_32"]["ok"] == 30
    assert [f.name for f in figures(report)] == names  # the table and the JSON hold the same figures


def test_the_table_names_the_machine(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "http", *TINY, "--workers", "1"]) == 0
    out = capsys.readouterr().out
    assert "cores, load average" in out and "| figure | service | reference |" in out
    assert "bare FastAPI echo" in out and "provider alone" in out
