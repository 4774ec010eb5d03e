"""Adaptive K (issue 15): may PCFJudge stop permuting before k_max runs? Pure: the runs made so far in, a decision out.

Certified stopping: the bound
-----------------------------
Paper Eq. 1–5 are means over runs of one per-run contribution. Run r contributes to candidate i
    c_i^r = w_s·s_i + w_B·100·(n − rank_i)/(n − 1) + w_v·100·1[i ∈ T_r]/|T_r| + w_u·100·u_i,
execution e's consensus is C_i^e = (1/K_e)·Σ_r c_i^r over its K_e successful runs, and the final C_i is the mean of
C_i^e over the executions that have a successful run. Take two candidates x, y and d_r = c_x^r − c_y^r. Every run has
    −B ≤ d_r ≤ B,    B = 100·(w_s + w_B + w_v + w_u) = 100,
since each term of c_i^r lies in [0, 100·w] (score 0–100; rank 1..n, explicit or averaged from scores; a top-vote
share 0..1; the uncertainty flag 0/1), and both ends are reached at once: x scores 100, is ranked first, is alone in
the top set and marked uncertain while y scores 0, is ranked last and is not; every value in between is reached too.
The major-error and hallucinated-specificity flags do not enter the consensus, so they do not enter the bound.

Execution e has k_e successful runs with S_e = Σ d_r = k_e·(C_x^e − C_y^e) and m_e runs left. If j of them succeed
(failed runs are left out), its difference ends in [(S_e − B·j)/(k_e + j), (S_e + B·j)/(k_e + j)], and both ends move
monotonically away from S_e/k_e as j grows (|S_e/k_e| ≤ B), so over every outcome
    C_x^e − C_y^e ∈ [(S_e − B·m_e)/(k_e + m_e),  (S_e + B·m_e)/(k_e + m_e)].
Executions have separate runs, so their ends are reached together: C_x − C_y ranges exactly over the mean of these
intervals, as long as the set of executions that count is fixed. It is not while an execution has runs left but no
successful run yet (it may end up counted or not); such a state is never certified.

Stopping returns the current winner set W = {i : C_i ≥ max_j C_j − 0.5}. It is the winner set after all k_max runs in
every outcome iff (a) every winner stays one: max(C_j − C_i) ≤ 0.5 for all i ∈ W, j ≠ i; and (b) every other
candidate stays out: in every outcome some j has C_j − C_l > 0.5, for all l ∉ W. (a) is checked exactly (each pair's
bound is reached). For (b) we ask for one j that beats l in every outcome, min(C_j − C_l) > 0.5: sufficient, so the
stop is sound; it is also necessary for n = 2 and whenever the rival that beats l is the same in every outcome.
Both checks keep EPSILON (1e-6 points) of slack so float rounding cannot flip a decision at the 0.5 boundary.

What it implies: two tied winners x, y need max(C_x − C_y) + max(C_y − C_x) = mean_e 2B·m_e/(k_e + m_e) ≤ 1, so a
tie is never certified while runs remain (unless k_max is large and few runs are left). With one execution, k runs
made and m = k_max − k left, the leader must beat every other candidate by a mean per-run margin above
(0.5·k_max + 100·m)/k: with k_max = 7 that is impossible at k = 3, 75.9 points at k = 4, 40.7 at k = 5, 17.25 at k = 6.

Confident stopping: a statistical rule (no guarantee)
----------------------------------------------------
A run agrees when its top set T_r is exactly the current winner set W. After at least k_min runs, stop when the
leader's consensus margin over the best other candidate is at least CONFIDENT_MARGIN (10) points and the runs agree
either unanimously, or by a majority of all the runs the request can make (successful so far + left) that the runs
left can no longer take away. Reading: under the paper's Prop. 1 model (runs pick the top independently, agreeing with
W at an unknown rate p; uniform prior), after k unanimous runs the chance that all m runs left disagree is
E[(1 − p)^m] = (k + 1)!·m!/(k + m + 1)! (1.4% for k = 3, m = 4), and overturning a unanimous consensus takes about
that many (a disagreeing run moves a difference by about what an agreeing one did); a locked majority already holds
the top-vote component whatever the runs left say. The margin keeps either from stopping on a top choice the score and
rank components barely support. How often it differs from K = k_max is measured, not assumed (README "Adaptive K",
``pcfjudge eval rewardbench2 --k auto``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from pcfjudge.judging import consensus as cons
from pcfjudge.judging import jury
from pcfjudge.judging.run_records import RunJudgments

StopRule = Literal["certified", "confident"]
Stopped = Literal["certified", "confident", "k_max", "budget", "deadline"]

EPSILON = 1e-6
CONFIDENT_MARGIN = 10.0
TOL = cons.TIE_TOLERANCE


@dataclass(frozen=True, slots=True)
class Progress:
    """A request's state per execution: the sums Σ_r c_i^r over its successful runs, their number, the runs left;
    and the consensus of the runs made (None before any run succeeded)."""

    ids: tuple[str, ...]
    sums: tuple[dict[str, float], ...]
    ok: tuple[int, ...]
    left: tuple[int, ...]
    span: float
    consensus: cons.Consensus | None
    runs: tuple[tuple[RunJudgments, ...], ...]
    shares: tuple[float, ...] | None = None  # a jury's weights, one per execution (juror); None: equal

    def mean(self, values: Sequence[tuple[int, float]]) -> float:
        """The mean of (execution, value) pairs: plain, or weighted by ``shares`` (renormalised over them)."""
        if self.shares is None:
            return sum(v for _, v in values) / len(values)
        total = sum(self.shares[e] for e, _ in values)
        return sum(self.shares[e] * v for e, v in values) / total if total > 0 else 0.0


def progress(
    ids: Sequence[str],
    runs: Sequence[Sequence[RunJudgments]],
    left: Sequence[int],
    weights: cons.Weights,
    shares: Sequence[float] | None = None,
) -> Progress:
    """The state after ``runs`` (successful runs per execution) with ``left`` runs still to make per execution;
    ``shares``: a jury's juror weights (executions are jurors, pooled by ``jury.pool_listwise``)."""
    if len(runs) != len(left):
        raise ValueError("runs and left must have one entry per execution")
    sums = []
    for done in runs:
        stats = cons.execution_stats(ids, done, weights) if done else {}
        sums.append({cid: stats[cid][0] * len(done) if done else 0.0 for cid in ids})
    span = 100.0 * (weights.score + weights.borda + weights.top_vote + weights.uncertainty)
    if shares is None:
        consensus = cons.aggregate(ids, runs, weights) if any(runs) else None
    else:
        delivered = [(cons.aggregate(ids, [done], weights), shares[e]) for e, done in enumerate(runs) if done]
        consensus = jury.pool_listwise(ids, *zip(*delivered, strict=True)) if delivered else None
    return Progress(
        tuple(ids),
        tuple(sums),
        tuple(len(d) for d in runs),
        tuple(left),
        span,
        consensus,
        tuple(tuple(d) for d in runs),
        tuple(shares) if shares is not None else None,
    )


def difference_range(p: Progress, x: str, y: str, after: int | None = None) -> tuple[float, float] | None:
    """The range of the final C_x − C_y over every outcome of the runs left; None while undetermined.

    ``after``: first assume the runs left beyond ``after`` per execution all succeed in x's favour (+B each), so the
    low end is the best case for x of stopping once only ``after`` runs are left (the lookahead's bound).
    """
    lows: list[tuple[int, float]] = []
    highs: list[tuple[int, float]] = []
    for e, (sums, k, m) in enumerate(zip(p.sums, p.ok, p.left, strict=True)):
        gained = 0 if after is None else max(0, m - after)
        s, k, m = sums[x] - sums[y] + p.span * gained, k + gained, m - gained
        if k == 0 and m > 0:
            return None
        if k + m == 0:
            continue
        lows.append((e, (s - p.span * m) / (k + m)))
        highs.append((e, (s + p.span * m) / (k + m)))
    if not lows:
        return None
    return p.mean(lows), p.mean(highs)


def certified(p: Progress) -> bool:
    """True when no outcome of the runs left can change the winner set of the runs made (conditions (a) and (b))."""
    if p.consensus is None:
        return False
    winners = set(p.consensus.winners)
    for i in p.ids:
        for j in p.ids:
            if i == j or i not in winners:
                continue
            bounds = difference_range(p, j, i)
            if bounds is None or bounds[1] > TOL - EPSILON:
                return False
    return all(_always_beaten(p, loser) for loser in p.ids if loser not in winners)


def _always_beaten(p: Progress, loser: str, after: int | None = None) -> bool:
    """Some candidate beats ``loser`` by more than 0.5 in every outcome (from the state ``after`` runs are left)."""
    for rival in p.ids:
        if rival == loser:
            continue
        bounds = difference_range(p, rival, loser, after)
        if bounds is not None and bounds[0] > TOL + EPSILON:
            return True
    return False


def could_certify(p: Progress, after: int) -> bool:
    """A necessary condition for ``certified`` once the runs left are down to ``after`` per execution.

    False means no outcome of the runs made until then can be certified, so a wave may skip those points without
    costing a single call: every candidate but the winner must be beatable in the best case, unless a tie could be
    certified at all (mean_e 2B·m_e/(k_e + m_e) ≤ 1, with the runs in between successful).
    """
    widths: list[tuple[int, float]] = []
    for e, (k, m) in enumerate(zip(p.ok, p.left, strict=True)):
        kept = min(m, after)
        if k + m:
            widths.append((e, 2 * p.span * kept / (k + m)))
    if widths and p.mean(widths) <= 2 * TOL:
        return True
    beatable = sum(_always_beaten(p, loser, after) for loser in p.ids)
    return beatable >= len(p.ids) - 1


def next_left(p: Progress, rule: StopRule) -> int:
    """How many runs per execution the next wave should leave: the most at which a stop by ``rule`` could first be
    possible (0: run to k_max). Points skipped could not have stopped whatever the runs said."""
    most = max(p.left, default=0)
    for after in range(most - 1, 0, -1):
        if could_certify(p, after) or (rule == "confident" and _could_agree(p, after)):
            return after
    return 0


def agreeing(p: Progress) -> int:
    """Successful runs whose top set is exactly the current winner set."""
    if p.consensus is None:
        return 0
    winners = set(p.consensus.winners)
    return sum(set(cons.top_set(run)) == winners for done in p.runs for run in done)


def unanimous(p: Progress) -> bool:
    """Every successful run so far put exactly the current winner set at its top."""
    return p.consensus is not None and agreeing(p) == sum(p.ok)


def locked_majority(p: Progress, added: int = 0) -> bool:
    """The agreeing runs (plus ``added`` more) are a majority of every run the request can still have succeed."""
    return 2 * (agreeing(p) + added) > sum(p.ok) + sum(p.left)


def _could_agree(p: Progress, after: int) -> bool:
    """Could the confident rule hold once the runs left are down to ``after`` per execution (if they all agree)?"""
    return unanimous(p) or locked_majority(p, sum(max(0, m - after) for m in p.left))


def margin(p: Progress) -> float:
    """The lowest winner's consensus minus the best other candidate's (inf when every candidate wins)."""
    if p.consensus is None:
        return 0.0
    values = {cid: c.consensus for cid, c in p.consensus.candidates.items()}
    winners = set(p.consensus.winners)
    others = [v for cid, v in values.items() if cid not in winners]
    return min(values[w] for w in winners) - max(others) if others else float("inf")


def confident(p: Progress, threshold: float = CONFIDENT_MARGIN) -> bool:
    """The confident rule: the runs agree on the top set, unanimously or by a majority the runs left cannot take
    away, and the leader's consensus margin is at least ``threshold``."""
    return (unanimous(p) or locked_majority(p)) and margin(p) >= threshold


def decide(p: Progress, rule: StopRule) -> Stopped | None:
    """Why to stop now (``certified`` first: the stronger claim), or None to go on."""
    if not any(p.left):
        return "k_max"
    if certified(p):
        return "certified"
    if rule == "confident" and confident(p):
        return "confident"
    return None
