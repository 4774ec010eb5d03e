"""The playground and the API docs in a real headless chromium, against a real ``pcfjudge serve`` (simulated judge).

Every page here runs with requests to anywhere but the local server aborted and recorded (``tests/support/browser.py``), so
"no CDN" is checked on the wire. What the page shows is compared with the JSON the service sent it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser

from tests.api.playground.test_playground_examples import examples
from tests.support.browser import Watched, chromium, judge_example, require_chromium
from tests.support.processes import serve_process

pytestmark = pytest.mark.slow
API_KEY = "pcfj-playground-test-key"
JURY = "sim:default,sim:oracle"


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    require_chromium()
    with chromium() as b:
        yield b


@pytest.fixture
def watched(browser: Browser, serve_url: str) -> Iterator[Watched]:
    with Watched.open(browser, serve_url) as w:
        w.wait_ready()
        yield w


def texts(w: Watched, selector: str) -> list[str]:
    return [t.strip() for t in w.page.locator(selector).all_inner_texts()]


def attrs(w: Watched, selector: str, name: str) -> list[str]:
    return [str(v) for v in w.page.locator(selector).evaluate_all(f"(els) => els.map((e) => e.dataset.{name})")]


def described(w: Watched, selector: str) -> dict[str, str]:
    """A <dl> as {term: description}."""
    pairs = w.page.locator(f"{selector} dt").evaluate_all(
        "(els) => els.map((dt) => [dt.textContent, dt.nextElementSibling.textContent])"
    )
    return {str(term): str(text) for term, text in pairs}


def test_the_page_loads_its_own_assets_with_no_console_errors(watched: Watched) -> None:
    page = watched.page
    assert page.title() == "pcfjudge playground"
    assert page.locator("#example option").count() > 1
    candidates = page.locator("#candidates li .cand-text")
    assert candidates.count() >= 2 and all(t.strip() for t in candidates.evaluate_all("(els) => els.map(e => e.value)"))
    loaded = {url.removeprefix(watched.base_url) for url in watched.requests}
    assert {
        "/",
        "/static/playground.js",
        "/static/render.js",
        "/static/examples.js",
        "/static/playground.css",
    } <= loaded
    assert watched.console_errors == [] and watched.external_requests() == []


def test_an_example_judged_end_to_end_shows_the_table_and_a_heat_map_with_k_rows(
    watched: Watched, tmp_path: Path
) -> None:
    page = watched.page
    k = int(page.input_value("#k"))
    ids = page.locator("#candidates .cand-id").evaluate_all("(els) => els.map(e => e.value)")
    result = judge_example(watched, 0)
    sent = watched.last_sent
    assert [c["id"] for c in sent["candidates"]] == ids and sent["k"] == k and sent["include_runs"] is True

    # the consensus table: ranking order, winners marked, the service's numbers
    assert attrs(watched, "#consensus-table tbody tr", "id") == result["ranking"]
    assert set(attrs(watched, "#consensus-table tr.winner", "id")) == set(result["winners"])
    assert all(t.startswith("★") for t in texts(watched, "#consensus-table tr.winner th"))
    by_id = {c["id"]: c for c in result["candidates"]}
    shown = dict(zip(result["ranking"], texts(watched, "#consensus-table tbody tr td:nth-child(3)"), strict=True))
    assert shown == {cid: f"{by_id[cid]['consensus']:.2f}" for cid in result["ranking"]}

    # the heat map: one row per run, displayed order left to right, top picks outlined, colour follows the score
    runs = result["runs"]
    assert len(runs) == result["k"] == k == page.locator("#heatmap tbody tr").count()
    colours: dict[float, set[str]] = {}
    for i, run in enumerate(runs):
        row = f"#heatmap tbody tr:nth-child({i + 1})"
        assert attrs(watched, f"{row} td", "id") == run["order"]
        assert set(attrs(watched, f"{row} td.top", "id")) == set(run["top_set"])
        assert [float(s) for s in attrs(watched, f"{row} td", "score")] == [
            run["judgments"][cid]["score"] for cid in run["order"]
        ]
        backgrounds = page.locator(f"{row} td").evaluate_all(
            "(els) => els.map(e => getComputedStyle(e).backgroundColor)"
        )
        for cid, background in zip(run["order"], backgrounds, strict=True):
            colours.setdefault(run["judgments"][cid]["score"], set()).add(background)
    assert all(len(c) == 1 for c in colours.values()), "one score, one colour"
    assert colours[min(colours)] != colours[max(colours)]

    # the direct verdict (run 0) beside the consensus, with the order diagnostics
    d = result["diagnostics"]
    assert page.inner_text("#consensus-winners") == ", ".join(result["winners"])
    assert page.inner_text("#direct-winners") == ", ".join(d["direct_winners"])
    assert run_zero_top(runs) == set(d["direct_winners"])
    diagnostics = described(watched, "#diagnostics")
    assert diagnostics["order sensitive"] == ("yes" if d["order_sensitive"] else "no")
    assert diagnostics["agreement"].startswith(f"{round(d['agreement'] * 100)}% of runs")

    page.screenshot(path=str(tmp_path / "playground.png"), full_page=True)
    assert (tmp_path / "playground.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert watched.console_errors == [] and watched.external_requests() == []


def run_zero_top(runs: list[dict[str, Any]]) -> set[str]:
    return set(next(r for r in runs if r["execution"] == 0 and r["index"] == 0)["top_set"])


def test_forty_candidates_render_past_one_window(watched: Watched) -> None:
    """The best-of-40 example (issue 30): the table has every candidate with its standard error and windows, the heat
    map one row per window judged (at most 16 cells each), the diagnostics say how the rounds went."""
    index = next(i for i, e in enumerate(examples()) if len(e["candidates"]) == 40)
    result = judge_example(watched, index)
    assert len(watched.last_sent["candidates"]) == 40
    assert attrs(watched, "#consensus-table tbody tr", "id") == result["ranking"] and len(result["ranking"]) == 40
    headers = texts(watched, "#consensus-table thead th")
    assert any(h.startswith("± s.e.") for h in headers) and any(h.startswith("windows") for h in headers)
    runs = result["runs"]
    assert watched.page.locator("#heatmap tbody tr").count() == len(runs) == result["diagnostics"]["runs_made"]
    for i, run in enumerate(runs):
        assert attrs(watched, f"#heatmap tbody tr:nth-child({i + 1}) td.cell", "id") == run["order"]
        assert len(run["order"]) <= 16
    windows = result["diagnostics"]["windows"]
    assert f"stopped: {windows['stopped']}" in described(watched, "#diagnostics")["windows"]
    assert "rounds of windows" in watched.page.inner_text("#direct-winners")
    assert watched.console_errors == [] and watched.external_requests() == []


def test_the_consensus_table_sorts_by_any_column(watched: Watched) -> None:
    result = judge_example(watched, 0)
    page = watched.page
    rank = {cid: i for i, cid in enumerate(result["ranking"])}
    mean = {c["id"]: c["mean_score"] for c in result["candidates"]}
    page.click("#consensus-table th button[data-key='mean_score']")
    assert attrs(watched, "#consensus-table tbody tr", "id") == sorted(mean, key=lambda c: (-mean[c], rank[c]))
    assert page.get_attribute("#consensus-table th:nth-child(4)", "aria-sort") == "descending"
    page.click("#consensus-table th button[data-key='mean_score']")
    assert attrs(watched, "#consensus-table tbody tr", "id") == sorted(mean, key=lambda c: (mean[c], rank[c]))
    page.click("#consensus-table th button[data-key='id']")
    assert attrs(watched, "#consensus-table tbody tr", "id") == sorted(mean)


def test_settings_reach_the_service(watched: Watched) -> None:
    page = watched.page
    page.fill("#k", "3")
    page.fill("#seed", "2")
    page.select_option("#mode", "repeated_canonical")
    page.select_option("#weights", "uniform")
    status, sent, result = watched.submit("/judge/listwise")
    assert status == 200, result
    assert (sent["k"], sent["seed"], sent["mode"], sent["weights"]) == (3, 2, "repeated_canonical", "uniform")
    assert result["weights"] == {"score": 0.25, "borda": 0.25, "top_vote": 0.25, "uncertainty": 0.25}
    canonical = [c["id"] for c in sent["candidates"]]
    assert page.locator("#heatmap tbody tr").count() == 3 == len(result["runs"])
    for i in range(3):  # repeated canonical: the same displayed order in every row
        assert attrs(watched, f"#heatmap tbody tr:nth-child({i + 1}) td", "id") == canonical

    page.fill("#k", "auto")  # adaptive K: one heat-map row per run the service chose to make
    page.select_option("#mode", "consensus")
    status, sent, result = watched.submit("/judge/listwise")
    assert status == 200 and sent["k"] == "auto", result
    made = result["diagnostics"]["runs_made"]
    assert page.locator("#heatmap tbody tr").count() == len(result["runs"]) == made
    assert f"stopped: {result['diagnostics']['stopped']}" in described(watched, "#diagnostics")["K"]


def test_client_errors_show_the_services_message(watched: Watched) -> None:
    page = watched.page
    while page.locator("#candidates li").count() > 1:
        page.click("#candidates li:last-child .remove")
    status, _, answer = watched.submit("/judge/listwise")
    assert status == 422 and "candidates" in answer["detail"]
    page.wait_for_selector("#error", state="visible")
    assert "422 validation_error" in page.inner_text("#error") and answer["detail"] in page.inner_text("#error")
    assert page.is_hidden("#listwise-result")

    page.click("#add-candidate")
    page.fill("#candidates li:last-child .cand-text", "Another answer.")
    page.fill("#k", "65")
    status, sent, answer = watched.submit("/judge/listwise")
    assert status == 422 and sent["k"] == 65 and answer["detail"].startswith("k:")
    assert answer["detail"] in page.inner_text("#error")
    assert all("422" in e for e in watched.console_errors), watched.console_errors  # chromium logs the failed fetch


def test_a_pair_is_judged_with_apocjudge(watched: Watched) -> None:
    page = watched.page
    labels = page.locator("#example option").all_inner_texts()
    page.select_option("#example", str(next(i - 1 for i, t in enumerate(labels) if "pairwise" in t)))
    assert page.is_checked("#pairwise")
    a, b = page.locator("#candidates .cand-text").evaluate_all("(els) => els.map(e => e.value)")
    status, sent, result = watched.submit("/judge/pairwise")
    assert status == 200, result
    assert (sent["response_a"], sent["response_b"]) == (a, b) and "candidates" not in sent
    page.wait_for_selector("#pairwise-result", state="visible")
    assert page.inner_text("#pairwise-winner").startswith(result["winner"])
    assert result["decision"] in page.inner_text("#pairwise-verdict")
    assert texts(watched, "#passes tbody th") == [p["pass"] for p in result["runs"]]
    assert page.is_hidden("#listwise-result")

    page.click("#add-candidate")  # three candidates: pairwise is off and cannot be chosen
    assert page.is_disabled("#pairwise") and not page.is_checked("#pairwise")


def test_a_jury_shows_each_jurors_winners_agreement_and_the_degraded_ones(browser: Browser) -> None:
    """A typed jury (listwise), a configured one offered in the picker (pairwise), and one whose third juror is an
    engine nobody serves (degraded): the jury block shows what the service's ``jury`` says."""
    env = {
        "PCFJ_ENGINES": json.dumps({"dead": "http://127.0.0.1:9/v1"}),  # nothing listens on port 9
        "PCFJ_JURIES": json.dumps({"panel": JURY.split(","), "shaky": [*JURY.split(","), "dead:judge"]}),
        "PCFJ_MAX_RETRIES": "0",
    }
    with serve_process(env=env) as url, Watched.open(browser, url) as w:
        w.wait_ready()
        page = w.page
        offered = page.locator("#model-suggestions option[data-jury]").evaluate_all(
            "(els) => els.map(e => [e.value, e.label])"
        )
        assert offered == [
            ["panel", f"jury: {JURY.replace(',', ', ')}"],
            ["shaky", "jury: " + ", ".join([*JURY.split(","), "dead:judge"])],
        ]

        page.select_option("#example", "0")
        page.fill("#model", JURY)
        assert page.is_visible("#oracle-row")  # sim:oracle sits on the jury, so the page offers oracle_best
        status, sent, result = w.submit("/judge/listwise")
        assert status == 200 and sent["model"] == JURY, result
        jury = result["jury"]
        page.wait_for_selector("#jury-result", state="visible")
        assert attrs(w, "#jury-table tbody tr", "model") == ["sim:default", "sim:oracle"]
        assert texts(w, "#jury-table tbody td.winners") == [", ".join(j["winners"]) for j in jury["jurors"]]
        assert texts(w, "#jury-table tbody td:nth-child(4)") == [f"{j['agreement']:.2f}" for j in jury["jurors"]]
        assert texts(w, "#jury-table tbody td:nth-child(5)") == ["yes" if j["agrees"] else "no" for j in jury["jurors"]]
        summary = described(w, "#jury-summary")
        assert summary["Kendall's W"] == f"{jury['kendalls_w']:.3f}" and summary["degraded"] == "no"
        assert summary["weights"] == "equal" and summary["quorum"].startswith(f"{jury['quorum']} of 2")
        assert attrs(w, "#heatmap tbody tr", "model") == [r["model"] for r in result["runs"]]
        assert texts(w, "#heatmap tbody tr th small.juror") == [r["model"] for r in result["runs"]]
        assert page.inner_text("#consensus-winners") == ", ".join(result["winners"])
        assert f"by the jury {JURY} (sim:default, sim:oracle)" in page.inner_text("#status")

        labels = page.locator("#example option").all_inner_texts()
        page.select_option("#example", str(next(i - 1 for i, t in enumerate(labels) if "pairwise" in t)))
        page.fill("#model", "panel")
        status, sent, result = w.submit("/judge/pairwise")
        assert status == 200 and sent["model"] == "panel", result
        page.wait_for_selector("#pairwise-result", state="visible")
        jury = result["jury"]
        assert described(w, "#jury-summary")["Fleiss' κ"] == f"{jury['fleiss_kappa']:.3f}"
        ids = page.locator("#candidates .cand-id").evaluate_all("(els) => els.map(e => e.value)")
        side = {"A": f"A ({ids[0]})", "B": f"B ({ids[1]})", "tie": "tie"}
        assert texts(w, "#jury-table tbody td.winners") == [side[j["winners"][0]] for j in jury["jurors"]]
        assert texts(w, "#jury-table tbody td:nth-child(4)") == [j["decision"] for j in jury["jurors"]]
        assert texts(w, "#passes tbody td.juror") == [p["model"] for p in result["runs"]]
        assert page.inner_text("#pairwise-winner").startswith(result["winner"])

        page.select_option("#example", "0")
        page.fill("#model", "shaky")
        status, _, result = w.submit("/judge/listwise")
        assert status == 200 and result["jury"]["degraded"] is True, result
        page.wait_for_selector("#listwise-result", state="visible")
        assert described(w, "#jury-summary")["degraded"] == "yes: dead:judge did not deliver"
        failed = page.locator("#jury-table tbody tr.failed")
        assert failed.get_attribute("data-model") == "dead:judge"
        dead = next(j for j in result["jury"]["jurors"] if j["model"] == "dead:judge")
        assert dead["error"] in failed.inner_text()
        assert w.console_errors == [] and w.external_requests() == []

        page.fill("#model", "sim:oracle")  # one judge again: no jury block
        status, _, result = w.submit("/judge/listwise")
        assert status == 200 and result["jury"] is None
        assert page.is_hidden("#jury-result")


def test_with_api_keys_on_the_page_is_open_and_the_key_is_sent_from_session_storage(browser: Browser) -> None:
    with serve_process(env={"PCFJ_API_KEYS": f"playground:{API_KEY}"}) as url, Watched.open(browser, url) as w:
        w.wait_ready()  # the page and its assets need no key
        status, _, answer = w.submit("/judge/listwise")
        assert status == 401 and answer["detail"] in w.page.inner_text("#error")
        w.page.fill("#api-key", API_KEY)
        with w.page.expect_request(f"{url}/judge/listwise") as request:
            status, _, result = w.submit("/judge/listwise")
        assert status == 200 and request.value.all_headers()["authorization"] == f"Bearer {API_KEY}"
        assert w.page.locator("#heatmap tbody tr").count() == len(result["runs"]) and w.page.is_hidden("#error")
        stored = w.page.evaluate(
            "() => [sessionStorage.getItem('pcfjudge.apiKey'), localStorage.length, document.cookie]"
        )
        assert stored == [API_KEY, 0, ""]
        w.page.reload()
        w.wait_ready()
        assert w.page.input_value("#api-key") == API_KEY  # the same tab keeps it
        with Watched.open(browser, url) as other:
            other.wait_ready()
            assert other.page.input_value("#api-key") == ""  # another tab or browser session does not
        assert all("401" in e for e in w.console_errors), w.console_errors  # chromium logs the refused fetch


def test_swagger_ui_renders_offline(browser: Browser, serve_url: str) -> None:
    with Watched.open(browser, serve_url, "/docs") as w:
        w.page.wait_for_selector('.swagger-ui .opblock-summary-path[data-path="/judge/listwise"]')
        loaded = {url.removeprefix(w.base_url) for url in w.requests}
        assert {"/openapi.json", "/static/vendor/swagger-ui-bundle.js", "/static/vendor/swagger-ui.css"} <= loaded
        assert w.external_requests() == [] and w.console_errors == []


def test_redoc_renders_offline(browser: Browser, serve_url: str) -> None:
    with Watched.open(browser, serve_url, "/redoc") as w:
        w.page.wait_for_selector("h1 >> text=pcfjudge")
        w.page.wait_for_selector('[data-section-id="operation/judge_listwise_route_judge_listwise_post"]')
        loaded = {url.removeprefix(w.base_url) for url in w.requests}
        assert {"/openapi.json", "/static/vendor/redoc.standalone.js"} <= loaded
        assert w.external_requests() == []
        # ReDoc's sidebar credit is a CDN image: the page's policy refuses it before any request is made
        assert all(url.startswith("https://cdn.redoc.ly/") for url in w.refused), w.refused
        assert all("Content Security Policy" in e and "cdn.redoc.ly" in e for e in w.console_errors), w.console_errors


def test_the_consensus_converges_live_as_runs_stream_in(watched: Watched) -> None:
    """Issue 32: the page asks for a stream; each run event updates "Consensus forming" (run N of K, the leaders),
    and the final table is the stream's result event."""
    result = judge_example(watched, 0)
    page, events = watched.page, watched.last_events
    runs = [data for kind, data in events if kind == "run"]
    assert watched.last_sent["stream"] is True and len(runs) == result["k"] and events[-1][0] == "result"
    assert page.locator("#live").is_visible()
    last = runs[-1]
    status = page.inner_text("#live-status")
    assert status.startswith(f"Run {last['runs_done']} of {last['runs_planned']}")
    assert status.endswith("leading: " + ", ".join(last["winners"]))
    shown = attrs(watched, "#live-table tbody tr", "id")
    assert shown == sorted(last["consensus"], key=lambda cid: -last["consensus"][cid])
    assert set(attrs(watched, "#live-table tr.leading", "id")) == set(last["winners"]) == set(result["winners"])
    assert watched.console_errors == [] and watched.external_requests() == []
