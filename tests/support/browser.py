"""Drive the playground in Debian's chromium through Playwright (never ``playwright install``: no browser download).

Shared by ``tests/api/playground/test_playground_in_chromium.py`` and ``python -m tests.support.screenshot``:

- ``chromium()``: a headless chromium (``/usr/bin/chromium``, installed by scripts/test.sh);
- ``Watched``: a page that records console errors, uncaught exceptions and every request it makes, and aborts any
  request that would leave the local server (so "works offline" is tested, not assumed); requests the page's own
  Content-Security-Policy refused are never sent, and are listed apart (``refused``);
- ``judge_example``: load a built-in example, submit it and return the service's JSON answer as the page got it.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, ConsoleMessage, Page, Request, Route, ViewportSize, sync_playwright

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
VIEWPORT: ViewportSize = {"width": 1280, "height": 900}
TIMEOUT_MS = 60_000  # generous: the machine may be loaded; nothing here waits for a guessed time


def require_chromium() -> None:
    """Skip only when Debian's chromium is missing (``bash scripts/test.sh`` installs it)."""
    if not os.path.exists(CHROMIUM):
        pytest.skip("chromium not found: install it (apt-get install -y chromium chromium-driver) for browser tests")


@contextmanager
def chromium() -> Iterator[Browser]:
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True)
        try:
            yield browser
        finally:
            browser.close()


@dataclass
class Watched:
    """A fresh page (own context: own session storage) on ``base_url``, recording what the page did."""

    page: Page
    base_url: str
    console_errors: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)
    blocked: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)  # stopped by the page's Content-Security-Policy: never sent
    last_sent: dict[str, Any] = field(default_factory=dict)  # the JSON body of the last judging request
    last_events: list[tuple[str, dict[str, Any]]] = field(default_factory=list)  # its stream's events

    @classmethod
    @contextmanager
    def open(cls, browser: Browser, base_url: str, path: str = "/") -> Iterator[Watched]:
        context = browser.new_context(viewport=VIEWPORT)
        try:
            page = context.new_page()
            page.set_default_timeout(TIMEOUT_MS)
            watched = cls(page, base_url.rstrip("/"))
            context.route("**/*", watched._local_only)
            page.on("console", watched._console)
            page.on("pageerror", lambda exc: watched.console_errors.append(f"uncaught: {exc}"))
            page.on("request", watched._request)
            page.on("requestfailed", watched._failed)
            page.goto(f"{watched.base_url}{path}")
            yield watched
        finally:
            context.close()

    def _local_only(self, route: Route) -> None:
        url = route.request.url
        if url.startswith(f"{self.base_url}/") or url.startswith(("data:", "blob:")):
            route.continue_()
        else:
            self.blocked.append(url)
            route.abort()

    def _console(self, message: ConsoleMessage) -> None:
        if message.type == "error":
            self.console_errors.append(message.text)

    def _request(self, request: Request) -> None:
        self.requests.append(request.url)

    def _failed(self, request: Request) -> None:
        if request.failure == "csp":
            self.refused.append(request.url)

    def external_requests(self) -> list[str]:
        """Every request that went (or tried to go) anywhere but the local server: the browser sent it."""
        local = (f"{self.base_url}/", "data:", "blob:")
        outside = [url for url in self.requests if not url.startswith(local) and url not in self.refused]
        return self.blocked + outside

    def wait_ready(self) -> None:
        self.page.wait_for_selector("body[data-ready='true']")

    def submit(self, path: str) -> tuple[int, dict[str, Any], dict[str, Any]]:
        """Click Judge; return (status, the JSON body the page sent, the JSON the service answered)."""
        with self.page.expect_response(lambda r: r.url == f"{self.base_url}{path}") as answer:
            self.page.click("#submit")
        response = answer.value
        sent: dict[str, Any] = response.request.post_data_json
        status, received = response.status, {}
        streamed = response.headers.get("content-type", "").startswith("text/event-stream")
        if not streamed:
            received = response.json()
        self.page.wait_for_function("() => !document.getElementById('submit').disabled")
        if streamed:  # the page streams (issue 32); chromium keeps no streamed body, the page keeps its events
            events = self.page.evaluate("() => window.pcfjudgeStream")
            self.last_events = [(str(kind), data) for kind, data in events]
            kind, received = self.last_events[-1]
            status = received.get("status", 502) if kind == "error" else 200
        self.last_sent = sent
        return status, sent, received


def judge_example(watched: Watched, index: int = 0) -> dict[str, Any]:
    """Load built-in example ``index``, judge it listwise and wait for the results; the service's JSON answer."""
    watched.wait_ready()
    watched.page.select_option("#example", str(index))
    status, _, result = watched.submit("/judge/listwise")
    assert status == 200, result
    watched.page.wait_for_selector("#listwise-result", state="visible")
    return result


def capture(browser: Browser, base_url: str, out: Path, example: int = 0) -> dict[str, Any]:
    """Judge ``example`` on the page and save a full-page screenshot to ``out``; the service's answer."""
    with Watched.open(browser, base_url) as watched:
        result = judge_example(watched, example)
        out.parent.mkdir(parents=True, exist_ok=True)
        watched.page.screenshot(path=str(out), full_page=True)
        assert not watched.console_errors, watched.console_errors
        assert not watched.external_requests(), watched.external_requests()
        return result
