"""The front doors, in the order the app mounts them (``http.door_spec``): adding a door is its folder and a line
here. The app, job intake and the job runner, the middleware's error bodies and the request metrics' route labels,
and the docs' route tables (checked by a test) all read this list."""

from __future__ import annotations

from typing import Any

from pcfjudge.doors.chat.chat_routes import DOOR as CHAT
from pcfjudge.doors.listwise.listwise_routes import DOOR as LISTWISE
from pcfjudge.doors.pairwise.pairwise_routes import DOOR as PAIRWISE
from pcfjudge.doors.rerank.rerank_routes import DOOR as RERANK
from pcfjudge.doors.reward.reward_routes import DOOR as REWARD
from pcfjudge.http.door_spec import DoorSpec, JobRoute
from pcfjudge.http.error_shapes import ErrorShape

DOORS: tuple[DoorSpec, ...] = (LISTWISE, PAIRWISE, RERANK, REWARD, CHAT)

JOB_ROUTES: dict[str, tuple[DoorSpec, JobRoute[Any, Any]]] = {
    job.path: (door, job) for door in DOORS for job in door.jobs
}
"""Each route a job may run → its door and how it runs."""

SHAPES: dict[str, ErrorShape] = {path: shape for door in DOORS for path, shape in door.shapes().items()}
"""Each door route's path → the error shape its clients read (the middleware's refusals use it too)."""
