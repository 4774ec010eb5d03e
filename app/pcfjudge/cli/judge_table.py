"""A ``ListwiseResponse`` as a table people read in a terminal (``pcfjudge judge``): candidates best first, the
winner marked, and a footer with the model, K, agreement and calls (a jury's: a line per juror)."""

from __future__ import annotations

from collections.abc import Sequence

from pcfjudge.doors.listwise.listwise_protocol import CandidateOut, ListwiseResponse

WINNER = "★"
TEXT_WIDTH = 48
HEADERS = ("", "#", "candidate", "consensus", "mean score", "Borda", "top votes", "flags")
"""Past one window the consensus column also gives its standard error (``61.2 ±3.4``)."""
RIGHT = {1, 3, 4, 5, 6}  # right-aligned (numeric) columns


def shorten(text: str, width: int = TEXT_WIDTH) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def flags(c: CandidateOut) -> str:
    """The judge's flags, as the share of runs that raised them."""
    found = [
        (c.major_error, "major error"),
        (c.hallucinated_specificity, "hallucination"),
        (c.uncertainty, "hedged"),
    ]
    return ", ".join(f"{name} {share:.0%}" for share, name in found if share > 0)


def rows(response: ListwiseResponse, texts: dict[str, str]) -> list[tuple[str, ...]]:
    by_id = {c.id: c for c in response.candidates}
    out: list[tuple[str, ...]] = []
    for rank, cid in enumerate(response.ranking, start=1):
        c = by_id[cid]
        label = f"[{cid}] {shorten(texts.get(cid, ''))}".rstrip()
        mark = WINNER if cid in response.winners else ""
        out.append(
            (
                mark,
                str(rank),
                label,
                f"{c.consensus:.1f}" + (f" ±{c.standard_error:.1f}" if c.standard_error is not None else ""),
                f"{c.mean_score:.1f}",
                f"{c.borda:.1f}",
                f"{c.top_vote:.0%}",
                flags(c),
            )
        )
    return out


def grid(lines: Sequence[tuple[str, ...]]) -> str:
    widths = [max(len(line[i]) for line in lines) for i in range(len(HEADERS))]
    rendered = []
    for line in lines:
        cells = [
            cell.rjust(w) if i in RIGHT else cell.ljust(w) for i, (cell, w) in enumerate(zip(line, widths, strict=True))
        ]
        rendered.append("  ".join(cells).rstrip())
    return "\n".join(rendered)


def render(response: ListwiseResponse, question: str, texts: dict[str, str]) -> str:
    """The table, with the question above it and a one-line summary below."""
    d, u = response.diagnostics, response.usage
    winners = ", ".join(f"[{w}]" for w in response.winners)
    tie = " (tie)" if len(response.winners) > 1 else ""
    w = d.windows
    design = (
        f"K={response.k}{f' x{response.executions} executions' if response.executions > 1 else ''}"
        if w is None
        else f"{w.windows_judged} windows of at most {w.window} in {w.rounds} rounds' budget (stopped: {w.stopped})"
    )
    summary = (
        f"{WINNER} winner {winners}{tie} · {response.model} · {design} · agreement {d.agreement:.2f}"
        f" · {u.backend_calls} calls, {u.cache_hits} cached"
        f"{' · order-sensitive' if d.order_sensitive else ''}{' · DEGRADED: some runs failed' if response.degraded else ''}"
    )
    return f"Q: {shorten(question, 100)}\n{grid([HEADERS, *rows(response, texts)])}\n{summary}{jury_lines(response)}"


def jury_lines(response: ListwiseResponse) -> str:
    """A jury's judgment: one line per juror (its winners, weight, agreement with the jury), then the jury's."""
    jury = response.jury
    if jury is None:
        return ""
    lines = []
    for j in jury.jurors:
        if not j.delivered:
            lines.append(f"  juror {j.model}: did not deliver ({j.error})")
            continue
        won = ", ".join(f"[{w}]" for w in j.winners or [])
        rho = f", rho {j.agreement:.2f}" if j.agreement is not None else ""
        lines.append(
            f"  juror {j.model} (weight {j.weight:.2f}): winner {won}{rho}{'' if j.agrees else ' · disagrees'}"
        )
    w = f"Kendall's W {jury.kendalls_w:.2f}" if jury.kendalls_w is not None else "one juror"
    worth = f" · worth {jury.effective_jurors:.1f} independent jurors" if jury.effective_jurors is not None else ""
    lines.append(f"  jury {jury.name}: {w}, {jury.weights} weights{worth}")
    return "\n" + "\n".join(lines)
