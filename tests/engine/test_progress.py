"""One stream of events (``engine.progress``): a judgment's ``run``/``pass`` events go to its listener (a stream);
its light events (``cached``, ``round``, ``juror``, ``stopped``) to the listener and every observer (traces,
metrics), in the order they happen, whichever judge makes them."""

from __future__ import annotations

from pcfjudge.doors.listwise.listwise_plan import build_task
from pcfjudge.doors.listwise.listwise_protocol import ListwiseRequest
from pcfjudge.engine.progress import LIGHT, RunEvent, Watch

from tests.support.inprocess import app_with_services


def test_a_light_event_reaches_the_listener_and_every_observer_a_run_event_the_listener_only() -> None:
    heard: list[tuple[str, str]] = []
    watch = (
        Watch(listener=lambda e: heard.append(("listener", e.kind)))
        .observed(lambda e: heard.append(("first", e.kind)))
        .observed(lambda e: heard.append(("second", e.kind)))
    )
    watch.emit("run", {"runs_done": 1})
    watch.announce("round", {"step": 1})
    assert heard == [("listener", "run"), ("listener", "round"), ("first", "round"), ("second", "round")]
    assert watch.heard and not Watch().heard and Watch().observed(print).heard
    assert {"cached", "calling", "round", "juror", "stopped"} == LIGHT


async def test_every_judgment_ends_with_its_stopped_event_after_its_cache_lookups() -> None:
    """In process, straight to ``Judge.listwise``: a cold judgment (no ``cached`` event; ``calling`` before its calls)
    then the same warm (one ``cached`` per lookup, no ``calling``), each ending with ``stopped`` (``planned``: every
    planned run made); an adaptive one that stops early says why, as its result does."""
    request = {"question": "2+2?", "candidates": ["4", "5", "four"], "k": 3}
    async with app_with_services() as (_, services):
        judge = services.judge
        runs: list[list[RunEvent]] = []
        for body in (request, request, request | {"question": "3+3?", "k": "auto"}):
            events: list[RunEvent] = []
            task = build_task(ListwiseRequest.model_validate(body), services.settings, judge)
            result = await judge.listwise(task, Watch().observed(events.append))
            runs.append(events)
    cold, warm, auto = ([e.kind for e in events] for events in runs)
    assert cold == ["calling", "stopped"] and warm == ["cached", "stopped"]
    assert runs[0][0].data == {"model": "sim:default", "runs": 3}
    assert runs[0][-1].data == {"judgment": "listwise", "reason": "planned", "runs": 3, "runs_planned": 3}
    assert runs[1][0].data == {"cache": "hit", "model": "sim:default", "runs": 3}
    assert auto[-1] == "stopped" and runs[2][-1].data["reason"] == (result.stopped or "planned")
