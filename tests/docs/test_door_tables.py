"""The docs' route tables are the door list's (``pcfjudge.doors.door_list.DOORS``): every route a door declares is in
the HTTP API's route table with its door's page, every door is in the home page's table of front doors, the jobs page
names exactly the routes a job may run, and the metrics page names every door with its routes."""

from __future__ import annotations

import re
from pathlib import Path

from pcfjudge.doors.door_list import DOORS, JOB_ROUTES

DOCS = next(p for p in Path(__file__).resolve().parents if (p / "pyproject.toml").is_file()) / "docs"


def _rows(page: str, heading: str | None = None) -> list[str]:
    """The table rows of ``page`` (under ``heading`` only, when given)."""
    text = (DOCS / page).read_text(encoding="utf-8")
    if heading is not None:
        text = text.split(heading, 1)[1].split("\n## ", 1)[0]
    return [line for line in text.splitlines() if line.startswith("|")]


def _relative(page: str, start: str) -> str:
    """``page`` (relative to docs/) as a link from a page in folder ``start`` (relative to docs/)."""
    depth = len(Path(start).parts)
    return "../" * depth + page if not page.startswith(start + "/") else page[len(start) + 1 :]


def test_every_door_route_is_in_the_api_route_table_with_its_page() -> None:
    rows = _rows("api/index.md", "| route | what | page |")
    for door in DOORS:
        assert door.routes() and door.page, door.name
        link = f"({_relative(door.page, 'api')}"
        for route in door.routes():
            for method in sorted(route.methods or ()):
                named = f"`{method} {route.path}`"
                found = [row for row in rows if named in row]
                assert found, f"docs/api/index.md: no row for {named} ({door.name})"
                assert any(link in row for row in found), f"docs/api/index.md: {named} does not link {door.page}"


def test_the_home_page_lists_every_door() -> None:
    rows = _rows("index.md", "## Front doors")
    for door in DOORS:
        row = next((r for r in rows if f"]({door.page}" in r), None)
        assert row is not None, f"docs/index.md: no front door row links {door.page} ({door.name})"
        for route in door.routes():
            assert re.search(rf"`(?:[A-Z]+ )?{re.escape(route.path)}`", row), (
                f"docs/index.md: {route.path} not in {row}"
            )


def test_the_jobs_page_names_the_routes_a_job_may_run() -> None:
    text = (DOCS / "api" / "jobs.md").read_text(encoding="utf-8")
    sentence = text.split("The routes a job may run:", 1)[1].split(".", 1)[0]
    assert set(re.findall(r"`(/[^`]+)`", sentence)) == set(JOB_ROUTES)


def test_the_metrics_page_names_every_door_and_its_routes() -> None:
    (row,) = [r for r in _rows("operations/metrics.md") if r.startswith("| `door` |")]
    for door in DOORS:
        assert f"`{door.name}`" in row, door.name
        for route in door.routes():
            if route.methods and "POST" in route.methods:
                assert f"`{route.path}`" in row, (door.name, route.path)
