"""``pcfjudge bench <name>``: argparse wiring only; each benchmark imports its work lazily."""

from __future__ import annotations

import argparse
import asyncio
import sys


def _cache(args: argparse.Namespace) -> int:
    import asyncio

    from pcfjudge.surface import Settings

    from pcfjudge_lab.bench.cache_bench import CacheBench, format_report, run

    bench = CacheBench(
        items=args.items,
        k=args.k,
        candidates=args.candidates,
        concurrency=args.concurrency,
        sim_latency_ms=args.sim_latency_ms,
        redis_url=args.redis_url or Settings().cache.redis_url,
        model=args.model,
    )
    print(format_report(bench, asyncio.run(run(bench))))
    return 0


def _engine(args: argparse.Namespace) -> int:
    import asyncio

    from pcfjudge_lab.bench.engine_bench import EngineBench, EngineGone, format_report, run

    bench = EngineBench(
        url=args.url,
        model=args.model,
        items=args.items,
        k=args.k,
        candidates=args.candidates,
        concurrency=args.concurrency,
        max_output_tokens=args.max_output_tokens,
    )
    try:
        passes = asyncio.run(run(bench))
    except EngineGone as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(format_report(bench, passes))
    return 0


def _add_engine(kinds: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    engine = kinds.add_parser(
        "engine",
        help="pcfjudge vs a bare client against a real engine: judgments/s, prefix-cache use, rationale cost",
        description="Against an OpenAI-compatible engine (llama.cpp, vLLM, SGLang, Ollama, TGI), make the same "
        "judgments with a bare client and through pcfjudge (cache bypassed), then with rationales, and print "
        "judgments/s and their ratio, prompt tokens evaluated per judgment vs one call's, and output tokens and "
        "seconds with and without rationales. Measured in one run.",
    )
    engine.add_argument("--url", required=True, help="the engine's /v1 base URL, e.g. http://127.0.0.1:8080/v1")
    engine.add_argument("--model", required=True, help="the model name the engine serves")
    engine.add_argument("--items", type=int, default=8, help="judgments per pass (default 8)")
    engine.add_argument("--k", type=int, default=7, help="permutations per judgment (default 7)")
    engine.add_argument("--candidates", type=int, default=4, choices=range(2, 5), help="candidates (default 4)")
    engine.add_argument("--concurrency", type=int, default=4, help="judgments at once (default 4)")
    engine.add_argument("--max-output-tokens", type=int, default=512, help="output cap per call (default 512)")
    engine.set_defaults(func=_engine)


def _soak(args: argparse.Namespace) -> int:
    import json
    import sys
    from pathlib import Path

    from pcfjudge_lab.bench.soak import SoakConfig, format_report, run

    config = SoakConfig(
        seconds=args.seconds,
        replicas=args.replicas,
        concurrency=args.concurrency,
        items=args.items,
        k=args.k,
        latency_ms=args.latency_ms,
        fail_rate=args.fail_rate,
        seed=args.seed,
    )
    report = run(config, Path(args.workdir) if args.workdir else None, lambda line: print(line, file=sys.stderr))
    print(format_report(report))
    if args.json:
        Path(args.json).write_text(json.dumps(report.to_json(), indent=2) + "\n", encoding="utf-8")
    return 1 if report.lost else 0


def _add_soak(kinds: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    soak = kinds.add_parser(
        "soak",
        help="replicas sharing Redis under load while a replica, Redis and the provider fail; 0 requests lost",
        description="Start N `pcfjudge serve` replicas sharing a private redis-server, judging through the fake "
        "provider, and load them for a while with a client that retries as the README says; meanwhile kill and "
        "restart a replica, restart Redis, make the provider answer 429 for a while and roll another replica with "
        "SIGTERM. Prints requests, outcomes, p50/p99, backend calls per judged item and requests lost (exit 1 if any).",
    )
    soak.add_argument("--seconds", type=float, default=300.0, help="load duration (default 300)")
    soak.add_argument("--replicas", type=int, default=3, help="pcfjudge serve processes (default 3)")
    soak.add_argument("--concurrency", type=int, default=8, help="client loops (default 8)")
    soak.add_argument("--items", type=int, default=5000, help="distinct items the requests draw from (default 5000)")
    soak.add_argument("--k", type=int, default=3, help="permutations per request (default 3)")
    soak.add_argument("--latency-ms", type=float, default=50.0, help="provider latency per call (default 50)")
    soak.add_argument("--fail-rate", type=float, default=0.02, help="provider's random 500/429 rate (default 0.02)")
    soak.add_argument("--seed", type=int, default=0, help="seed of the item draws and of the provider")
    soak.add_argument("--json", help="also write the report as JSON to this file")
    soak.add_argument("--workdir", help="keep the processes' logs here (default: a temporary directory)")
    soak.set_defaults(func=_soak)


def _flight(args: argparse.Namespace) -> int:
    from pathlib import Path

    from pcfjudge_lab.bench.flight_bench import FlightBench, format_report, run

    bench = FlightBench(args.runs, args.replicas, args.requests, args.k, args.latency_ms, args.busy)
    results = run(bench, Path(args.workdir) if args.workdir else None, lambda line: print(line, file=sys.stderr))
    print(format_report(bench, results))
    return 0 if all(r.held(bench) for r in results) else 1


def _add_flight(kinds: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    import os

    flight = kinds.add_parser(
        "flight",
        help="single flight across replicas: cold starts, a burst of identical requests on busy CPUs, K calls each",
        description="Start N fresh `pcfjudge serve` replicas on a private redis-server (emptied) and the fake "
        "provider, wait for their /readyz, then send a burst of identical K-run requests spread over them while one "
        "busy-loop process per core keeps the CPUs busy; count the provider calls. Repeated --runs times; prints "
        "each run's calls and what fail-open cost, and exits 1 unless every run made exactly K calls.",
    )
    arg = flight.add_argument
    arg("--runs", type=int, default=20, help="cold starts (default 20)")
    arg("--replicas", type=int, default=3, help="pcfjudge serve processes per run (default 3)")
    arg("--requests", type=int, default=30, help="identical requests per burst (default 30)")
    arg("--k", type=int, default=5, help="permutations per request: the calls single flight allows (default 5)")
    arg("--latency-ms", type=float, default=400.0, help="fake provider latency per call (default 400)")
    arg("--busy", type=int, default=os.cpu_count() or 1, help="busy-loop processes during each burst (one per core)")
    arg("--workdir", help="keep the processes' logs here (default: a temporary directory)")
    flight.set_defaults(func=_flight)


def _reward(args: argparse.Namespace) -> int:
    from pcfjudge_lab.bench.reward_bench import RewardBench, format_report, run

    bench = RewardBench(
        prompts=args.prompts,
        completions=args.completions,
        k=args.k,
        concurrency=args.concurrency,
        latency_ms=args.latency_ms,
        endpoint=args.endpoint,
        backend_concurrency=args.backend_concurrency,
    )
    outcome = run(bench)
    print(format_report(bench, outcome))
    return 1 if outcome.errors else 0


def _add_reward(kinds: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    reward = kinds.add_parser(
        "reward",
        help="RL rewards one sample per request: provider calls, p50/p99, rewards vs judging each group directly",
        description="Start the fake provider and `pcfjudge serve`, send P prompts x G completions one sample per "
        "request at the given concurrency (the service collects each prompt's G samples into one group), then judge "
        "every group directly. Prints provider calls against P*K, latency percentiles and matching rewards.",
    )
    reward.add_argument("--prompts", type=int, default=64, help="prompts (groups) (default 64)")
    reward.add_argument("--completions", type=int, default=8, help="completions per prompt = group size (default 8)")
    reward.add_argument("--k", type=int, default=5, help="permutations per group (default 5)")
    reward.add_argument("--concurrency", type=int, default=256, help="requests in flight (default 256)")
    reward.add_argument("--latency-ms", type=float, default=200.0, help="fake provider latency per call (default 200)")
    reward.add_argument(
        "--endpoint", choices=["openrlhf", "slime", "reward"], default="openrlhf", help="wire format (default openrlhf)"
    )
    reward.add_argument(
        "--backend-concurrency", type=int, default=64, help="the service's PCFJ_BACKEND_CONCURRENCY (default 64)"
    )
    reward.set_defaults(func=_reward)


def _overload(args: argparse.Namespace) -> int:
    import json

    from pcfjudge_lab.bench.overload_bench import OverloadBench, format_report, run

    bench = OverloadBench(
        args.requests,
        args.k,
        args.latency_ms,
        args.leavers,
        args.leave_after,
        args.max_pending,
        scenarios=tuple(args.scenarios),
        burst=args.burst,
        deadline_s=args.deadline,
        cold_latency_ms=args.cold_latency_ms,
        warm=args.warm,
        warm_latency_ms=args.warm_latency_ms,
        hung_latency_ms=args.hung_latency_ms,
    )
    result = run(bench)
    print(json.dumps(result, indent=2) if args.json else format_report(result))
    return 0


def _add_overload(kinds: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    overload = kinds.add_parser(
        "overload",
        help="a flood of slow requests and clients that walk away: admission control and cancellation",
        description="Starts the fake provider and pcfjudge serve, floods it with concurrent slow requests, then "
        "sends requests whose clients give up; prints refusals, latencies and provider calls made after they left.",
    )
    overload.add_argument("--requests", type=int, default=500, help="concurrent requests in the flood (default 500)")
    overload.add_argument("--k", type=int, default=7, help="permutations per request (default 7)")
    overload.add_argument("--latency-ms", type=float, default=2000.0, help="provider latency per call (default 2000)")
    overload.add_argument("--leavers", type=int, default=48, help="clients that give up (default 48)")
    overload.add_argument("--leave-after", type=float, default=2.0, help="when they give up, seconds (default 2)")
    overload.add_argument("--max-pending", type=int, default=None, help="the server's PCFJ_MAX_PENDING_REQUESTS")
    overload.add_argument(
        "--scenarios",
        nargs="+",
        default=["flood", "walk-away", "cold-start", "hung-provider"],
        choices=["flood", "walk-away", "cold-start", "hung-provider"],
        help="which scenarios to run (default: all four)",
    )
    overload.add_argument("--burst", type=int, default=200, help="cold-start/hung-provider: concurrent K=1 requests")
    overload.add_argument("--deadline", type=float, default=15.0, help="cold-start/hung-provider: request deadline, s")
    overload.add_argument("--cold-latency-ms", type=float, default=3000.0, help="cold-start: provider latency")
    overload.add_argument("--warm", type=int, default=32, help="hung-provider: K=1 requests that warm the server")
    overload.add_argument("--warm-latency-ms", type=float, default=2000.0, help="hung-provider: latency while warming")
    overload.add_argument("--hung-latency-ms", type=float, default=30_000.0, help="hung-provider: latency once hung")
    overload.add_argument("--json", action="store_true", help="print JSON")
    overload.set_defaults(func=_overload)


def _http(args: argparse.Namespace) -> int:
    import json

    from pcfjudge_lab.bench.http_bench import PHASES, HttpBench, run
    from pcfjudge_lab.bench.http_report import figures, format_report

    only = tuple(p.strip() for p in args.only.split(",") if p.strip()) if args.only else PHASES
    unknown = sorted(set(only) - set(PHASES))
    if unknown:
        raise SystemExit(f"--only: unknown phase {', '.join(unknown)}; choose from {','.join(PHASES)}")
    bench = HttpBench(
        latency_ms=args.latency_ms,
        candidates=args.candidates,
        sequential=args.sequential,
        calls=args.calls,
        cold_concurrency=args.cold_concurrency,
        burst=args.burst,
        burst_requests=args.burst_requests,
        warm_items=args.warm_items,
        warm_requests=args.warm_requests,
        single_requests=args.single_requests,
        rss_requests=args.rss_requests,
        workers=tuple(args.workers),
        backend_concurrency=args.backend_concurrency,
        only=only,
    )
    result = run(bench)
    result["figures"] = [f.to_json() for f in figures(result)]
    print(json.dumps(result, indent=2) if args.json else format_report(result))
    return 0


def _ranking(args: argparse.Namespace) -> int:
    from threadpoolctl import threadpool_limits

    from pcfjudge_lab.bench.ranking_bench import RankingBench, format_report, run

    bench = RankingBench(
        sizes=tuple(args.sizes),
        window=args.window,
        rounds=args.rounds,
        tournaments=args.tournaments,
        drift=args.drift,
        bias=args.bias,
        trials=args.trials,
        seed=args.seed,
        quality=args.quality,
    )
    with threadpool_limits(limits=1, user_api="blas"):  # as a served process runs it (window_runs.limit_blas)
        print(format_report(bench, run(bench)))
    return 0


def _add_ranking(kinds: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    ranking = kinds.add_parser(
        "ranking",
        help="many candidates beyond one prompt: windows + one fitted scale vs sliding window, tournament, pointwise",
        description="On a simulated judge with position bias and per-call drift of its absolute scores, rank N "
        "candidates with windows of the same size four ways and print top-10 recall, NDCG@10, top-1, Spearman, "
        "Kendall, calls, input tokens and the CPU of planning and fitting, averaged over worlds, in one run.",
    )
    arg = ranking.add_argument
    arg("--sizes", type=int, nargs="+", default=[64, 100, 1000, 10_000], help="candidate counts (64 100 1000 10000)")
    arg("--window", type=int, default=16, help="candidates per call (default 16, PCFJ_MAX_CANDIDATES' default)")
    arg("--rounds", type=int, default=4, help="rounds of windows: each candidate's appearances (default 4)")
    arg("--tournaments", type=int, default=2, help="tournaments of the TourRank-style baseline (default 2)")
    arg("--drift", type=float, default=8.0, help="sd of the judge's per-call drift of absolute scores (default 8)")
    arg("--bias", type=float, default=5.0, help="points the judge adds to what it shows first (default 5)")
    arg("--quality", choices=("uniform", "normal"), default="uniform", help="how the hidden truths are drawn")
    arg(
        "--trials",
        type=int,
        default=10,
        help="worlds each figure is averaged over (default 10; five times that up to 256, a fifth past 1,000)",
    )
    arg("--seed", type=int, default=0, help="seed of the worlds and the judge (default 0)")
    ranking.set_defaults(func=_ranking)


def _jury(args: argparse.Namespace) -> int:
    import json

    from pcfjudge_lab.bench.jury_sim import format_report, run

    rows = run(args.items, args.calibration_items, args.seed)
    print(json.dumps([r.to_json() for r in rows], indent=2) if args.json else format_report(rows))
    return 0


def _add_jury(kinds: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    jury = kinds.add_parser(
        "jury",
        help="SIMULATION: when a weighted jury of judges beats its best juror, and how weights guard against a bad one",
        description="A SIMULATION (no judge model is called): jurors of given accuracies whose errors correlate "
        "through a shared hard-item factor judge pairwise items; weights are calibrated on a separate sample "
        "(log-odds of each juror's accuracy) and the jury pools verdicts as the service does. Prints, per scenario, "
        "the best juror's and the equal- and calibrated-weight juries' accuracies with 95% intervals, whether each "
        "jury beats the best juror, and Kish's effective jurors from the measured error correlation. Deterministic "
        "for a seed.",
    )
    arg = jury.add_argument
    arg("--items", type=int, default=20_000, help="pairwise items judged per scenario (default 20000)")
    arg("--calibration-items", type=int, default=500, help="separate items the weights are calibrated on (500)")
    arg("--seed", type=int, default=0, help="seed of the simulation (default 0)")
    arg("--json", action="store_true", help="print the rows as JSON")
    jury.set_defaults(func=_jury)


def _deadline(args: argparse.Namespace) -> int:
    from pcfjudge_lab.bench.deadline_bench import format_report, run

    passes = asyncio.run(run(args.judgments, args.k, args.deadline_ms, args.latency_ms, args.tail, args.concurrency))
    print(format_report(passes, args.k, args.deadline_ms, args.latency_ms, args.tail))
    return 0


def _add_deadline(kinds: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    deadline = kinds.add_parser(
        "deadline",
        help="deadlines against a long-tailed judge: lateness p50/p99 and the share still certified",
        description="Judgments with and without deadline_ms against the simulated judge with a lognormal latency "
        "tail, through the HTTP app in process: the anchor's latency, the deadline's lateness (answer time minus "
        "the deadline), answered and cut shares, certified share, runs used.",
    )
    arg = deadline.add_argument
    arg("--judgments", type=int, default=200, help="judgments per pass (default 200)")
    arg("--k", type=int, default=7, help="runs per judgment (default 7)")
    arg("--deadline-ms", type=int, default=600, help="the deadline (default 600)")
    arg("--latency-ms", type=float, default=150.0, help="the judge's median call latency (default 150)")
    arg("--tail", type=float, default=1.0, help="sigma of the lognormal tail (default 1.0)")
    arg("--concurrency", type=int, default=16, help="judgments at once (default 16)")
    deadline.set_defaults(func=_deadline)


def _priority(args: argparse.Namespace) -> int:
    from pcfjudge_lab.bench.priority_bench import PriorityBench, format_report, run

    bench = PriorityBench(
        requests=args.requests,
        k=args.k,
        clients=args.clients,
        latency_ms=args.latency_ms,
        concurrency=args.backend_concurrency,
        job_k=args.job_k,
        job_workers=args.job_workers,
        one_class=args.one_class,
    )
    print(format_report(bench, asyncio.run(run(bench))))
    return 0


def _add_priority(kinds: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    priority = kinds.add_parser(
        "priority",
        help="interactive requests' p50/p99 on an idle backend and on one jobs saturate, side by side",
        description="Direct /judge/listwise requests against the simulated judge through the HTTP app in process, "
        "first on an idle backend, then while jobs (POST /v1/jobs) keep more calls waiting than the backend has "
        "slots; with --one-class also with every call in one class (first come first served, as before classes). "
        "Prints p50, p99 and max of each pass and the background calls served meanwhile.",
    )
    arg = priority.add_argument
    arg("--requests", type=int, default=100, help="interactive requests per pass (default 100)")
    arg("--k", type=int, default=3, help="runs per interactive request (default 3)")
    arg("--clients", type=int, default=2, help="interactive requests in flight (default 2)")
    arg("--latency-ms", type=float, default=200.0, help="the judge's median call latency (default 200)")
    arg("--backend-concurrency", type=int, default=16, help="PCFJ_BACKEND_CONCURRENCY (default 16)")
    arg("--job-k", type=int, default=16, help="runs per job (default 16)")
    arg("--job-workers", type=int, default=8, help="PCFJ_JOB_WORKERS: jobs running at once (default 8)")
    arg("--one-class", action="store_true", help="also the loaded pass with every call in one class")
    priority.set_defaults(func=_priority)


def _tracing(args: argparse.Namespace) -> int:
    from pcfjudge_lab.bench.tracing_bench import TracingBench, format_report, run

    bench = TracingBench(args.rounds, args.warm_requests, args.cold_requests, args.concurrency, args.ratio)
    print(format_report(bench, run(bench)))
    return 0


def _add_tracing(kinds: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    tracing = kinds.add_parser(
        "tracing",
        help="what traces cost: warm requests/s and cold backend calls/s with tracing off and on (exporting)",
        description="Through the HTTP app in process, in interleaved rounds: warm K=7 requests (cache hits) and cold "
        "ones (cache bypassed, K calls each) with tracing off, on with every span exported over OTLP/HTTP to a "
        "receiver in another process, and on with a share of the traces sampled; prints each figure's median, the "
        "overhead, the spans exported, and what tracing-off's checks cost a request and a call against a build "
        "without them (timed in isolation).",
    )
    arg = tracing.add_argument
    arg("--rounds", type=int, default=9, help="rounds per mode (default 9)")
    arg("--warm-requests", type=int, default=2000, help="warm requests per round (default 2000)")
    arg("--cold-requests", type=int, default=300, help="cold requests per round, K=7 calls each (default 300)")
    arg("--concurrency", type=int, default=8, help="clients at once (default 8)")
    arg("--ratio", type=float, default=0.1, help="the share of traces the sampled mode keeps (default 0.1)")
    tracing.set_defaults(func=_tracing)


def _loop(args: argparse.Namespace) -> int:
    from pcfjudge_lab.bench.loop_bench import LoopBench, format_report, run

    bench = LoopBench(
        args.documents, args.concurrent, args.latency_ms, args.probe_ms, args.alone_probes, args.queued_jobs,
        args.job_workers, args.top_n,
    )  # fmt: skip
    print(format_report(bench, run(bench)))
    return 0


def _add_loop(kinds: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    loop = kinds.add_parser(
        "loop",
        help="is the service responsive under large judgments: /healthz alone and during 1,000-document reranks",
        description="Through pcfjudge serve and the fake provider: /healthz latency (p50, p99, max) alone and while "
        "several cold 1,000-document reranks run at once, the server CPU one such rerank costs, and where it goes "
        "(one rerank in process under cProfile, its own time by stage).",
    )
    arg = loop.add_argument
    arg("--documents", type=int, default=1000, help="documents per rerank (default 1000)")
    arg("--concurrent", type=int, default=4, help="reranks at once (default 4)")
    arg("--latency-ms", type=float, default=300.0, help="the fake provider's latency per call (default 300)")
    arg("--probe-ms", type=float, default=20.0, help="time between two /healthz probes (default 20)")
    arg("--alone-probes", type=int, default=150, help="/healthz probes with nothing else running (default 150)")
    arg("--queued-jobs", type=int, default=100, help="key A's queued jobs in the fairness phase (0: none; default 100)")
    arg("--job-workers", type=int, default=4, help="job workers in the fairness phase (default 4)")
    arg("--top-n", type=int, default=0, help="Cohere's top_n of each rerank (default 0: none, the whole order)")
    loop.set_defaults(func=_loop)


def _add_http(kinds: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    http = kinds.add_parser(
        "http",
        help="the HTTP hot path beside its references: fan-out, calls/s and CPU per call, latency under load, warm "
        "hits vs a bare FastAPI echo, memory, workers",
        description="Start the fake provider and `pcfjudge serve` and print, in one run, each figure of issue 14 "
        "beside its reference (the provider alone, the OpenAI SDK alone on both transports, a bare FastAPI echo) as "
        "ratios, with the machine's core count and load average.",
    )
    arg = http.add_argument
    arg("--latency-ms", type=float, default=200.0, help="fake provider latency per call (default 200)")
    arg("--candidates", type=int, default=4, help="candidates per request (default 4)")
    arg("--sequential", type=int, default=30, help="requests per K in the one-at-a-time fan-out (default 30)")
    arg("--calls", type=int, default=3000, help="backend calls in the calls/s figure, per client (default 3000)")
    arg("--cold-concurrency", type=int, default=32, help="concurrent cold K=7 requests (default 32)")
    arg("--burst", type=int, default=64, help="concurrent requests in the latency figures (default 64)")
    arg("--burst-requests", type=int, default=256, help="requests per latency figure (default 256)")
    arg("--warm-items", type=int, default=64, help="distinct cached items of the warm figures (default 64)")
    arg("--warm-requests", type=int, default=20_000, help="warm requests at 32 concurrent (default 20000)")
    arg("--single-requests", type=int, default=2000, help="warm requests one at a time (default 2000)")
    arg("--rss-requests", type=int, default=100_000, help="warm requests before the second RSS reading (100000)")
    arg("--workers", type=int, nargs="+", default=[1, 2], help="worker counts to measure (default 1 2)")
    arg("--backend-concurrency", type=int, default=512, help="PCFJ_BACKEND_CONCURRENCY of the service (512)")
    arg(
        "--only",
        help="run only these phases, comma-separated (provider, clients, fanout, cold, burst, warm, rss; default: "
        "all), e.g. --only warm,burst --workers 1",
    )
    arg("--json", action="store_true", help="print the measurements and figures as JSON")
    http.set_defaults(func=_http)


def _chat(args: argparse.Namespace) -> int:
    from pathlib import Path

    from pcfjudge_lab.bench.chat_bench import format_report, run

    pairs, straight, through = asyncio.run(run(Path(args.pairs) if args.pairs else None, args.limit))
    print(format_report(pairs, [straight, through]))
    return 0


def _safety(args: argparse.Namespace) -> int:
    from pcfjudge_lab.bench.burst_memory import BurstPlan, allocator_plans
    from pcfjudge_lab.bench.safety_bench import format_report, run

    bursts: tuple[BurstPlan, ...] = ()
    if args.burst:  # the default allocator, then the C allocator for small objects too: glibc's, then jemalloc's
        bursts = allocator_plans(args.burst)
    print(format_report(*run(args.timeout_s, tuple(args.transports), bursts)))
    return 0


def _add_safety(kinds: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    safety = kinds.add_parser(
        "safety",
        help="the event loop during a 144 KB chat message, and memory during a provider body without end",
        description="Through a running pcfjudge serve (the code importable as pcfjudge: run it before and after a "
        "change with PYTHONPATH=<checkout>/app): the red team's 144 KB chat message while /healthz is polled every "
        "5 ms (the answer's time and the longest /healthz wait), then one listwise request to an endpoint whose 200 "
        "body never ends, per OpenAI transport (RSS at rest and at peak, and how the request ended); with --burst N, "
        "RSS before, during and after N reranks of 1,000 documents (with Redis, the front cache's TTL 30 s, "
        "PCFJ_REST_AFTER_S 5 s), with the default allocator, PYTHONMALLOC=malloc, and that with jemalloc as the image runs "
        "it (when Debian's libjemalloc2 is installed).",
    )
    safety.add_argument("--timeout-s", type=float, default=20.0, help="the service's request timeout (default 20)")
    safety.add_argument("--transports", nargs="+", default=["wire", "sdk"], choices=["wire", "sdk"])
    safety.add_argument("--burst", type=int, default=0, help="reranks of 1,000 documents in a burst (default 0: none)")
    safety.set_defaults(func=_safety)


def _add_chat(kinds: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    chat = kinds.add_parser(
        "chat",
        help="a framework's judge prompt straight to a position-biased judge vs through /v1/chat/completions",
        description="On the bundled JudgeBench pairs (gpt-4o split), MT-Bench's pair-v2 prompt in both orders, sent "
        "straight to the simulated judge (one call per order) and through /v1/chat/completions (the HTTP app in "
        "process, the same judge), side by side in one run: accuracy against the labels, order consistency, the "
        "share won by the answer shown first, and the judge calls each made.",
    )
    chat.add_argument("--pairs", default=None, help="a JudgeBench JSONL split (default: the bundled gpt-4o split)")
    chat.add_argument("--limit", type=int, default=None, help="the first N pairs (default: all)")
    chat.set_defaults(func=_chat)


def _imports(args: argparse.Namespace) -> int:
    from pcfjudge_lab.bench.imports_bench import format_report, run

    print(format_report(run(), args.top))
    return 0


def _add_imports(kinds: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    imports = kinds.add_parser(
        "imports",
        help="what a served process loads of the package after one judgment (modules, lines)",
        description="Start the app on default settings in a fresh interpreter, judge once, and print how many "
        "modules and lines of pcfjudge it loaded, the largest first.",
    )
    imports.add_argument("--top", type=int, default=15, help="largest modules listed (default 15)")
    imports.set_defaults(func=_imports)


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
    _add_overload(kinds)
    _add_soak(kinds)
    _add_flight(kinds)
    _add_engine(kinds)
    _add_reward(kinds)
    _add_http(kinds)
    _add_ranking(kinds)
    _add_jury(kinds)
    _add_deadline(kinds)
    _add_priority(kinds)
    _add_tracing(kinds)
    _add_loop(kinds)
    _add_chat(kinds)
    _add_imports(kinds)
    _add_safety(kinds)
