"""``pcfjudge bench chat`` on a few bundled JudgeBench pairs: its figures add up (not timings). Straight, each order
is one call and the position-biased judge names whichever it showed first more often than the door does; through the
chat door each pair has one winner in both orders, the second order's calls come from the cache, and the figures
printed are the ones computed."""

from __future__ import annotations

from pcfjudge_lab.bench.chat_bench import figures, format_report, run


async def test_the_bench_prints_consistent_figures_for_both_ways() -> None:
    pairs, straight, through = await run(None, 12)
    n = len(pairs)
    assert n == 12 and len(straight.winners) == len(through.winners) == n
    assert straight.calls == 2 * n and straight.cache_hits == 0 and straight.unreadable == 0
    assert through.calls == 2 * n and through.cache_hits == 2 * n and through.unreadable == 0  # 4 orders, 2 fresh
    s, t = figures(straight, pairs), figures(through, pairs)
    assert t.consistency == 1.0 and all(w1 == w2 for w1, w2 in through.winners)
    assert s.consistency < 1.0 and s.first_shown_wins > t.first_shown_wins  # the judge's bias, straight
    for f in (s, t):
        assert 0.0 <= f.accuracy <= 1.0 and 0.0 <= f.first_shown_wins <= 1.0
    split = [i for i, (w1, w2) in enumerate(straight.winners) if w1 != w2]
    assert all(through.winners[i] == ("tie", "tie") for i in split if "tie" not in straight.winners[i])
    report = format_report(pairs, [straight, through])
    assert (
        f"{t.consistency:.3f}" in report and f"{s.accuracy:.3f}" in report and "through /v1/chat/completions" in report
    )
