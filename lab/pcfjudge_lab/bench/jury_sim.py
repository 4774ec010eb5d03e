"""``pcfjudge bench jury``: a SIMULATION of a jury of judge models on pairwise items (no model is called), to show
when a weighted jury beats its best juror and when it does not, how calibrated weights protect against a bad juror,
and how correlated errors shrink what a jury is worth.

The model: every item has a gold verdict, A or B (a fair coin). Juror j, of accuracy p_j, errs on item i when

    √ρ · Z_i + √(1 − ρ) · E_ij < Φ⁻¹(1 − p_j),    Z_i, E_ij independent N(0, 1),

so it errs with probability 1 − p_j, and ρ (a Gaussian copula on a shared "hard item" factor Z_i) makes the jurors
err on the same items. A juror that errs answers the other verdict. Per scenario, a calibration sample of
``calibration_items`` items drawn from the same model gives each juror a ``Reliability`` record (its counts and its
0/1 errors), and from those ``reliability.jury_weights`` (log-odds, Laplace-smoothed, clipped at 0) and the measured
error correlations (``reliability.correlation_matrix``). Then ``items`` fresh items are judged by every juror and
pooled with ``jury.pool_verdicts``, once with equal weights and once with the calibrated ones; a jury "tie" counts as
half correct.

Reported per scenario: the best juror (the most accurate on the very items judged, first on ties: in hindsight, so
the hardest bar for a jury to clear) and both juries' accuracies on the same items, each ± its 95% interval (normal
approximation); "beats best?" from the paired difference jury − best juror on those items: yes / no when its 95%
interval excludes 0, "= best" when the jury's verdicts are the best juror's on every item, else "within noise"; and Kish's effective jurors (``reliability.effective_jurors``) for both weightings from
the measured error correlations, with in parentheses the value from the model's own error correlation (the phi
coefficient implied by ρ, by numerical integration).
"""

from __future__ import annotations

import functools
import math
import zlib
from dataclasses import asdict, dataclass
from statistics import NormalDist
from typing import Any

import numpy as np
import numpy.typing as npt
from pcfjudge.surface import Reliability, correlation_matrix, effective_jurors, jury, jury_weights

LABEL = "SIMULATION"
Z95 = NormalDist().inv_cdf(0.975)
NORMAL = NormalDist()
Errors = npt.NDArray[np.bool_]


@dataclass(frozen=True, slots=True)
class Scenario:
    key: str
    title: str
    accuracies: tuple[float, ...]
    rho: float = 0.0  # the shared hard-item factor's weight: 0 = independent errors

    def __post_init__(self) -> None:
        if not 0 <= self.rho < 1 or not all(0 < p < 1 for p in self.accuracies) or not self.accuracies:
            raise ValueError(f"{self.key}: needs 0 ≤ ρ < 1 and accuracies in (0, 1)")


SCENARIOS = (
    Scenario("equal", "3 equal jurors, independent", (0.70, 0.70, 0.70)),
    Scenario("equal-corr", "3 equal jurors, correlated", (0.70, 0.70, 0.70), 0.6),
    Scenario("strong-2weak", "strong + 2 weak, independent", (0.85, 0.65, 0.65)),
    Scenario("strong-4weak", "strong + 4 weak, independent", (0.85, 0.65, 0.65, 0.65, 0.65)),
    Scenario("strong-4weak-corr", "strong + 4 weak, correlated", (0.85, 0.65, 0.65, 0.65, 0.65), 0.6),
    Scenario("bad-juror", "2 good + 1 bad (drifted), independent", (0.80, 0.80, 0.35)),
    Scenario("very-strong-corr", "very strong + 2 weak, correlated", (0.90, 0.60, 0.60), 0.6),
)


@dataclass(frozen=True, slots=True)
class Estimate:
    accuracy: float
    half_width: float  # of its 95% interval
    vs_best: float  # mean paired difference with the best juror on the same items
    vs_best_half_width: float
    same_as_best: bool  # the same verdict as the best juror on every item

    @property
    def beats_best(self) -> str:
        if self.same_as_best:
            return "= best"
        if self.vs_best - self.vs_best_half_width > 0:
            return "yes"
        return "no" if self.vs_best + self.vs_best_half_width < 0 else "within noise"


@dataclass(frozen=True, slots=True)
class Row:
    scenario: Scenario
    items: int
    calibration_items: int
    seed: int
    best_juror: int  # index of the juror most accurate on the items judged
    best: Estimate
    equal: Estimate
    calibrated: Estimate
    weights: tuple[float, ...]  # the calibrated weights (equal when calibration gave every juror 0)
    calibrated_weights: bool
    calibration_accuracies: tuple[float, ...]
    effective_equal: float | None  # None when an error correlation could not be measured
    effective_calibrated: float | None
    model_effective_equal: float
    model_effective_calibrated: float

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        for name in ("best", "equal", "calibrated"):
            data[name]["beats_best"] = getattr(self, name).beats_best
        return data


def draw_errors(rng: np.random.Generator, scenario: Scenario, n: int) -> Errors:
    """``n`` items × jurors: True where the juror errs (the Gaussian copula of the module's docstring)."""
    thresholds = np.array([NORMAL.inv_cdf(1 - p) for p in scenario.accuracies])
    shared = rng.standard_normal(n)[:, None]
    own = rng.standard_normal((n, len(scenario.accuracies)))
    latent: npt.NDArray[np.float64] = math.sqrt(scenario.rho) * shared + math.sqrt(1 - scenario.rho) * own
    return latent < thresholds


@functools.lru_cache(maxsize=64)
def model_error_correlation(p_j: float, p_k: float, rho: float, steps: int = 3200) -> float:
    """The phi coefficient of two jurors' errors under the model: P(both err) = ∫ φ(z) Φ(a_j(z)) Φ(a_k(z)) dz."""
    if rho == 0:
        return 0.0
    t_j, t_k, shared, own = NORMAL.inv_cdf(1 - p_j), NORMAL.inv_cdf(1 - p_k), math.sqrt(rho), math.sqrt(1 - rho)
    dz = 16 / steps
    both = dz * sum(
        NORMAL.pdf(z) * NORMAL.cdf((t_j - shared * z) / own) * NORMAL.cdf((t_k - shared * z) / own)
        for z in (-8 + dz * (i + 0.5) for i in range(steps))
    )
    q_j, q_k = 1 - p_j, 1 - p_k
    return (both - q_j * q_k) / math.sqrt(q_j * p_j * q_k * p_k)


def _estimate(scores: npt.NDArray[np.float64], best: npt.NDArray[np.float64], same: bool) -> Estimate:
    n = len(scores)
    diff = scores - best
    return Estimate(
        float(scores.mean()),
        Z95 * float(scores.std(ddof=1)) / math.sqrt(n),
        float(diff.mean()),
        Z95 * float(diff.std(ddof=1)) / math.sqrt(n),
        same,
    )


def _jury_scores(errors: Errors, gold: npt.NDArray[np.int64], weights: list[float]) -> tuple[list[float], list[str]]:
    """Each item's jury score (1 right, ½ tie, 0 wrong) and verdict, pooled by ``jury.pool_verdicts``."""
    names = ("A", "B")
    scores, verdicts = [], []
    for g, row in zip(gold.tolist(), (gold[:, None] ^ errors).tolist(), strict=True):
        verdict = jury.pool_verdicts([names[v] for v in row], weights)
        verdicts.append(verdict)
        scores.append(0.5 if verdict == "tie" else float(verdict == names[g]))
    return scores, verdicts


def simulate(scenario: Scenario, items: int, calibration_items: int, seed: int) -> Row:
    """One scenario: calibrate on a separate sample, then judge ``items`` fresh items with both weightings."""
    if items < 2 or calibration_items < 1:
        raise ValueError("needs at least 2 items and 1 calibration item")
    rng = np.random.default_rng([seed, zlib.crc32(scenario.key.encode())])
    calibration = draw_errors(rng, scenario, calibration_items)
    records = [
        Reliability(
            model=f"juror-{j + 1}",
            prompt_version="simulation",
            slice=f"simulation:{scenario.key}:{seed}",
            items=calibration_items,
            correct=calibration_items - int(calibration[:, j].sum()),
            order_consistency=1.0,
            first_position_win_rate=0.5,
            runs=0,
            first_position_wins=0,
            errors=tuple(int(e) for e in calibration[:, j]),
        )
        for j in range(len(scenario.accuracies))
    ]
    weights, calibrated = jury_weights(records)
    equal = jury.equal_weights(len(records))
    errors = draw_errors(rng, scenario, items)
    gold = rng.integers(0, 2, items)
    best_juror = int(np.argmax((~errors).sum(axis=0)))  # the best on these very items: the hardest bar to beat
    best = (~errors[:, best_juror]).astype(np.float64)
    best_verdicts = ["AB"[v] for v in (gold ^ errors[:, best_juror]).tolist()]
    estimates = []
    for w in (equal, weights):
        scores, verdicts = _jury_scores(errors, gold, w)
        estimates.append(_estimate(np.array(scores), best, verdicts == best_verdicts))
    measured = correlation_matrix(records)
    n = len(scenario.accuracies)
    p = scenario.accuracies
    model_matrix = [
        [1.0 if j == k else model_error_correlation(p[j], p[k], scenario.rho) for k in range(n)] for j in range(n)
    ]
    return Row(
        scenario,
        items,
        calibration_items,
        seed,
        best_juror,
        _estimate(best, best, True),
        estimates[0],
        estimates[1],
        tuple(weights),
        calibrated,
        tuple(r.accuracy for r in records),
        effective_jurors(equal, measured) if measured is not None else None,
        effective_jurors(weights, measured) if measured is not None else None,
        effective_jurors(equal, model_matrix),
        effective_jurors(weights, model_matrix),
    )


def run(items: int = 20_000, calibration_items: int = 500, seed: int = 0) -> list[Row]:
    return [simulate(s, items, calibration_items, seed) for s in SCENARIOS]


def _pm(e: Estimate) -> str:
    return f"{e.accuracy:.3f} ± {e.half_width:.3f}"


def _effective(measured: float | None, model: float) -> str:
    return f"{measured:.2f} ({model:.2f})" if measured is not None else f"— ({model:.2f})"


def format_report(rows: list[Row]) -> str:
    first = rows[0]
    head = (
        f"pcfjudge bench jury: {LABEL}, simulated jurors (no judge model is called). Per scenario "
        f"{first.items:,} pairwise items, weights calibrated on {first.calibration_items:,} separate items, "
        f"seed {first.seed}. Jury verdicts by jury.pool_verdicts; a tied jury counts as half correct."
    )
    columns = "scenario|jurors' accuracy|ρ|best juror|equal-weight jury|beats best?|calibrated jury|beats best?|"
    table = [(columns + "calibrated weights|eff. jurors, equal w|eff. jurors, calibrated w").split("|")]
    for r in rows:
        s, eq, cal = r.scenario, r.equal, r.calibrated
        weights = " ".join(f"{w:.2f}" for w in r.weights) + ("" if r.calibrated_weights else " (equal)")
        effective = [_effective(r.effective_equal, r.model_effective_equal)]
        effective.append(_effective(r.effective_calibrated, r.model_effective_calibrated))
        jurors = " ".join(f"{p:.2f}" for p in s.accuracies)
        table.append([s.title, jurors, f"{s.rho:g}", _pm(r.best), _pm(eq), eq.beats_best, _pm(cal), cal.beats_best])
        table[-1] += [weights, *effective]
    widths = [max(len(line[c]) for line in table) for c in range(len(table[0]))]
    right = {3, 4, 6, 9, 10}
    lines = [head, ""]
    for i, line in enumerate(table):
        cells = [
            cell.rjust(w) if c in right else cell.ljust(w) for c, (cell, w) in enumerate(zip(line, widths, strict=True))
        ]
        lines.append("| " + " | ".join(cells) + " |")
        if i == 0:
            lines.append(
                "|" + "|".join("-" * (w + 1) + (":" if c in right else "-") for c, w in enumerate(widths)) + "|"
            )
    lines += [
        "",
        "± : 95% interval. beats best?: the paired difference jury − best juror on the same items; yes / no when its "
        "95% interval excludes 0, = best when the jury gave the best juror's verdict on every item.",
        "eff. jurors: Kish's (Σω)² / ΣΣ ω_j ω_k ρ_jk from the error correlations measured on the calibration items "
        "(in parentheses: from the model's own error correlation). ρ: the shared hard-item factor's weight.",
    ]
    return "\n".join(lines)
