"""RewardBench 2 best-of-4 items (paper §4.2) from JSONL, Parquet, the Hugging Face hub or in-memory records.

Records become frozen ``FactualityItem``s; malformed input raises ValueError naming the file and line (or row).
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pcfjudge_lab.eval.data import HUB_REPOS, HubData, hub_rows
from pcfjudge_lab.eval.records import check_limit, read_jsonl, str_field


@dataclass(frozen=True)
class FactualityItem:
    """One RewardBench 2 item: four candidates, seeded-shuffled; the chosen one sits at ``correct_index``."""

    item_id: str
    prompt: str
    candidates: tuple[str, ...]
    correct_index: int
    subset: str


def _str_list(record: Mapping[str, Any], key: str, where: str) -> list[str]:
    value = record.get(key)
    if not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
        raise ValueError(f"{where}: field {key!r} must be a list of strings")
    return list(value)


def _factuality_item(record: Mapping[str, Any], *, seed: int, subset: str, where: str) -> FactualityItem:
    raw_id = record.get("id")
    if not isinstance(raw_id, str | int) or isinstance(raw_id, bool):
        raise ValueError(f"{where}: field 'id' must be a string or integer")
    chosen = _str_list(record, "chosen", where)
    rejected = _str_list(record, "rejected", where)
    if len(chosen) != 1 or len(rejected) != 3:
        raise ValueError(f"{where}: expected 1 chosen and 3 rejected responses, got {len(chosen)} and {len(rejected)}")
    texts = [chosen[0], *rejected]
    order = list(range(len(texts)))
    random.Random(f"{seed}:{subset}:{raw_id}").shuffle(order)
    return FactualityItem(
        item_id=f"{subset}:{raw_id}",
        prompt=str_field(record, "prompt", where),
        candidates=tuple(texts[i] for i in order),
        correct_index=order.index(0),
        subset=subset,
    )


def _to_items(
    rows: Iterable[tuple[str, Mapping[str, Any]]], *, seed: int, limit: int | None, subset: str
) -> list[FactualityItem]:
    check_limit(limit)
    items: list[FactualityItem] = []
    seen: set[str] = set()
    if limit == 0:
        return items
    for where, record in rows:
        if str_field(record, "subset", where) != subset:
            continue
        item = _factuality_item(record, seed=seed, subset=subset, where=where)
        if item.item_id in seen:
            raise ValueError(f"{where}: duplicate item id {item.item_id!r}")
        seen.add(item.item_id)
        items.append(item)
        if len(items) == limit:
            break  # stop before reading further records
    return items


def rewardbench2_items(
    rows: Iterable[tuple[str, Mapping[str, Any]]],
    *,
    seed: int = 0,
    limit: int | None = None,
    subset: str = "Factuality",
) -> list[FactualityItem]:
    """Like load_rewardbench2, from (where, record) pairs already in memory (e.g. synthetic records)."""
    return _to_items(rows, seed=seed, limit=limit, subset=subset)


def _parquet_rows(path: Path) -> Iterator[tuple[str, Mapping[str, Any]]]:
    try:
        import pyarrow.parquet as pq
    except ImportError as exc:
        raise RuntimeError(
            f"reading {path} needs pyarrow: pip install -e ./lab (in a clone) or pip install pcfjudge-lab"
        ) from exc
    for index, row in enumerate(pq.read_table(path).to_pylist(), start=1):
        yield f"{path}: row {index}", row


def load_rewardbench2(
    path: Path, *, seed: int = 0, limit: int | None = None, subset: str = "Factuality"
) -> list[FactualityItem]:
    """Load RewardBench 2 items of ``subset`` from JSONL or Parquet (by ``.parquet`` suffix), first ``limit``.

    Candidates are chosen[0] + rejected, shuffled with Random(f"{seed}:{subset}:{id}") so the correct answer
    is not always first and each item's order is reproducible. A matching record without exactly 1 chosen and
    3 rejected responses raises ValueError rather than being skipped, so a slice never silently shrinks.
    """
    if path.suffix == ".parquet":
        rows: Iterable[tuple[str, Mapping[str, Any]]] = _parquet_rows(path)
    else:
        rows = ((f"{path}:{lineno}", record) for lineno, record in read_jsonl(path))
    return _to_items(rows, seed=seed, limit=limit, subset=subset)


def load_rewardbench2_hub(
    data: HubData | None = None, *, seed: int = 0, limit: int | None = None, subset: str = "Factuality"
) -> list[FactualityItem]:
    """Like load_rewardbench2, from ``allenai/reward-bench-2`` (split test) on the Hugging Face hub (extra ``hub``) or
    a local copy of it (``data.repo`` a directory)."""
    check_limit(limit)
    rows = hub_rows(data or HubData(HUB_REPOS["rewardbench2"], "test"))
    return _to_items(rows, seed=seed, limit=limit, subset=subset)
