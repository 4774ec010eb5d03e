"""``pcfjudge eval … --model JURY``: what both benchmarks share when the model is a jury (docs/reproducing.md).

A jury is a PCFJ_JURIES name or comma-separated models, read as the service reads a request's ``model``. Each juror
is evaluated alone, by the benchmark's single-model path, in ``OUT/<juror>/`` (its own manifest, run log, report
and, with ``--batch``, batches): the same directory ``--model <juror> --out OUT/<juror>`` gives, so its calls, cache
keys and replay stay the juror's own and a juror shared by two juries is judged once. The jury's rows are then
computed from the jurors' logged per-item results with the service's pooling (``judging.jury``): equal weights, and
calibrated weights (``judging.reliability.jury_weights``) when every juror has a calibration record under the
service's listwise prompt version, the version the service weighs a jury by.
"""

from __future__ import annotations

import argparse
import asyncio
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pcfjudge.surface import Book, Settings, correlation_matrix, effective_jurors, jury, jury_weights

from pcfjudge_lab.eval.report_fmt import is_simulation, write_json


@dataclass(frozen=True)
class JurySpec:
    """A jury as ``--model`` named it: its name (the PCFJ_JURIES name, or the models joined by commas) and jurors."""

    name: str
    jurors: tuple[str, ...]


@dataclass(frozen=True)
class Weighing:
    """One way of weighing the jurors: ``label`` "equal" or "calibrated", one weight per juror (summing to 1)."""

    label: str
    weights: tuple[float, ...]

    def shares(self, jurors: Sequence[str]) -> dict[str, float]:
        return {m: round(w, 4) for m, w in zip(jurors, self.weights, strict=True)}


@dataclass(frozen=True)
class Weighings:
    """The jury rows' weights and what calibration said: ``calibrated_missing`` names the jurors without a record
    (calibrated rows need every juror's), ``effective`` is Kish's effective jurors (None: never measured)."""

    rows: tuple[Weighing, ...]
    prompt_version: str
    calibrated_missing: tuple[str, ...]
    effective: float | None

    def as_dict(self, jurors: Sequence[str]) -> dict[str, Any]:
        return {
            "prompt_version": self.prompt_version,
            "weights": {w.label: w.shares(jurors) for w in self.rows},
            "uncalibrated_jurors": list(self.calibrated_missing),
            "effective_jurors": self.effective,
        }


def jury_of(settings: Settings, model: str) -> JurySpec | None:
    """The jury ``model`` names (a PCFJ_JURIES name, or models separated by commas), None for one model; ValueError
    for a list the service would refuse (empty entries, repeated models, more than PCFJ_MAX_JURORS)."""
    if model in settings.jury.juries:
        return JurySpec(model, tuple(settings.jury.juries[model]))
    if "," not in model:
        return None
    jurors = [m.strip() for m in model.split(",")]
    if not all(jurors):
        raise ValueError(f"--model {model!r}: a jury lists provider:model entries separated by commas, none empty")
    repeated = sorted({m for m in jurors if jurors.count(m) > 1})
    if repeated:
        raise ValueError(f"--model {model!r}: a jury's models must be distinct; repeated: {', '.join(repeated)}")
    if len(jurors) > settings.jury.max_jurors:
        raise ValueError(f"a jury has at most {settings.jury.max_jurors} jurors (PCFJ_MAX_JURORS); got {len(jurors)}")
    return JurySpec(",".join(jurors), tuple(jurors))


def juror_dir(out: Path, model: str) -> Path:
    """Where a juror's single-model evaluation lives: ``OUT/<provider>-<model>`` (unsafe characters as '-')."""
    return out / re.sub(r"[^A-Za-z0-9._-]+", "-", model).strip("-.")


def juror_args(args: argparse.Namespace, model: str) -> argparse.Namespace:
    """The command line of the juror's own evaluation: the jury's, with ``--model`` the juror, in its directory."""
    return argparse.Namespace(**(vars(args) | {"model": model, "out": str(juror_dir(Path(args.out), model))}))


def quorum(settings: Settings, jurors: int) -> int:
    """Jurors that must deliver on an item for the jury to answer it (PCFJ_JURY_QUORUM; a strict majority)."""
    return jury.quorum(jurors, settings.jury.jury_quorum)


def any_simulated(models: Sequence[str]) -> bool:
    return any(is_simulation(m) for m in models)


async def _calibration_book(settings: Settings) -> Book:
    """The calibration records the service would weigh juries by (``services.judge.reliability``, loaded once)."""
    from pcfjudge.surface import Services

    services = Services.build(settings)
    try:
        if services.calibration is not None:
            await services.calibration.refresh()
        return services.judge.reliability
    finally:
        await services.aclose()


def weighings(settings: Settings, spec: JurySpec, prompt_version: str, book: Book | None = None) -> Weighings:
    """Equal weights, and calibrated ones when every juror has a record under ``prompt_version`` (the service's
    listwise version); ``book`` defaults to the store the service reads (PCFJ_CALIBRATION_FILE or PCFJ_REDIS_URL)."""
    if book is None:
        book = asyncio.run(_calibration_book(settings))
    records = [book.get(m, prompt_version) for m in spec.jurors]
    n = len(spec.jurors)
    rows = [Weighing("equal", tuple(jury.equal_weights(n)))]
    weights, calibrated = jury_weights(records)
    if calibrated:
        rows.append(Weighing("calibrated", tuple(weights)))
    missing = tuple(m for m, r in zip(spec.jurors, records, strict=True) if r is None)
    matrix = correlation_matrix(records) if n > 1 else None
    effective = effective_jurors(jury.equal_weights(n), matrix) if matrix is not None else None
    return Weighings(tuple(rows), prompt_version, missing, effective)


def delivered_weights(
    weights: Sequence[float], delivered: Sequence[bool], needed: int
) -> tuple[list[int], list[float]] | None:
    """The jurors that delivered and their weights, or None when fewer than ``needed`` did or they weigh nothing
    (the service's rule: the jury answers with its quorum, weights renormalised over the jurors that delivered)."""
    kept = [j for j, ok in enumerate(delivered) if ok]
    if len(kept) < needed or sum(weights[j] for j in kept) <= 0:
        return None
    return kept, [weights[j] for j in kept]


def header_lines(spec: JurySpec, found: Weighings, needed: int, out: Path) -> list[str]:
    """The report's lines on who judged and how the jury rows were pooled."""
    dirs = ", ".join(f"`{juror_dir(out, m).name}/`" for m in spec.jurors)
    named = ", ".join(f"`{m}`" for m in spec.jurors)
    who = f"`{spec.name}` = {named}" if spec.name != ",".join(spec.jurors) else named
    lines = [
        f"- Jury: {who}. Each juror was evaluated alone, as `--model <juror>` would be (its own K permutations, "
        f"run log, cache entries and report: {dirs}); the juror rows below are those evaluations on the items every "
        "juror completed",
        f"- Jury rows pool the jurors' per-item results as the service pools a jury (`judging.jury`); a juror counts "
        f"on an item when any of its runs there succeeded, and the jury answers an item when {needed} of "
        f"{len(spec.jurors)} jurors do (PCFJ_JURY_QUORUM), else the item scores 0",
    ]
    for w in found.rows:
        shares = ", ".join(f"`{m}` {s:.2f}" for m, s in w.shares(spec.jurors).items())
        how = "1/J each" if w.label == "equal" else f"log-odds of calibrated accuracy, `{found.prompt_version}`"
        lines.append(f"- Weights ({w.label}, {how}): {shares}")
    if len(found.rows) == 1:
        missing = ", ".join(f"`{m}`" for m in found.calibrated_missing)
        why = f"no calibration record for {missing}" if missing else "every juror calibrated at or below chance"
        lines.append(
            f"- Calibrated weights: not available ({why} under `{found.prompt_version}`; `pcfjudge calibrate` "
            "measures them)"
        )
    if found.effective is not None:
        lines.append(f"- Effective jurors (Kish, from the calibrated error correlation): {found.effective:.2f}")
    return lines


def simulation_lines(jurors: Sequence[str]) -> list[str]:
    simulated = [m for m in jurors if is_simulation(m)]
    if not simulated:
        return []
    return [
        f"> **SIMULATION.** Juror(s) {', '.join(f'`{m}`' for m in simulated)} are simulated judges, not language "
        "models. These numbers show the harness and the pooling's mechanics; they are not the paper's results.",
        "",
    ]


def write_jury_report(out: Path, summary: Mapping[str, Any], markdown: str) -> list[Path]:
    """A jury evaluation's report.md and summary.json in ``out`` (the jurors' own reports are beside them)."""
    out.mkdir(parents=True, exist_ok=True)
    write_json(out / "summary.json", summary)
    (out / "report.md").write_text(markdown, encoding="utf-8")
    return [out / "report.md", out / "summary.json"]
