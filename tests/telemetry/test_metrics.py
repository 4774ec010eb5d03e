"""/metrics: names and labels, promtool, a real Prometheus scraping the service, and --workers N."""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import httpx
import pytest
from pcfjudge.telemetry import metrics, spans, tracing
from pcfjudge.telemetry.light_spans import start_span
from prometheus_client import CollectorRegistry, Histogram
from prometheus_client.parser import text_string_to_metric_families

from tests.support.basics import ROOT
from tests.support.inprocess import ClientFactory
from tests.support.otel import Kept, tracer
from tests.support.processes import background_process, serve_process
from tests.support.waits import free_port, wait_until

LISTWISE = {"question": "2+2?", "candidates": ["4", "5", "four", "22"], "k": 4}
PAIRWISE = {"question": "2+2?", "response_a": "4", "response_b": "5"}

needs_promtool = pytest.mark.skipif(
    shutil.which("promtool") is None, reason="promtool missing (scripts/test.sh installs it)"
)


def samples(text: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def value(text: str, name: str, **labels: str) -> float:
    return sum(v for (n, ls), v in samples(text).items() if n == name and set(labels.items()) <= ls)


def family_names(text: str) -> set[str]:
    return {f.name for f in text_string_to_metric_families(text)}


async def test_metrics_count_requests_calls_and_position_bias(make_client: ClientFactory) -> None:
    async with make_client() as client:
        before = (await client.get("/metrics")).text
        assert (await client.post("/judge/listwise", json=LISTWISE)).status_code == 200
        assert (await client.post("/judge/listwise", json={**LISTWISE, "k": 0})).status_code == 422
        assert (await client.post("/judge/pairwise", json=PAIRWISE)).status_code == 200
        resp = await client.get("/metrics")
        after = resp.text
    assert resp.headers["content-type"].startswith("text/plain")

    def delta(name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    assert delta("pcfjudge_requests_total", endpoint="/judge/listwise", status="200") == 1
    assert delta("pcfjudge_requests_total", endpoint="/judge/listwise", status="422") == 1
    assert delta("pcfjudge_request_duration_seconds_count", endpoint="/judge/listwise") == 2
    assert delta("pcfjudge_backend_calls_total", provider="sim", model="sim:default", outcome="ok") >= 4
    assert delta("pcfjudge_top_pick_position_total", endpoint="/judge/listwise") == pytest.approx(4)
    listwise = {"endpoint": "/judge/listwise", "door": "listwise", "mode": "now"}
    assert delta("pcfjudge_decisions_total", **listwise, method="consensus") == 1
    assert delta("pcfjudge_decisions_total", endpoint="/judge/pairwise") == 1
    assert delta("pcfjudge_run_agreement_count") == 1
    assert delta("pcfjudge_cache_lookups_total", layer="memory") >= 4
    assert value(after, "pcfjudge_build_info") == 1
    # Bounded labels: no raw paths, ids or candidate text.
    assert "four" not in after and "2+2" not in after


async def test_unmatched_paths_use_a_bounded_label(client: httpx.AsyncClient) -> None:
    await client.get("/no/such/path/zq-unmatched")
    text = (await client.get("/metrics")).text
    assert "zq-unmatched" not in text  # letters: a number could turn up in any sample's value
    assert value(text, "pcfjudge_requests_total", endpoint="unmatched", status="404") >= 1


@needs_promtool
async def test_promtool_accepts_live_output(client: httpx.AsyncClient) -> None:
    await client.post("/judge/listwise", json=LISTWISE)
    text = (await client.get("/metrics")).text
    proc = await asyncio.to_thread(
        subprocess.run, ["promtool", "check", "metrics"], input=text, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.strip() == "" and proc.stderr.strip() == "", proc.stdout + proc.stderr


@needs_promtool
def test_promtool_accepts_alert_rules() -> None:
    proc = subprocess.run(
        ["promtool", "check", "rules", str(ROOT / "deploy/prometheus/alerts.yml")], capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "SUCCESS" in proc.stdout


async def test_dashboard_and_alerts_only_use_exported_metrics(client: httpx.AsyncClient) -> None:
    exported = family_names((await client.get("/metrics")).text)
    dashboard = json.loads((ROOT / "deploy/grafana/pcfjudge-dashboard.json").read_text())
    exprs = [t["expr"] for p in dashboard["panels"] for t in p.get("targets", [])]
    alerts = (ROOT / "deploy/prometheus/alerts.yml").read_text()
    used = set(re.findall(r"pcfjudge_[a-z_]+", " ".join(exprs) + alerts))
    assert used, "no metric names found"
    rows = {p["title"] for p in dashboard["panels"] if p["type"] == "row"}
    assert rows == {"Service health", "Judge reliability", "Cost"}
    for name in used:
        base = re.sub(r"_(bucket|sum|count|total)$", "", name)
        assert base in exported, f"{name} is used in deploy/ but not exported"


def prom_query(prometheus: str, query: str) -> str | None:
    """The value of a one-sample PromQL ``query``, or None while Prometheus has no answer for it yet."""
    try:
        result = httpx.get(f"{prometheus}/api/v1/query", params={"query": query}, timeout=2).json()["data"]["result"]
    except (httpx.HTTPError, KeyError, ValueError):
        return None
    return str(result[0]["value"][1]) if result else None


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("prometheus") is None, reason="prometheus missing (scripts/test.sh installs it)")
def test_real_prometheus_scrapes_the_service(serve_url: str) -> None:
    for _ in range(3):
        assert httpx.post(f"{serve_url}/judge/listwise", json=LISTWISE, timeout=30).status_code == 200
    target = serve_url.removeprefix("http://")
    with tempfile.TemporaryDirectory() as tmp:
        config = Path(tmp) / "prometheus.yml"
        config.write_text(
            "global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: pcfjudge\n"
            f"    static_configs:\n      - targets: ['{target}']\n"
        )
        prometheus = f"http://127.0.0.1:{free_port()}"
        argv = [
            "prometheus",
            f"--config.file={config}",
            f"--storage.tsdb.path={tmp}/data",
            f"--web.listen-address={prometheus.removeprefix('http://')}",
        ]
        with background_process(argv, ready_url=f"{prometheus}/-/ready", timeout_s=60):
            query = 'sum(pcfjudge_requests_total{endpoint="/judge/listwise",status="200"})'
            found = wait_until(lambda: prom_query(prometheus, query), what="a scrape", timeout_s=60, interval_s=0.5)
            assert found == "3"
            top_picks = prom_query(prometheus, "sum(pcfjudge_top_pick_position_total)")
            assert top_picks is not None and float(top_picks) == pytest.approx(12)


@pytest.mark.slow
def test_workers_share_one_view_of_metrics() -> None:
    with (
        tempfile.TemporaryDirectory() as tmp,
        serve_process("--workers", "2", env={"PROMETHEUS_MULTIPROC_DIR": tmp}) as base,
        httpx.Client(timeout=30) as http,
    ):
        for i in range(20):
            # New connections so the kernel spreads them over both workers.
            r = http.post(f"{base}/judge/listwise", json={**LISTWISE, "seed": i}, headers={"connection": "close"})
            assert r.status_code == 200
        texts = [http.get(f"{base}/metrics", headers={"connection": "close"}).text for _ in range(4)]
        for text in texts:  # every worker answers with the totals of all workers
            assert value(text, "pcfjudge_requests_total", endpoint="/judge/listwise", status="200") == 20
            assert value(text, "pcfjudge_decisions_total", endpoint="/judge/listwise") == 20
        assert list(Path(tmp).glob("counter_*.db")), "workers did not write multiprocess files"


def test_an_exemplar_at_most_once_a_second_per_bucket(monkeypatch: pytest.MonkeyPatch) -> None:
    """``spans.timed`` (a traced request's latency): a sampled span names its observation's bucket, unless that bucket
    was given one less than a second ago (a scrape shows a bucket's last exemplar only); another bucket gets its own;
    without tracing, none."""
    histogram = Histogram("t_seconds", "t", buckets=metrics.LLM_BUCKETS, registry=CollectorRegistry())
    made = tracer(Kept())
    first, second, third, slow = (start_span(made, name) for name in ("a", "b", "c", "slow"))
    now = [1000.0]
    monkeypatch.setattr(spans, "monotonic", lambda: now[0])

    def exemplar(bucket: int) -> str | None:
        found = histogram._buckets[bucket].get_exemplar()
        return None if found is None else found.labels["trace_id"]

    def trace_of(span: object) -> str:
        return f"{span.get_span_context().trace_id:032x}"  # type: ignore[attr-defined]

    spans.timed(histogram, 0.01, first)  # tracing off: observed, no exemplar
    assert exemplar(0) is None
    monkeypatch.setattr(tracing, "_TRACER", made)
    spans.timed(histogram, 0.01, first)
    now[0] += 0.5
    spans.timed(histogram, 0.02, second)  # the same bucket within the second: the first stays
    spans.timed(histogram, 7.0, slow)  # another bucket (le=10): its own
    assert (exemplar(0), exemplar(7)) == (trace_of(first), trace_of(slow))
    now[0] += 0.5
    spans.timed(histogram, 0.03, third)  # a second later: the bucket's exemplar is the newest again
    assert exemplar(0) == trace_of(third)
    assert histogram._buckets[0].get() == 4
