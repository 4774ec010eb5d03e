"""``pcfjudge fake-provider``: the fake OpenAI/Anthropic server (``fake_server.create_fake_app``) under uvicorn."""

from __future__ import annotations

import argparse


def _fake_provider(args: argparse.Namespace) -> int:
    import uvicorn

    from pcfjudge_lab.fakeprovider.fake_server import create_fake_app
    from pcfjudge_lab.fakeprovider.state import FakeConfig

    config = FakeConfig(
        seed=args.seed,
        latency_ms=args.latency_ms,
        fail_rate=args.fail_rate,
        slow_seconds=args.slow_seconds,
        rpm_limit=args.rpm_limit,
    )
    uvicorn.run(create_fake_app(config), host=args.host, port=args.port, log_level=args.log_level)
    return 0


def add_fake_provider_command(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    fake = sub.add_parser(
        "fake-provider", help="run a fake OpenAI/Anthropic server answering with the simulated judge (no keys, no cost)"
    )
    fake.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    fake.add_argument("--port", type=int, default=8100, help="port to bind (default 8100)")
    fake.add_argument("--latency-ms", type=float, default=0.0, help="added latency per call in ms (default 0)")
    fake.add_argument("--fail-rate", type=float, default=0.0, help="share of calls answered 500 or 429 (default 0)")
    fake.add_argument("--seed", type=int, default=0, help="seed of the judge and of the random failures")
    fake.add_argument("--slow-seconds", type=float, default=30.0, help="delay of the 'slow' fault (default 30)")
    fake.add_argument(
        "--rpm-limit", type=int, default=None, help="answer 429 past this many requests a minute (default: no limit)"
    )
    fake.add_argument("--log-level", default="warning", choices=["critical", "error", "warning", "info", "debug"])
    fake.set_defaults(func=_fake_provider)
