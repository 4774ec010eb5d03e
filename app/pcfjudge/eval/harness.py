"""What every ``pcfjudge eval`` benchmark command shares: the output-directory manifest, the paid-run gate,
the reconstructed command line, and argument checks."""

from __future__ import annotations

import argparse
import asyncio
import json
import shlex
import sys
from collections.abc import Awaitable, Callable, Coroutine, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx

from pcfjudge.eval.progress import Estimate, Progress, confirm
from pcfjudge.eval.report_fmt import is_simulation
from pcfjudge.eval.runlog import LOG_NAME, RunLog
from pcfjudge.settings import Settings
from pcfjudge.types import MAX_K

if TYPE_CHECKING:
    from pcfjudge.services import Services

MANIFEST = "manifest.json"


class EvalError(Exception):
    """The evaluation cannot go on (bad settings, a refused request); the message says how to fix it."""


def check_manifest(out_dir: Path, fields: Mapping[str, Any]) -> str | None:
    """Refuse to mix runs of different settings in one log; write the manifest on first use.

    Returns an error message (and changes nothing) when ``out_dir`` has runs made with other settings; a directory
    without runs (e.g. a refused paid run) takes the new settings.
    """
    path = out_dir / MANIFEST
    log = out_dir / LOG_NAME
    if path.exists() and log.exists() and log.stat().st_size > 0:
        saved = json.loads(path.read_text(encoding="utf-8"))
        clashes = [
            f"{key}={saved.get(key)!r} (now {value!r})" for key, value in fields.items() if saved.get(key) != value
        ]
        if clashes:
            return (
                f"{out_dir} holds runs made with other settings: {', '.join(clashes)}. "
                "Use a new --out directory, or the same settings to resume."
            )
        return None
    out_dir.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(dict(fields), indent=2) + "\n", encoding="utf-8")
    return None


def paid_run_gate(model: str, estimate: Estimate, price: tuple[float, float] | None, *, yes: bool) -> str | None:
    """Before calls to a real (paid) model: print the estimate and ask; returns an error message to stop."""
    if is_simulation(model) or estimate.calls == 0:
        return None
    print(f"Estimate: {estimate.describe(model, price)}.", file=sys.stderr)
    if yes:
        return None
    if not sys.stdin.isatty():
        return "this run calls a paid model and there is no terminal to confirm on; pass --yes to proceed"
    if not confirm("Proceed?"):
        return "aborted; nothing was called"
    return None


def parse_ks(text: str) -> tuple[int, ...]:
    """'3,5,7' -> (3, 5, 7); each K must be an integer in 1..MAX_K."""
    try:
        ks = sorted({int(part) for part in text.split(",") if part.strip()})
    except ValueError:
        raise ValueError(f"--k must be comma-separated integers such as 3,5,7 (got {text!r})") from None
    if not ks or ks[0] < 1 or ks[-1] > MAX_K:
        raise ValueError(f"--k values must be between 1 and {MAX_K} (got {text!r})")
    return tuple(ks)


def check_common(args: argparse.Namespace) -> str | None:
    if args.limit is not None and args.limit < 1:
        return "--limit must be at least 1"
    if args.concurrency < 1:
        return "--concurrency must be at least 1"
    if args.timeout <= 0:
        return "--timeout must be positive"
    return None


def command_line(words: Sequence[str], args: argparse.Namespace, options: Sequence[str]) -> str:
    """The command that reproduces this run (so a report says exactly how it was made)."""
    parts = ["pcfjudge", *words]
    for name in options:
        value = getattr(args, name.replace("-", "_"))
        if value is None or value is False:
            continue
        parts += [f"--{name}"] if value is True else [f"--{name}", str(value)]
    return shlex.join(parts)


def price_for(settings: Settings, model: str) -> tuple[float, float] | None:
    """USD per million (input, output) tokens: the configured price, zero for the simulated judge, else None."""
    return (0.0, 0.0) if is_simulation(model) else settings.prices.get(model)


async def collect(
    settings: Settings,
    args: argparse.Namespace,
    *,
    desc: str,
    estimate: Callable[[], Estimate],
    total: Callable[[], int],
    inprocess: Callable[[Services, Progress], Awaitable[int]],
    server: Callable[[httpx.AsyncClient, Progress], Awaitable[int]],
) -> int:
    """Resolve the model, gate a paid run, then judge in process or through ``--server`` with a progress bar.

    Returns what the collector returns (requests that failed); raises EvalError when the run cannot start.
    """
    from pcfjudge.backends.registry import ModelError
    from pcfjudge.services import Services

    services = None if args.server else Services.build(settings)
    try:
        if services is not None:
            try:
                services.registry.resolve(args.model)
            except ModelError as exc:
                raise EvalError(str(exc)) from None
        price = price_for(settings, args.model)
        gate = paid_run_gate(args.model, estimate(), price, yes=args.yes)
        if gate is not None:
            raise EvalError(gate)
        progress = Progress(total(), desc, price)
        try:
            if services is not None:
                return await inprocess(services, progress)
            async with httpx.AsyncClient(base_url=args.server, timeout=args.timeout + 30) as client:
                return await server(client, progress)
        finally:
            progress.close()
    finally:
        if services is not None:
            await services.aclose()


def fail(message: str, code: int = 2) -> int:
    print(f"error: {message}", file=sys.stderr)
    return code


def run_logged(log: RunLog, work: Callable[[], Coroutine[Any, Any, int]]) -> int | None:
    """Run the collection; on Ctrl-C say the log is safe and return 130, on EvalError print it and return 2.

    Returns None when the collection finished (the caller then reports), after warning about failed requests.
    """
    if log.skipped:
        print(f"note: skipped {log.skipped} torn/invalid line(s) in {log.path}", file=sys.stderr)
    try:
        failed = asyncio.run(work())
    except KeyboardInterrupt:
        print(
            f"\ninterrupted: {len(log.lines)} runs are safe in {log.path}; rerun the same command to resume",
            file=sys.stderr,
        )
        return 130
    except EvalError as exc:
        return fail(str(exc))
    finally:
        log.close()
    if failed:
        print(f"warning: {failed} request(s) failed; rerun the same command to retry them", file=sys.stderr)
    return None


async def post_json(
    client: httpx.AsyncClient, path: str, body: Mapping[str, Any], what: str, progress: Progress
) -> dict[str, Any] | None:
    """POST to a deployed service: the JSON answer, None after 3 failed tries (5xx, network), EvalError on a 4xx."""
    for attempt in range(3):
        try:
            response = await client.post(path, json=body)
        except httpx.HTTPError as exc:
            progress.write(f"{what}: {type(exc).__name__}: {exc}")
            await asyncio.sleep(2.0 * (attempt + 1))
            continue
        if response.status_code == 200:
            data = response.json()
            return data if isinstance(data, dict) else {}
        detail = _detail(response)
        if response.status_code < 500:
            raise EvalError(f"the service refused the request ({response.status_code}): {detail}")
        progress.write(f"{what}: the service answered {response.status_code}: {detail}")
        retry_after = response.headers.get("retry-after")
        await asyncio.sleep(min(30.0, float(retry_after)) if retry_after and retry_after.isdigit() else 2.0)
    return None


def _detail(response: httpx.Response) -> str:
    try:
        data = response.json()
    except ValueError:
        return response.text[:300]
    return str(data.get("detail", data)) if isinstance(data, dict) else str(data)[:300]
