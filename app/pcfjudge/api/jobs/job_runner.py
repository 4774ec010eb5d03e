"""Runs jobs: every process sweeps the store for jobs it may claim, runs up to ``PCFJ_JOB_WORKERS`` of them, and keeps
each one's lease while it runs (docs/api/jobs.md).

* **Claim**: running jobs whose lease lapsed (the replica running them was killed) first, then queued ones, fairly
  between API keys (the store's order: keys take turns, so one key's backlog delays another key's first job by about
  one job, not by the backlog); atomically, so one replica gets each. A job submitted here is claimed at once (``kick``); the others within
  ``PCFJ_JOB_SWEEP_S``. A job started ``MAX_ATTEMPTS`` times (each time its process died) fails instead.
* **Run**: the job's route (``doors.door_list.JOB_ROUTES``) runs its plan in this process, as its owner, with the
  route's own ``answer``: the plan checked at intake when this replica took the job in, else its stored request
  planned again (a job claimed from another replica, or resumed). A refusal or failure is the route's own error
  body, in its door's shape. A 429 or 503 with Retry-After (a quota, an overloaded backend) is waited out and run
  again within the job's timeout. A resumed job runs again: the runs its last runner finished come from the cache.
* **Heartbeat**: every second (every third of ``PCFJ_JOB_LEASE_S`` if that is shorter), renew the lease and
  record progress (the calls finished so far, counted through the judgment's ``Watch``, ``on_outcome``). The store
  answers "cancelled" (a DELETE, on any replica) or "lost" (the lease lapsed and another replica took it): the
  judgment's task is cancelled, and with it every backend call no other request waits for.
* **End**: the route's status and body (or ``job_timeout`` past ``PCFJ_JOB_TIMEOUT_S`` from the first start), then
  the webhook, if any, in the background, within its owner's webhook connections (``webhooks.PER_KEY``). A process that stops gives its running jobs back (queued, the attempt not
  counted) for another replica to resume.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import secrets
import socket
import time
from dataclasses import dataclass, field
from typing import Any

import httpx
import orjson

from pcfjudge import context
from pcfjudge.api.jobs import webhooks
from pcfjudge.api.jobs.job_view import job_json
from pcfjudge.api.jobs.webhook_address import Policy
from pcfjudge.cache.job_record import Ending, JobRecord, StoreUnavailable
from pcfjudge.doors.anytime import answer_deadline
from pcfjudge.doors.door_list import JOB_ROUTES, SHAPES
from pcfjudge.engine.progress import Watch
from pcfjudge.engine.runner import CallOutcome, CallSpec
from pcfjudge.http.door_spec import Call
from pcfjudge.http.error_handlers import answer_of
from pcfjudge.http.error_shapes import Answer
from pcfjudge.http.read_body import sized
from pcfjudge.kept import Kept
from pcfjudge.services import Services
from pcfjudge.settings import JobSettings
from pcfjudge.telemetry.metrics import Door

log = logging.getLogger("pcfjudge.jobs")
MAX_ATTEMPTS = 3
RETRY_STATUSES = frozenset({429, 503})
MAX_RETRY_WAIT_S = 60.0
PROGRESS_S = 1.0  # a running job's progress is recorded (and its lease renewed) at least this often
STOP_WAIT_S = 3.0  # at shutdown: how long a stopped request may take to unwind before its task is cancelled
KEPT_PLANS = 1024  # plans checked at intake, kept for this replica's runner (a job another replica runs leaves one)


@dataclass(frozen=True, slots=True)
class Reply:
    """A job's answer: its route's status, JSON body and headers."""

    status: int
    body: bytes
    headers: dict[str, str] | None = None


@dataclass(slots=True)
class Running:
    """One job this process runs: why it was stopped (None: it was not), and its progress."""

    record: JobRecord
    gone: asyncio.Event = field(default_factory=asyncio.Event)
    reason: str | None = None  # cancelled, lost, timeout, shutdown, stalled
    ended: bool = False  # its run is over: its heartbeat stops, even if a store swallowed the heartbeat's cancellation
    progress: dict[str, int] = field(default_factory=lambda: {"calls_done": 0, "cache_hits": 0, "call_errors": 0})

    def stop(self, reason: str) -> None:
        if self.reason is None:
            self.reason = reason
        self.gone.set()

    def count(self, spec: CallSpec, outcome: CallOutcome) -> None:
        self.progress["calls_done"] += 1
        self.progress["cache_hits"] += int(outcome.cached)
        self.progress["call_errors"] += int(outcome.error is not None)


class JobRunner:
    def __init__(self, services: Services, settings: JobSettings) -> None:
        self.services, self.store, self.settings = services, services.jobs, settings
        self.id = f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(4)}"
        self.running: dict[str, Running] = {}
        self.tasks: set[asyncio.Task[None]] = set()  # the running jobs
        self.deliveries: set[asyncio.Task[None]] = set()  # their webhooks
        self.wake = asyncio.Event()
        self._sweeper: asyncio.Task[None] | None = None
        self._http: httpx.AsyncClient | None = None
        self._hook_slots: dict[str, asyncio.Semaphore] = {}  # owner -> its webhooks' connections (webhooks.PER_KEY)
        self._closing = False
        self._plans: Kept[str, Any] = Kept(KEPT_PLANS)  # job id -> the plan intake checked

    def submitted(self, job_id: str, plan: Any) -> None:
        """A job stored by this replica: its plan kept for when it runs here, and a look for work now."""
        self._plans.put(job_id, plan)
        self.kick()

    async def start(self) -> None:
        self._sweeper = asyncio.create_task(self._sweep(), name="pcfjudge-job-sweeper")

    def kick(self) -> None:
        """Look for work now (a job was submitted here, or one ended and freed a worker)."""
        self.wake.set()

    def cancel_local(self, job_id: str) -> None:
        """Stop a job this process runs at once (a DELETE answered here; others see it at their next renewal)."""
        running = self.running.get(job_id)
        if running is not None:
            running.stop("cancelled")

    async def aclose(self) -> None:
        """Stop sweeping; stop the running jobs and give them back; stop delivering webhooks."""
        self._closing = True  # the sweeper stops at its next turn even if a Redis client swallowed its cancellation
        self.wake.set()
        if self._sweeper is not None:
            self._sweeper.cancel()
            await asyncio.gather(self._sweeper, return_exceptions=True)
        for running in list(self.running.values()):
            running.stop("shutdown")
        if self.tasks:
            _, late = await asyncio.wait(self.tasks, timeout=STOP_WAIT_S)
            for task in late:
                task.cancel()
            await asyncio.gather(*self.tasks, return_exceptions=True)
        for delivery in self.deliveries:  # not held up by a receiver that does not answer: recorded as stopped
            delivery.cancel()
        await asyncio.gather(*self.deliveries, return_exceptions=True)
        if self._http is not None:
            await self._http.aclose()

    # ── claiming ─────────────────────────────────────────────────────────────────────────────────────────────────

    async def _sweep(self) -> None:
        while not self._closing:
            self.wake.clear()
            try:
                await self._claim_some()
            except StoreUnavailable:
                log.debug("job sweep skipped: the job store is unavailable")
            except Exception:  # the sweeper never dies; the next sweep tries again
                log.exception("job sweep failed")
            await _wait(self.wake, self.settings.job_sweep_s)

    async def _claim_some(self) -> None:
        free = self.settings.job_workers - len(self.running)
        if free <= 0:
            return
        s = self.settings
        for job_id in await self.store.claimable(2 * free):
            if job_id in self.running:
                continue
            exhausted = orjson.dumps(
                {
                    "error": "job_abandoned",
                    "detail": f"the job was started {MAX_ATTEMPTS} times and each time its process stopped without "
                    "finishing it (killed or crashed); it is not started again",
                    "request_id": job_id,
                }
            )
            record = await self.store.claim(job_id, self.id, s.job_lease_s, MAX_ATTEMPTS, exhausted)
            if record is None:
                continue
            if record.attempts > 1:
                log.info("resuming job %s (attempt %d)", job_id, record.attempts)
            running = Running(record)
            self.running[job_id] = running
            task = asyncio.create_task(self._run(running), name=f"pcfjudge-job-{job_id}")
            self.tasks.add(task)
            task.add_done_callback(self.tasks.discard)
            free -= 1
            if free <= 0:
                return

    # ── running ──────────────────────────────────────────────────────────────────────────────────────────────────

    async def _run(self, running: Running) -> None:
        record = running.record
        loop = asyncio.get_running_loop()
        started_s = (record.started_ms or int(time.time() * 1000)) / 1000
        left = started_s + self.settings.job_timeout_s - time.time()
        timer = loop.call_later(max(0.0, left), running.stop, "timeout")
        heartbeat = asyncio.create_task(self._heartbeat(running))
        reply: Reply | None = None
        try:
            reply = await self._execute(running)
        except Exception:
            log.exception("job %s failed unexpectedly", record.id)
        finally:
            running.ended = True
            timer.cancel()
            heartbeat.cancel()
            await asyncio.gather(heartbeat, return_exceptions=True)
            del self.running[record.id]
            self.kick()
        try:
            await self._end(running, reply)
        except StoreUnavailable:
            log.warning("job %s: the job store is unavailable; its lease lapses and it is run again", record.id)

    async def _execute(self, running: Running) -> Reply | None:
        """The route's answer, or None when the job was stopped first."""
        record = running.record
        started_s = (record.started_ms or int(time.time() * 1000)) / 1000
        while True:
            left = max(1.0, started_s + self.settings.job_timeout_s - time.time())  # the job's time, not a request's
            ctx = context.RequestContext(record.id, record.owner)
            with context.serving(ctx):  # its calls, quotas and log are its owner's
                task = asyncio.create_task(self._judge(running, left), name=f"pcfjudge-judgment-{record.id}")
            stopped = asyncio.create_task(running.gone.wait())
            try:
                await asyncio.wait((task, stopped), return_when=asyncio.FIRST_COMPLETED)
            finally:
                stopped.cancel()
                if not task.done():
                    task.cancel()  # stopped (or this runner cancelled): the judgment's calls are cancelled with it
                await asyncio.gather(task, stopped, return_exceptions=True)
            if running.reason is not None or task.cancelled():
                return None
            reply = task.result()
            wait = _retry_after(reply)
            if wait is None:
                return reply
            if await _wait(running.gone, min(max(wait, 1.0), MAX_RETRY_WAIT_S)):
                return None  # stopped while waiting

    async def _judge(self, running: Running, left: float) -> Reply:
        """The job's plan run by its route's ``answer``, as its door answers: the body, or the route's error body."""
        record, services = running.record, self.services
        door, route = JOB_ROUTES[record.endpoint]
        try:
            size = len(record.request)  # a large request is read again and planned in a worker thread
            body = await sized(size, route.request.model_validate_json, record.request)
            plan = self._plans.pop(record.id, None)
            if plan is None:
                plan = await sized(size, route.plan, services, body)
            deadline_ms, prefer = route.answering(body).deadline_ms, record.headers.get("prefer")
            answer_by = answer_deadline(services.settings.fanout, deadline_ms, prefer)
            watch = Watch(answer_by, left, on_outcome=running.count, priority="background", key=record.owner)
            call = Call(services, record.id, Door(record.endpoint, door.name, "job"))
            answered = await route.answer(call, body, plan, watch)
            return Reply(200, orjson.dumps(answered.body))
        except Exception as exc:
            answer = answer_of(exc)
            if answer is None:  # the last word, as the request middleware's for a request: a 500 in the door's shape
                log.exception("job %s failed unexpectedly", record.id)
                detail = "the job's judgment failed unexpectedly; this is a bug, please report it"
                answer = Answer(500, "internal_error", detail)
            status, error = SHAPES[record.endpoint](answer, record.id)
            return Reply(status, orjson.dumps(error), answer.headers)

    async def _heartbeat(self, running: Running) -> None:
        """Renew the job's lease while its run makes progress. Its run and this are one unit: the run's end cancels
        this, and this ending (the lease lost, no progress for PCFJ_JOB_STALL_S, a failure of its own) stops the run."""
        try:
            await self._renew_while_moving(running)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("job %s: its heartbeat failed; the job is given back", running.record.id)
            running.stop("stalled")

    async def _renew_while_moving(self, running: Running) -> None:
        s, record = self.settings, running.record
        loop = asyncio.get_running_loop()
        seen, moved_at = dict(running.progress), loop.time()
        while True:
            await asyncio.sleep(min(s.job_lease_s / 3, PROGRESS_S))
            if running.ended:  # a cancellation a store swallowed (it answered "ok"): the job would stay running
                return
            if running.progress != seen:
                seen, moved_at = dict(running.progress), loop.time()
            elif loop.time() - moved_at > s.job_stall_s:
                log.warning("job %s made no progress for %gs (PCFJ_JOB_STALL_S): given back", record.id, s.job_stall_s)
                running.stop("stalled")
                return
            try:
                state = await self.store.renew(record.id, self.id, s.job_lease_s, running.progress)
            except StoreUnavailable:
                task = asyncio.current_task()
                if task is not None and task.cancelling():  # a client error met while being cancelled: cancelled
                    raise asyncio.CancelledError from None
                continue  # the lease may lapse; then another replica runs the job and this one is told "lost"
            if state != "ok":
                running.stop(state)
                return

    async def _end(self, running: Running, reply: Reply | None) -> None:
        record, s = running.record, self.settings
        if running.reason == "shutdown":  # given back as it was: the next replica's run is not another attempt
            await self.store.release(record.id, self.id)
            return
        if running.reason in ("cancelled", "lost", "stalled"):  # stalled: its lease lapses, and a replica claims it
            return  # again as a new attempt (past MAX_ATTEMPTS: failed, job_abandoned)
        if running.reason == "timeout" or reply is None:
            timeout = running.reason == "timeout"
            detail = (
                f"the job did not finish within {s.job_timeout_s:g}s of its first start (PCFJ_JOB_TIMEOUT_S)"
                if timeout
                else "the job's request ended without an answer; this is a bug, please report it"
            )
            error = {"error": "job_timeout" if timeout else "internal_error", "detail": detail, "request_id": record.id}
            status, body = (504 if timeout else 500), orjson.dumps(error)
        else:
            status, body = reply.status, reply.body
        end = Ending("succeeded" if 200 <= status < 300 else "failed", status, body, running.progress)
        ended = await self.store.finish(record.id, self.id, end, s.job_ttl_s)
        log.info(  # the job's own log line (its judgment was not an HTTP request of this process)
            "job %s %s: %s %d", record.id, end.status, record.endpoint, status,
            extra={"request_id": record.id, "key": record.owner, "route": record.endpoint, "status": status},
        )  # fmt: skip
        if ended and record.webhook_url is not None and s.webhook_secret is not None:
            task = asyncio.create_task(self._webhook(record.id, record.webhook_url))
            self.deliveries.add(task)
            task.add_done_callback(self.deliveries.discard)

    async def _webhook(self, job_id: str, url: str) -> None:
        secret = self.settings.webhook_secret
        record = await self.store.get(job_id)
        if record is None or secret is None:
            return
        if self._http is None:
            self._http = httpx.AsyncClient(trust_env=False)
        slot = self._hook_slots.setdefault(record.owner, asyncio.Semaphore(webhooks.PER_KEY))
        outcome = webhooks.outcome(url)
        policy = Policy.parse(self.settings.webhook_allow)
        try:
            await webhooks.deliver(self._http, url, job_json(record), secret, job_id, outcome, policy=policy, slot=slot)
        except asyncio.CancelledError:
            outcome["error"] = "this replica stopped before the webhook was delivered; it is not sent again"
            raise
        finally:
            with contextlib.suppress(StoreUnavailable):
                await self.store.set_webhook(job_id, outcome)


async def _wait(event: asyncio.Event, seconds: float) -> bool:
    """Whether ``event`` was set within ``seconds`` (``asyncio.timeout``: 3.11's ``wait_for`` can swallow a
    cancellation that races with the event, and a sweeper that ignores its cancellation never stops)."""
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(seconds):
            await event.wait()
            return True
    return False


def _retry_after(reply: Reply) -> float | None:
    """Seconds to wait before running the job again (a 429/503 that says when), or None: this is the answer."""
    if reply.status not in RETRY_STATUSES or reply.headers is None:
        return None
    value = reply.headers.get("Retry-After")
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None
