"""The ``pcfjudge`` command: ``serve`` runs the HTTP service; other commands are added by their modules."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence

Command = Callable[[argparse.Namespace], int]


def _serve(args: argparse.Namespace) -> int:
    from pcfjudge.cli.serve_command import serve

    return serve(args)


def _openapi(args: argparse.Namespace) -> int:
    from pathlib import Path

    from pcfjudge.cli.openapi_command import DEFAULT_PATH, render, write

    path = Path(args.out) if args.out else DEFAULT_PATH
    if args.check:
        current = path.read_text(encoding="utf-8") if path.exists() else ""
        if current != render():
            print(f"{path} is stale: run `pcfjudge openapi`", file=sys.stderr)
            return 1
        print(f"{path} is up to date")
        return 0
    print(f"wrote {write(path)}")
    return 0


def _fake_provider(args: argparse.Namespace) -> int:
    import uvicorn

    from pcfjudge.tooling.fakeprovider.fake_server import create_fake_app
    from pcfjudge.tooling.fakeprovider.state import FakeConfig

    config = FakeConfig(
        seed=args.seed, latency_ms=args.latency_ms, fail_rate=args.fail_rate, slow_seconds=args.slow_seconds
    )
    uvicorn.run(create_fake_app(config), host=args.host, port=args.port, log_level=args.log_level)
    return 0


SERVICE_COMMANDS = ("serve", "openapi")
"""Commands whose parser is built without the other commands' modules: ``pcfjudge serve`` imports nothing of
``pcfjudge.tooling`` (eval, bench, the fake provider), nor the batch and judge commands."""


def build_parser(service_only: bool = False) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="pcfjudge",
        description="Permutation-consensus LLM judging service (PCFJudge listwise, APOCJudge pairwise). "
        "Settings come from PCFJ_* environment variables (see README).",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    serve = sub.add_parser("serve", help="run the HTTP service (uvicorn)")
    serve.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    serve.add_argument("--port", type=int, default=8000, help="port to bind (default 8000)")
    serve.add_argument("--workers", type=int, default=None, help="worker processes (default: PCFJ_WORKERS, else 1)")
    serve.add_argument("--log-level", default="info", choices=["critical", "error", "warning", "info", "debug"])
    serve.add_argument(
        "--log-format",
        default=None,
        choices=["text", "json"],
        help="log lines as text or JSON (default: PCFJ_LOG_FORMAT, else text)",
    )
    serve.set_defaults(func=_serve)
    openapi = sub.add_parser("openapi", help="write the OpenAPI document to openapi/openapi.json")
    openapi.add_argument("--out", help="where to write it (default: openapi/openapi.json in the repo)")
    openapi.add_argument("--check", action="store_true", help="exit 1 if the file differs from the app's document")
    openapi.set_defaults(func=_openapi)
    if service_only:
        return parser
    fake = sub.add_parser(
        "fake-provider", help="run a fake OpenAI/Anthropic server answering with the simulated judge (no keys, no cost)"
    )
    fake.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    fake.add_argument("--port", type=int, default=8100, help="port to bind (default 8100)")
    fake.add_argument("--latency-ms", type=float, default=0.0, help="added latency per call in ms (default 0)")
    fake.add_argument("--fail-rate", type=float, default=0.0, help="share of calls answered 500 or 429 (default 0)")
    fake.add_argument("--seed", type=int, default=0, help="seed of the judge and of the random failures")
    fake.add_argument("--slow-seconds", type=float, default=30.0, help="delay of the 'slow' fault (default 30)")
    fake.add_argument("--log-level", default="warning", choices=["critical", "error", "warning", "info", "debug"])
    fake.set_defaults(func=_fake_provider)
    from pcfjudge.tooling.eval.eval_command import (
        add_eval_commands,  # argparse only; each eval command imports its work lazily
    )

    add_eval_commands(sub)
    from pcfjudge.tooling.bench.bench_command import add_bench_commands

    add_bench_commands(sub)
    from pcfjudge.tooling.calibrate.calibrate_command import add_calibrate_command

    add_calibrate_command(sub)
    from pcfjudge.cli.judge_command import add_judge_command

    add_judge_command(sub)
    from pcfjudge.batch.batch_command import add_batch_command

    add_batch_command(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    command = next((a for a in argv if not a.startswith("-")), None)
    parser = build_parser(service_only=command in SERVICE_COMMANDS)
    args = parser.parse_args(argv)
    func: Command | None = getattr(args, "func", None)
    if func is None:
        parser.print_help()
        return 2
    return func(args)


if __name__ == "__main__":
    sys.exit(main())
