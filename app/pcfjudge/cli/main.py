"""The ``pcfjudge`` command: ``serve`` runs the HTTP service; other commands are added by their modules, the lab's
(``eval``, ``bench``, ``calibrate``, ``fake-provider``) by ``pcfjudge_lab`` when it is installed."""

from __future__ import annotations

import argparse
import importlib.util
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

Command = Callable[[argparse.Namespace], int]


def _serve(args: argparse.Namespace) -> int:
    from pcfjudge.cli.serve_command import serve  # a CLI subcommand

    return serve(args)


def _openapi(args: argparse.Namespace) -> int:
    from pcfjudge.cli.openapi_command import DEFAULT_PATH, render, write  # a CLI subcommand

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


LAB_COMMANDS = ("fake-provider", "eval", "bench", "calibrate")
"""Commands of the lab, a distribution of its own (pcfjudge-lab, ``lab/`` in the repository): added from
``pcfjudge_lab.commands`` when it is installed, imported only then (never for ``serve``)."""
LAB_INSTALL = "pip install -e ./lab (in a clone of the repository) or pip install pcfjudge-lab"


def lab_installed() -> bool:
    """Whether ``pcfjudge_lab`` can be imported (found, not imported)."""
    try:
        return importlib.util.find_spec("pcfjudge_lab") is not None
    except (ImportError, ValueError):
        return False


def _lab_missing(command: str) -> int:
    print(
        f"pcfjudge {command} is part of the lab (pcfjudge-lab), which is not installed: {LAB_INSTALL}", file=sys.stderr
    )
    return 2


SERVICE_COMMANDS = ("serve", "openapi")
"""Commands whose parser is built without the other commands' modules: ``pcfjudge serve`` imports nothing of
``pcfjudge_lab`` (eval, bench, calibrate, the fake provider), nor the batch and judge commands."""


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
    if lab_installed():
        from pcfjudge_lab.commands import add_lab_commands  # optional: the lab; argparse only

        add_lab_commands(sub)
    else:
        for name in LAB_COMMANDS:
            sub.add_parser(name, help=f"(the lab, not installed: {LAB_INSTALL})")
    from pcfjudge.cli.judge_command import add_judge_command  # a CLI subcommand

    add_judge_command(sub)
    from pcfjudge.batch.batch_command import add_batch_command  # a CLI subcommand

    add_batch_command(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    command = next((a for a in argv if not a.startswith("-")), None)
    if command in LAB_COMMANDS and not lab_installed():
        return _lab_missing(command)
    parser = build_parser(service_only=command in SERVICE_COMMANDS)
    args = parser.parse_args(argv)
    func: Command | None = getattr(args, "func", None)
    if func is None:
        parser.print_help()
        return 2
    return func(args)


if __name__ == "__main__":
    sys.exit(main())
