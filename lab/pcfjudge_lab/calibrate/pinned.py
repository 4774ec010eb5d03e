"""The pinned calibration slice: a fixed, documented choice of bundled benchmark items, named and hashed.

``pinned-v1`` of N items, in this order: RewardBench 2 and JudgeBench items alternate (RewardBench 2 first) while
the bundled RewardBench 2 sample lasts (its 6 Factuality items, candidates shuffled with seed 0 as ``eval
rewardbench2`` does: four candidates, one chosen), then JudgeBench only: the first pairs of the gpt-4o split
(``judgebench:gpt-4o``) whose label is strict (A>B or B>A; the split has no ties), two candidates, A and B. The gold
answer is the chosen response, or the pair's label.

Its name, ``pinned-v1/<N>x<K>/<hash>``, carries the size, the K asked for per item and the first 12 hex digits of a
SHA-256 over every item's id, question, candidates and gold answer (and K and the permutation schedule's seed), so
records measured on other items, another K or changed data are never compared with each other.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass

from pcfjudge_lab.eval.data import bundled
from pcfjudge_lab.eval.judgebench.loader import load_judgebench
from pcfjudge_lab.eval.rewardbench2.loader import load_rewardbench2

VERSION = "pinned-v1"
JUDGEBENCH = "judgebench:gpt-4o"
REWARDBENCH2 = "rewardbench2:sample"
SCHEDULE_SEED = 0  # the permutation schedule's seed (the listwise default)
SHUFFLE_SEED = 0  # RewardBench 2's candidate shuffle (eval's default)


@dataclass(frozen=True, slots=True)
class Item:
    """One calibration item: a question, its candidates by id, and the id of the gold answer."""

    item_id: str  # rewardbench2:<subset>:<id> or judgebench:<pair_id>
    question: str
    ids: tuple[str, ...]
    texts: tuple[str, ...]
    gold: str


@dataclass(frozen=True, slots=True)
class PinnedSlice:
    items: tuple[Item, ...]
    k: int
    name: str
    rewardbench2: int  # how many of the items come from each
    judgebench: int


def _rewardbench2() -> list[Item]:
    items = load_rewardbench2(bundled(REWARDBENCH2), seed=SHUFFLE_SEED)
    return [
        Item(
            f"rewardbench2:{item.item_id}",
            item.prompt,
            tuple(str(i) for i in range(len(item.candidates))),
            item.candidates,
            str(item.correct_index),
        )
        for item in items
    ]


def _judgebench() -> list[Item]:
    pairs = load_judgebench(bundled(JUDGEBENCH))
    return [
        Item(f"judgebench:{p.pair_id}", p.question, ("A", "B"), (p.response_a, p.response_b), p.label[0])
        for p in pairs
        if p.label in ("A>B", "B>A")
    ]


def available() -> int:
    """The largest slice: every bundled RewardBench 2 item and every strict JudgeBench pair."""
    return len(_rewardbench2()) + len(_judgebench())


def digest(items: tuple[Item, ...], k: int) -> str:
    payload = [VERSION, k, SCHEDULE_SEED, [[i.item_id, i.question, i.ids, i.texts, i.gold] for i in items]]
    return hashlib.sha256(json.dumps(payload, ensure_ascii=False).encode()).hexdigest()[:12]


def pinned_slice(n: int, k: int) -> PinnedSlice:
    """The first ``n`` items of ``pinned-v1`` (module docstring) for K = ``k``; ValueError past the bundled data."""
    rb2, jb = _rewardbench2(), _judgebench()
    if not 2 <= n <= len(rb2) + len(jb):
        raise ValueError(f"--items must be between 2 and {len(rb2) + len(jb)} (the bundled items); got {n}")
    if k < 1:
        raise ValueError(f"--k must be at least 1; got {k}")
    chosen: list[Item] = []
    a = b = 0
    while len(chosen) < n:
        if a < len(rb2) and (a <= b or b >= len(jb)):
            chosen.append(rb2[a])
            a += 1
        else:
            chosen.append(jb[b])
            b += 1
    items = tuple(chosen)
    return PinnedSlice(items, k, f"{VERSION}/{n}x{k}/{digest(items, k)}", a, b)
