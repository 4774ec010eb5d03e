"""``pcfjudge eval judgebench``: load pairs, collect (or resume) the logged APOCJudge passes, write the report."""

from __future__ import annotations

import argparse
import sys
from functools import partial
from pathlib import Path
from typing import Any

from pcfjudge.surface import PromptStyle, Settings, listwise_version, pairwise_version, prompt_style

from pcfjudge_lab.eval.collection import collect
from pcfjudge_lab.eval.data import HubData, resolve
from pcfjudge_lab.eval.harness import check_manifest, fail, run_logged
from pcfjudge_lab.eval.judgebench.collect import JbCollector
from pcfjudge_lab.eval.judgebench.jury_report import build_jury_summary, render_jury_markdown
from pcfjudge_lab.eval.judgebench.loader import JudgeBenchPair, load_judgebench, load_judgebench_hub
from pcfjudge_lab.eval.judgebench.report import JbMeta, build_summary, render_markdown, write_report
from pcfjudge_lab.eval.jury_eval import (
    JurySpec,
    juror_args,
    juror_dir,
    jury_of,
    quorum,
    weighings,
    write_jury_report,
)
from pcfjudge_lab.eval.options import check_common, command_line
from pcfjudge_lab.eval.progress import missing_eval_extra
from pcfjudge_lab.eval.runlog import LOG_NAME, RunLog

OPTIONS = ("data", "hub-repo", "model", "limit", "out", "server", "concurrency", "batch")


def _load(args: argparse.Namespace) -> list[JudgeBenchPair]:
    source = resolve("judgebench", args.data, args.hub_repo)
    if isinstance(source, HubData):
        return load_judgebench_hub(source, limit=args.limit)
    return load_judgebench(source, limit=args.limit)


def run_judgebench(args: argparse.Namespace) -> int:
    if (problem := missing_eval_extra() or check_common(args)) is not None:
        return fail(problem)
    try:
        pairs = _load(args)
        settings = Settings()
        spec = jury_of(settings, args.model)
    except (OSError, ValueError, RuntimeError) as exc:
        return fail(str(exc))
    if not pairs:
        return fail(f"no pairs in {args.data}")
    style = prompt_style(settings.prompting, None)
    if spec is not None:
        return _run_jury(args, settings, spec, pairs, style)
    done = _evaluate(args, settings, pairs, style)
    if isinstance(done, int):
        return done
    summary, _, paths = done
    print(render_markdown(summary).split("## Per source")[0].rstrip())
    print("\nwrote " + ", ".join(str(p) for p in paths))
    return 0


def _versions(style: PromptStyle) -> str:
    return f"{pairwise_version(style)}, {pairwise_version(style, keyed=True)}"


def _evaluate(
    args: argparse.Namespace, settings: Settings, pairs: list[JudgeBenchPair], style: PromptStyle
) -> tuple[dict[str, Any], list[dict[str, Any]], list[Path]] | int:
    """One model's evaluation in ``args.out``: collect (or resume), write its report; its summary, log lines and
    the paths written, or the exit status when it cannot finish."""
    out = Path(args.out)
    if (clash := check_manifest(out, {"benchmark": "judgebench", "model": args.model})) is not None:
        return fail(clash)
    log = RunLog.open(out / LOG_NAME)
    work = partial(collect, settings, args, log, JbCollector(args.model, style), pairs, desc="judgebench")
    if (code := run_logged(log, work)) is not None:
        return code
    meta = JbMeta(args.model, args.data, command_line(["eval", "judgebench"], args, OPTIONS), _versions(style))
    try:
        summary = build_summary(out, log.lines, meta, [pair.pair_id for pair in pairs])
    except ValueError as exc:
        return fail(f"{exc}; rerun the same command to finish the runs", 1)
    return summary, log.lines, write_report(out, summary)


def _run_jury(
    args: argparse.Namespace, settings: Settings, spec: JurySpec, pairs: list[JudgeBenchPair], style: PromptStyle
) -> int:
    """Each juror alone in its own directory, then the jury's rows from their logs (``jury_report``)."""
    out = Path(args.out)
    manifest = {"benchmark": "judgebench", "model": args.model, "jurors": list(spec.jurors)}
    if (clash := check_manifest(out, manifest)) is not None:
        return fail(clash)
    logs = []
    for juror in spec.jurors:
        print(f"juror {juror}: {juror_dir(out, juror)}", file=sys.stderr)
        done = _evaluate(juror_args(args, juror), settings, pairs, style)
        if isinstance(done, int):
            return done
        logs.append(done[1])
    command = command_line(["eval", "judgebench"], args, OPTIONS)
    try:
        # the service weighs a jury by its jurors' calibration under its listwise prompt version, pairwise too
        found = weighings(settings, spec, listwise_version(None, prompt_style(settings.prompting, None)))
        needed = quorum(settings, len(spec.jurors))
        ids = [pair.pair_id for pair in pairs]
        summary = build_jury_summary(spec, logs, args.data, command, _versions(style), ids, found, needed, out)
    except ValueError as exc:
        return fail(f"{exc}; rerun the same command to finish the runs", 1)
    markdown = render_jury_markdown(summary, spec, found, out)
    paths = write_jury_report(out, summary, markdown)
    print(markdown.split("## Per source")[0].rstrip())
    jurors = ", ".join(str(juror_dir(out, m)) for m in spec.jurors)
    print("\nwrote " + ", ".join(str(p) for p in paths) + f"; each juror's own report in {jurors}")
    return 0
