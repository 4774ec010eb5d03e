"""``pcfjudge bench <name>``: argparse wiring only; each benchmark imports its work lazily."""

from __future__ import annotations

import argparse


def _cache(args: argparse.Namespace) -> int:
    import asyncio

    from pcfjudge.bench.cache_bench import CacheBench, format_report, run
    from pcfjudge.settings import Settings

    bench = CacheBench(
        items=args.items,
        k=args.k,
        candidates=args.candidates,
        concurrency=args.concurrency,
        sim_latency_ms=args.sim_latency_ms,
        redis_url=args.redis_url or Settings().redis_url,
        model=args.model,
    )
    print(format_report(bench, asyncio.run(run(bench))))
    return 0


def add_bench_commands(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    bench = sub.add_parser("bench", help="benchmarks that print measured figures (see README)")
    kinds = bench.add_subparsers(dest="bench", metavar="BENCH", required=True)
    cache = kinds.add_parser(
        "cache",
        help="cold vs warm request latency and backend calls for the same items, in process",
        description="Judge N items cold (every run a backend call), then the same items again (warm: cache hits), "
        "through the service code with the simulated judge standing in for an LLM. With --redis-url (or "
        "PCFJ_REDIS_URL) it also judges them on a second, fresh Services instance: another replica served from Redis.",
    )
    cache.add_argument("--items", type=int, default=20, help="distinct items (default 20)")
    cache.add_argument("--k", type=int, default=7, help="permutations per item (default 7)")
    cache.add_argument("--candidates", type=int, default=4, help="candidates per item (default 4)")
    cache.add_argument("--concurrency", type=int, default=1, help="requests in flight at once (default 1)")
    cache.add_argument(
        "--sim-latency-ms", type=float, default=200.0, help="simulated judge latency per call (default 200)"
    )
    cache.add_argument("--redis-url", default=None, help="use a shared Redis (default: PCFJ_REDIS_URL if set)")
    cache.add_argument("--model", default="sim:default", help="judge model (default sim:default)")
    cache.set_defaults(func=_cache)
