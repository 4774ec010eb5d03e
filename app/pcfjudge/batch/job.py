"""One batch directory's work: plan the calls still missing, submit them, follow the batches, collect the results
into the cache. Every step reads and writes the directory's state first (``store``), so any of them can be
interrupted (crash, Ctrl-C, ``kill``) and run again.

    plan     drive the ordinary judging path with a ``Probe`` runner: the calls no result or cache entry answers
    submit   write the provider's input for the calls not already in a batch, estimate the cost at the batch
             price, confirm, send (several batches if a provider limit needs it)
    refresh  ask the provider how each unfinished batch is doing (and settle interrupted submissions)
    collect  stream the results of ended batches: parse each like a live call, record it, store a success in
             the cache under its key with the value the runner stores; record a failure (expired, cancelled,
             refused, truncated, failed, unparsable) so the call is planned, and can be submitted, again
    rounds   all of the above until nothing is missing (``eval --batch``, ``pcfjudge batch run``)
"""

from __future__ import annotations

import asyncio
import sys
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

import anthropic
import openai
import orjson

from pcfjudge.backends.base import Completion
from pcfjudge.backends.registry import Jury, ModelError, ResolvedModel
from pcfjudge.backends.sdkerrors import scrub
from pcfjudge.batch.ask import confirm
from pcfjudge.batch.ids import custom_id
from pcfjudge.batch.inputs import jury_refusal
from pcfjudge.batch.probe import Missing, Probe
from pcfjudge.batch.providers import BatchAPI, Failure, Result, build_api
from pcfjudge.batch.store import RESULTS, STATE, BatchState, Results, Submission, Via
from pcfjudge.cache.interface import PARSED
from pcfjudge.engine.judge import Judge
from pcfjudge.judging.parse import OutputError
from pcfjudge.services import Services
from pcfjudge.types import Usage, usd

Drive = Callable[[Judge], Awaitable[None]]
"""Judge every task once with the judge given (one whose runner is a ``Probe``)."""
Gate = Callable[[str], str | None]
"""Shown the cost estimate before a submission; returns why not to submit (None: go on)."""

NOT_RETRIED = frozenset({"refusal", "cancelled", "invalid_request"})
"""Failures a round does not resubmit by itself (a live call does not retry a refusal; a cancellation was asked
for; a request the provider refused will be refused again). ``pcfjudge batch submit`` resubmits them when asked."""
ATTEMPTS = 2
"""Submissions of one call within one ``rounds`` (the runner, likewise, retries an unusable answer once)."""


class BatchError(Exception):
    """A batch command cannot go on; the message says how to fix it."""


def sdk_errors() -> tuple[type[Exception], ...]:
    """What the providers' SDKs raise (caught by the commands and turned into ``BatchJob.provider_failure``)."""
    return (openai.OpenAIError, anthropic.AnthropicError)


@dataclass(frozen=True, slots=True)
class Cost:
    usage: Usage
    batch_usd: float | None
    live_usd: float | None


class BatchJob:
    """The batches of one directory for one model (``via``: openai, anthropic or vllm)."""

    def __init__(
        self,
        services: Services,
        directory: Path,
        model: str | None,
        *,
        via: Via | None = None,
        input_path: str | None = None,
        out: TextIO | None = None,
    ) -> None:
        self.services = services
        self.dir = directory
        self.out = out or sys.stderr
        state = BatchState.load(directory / STATE)
        try:
            target = services.judge.resolve(model or (state.model if state else None))
        except ModelError as exc:
            raise BatchError(str(exc)) from None
        if isinstance(target, Jury):
            raise BatchError(jury_refusal(target))
        self.model: ResolvedModel = target
        if state is not None and state.model != self.model.string:
            raise BatchError(f"{directory} holds batches for {state.model}, not {self.model.string}: use another one")
        self.state = state or BatchState.new(self.model.string, input_path)
        used = {s.via for s in self.state.submissions}
        if via is not None and used and used != {via}:
            raise BatchError(f"{directory} holds {'/'.join(sorted(used))} batches: use another directory for {via}")
        self.via: Via = via if via is not None else next(iter(used)) if len(used) == 1 else _default_via(self.model)
        try:
            self.api: BatchAPI = build_api(self.via, self.model.backend, directory)
        except TypeError:
            raise BatchError(
                f"{self.model.string} cannot be judged in a batch via {self.via}: batches need an openai: model "
                "(OpenAI Batch API, or vLLM's run-batch with --via vllm) or an anthropic: model (Message Batches)"
            ) from None
        self.results = Results.open(directory / RESULTS)
        self.judge = services.judge.unguarded()  # the operator's own run: no allowlist, caps or quotas

    # ── planning ──────────────────────────────────────────────────────────────────────────────────────────────

    async def plan(self, drive: Drive, *, error: str = "batch_pending", detail: str = "") -> dict[str, Missing]:
        """The calls of every task that no batch result or cache entry answers (by cache key)."""
        probe = Probe(self.results, self.services.cache, error=error, detail=detail)
        await drive(self.judge.using(runner=probe))
        foreign = {m.model.string for m in probe.missing.values()} - {self.model.string}
        if foreign:
            raise BatchError(
                f"the tasks use {', '.join(sorted(foreign))} as well as {self.model.string}; one directory batches "
                "one model: give every task the same model"
            )
        return probe.missing

    def to_submit(self, missing: dict[str, Missing], exclude: Iterable[str] = ()) -> list[Missing]:
        """The missing calls no unfinished batch holds (never paid twice), minus ``exclude``."""
        busy = self.state.in_flight().keys() | set(exclude)
        return [m for key, m in missing.items() if key not in busy]

    # ── cost ──────────────────────────────────────────────────────────────────────────────────────────────────

    @property
    def live_price(self) -> tuple[float, float] | None:
        return self.services.settings.prompting.prices.get(self.model.string)

    @property
    def batch_price(self) -> tuple[float, float] | None:
        price, factor = self.live_price, self.services.settings.prompting.batch_price_factor
        return (price[0] * factor, price[1] * factor) if price is not None else None

    def estimate(self, todo: list[Missing]) -> str:
        """What submitting ``todo`` costs at most: prompt characters / 4 in, the output cap out."""
        chars = sum(len(m.spec.call.system) + len(m.spec.call.user) for m in todo)
        tokens_in, tokens_out = chars // 4, sum(m.spec.call.params.max_output_tokens for m in todo)
        text = (
            f"{self.model.string} via {self.via}: {len(todo):,} calls, ~{tokens_in:,} input tokens (characters/4) "
            f"and at most {tokens_out:,} output tokens"
        )
        if self.via == "vllm":
            return text + " on your own GPUs (vllm run-batch)"
        batch, live = self.batch_price, self.live_price
        if batch is None or live is None:
            return text + (
                f"; no price set (PCFJ_PRICES='{{\"{self.model.string}\": [input_usd_per_mtok, output_usd_per_mtok]}}')"
            )
        factor = self.services.settings.prompting.batch_price_factor
        return text + (
            f"; at most ${usd(tokens_in, tokens_out, batch):,.2f} at the batch price ({factor:.0%} of PCFJ_PRICES; "
            f"${usd(tokens_in, tokens_out, live):,.2f} live)"
        )

    def gate(self, *, yes: bool) -> Gate:
        """The confirmation before a submission: print the estimate; a paid batch asks (``yes``: does not)."""

        def ask(estimate: str) -> str | None:
            self.say(f"Estimate: {estimate}.")
            if yes or self.via == "vllm":
                return None
            if not sys.stdin.isatty():
                return "this submits a paid batch and there is no terminal to confirm on; pass --yes to proceed"
            return None if confirm("Submit?") else "aborted; nothing was submitted"

        return ask

    def cost(self) -> Cost:
        usage = self.results.total_usage()
        batch, live = self.batch_price, self.live_price
        return Cost(
            usage,
            round(usd(usage.input_tokens, usage.output_tokens, batch), 6) if batch is not None else None,
            round(usd(usage.input_tokens, usage.output_tokens, live), 6) if live is not None else None,
        )

    # ── submitting ────────────────────────────────────────────────────────────────────────────────────────────

    async def submit(self, todo: list[Missing], gate: Gate) -> list[Submission]:
        """Write, confirm and send ``todo`` (split to the provider's limits); the submissions made."""
        if not todo:
            return []
        if (why := gate(self.estimate(todo))) is not None:
            raise BatchError(why)
        made = []
        for chunk in self._chunks(todo):
            sub = self._write(chunk)
            await self._send(sub)
            made.append(sub)
        return made

    def _chunks(self, todo: list[Missing]) -> list[list[tuple[str, str, bytes]]]:
        chunks: list[list[tuple[str, str, bytes]]] = [[]]
        size = 0
        for m in todo:
            cid = custom_id(m.spec.key)
            line = _dumps(self.api.line(cid, m.spec.call))
            if chunks[-1] and (len(chunks[-1]) >= self.api.max_requests or size + len(line) > self.api.max_bytes):
                chunks.append([])
                size = 0
            chunks[-1].append((cid, m.spec.key, line))
            size += len(line)
        return chunks

    def _write(self, chunk: list[tuple[str, str, bytes]]) -> Submission:
        """Record the submission (status "writing") and write its input file, before anything is sent."""
        local_id = self.state.next_id()
        name = f"input-{local_id}.jsonl"
        self.dir.mkdir(parents=True, exist_ok=True)
        (self.dir / name).write_bytes(b"".join(line for _, _, line in chunk))
        sub = Submission(local_id, self.via, self.model.string, name, {cid: key for cid, key, _ in chunk}, time.time())
        self.state.submissions.append(sub)
        self._save()
        return sub

    async def _send(self, sub: Submission) -> None:
        try:
            content = await asyncio.to_thread((self.dir / sub.input).read_bytes)
            await self.api.submit(sub, content, self._tag(sub))
        finally:
            self._save()  # the file id of a half-done OpenAI submission is kept too
        if self.via == "vllm":
            self.say(
                f"wrote {self.dir / sub.input} ({len(sub.requests):,} requests). Run it on your GPUs:\n"
                f"  vllm run-batch -i {self.dir / sub.input} -o {self.dir / (sub.output or '')} "
                f"--model {self.model.name}\nthen rerun this command, or: pcfjudge batch collect --out {self.dir.parent}"
            )
        else:
            self.say(f"submitted {sub.local_id}: {len(sub.requests):,} requests as {self.via} batch {sub.batch_id}")

    def _tag(self, sub: Submission) -> str:
        return f"{self.state.token}-{sub.local_id}"

    # ── following ─────────────────────────────────────────────────────────────────────────────────────────────

    async def refresh(self) -> list[Submission]:
        """Settle interrupted submissions and update every unfinished one; the unfinished ones."""
        for sub in self.state.submissions:
            if sub.status == "writing":
                await self._settle(sub)
            if sub.status == "submitted":
                await self.api.refresh(sub)
        self._save()
        return [s for s in self.state.submissions if s.in_flight]

    async def _settle(self, sub: Submission) -> None:
        """An interrupted submission: adopt the provider's batch if it was created, else send it now."""
        try:
            found = await self.api.find(sub, self._tag(sub))
        except LookupError as exc:
            raise BatchError(str(exc)) from None
        if found is not None:
            sub.batch_id, sub.status = found, "submitted"
            self.say(f"submission {sub.local_id} had reached the provider as {found}; following it")
            return
        await self._send(sub)

    async def cancel(self, local_id: str | None = None) -> list[Submission]:
        """Ask the provider to stop the unfinished batches (or one); their unprocessed requests come back cancelled."""
        cancelled = []
        for sub in await self.refresh():
            if local_id in (None, sub.local_id) and sub.status == "submitted":
                await self.api.cancel(sub)
                cancelled.append(sub)
        self._save()
        return cancelled

    # ── collecting ────────────────────────────────────────────────────────────────────────────────────────────

    async def collect(self, missing: dict[str, Missing]) -> Counter[str]:
        """Record the results of every ended batch; the outcomes recorded now ("ok" or a failure kind)."""
        recorded: Counter[str] = Counter()
        for sub in self.state.submissions:
            if sub.status == "ended":
                recorded += await self._collect(sub, missing)
                sub.status = "collected"
                self._save()
        if recorded.total():
            await self.sync_cache()
        return recorded

    async def _collect(self, sub: Submission, missing: dict[str, Missing]) -> Counter[str]:
        recorded: Counter[str] = Counter()
        reported: set[str] = set()
        async for cid, raw in self.api.results(sub):
            key = sub.requests.get(cid)
            if key is None or (sub.local_id, cid) in self.results.seen:
                continue  # not ours, or recorded by an earlier (interrupted) collection
            reported.add(cid)
            found = missing.get(key)
            line = self._line(sub, cid, key, self.api.parse(raw, found.spec.call if found else None), found)
            if self.results.record(line):
                recorded["ok" if line["ok"] else line["error"]] += 1
                if line["ok"] and found is not None:
                    await self._store(key, line["value"], found)
        unreported = Failure(*_unreported(sub.provider_status))
        for cid, key in sub.requests.items():
            if cid not in reported and (sub.local_id, cid) not in self.results.seen:
                self.results.record(self._line(sub, cid, key, unreported, missing.get(key)))
                recorded[unreported.kind] += 1
        return recorded

    def _line(self, sub: Submission, cid: str, key: str, result: Result, found: Missing | None) -> dict[str, Any]:
        """The results line of one request: the runner's cache value on success, else the failure."""
        line: dict[str, Any] = {"submission": sub.local_id, "custom_id": cid, "key": key}
        usage = result.usage
        if isinstance(result, Completion) and found is None:
            return line | _failed("superseded", "already answered (cache or an earlier batch)", usage)
        if isinstance(result, Failure):
            return line | _failed(result.kind, result.detail, usage)
        assert found is not None
        spec = found.spec
        try:
            answer = spec.validate(result.text)
            if spec.decode is not None:
                spec.decode(answer)
        except OutputError as exc:
            return line | _failed(exc.kind, exc.detail, usage)
        value = {"answer": answer, "usage": usage.as_dict(), "prompt_version": spec.prompt_version}
        return line | {"ok": True, "value": value | {"model": self.model.string}, "usage": usage.as_dict()}

    async def _store(self, key: str, value: dict[str, Any], found: Missing) -> None:
        """The value in the cache as the runner stores a live call's (with the decoded answer kept in process)."""
        spec, stored = found.spec, dict(value)
        if spec.decode is not None:
            stored[PARSED] = spec.decode(value["answer"])
        await self.services.cache.set(key, stored)

    async def sync_cache(self) -> int:
        """Put every collected success the cache lacks into it (after a crash, or for a new Redis); how many."""
        keys = list(self.results.values)
        if not keys:
            return 0
        absent = [k for k, hit in zip(keys, await self.services.cache.get_many(keys), strict=True) if hit is None]
        for key in absent:
            await self.services.cache.set(key, dict(self.results.values[key]))
        return len(absent)

    # ── rounds ────────────────────────────────────────────────────────────────────────────────────────────────

    async def rounds(self, drive: Drive, gate: Gate, *, wait: bool = True) -> dict[str, Missing]:
        """Plan, submit, wait and collect until no call is missing (or only failures not worth resubmitting are);
        returns what is still missing. Without ``wait``, returns once nothing more can be done now.

        Within one call a request is submitted at most ``ATTEMPTS`` times, and not again after a failure of a
        ``NOT_RETRIED`` kind; running it again starts afresh (that is how a failed request is resubmitted)."""
        attempts: Counter[str] = Counter()
        earlier = dict(self.results.errors)
        await self.sync_cache()
        while True:
            missing = await self.plan(drive)
            unfinished = await self.refresh()
            if (recorded := await self.collect(missing)).total():
                self.say("collected: " + ", ".join(f"{n} {kind}" for kind, n in recorded.most_common()))
                continue  # new answers: plan again (an APOCJudge keyed pass may now be needed)
            given_up = {k for k, n in attempts.items() if n >= ATTEMPTS}
            given_up |= {
                k for k, err in self.results.errors.items() if err != earlier.get(k) and _kind(err) in NOT_RETRIED
            }
            todo = self.to_submit(missing, exclude=given_up)
            if todo:
                made = await self.submit(todo, gate)
                attempts.update(key for sub in made for key in sub.requests.values())
                continue
            if not unfinished or not wait:
                return missing
            if self.via == "vllm":
                waiting = ", ".join(str(self.dir / (s.output or "")) for s in unfinished)
                raise BatchError(f"waiting for vllm run-batch to write {waiting}; rerun this command once it has")
            self.say(_progress(unfinished))
            await asyncio.sleep(self.services.settings.prompting.batch_poll_s)

    # ── reporting ─────────────────────────────────────────────────────────────────────────────────────────────

    def summary(self) -> dict[str, Any]:
        cost = self.cost()
        outcomes: Counter[str] = Counter()
        for counts in self.results.outcomes.values():
            outcomes += counts
        return {
            "model": self.model.string,
            "via": self.via,
            "submissions": [
                {
                    "id": s.local_id,
                    "status": s.status,
                    "provider_status": s.provider_status,
                    "batch_id": s.batch_id,
                    "requests": len(s.requests),
                    "results": dict(self.results.outcomes.get(s.local_id, {})),
                    **self.results.usage.get(s.local_id, Usage()).as_dict(),
                }
                for s in self.state.submissions
            ],
            "collected_ok": len(self.results.values),
            "outcomes": dict(outcomes),
            "failed_calls": len(self.results.errors),
            "usage": cost.usage.as_dict(),
            "batch_price_factor": self.services.settings.prompting.batch_price_factor,
            "cost_usd_batch": cost.batch_usd,
            "cost_usd_live_equivalent": cost.live_usd,
        }

    def describe_cost(self) -> str:
        cost = self.cost()
        u = cost.usage
        text = f"batch usage {u.input_tokens:,} input / {u.output_tokens:,} output tokens"
        if cost.batch_usd is not None and cost.live_usd is not None:
            text += f": ${cost.batch_usd:,.4f} at the batch price (${cost.live_usd:,.4f} live)"
        return text

    def provider_failure(self, exc: Exception) -> BatchError:
        """An SDK error from the batch API as a BatchError (the key scrubbed from the provider's words)."""
        client = getattr(self.model.backend, "client", None)
        secrets = tuple(filter(None, [getattr(client, "api_key", None)]))
        said = scrub(f"{type(exc).__name__}: {exc}", secrets)
        return BatchError(f"the {self.via} batch API failed ({said}); nothing is lost: rerun the command to go on")

    def say(self, message: str) -> None:
        print(message, file=self.out, flush=True)

    def _save(self) -> None:
        self.state.save(self.dir / STATE)

    def close(self) -> None:
        self.results.close()


def _kind(error: str) -> str:
    return error.split(":", 1)[0]


def _default_via(model: ResolvedModel) -> Via:
    if model.provider == "anthropic":
        return "anthropic"
    return "openai"  # sim: and others fail in build_api with the message saying what can batch


def _failed(kind: str, detail: str, usage: Usage) -> dict[str, Any]:
    return {"ok": False, "error": kind, "detail": detail, "usage": usage.as_dict()}


def _unreported(provider_status: str | None) -> tuple[str, str]:
    """The failure of a request an ended batch reported no result for, from how the batch ended."""
    status = provider_status or ""
    if status.startswith("failed"):
        return "batch_failed", f"the provider refused the whole batch ({status})"
    if status == "expired":
        return "expired", "the batch expired before this request ran"
    if status in ("cancelled", "canceled"):
        return "cancelled", "the batch was cancelled before this request ran"
    return "missing", f"the provider reported no result for this request (batch {status or 'ended'})"


def _progress(unfinished: list[Submission]) -> str:
    parts = [
        f"{s.local_id} {s.provider_status or s.status}"
        + (f" ({', '.join(f'{k} {v}' for k, v in s.counts.items() if v)})" if s.counts else "")
        for s in unfinished
    ]
    return "waiting: " + "; ".join(parts)


def _dumps(line: dict[str, Any]) -> bytes:
    return orjson.dumps(line) + b"\n"
