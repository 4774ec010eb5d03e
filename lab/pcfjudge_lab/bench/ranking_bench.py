"""``pcfjudge bench ranking``: many candidates beyond one prompt, the window design and its fit against the published
ways of getting past one prompt, on one simulated judge, side by side in one run (issue 30's design check).

The judge here is a model of a listwise judge's scores, not the service: a candidate shown in a call scores

    truth + position bias (``bias`` points first, falling linearly to 0 last) + the call's drift + noise,

rounded and clipped to 0–100; the call's drift (``drift`` points, one draw per call) is how a judge's absolute scores
move from prompt to prompt. Ranks within a call come from its scores. The hidden truths are drawn ``uniform`` on
10–90 (a dense top: at 1,000 documents the 10th and the 30th best are 1.6 points apart, a quarter of one call's
noise) or ``normal`` (50 ± 15, clipped: the top thins out as real relevance does). Every method sees the same judge
and window:

  windows      ours, exactly as the service runs it (``judging.window_rounds``): the whole order (``rounds``
               uniform rounds) or the top 10 (one round, the tournament's stages, the boundary), at the sliding
               window's calls (``max_calls``; at least the least the design needs) and at the tournament's, each
               call's scores made into Eq. 5 values and fitted onto one scale with the judge's position bias
  sliding      RankGPT's sliding window: one back-to-front pass, window w, step w/2, over a first-stage order
  tournament   TourRank-style: groups of w, the better half of each group goes on, ``tournaments`` tournaments on
               fresh groupings, a candidate's points are the stages it survived
  pointwise    each candidate alone in its own call (its score as is)
  reference    not a method: the sliding window's calls × w looks, each the truth plus the judge's noise alone,
               every look placed where the doubt is (``reference_method``): what that budget could find at best
               with none of a judge's drift and bias and no windows

The first-stage order (what a retriever hands over) is the truth plus ``retriever_sd`` of noise. Reported per method:
top-10 recall and NDCG@10 against the true top 10, whether the true best is first, Spearman and Kendall of the whole
order, calls, input tokens (``overhead`` per call plus ``per_candidate`` per candidate shown) and, for ours, the CPU
of planning and fitting.
"""

from __future__ import annotations

import math
import random
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
from pcfjudge.surface import (
    CandidateJudgment,
    RunJudgments,
    WindowRanking,
    WindowSpec,
    least_calls,
    ranking_of,
    run_values,
)
from pcfjudge.surface import consensus as cons

SMALL_WORLDS = 256
"""Up to this many candidates a figure averages twenty times the worlds (``RankingBench.trials_at``)."""
REFERENCE = "reference: noise only, one look at a time"
"""Not a method one could run (``reference_method``): how far the sliding window's budget goes at best."""


@dataclass(frozen=True, slots=True)
class RankingBench:
    sizes: tuple[int, ...] = (20, 64, 100, 256, 1000)
    window: int = 16
    rounds: int = 4
    tournaments: int = 2
    bias: float = 5.0
    drift: float = 8.0
    noise: float = 6.0
    retriever_sd: float = 25.0
    overhead: int = 600  # input tokens of a prompt's instructions
    per_candidate: int = 120  # input tokens of one candidate's text
    seed: int = 0
    trials: int = 10  # worlds (truths and first-stage orders) each figure is averaged over (see ``trials_at``)
    quality: str = "uniform"  # how the hidden truths are drawn: uniform (10–90) or normal (50 ± 15)

    def trials_at(self, n: int) -> int:
        """Worlds at ``n`` candidates: twenty times ``trials`` up to ``SMALL_WORLDS`` (cheap, and one world's top-10
        recall moves in steps of 0.1: ten worlds left a mean at 100 documents 0.05 from the mean of sixty, two sets
        of fifty 0.02 apart), ``trials`` up to 1,000, a fifth of it past."""
        if n <= SMALL_WORLDS:
            return 20 * self.trials
        return self.trials if n <= 1000 else max(2, self.trials // 5)


@dataclass
class Judge:
    """The simulated judge: calls made, candidates shown, one score per candidate of a call."""

    truth: list[float]
    bench: RankingBench
    rng: random.Random
    calls: int = 0
    shown: int = 0

    def call(self, displayed: Sequence[int]) -> list[float]:
        self.calls += 1
        self.shown += len(displayed)
        drift = self.rng.gauss(0, self.bench.drift)
        last = max(1, len(displayed) - 1)
        return [
            min(
                100.0,
                max(
                    0.0,
                    round(
                        self.truth[c] + self.bench.bias * (1 - p / last) + drift + self.rng.gauss(0, self.bench.noise)
                    ),
                ),
            )
            for p, c in enumerate(displayed)
        ]

    def tokens(self) -> int:
        return self.calls * self.bench.overhead + self.shown * self.bench.per_candidate


@dataclass
class Outcome:
    method: str
    n: int
    order: list[int]
    calls: int
    tokens: int
    cpu_ms: float | None = None  # one world's; averaged: the median of the worlds'
    cpu_max_ms: float | None = None  # averaged: the largest of the worlds'
    metrics: dict[str, float] = field(default_factory=dict)


def windows_method(
    judge: Judge, n: int, rounds: int, top_n: int = 0, max_calls: int | None = None
) -> tuple[list[int], float]:
    """Ours, exactly as the service runs it (``judging.window_rounds.WindowRanking``, the stepper
    ``engine.window_runs`` drives): each call's scores made into the run's Eq. 5 values (ranks from the scores),
    fitted onto one scale; the whole order over ``rounds`` rounds, or with ``top_n`` two rounds and then the
    ``top_n`` boundary within ``rounds`` rounds' calls. The order and the CPU of everything but the judge's calls
    (planning, Eq. 5 per run, fitting; ms)."""
    spec = WindowSpec(judge.bench.window, rounds, top_n, max_calls, seed=judge.bench.seed)
    ranking = WindowRanking(n, spec)
    weights = cons.PRESETS["proposed"]
    cpu = 0.0
    started = time.process_time()
    while windows := ranking.next_windows():
        for window in windows:
            cpu += time.process_time() - started
            scores = judge.call(window)  # the judge's answer (scores, ranks), as parsed: not the service's CPU
            ranks = cons.ranks_from_scores({str(c): s for c, s in zip(window, scores, strict=True)})
            run = RunJudgments(
                {
                    str(c): CandidateJudgment(s, ranks[str(c)], False, False, False)
                    for c, s in zip(window, scores, strict=True)
                }
            )
            started = time.process_time()
            ranking.record(window, {int(cid): v[0] for cid, v in run_values(run, weights).items()})
    fit = ranking.fit()
    cpu += time.process_time() - started
    return ranking_of(fit.scores), cpu * 1000


def sliding_method(judge: Judge, first_stage: list[int]) -> list[int]:
    """RankGPT: windows of w from the back, step w/2, each reordered by its call's scores, one pass."""
    order, w = list(first_stage), judge.bench.window
    step = max(1, w // 2)
    end = len(order)
    while True:
        start = max(0, end - w)
        window = order[start:end]
        scores = judge.call(window)
        order[start:end] = [c for _, c in sorted(zip(scores, window, strict=True), key=lambda x: -x[0])]
        if start == 0:
            return order
        end -= step


def tournament_method(judge: Judge, n: int, rng: random.Random) -> list[int]:
    """TourRank-style: in each tournament, groups of w, the better half goes on; points = stages survived."""
    points = [0] * n
    for _ in range(judge.bench.tournaments):
        alive = list(range(n))
        rng.shuffle(alive)
        while len(alive) > 1:
            groups = math.ceil(len(alive) / judge.bench.window)
            going_on: list[int] = []
            for g in range(groups):
                group = alive[g::groups]
                scores = judge.call(group)
                ranked = [c for _, c in sorted(zip(scores, group, strict=True), key=lambda x: -x[0])]
                going_on += ranked[: max(1, len(group) // 2)]
            for c in going_on:
                points[c] += 1
            alive = going_on
            rng.shuffle(alive)
    return sorted(range(n), key=lambda c: (-points[c], c))


def reference_method(judge: Judge, n: int, looks: int, z: float = 1.5, top: int = 10) -> list[int]:
    """Not a reranker: what ``looks`` looks could find with none of a judge's troubles but its noise. Each look at a
    candidate returns its truth plus the judge's noise (no drift, no position bias, no windows, no rounding), and
    every look can go where the last ones left the doubt: every candidate once, then, again and again, one look at
    each candidate whose mean is within ``z`` standard errors of the ``top`` boundary (the nearest ones when the
    looks left are fewer). The bench gives it the sliding window's calls × w looks; z 1.5 did best of 1, 1.5 and 2
    on these worlds."""
    truth, sd = np.asarray(judge.truth, dtype=np.float64), judge.bench.noise
    rng = np.random.default_rng(judge.rng.getrandbits(64))
    sums, seen, left = truth + rng.normal(0, sd, n), np.ones(n), looks - n
    while left > 0:
        means, errors = sums / seen, sd / np.sqrt(seen)
        ranked = np.sort(means)[::-1]
        boundary = (ranked[top - 1] + ranked[top]) / 2
        doubt = np.abs(means - boundary) / np.maximum(errors, 1e-12)
        chosen = np.flatnonzero(doubt <= z)
        if len(chosen) < 2:
            chosen = np.argsort(doubt)[:2]
        chosen = chosen[np.argsort(doubt[chosen])][:left]
        sums[chosen] += truth[chosen] + rng.normal(0, sd, len(chosen))
        seen[chosen] += 1
        left -= len(chosen)
    judge.calls, judge.shown = math.ceil(looks / judge.bench.window), looks
    return sorted(range(n), key=lambda c: (-sums[c] / seen[c], c))


def pointwise_method(judge: Judge, n: int) -> list[int]:
    scores = [judge.call([c])[0] for c in range(n)]
    return sorted(range(n), key=lambda c: (-scores[c], c))


def metrics(order: list[int], truth: list[float]) -> dict[str, float]:
    n = len(truth)
    best = sorted(range(n), key=lambda c: -truth[c])
    top = set(best[:10])
    gains = [1.0 if c in top else 0.0 for c in order[:10]]
    ideal = sum(1 / math.log2(i + 2) for i in range(min(10, n)))
    position = {c: i for i, c in enumerate(order)}
    true_position = {c: i for i, c in enumerate(best)}
    d2 = sum((position[c] - true_position[c]) ** 2 for c in range(n))
    concordant, pairs = _kendall_sums(np.array([position[c] for c in range(n)]), np.asarray(truth, dtype=float))
    return {
        "recall@10": len(top & set(order[:10])) / min(10, n),
        "ndcg@10": sum(g / math.log2(i + 2) for i, g in enumerate(gains)) / ideal,
        "top1": float(order[0] == best[0]),
        "spearman": 1 - 6 * d2 / (n * (n * n - 1)),
        "kendall": concordant / pairs if pairs else 1.0,
    }


def _kendall_sums(position: np.ndarray, truth: np.ndarray) -> tuple[int, int]:
    """Concordant minus discordant pairs, and the pairs with different truths (rows in blocks: 10,000 is 50 M)."""
    concordant = pairs = 0
    for start in range(0, len(truth), 500):
        rows = slice(start, min(start + 500, len(truth)))
        upper = np.arange(len(truth))[None, :] > np.arange(rows.start, rows.stop)[:, None]
        differ = upper & (truth[rows, None] != truth[None, :])
        agree = (position[rows, None] < position[None, :]) == (truth[rows, None] > truth[None, :])
        concordant += int(np.sum(differ & agree)) - int(np.sum(differ & ~agree))
        pairs += int(np.sum(differ))
    return concordant, pairs


def _one(bench: RankingBench, n: int, trial: int) -> list[Outcome]:
    """Every method on one world (truth and first-stage order) of ``n`` candidates."""
    world = random.Random(f"ranking-bench:{bench.seed}:{n}:{trial}")
    if bench.quality == "normal":
        truth = [min(100.0, max(0.0, world.gauss(50, 15))) for _ in range(n)]
    else:
        truth = [world.uniform(10, 90) for _ in range(n)]
    first_stage = sorted(range(n), key=lambda c: -(truth[c] + world.gauss(0, bench.retriever_sd)))
    spent: list[float] = []  # the latest of ours' CPU (the service's only: the simulated judge's calls are not)
    calls: dict[str, int] = {}
    sliding, tournament = "sliding window (RankGPT)", f"tournament ({bench.tournaments}×)"

    def ours(top_n: int, like: str | None = None) -> Callable[[Judge], list[int]]:
        def judge(j: Judge) -> list[int]:
            budget = None if like is None else max(calls[like], least_calls(n, bench.window, top_n))
            order, ms = windows_method(j, n, bench.rounds, top_n, budget)
            spent.append(ms)
            return order

        return judge

    methods: list[tuple[str, Callable[[Judge], list[int]]]] = [
        (sliding, lambda j: sliding_method(j, first_stage)),
        (tournament, lambda j: tournament_method(j, n, random.Random(trial))),
        ("pointwise", lambda j: pointwise_method(j, n)),
        (REFERENCE, lambda j: reference_method(j, n, calls[sliding] * bench.window)),
        ("windows, top 10, at the sliding window's calls", ours(10, sliding)),
        ("windows, top 10, at the tournament's calls", ours(10, tournament)),
        (f"windows, whole order ({bench.rounds} rounds)", ours(0)),
    ]
    out = []
    for method, work in methods:
        judge = Judge(truth, bench, random.Random(f"judge:{bench.seed}:{n}:{trial}:{method}"))
        order = work(judge)
        calls[method] = judge.calls
        outcome = Outcome(method, n, order, judge.calls, judge.tokens(), metrics=metrics(order, truth))
        outcome.cpu_ms = spent.pop() if spent else None
        out.append(outcome)
    return out


def run(bench: RankingBench) -> list[Outcome]:
    """Every method at every size, metrics and counts averaged over ``bench.trials`` worlds."""
    averaged: list[Outcome] = []
    for n in bench.sizes:
        trials = [_one(bench, n, t) for t in range(bench.trials_at(n))]
        for i, first in enumerate(trials[0]):
            runs = [t[i] for t in trials]
            mean = {k: sum(r.metrics[k] for r in runs) / len(runs) for k in first.metrics}
            cpu = [r.cpu_ms for r in runs if r.cpu_ms is not None]
            averaged.append(
                Outcome(
                    first.method,
                    n,
                    first.order,
                    round(sum(r.calls for r in runs) / len(runs)),
                    round(sum(r.tokens for r in runs) / len(runs)),
                    statistics.median(cpu) if cpu else None,
                    max(cpu) if cpu else None,
                    mean,
                )
            )
    return averaged


def format_report(bench: RankingBench, outcomes: list[Outcome]) -> str:
    head = (
        f"pcfjudge bench ranking: window {bench.window}, judge with position bias {bench.bias:g}, per-call drift "
        f"sd {bench.drift:g}, noise sd {bench.noise:g}; {bench.quality} truths; first stage = truth + "
        f"N(0, {bench.retriever_sd:g}); means over {bench.trials_at(SMALL_WORLDS)} worlds up to {SMALL_WORLDS}, "
        f"{bench.trials} up to 1,000, {bench.trials_at(10_000)} past (plan+fit "
        "CPU: the median and the largest of them)"
    )
    lines = [
        head,
        "",
        "| N | method | recall@10 | NDCG@10 | top-1 | Spearman | Kendall | calls | input tokens | plan+fit CPU |",
        "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for o in outcomes:
        m = o.metrics
        cpu = f"{o.cpu_ms:.1f} / {o.cpu_max_ms:.1f} ms" if o.cpu_ms is not None and o.cpu_max_ms else "—"
        lines.append(
            f"| {o.n} | {o.method} | {m['recall@10']:.2f} | {m['ndcg@10']:.3f} | {m['top1']:.2f} | "
            f"{m['spearman']:.3f} | {m['kendall']:.3f} | {o.calls} | {o.tokens:,} | {cpu} |"
        )
    return "\n".join(lines)
