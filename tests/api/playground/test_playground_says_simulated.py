"""The playground says plainly when verdicts come from the simulated judge (real chromium, real ``pcfjudge serve``).

On a service whose default judge is simulated, the page says so before anything is judged, loads the examples on the
simulated oracle (told the truly best answer), and labels every simulated verdict as a seeded draw. On a service with
a real default judge (here the fake OpenAI provider) it says nothing of the kind and leaves the model to the service.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser

from tests.support.basics import OPENAI_KEY
from tests.support.browser import Watched, chromium, judge_example, require_chromium
from tests.support.inprocess import FakeProvider
from tests.support.processes import serve_process

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    require_chromium()
    with chromium() as b:
        yield b


def test_a_simulated_service_says_so_and_its_first_example_shows_the_consensus_at_work(
    browser: Browser, serve_url: str
) -> None:
    with Watched.open(browser, serve_url) as w:
        w.wait_ready()
        page = w.page
        note = page.inner_text("#sim-note")
        assert page.is_visible("#sim-note") and "simulated (sim:default)" in note and "seeded draws" in note
        assert page.input_value("#model") == "sim:oracle" and page.is_visible("#oracle-row")
        assert page.input_value("#oracle-best") == "d"

        result = judge_example(w, 0)
        assert w.last_sent["model"] == "sim:oracle" and w.last_sent["oracle_best"] == "d"
        assert result["winners"] == ["d"] and result["diagnostics"]["direct_winners"] != ["d"]
        assert page.inner_text("#consensus-winners") == "d"
        assert "differs from the consensus" in page.inner_text("#direct-verdict")
        assert "Simulated judge: its verdicts are seeded draws" in page.inner_text("#status")

        labels = page.locator("#example option").all_inner_texts()
        page.select_option("#example", str(next(i - 1 for i, t in enumerate(labels) if "pairwise" in t)))
        status, sent, answer = w.submit("/judge/pairwise")
        assert status == 200 and sent["oracle_best"] == "B" and answer["winner"] == "B", answer

        page.select_option("#example", "1")
        page.fill("#model", "sim:default")  # the oracle's field is for the oracle only
        assert page.is_hidden("#oracle-row")
        status, sent, answer = w.submit("/judge/listwise")
        assert status == 200 and sent["model"] == "sim:default" and "oracle_best" not in sent, answer
        assert "Simulated judge" in page.inner_text("#status")
        assert w.console_errors == [] and w.external_requests() == []


def test_a_service_with_a_real_judge_shows_no_simulation_note(browser: Browser, fake: FakeProvider) -> None:
    env = {"OPENAI_API_KEY": OPENAI_KEY, "OPENAI_BASE_URL": f"{fake.url}/v1", "PCFJ_DEFAULT_MODEL": "openai:judge-x"}
    with serve_process(env=env) as url, Watched.open(browser, url) as w:
        w.wait_ready()
        assert w.page.is_hidden("#sim-note") and w.page.is_hidden("#oracle-row")
        assert w.page.input_value("#model") == ""  # the service's default judge
        result = judge_example(w, 0)
        assert result["model"] == "openai:judge-x" and "oracle_best" not in w.last_sent and "model" not in w.last_sent
        assert "Simulated" not in w.page.inner_text("#status")
        assert w.console_errors == [] and w.external_requests() == []
