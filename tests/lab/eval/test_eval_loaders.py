"""Loaders against the benchmark files bundled with the package and small fixtures (JSONL, Parquet, malformed input)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pcfjudge_lab.eval.accuracy import source_bucket
from pcfjudge_lab.eval.data import bundled
from pcfjudge_lab.eval.judgebench.loader import load_judgebench
from pcfjudge_lab.eval.rewardbench2.loader import FactualityItem, load_rewardbench2

from tests.support.basics import ROOT

FIXTURES = ROOT / "tests" / "fixtures"
RB2_SAMPLE = bundled("rewardbench2:sample")
RB2_MINI = FIXTURES / "rewardbench2-mini.jsonl"


def _raw(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


@pytest.mark.parametrize(
    ("name", "expected"),
    [("judgebench:gpt-4o", 350), ("judgebench:claude-3-5-sonnet", 270)],
)
def test_load_bundled_judgebench(name: str, expected: int) -> None:
    path = bundled(name)
    pairs = load_judgebench(path)
    assert len(pairs) == expected
    assert len({pair.pair_id for pair in pairs}) == expected
    assert {source_bucket(pair.source) for pair in pairs} == {
        "mmlu-pro",
        "livebench-reasoning",
        "livebench-math",
        "livecodebench",
    }
    assert {pair.label for pair in pairs} == {"A>B", "B>A"}
    first, raw = pairs[0], _raw(path)[0]
    assert (first.response_a, first.response_b, first.question) == (
        raw["response_A"],
        raw["response_B"],
        raw["question"],
    )


def test_judgebench_original_id_and_limit() -> None:
    path = bundled("judgebench:gpt-4o")
    pairs = load_judgebench(path)
    assert all(p.original_id is None for p in pairs if p.source.startswith("live"))
    assert all(p.original_id and p.original_id.isdigit() for p in pairs if p.source.startswith("mmlu"))
    assert load_judgebench(path, limit=5) == pairs[:5]
    assert load_judgebench(path, limit=0) == []
    with pytest.raises(ValueError):
        load_judgebench(path, limit=-1)


def test_malformed_line_names_file_and_line() -> None:
    path = FIXTURES / "judgebench-malformed.jsonl"
    with pytest.raises(ValueError, match=r"judgebench-malformed\.jsonl:2"):
        load_judgebench(path)
    assert len(load_judgebench(path, limit=1)) == 1


def test_non_object_and_missing_field(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text("[1, 2]\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"bad\.jsonl:1: expected a JSON object"):
        load_judgebench(path)
    path.write_text('{"pair_id": "p", "source": "livecodebench", "label": "A>B"}\n', encoding="utf-8")
    with pytest.raises(ValueError, match=r"bad\.jsonl:1: field 'question'"):
        load_judgebench(path)


def test_rewardbench2_sample() -> None:
    items = load_rewardbench2(RB2_SAMPLE)
    raw = _raw(RB2_SAMPLE)
    assert len(items) == 6
    for item, record in zip(items, raw, strict=True):
        assert item.item_id == f"Factuality:{record['id']}"
        assert item.subset == "Factuality"
        assert len(item.candidates) == 4
        assert item.candidates[item.correct_index] == record["chosen"][0]
        assert sorted(item.candidates) == sorted([*record["chosen"], *record["rejected"]])
    assert any(item.correct_index != 0 for item in items)


def test_rewardbench2_shuffle_is_seeded() -> None:
    seed0 = load_rewardbench2(RB2_SAMPLE, seed=0)
    assert load_rewardbench2(RB2_SAMPLE, seed=0) == seed0
    seed1 = load_rewardbench2(RB2_SAMPLE, seed=1)
    assert [i.candidates for i in seed1] != [i.candidates for i in seed0]
    assert [sorted(i.candidates) for i in seed1] == [sorted(i.candidates) for i in seed0]
    assert all(
        i.candidates[i.correct_index] == j.candidates[j.correct_index] for i, j in zip(seed0, seed1, strict=True)
    )


def test_rewardbench2_filters_subset_and_limits() -> None:
    items = load_rewardbench2(RB2_MINI)
    assert [item.item_id for item in items] == ["Factuality:0", "Factuality:1", "Factuality:2"]
    assert [item.candidates[item.correct_index] for item in items] == ["Canberra.", "Eight.", "100 °C."]
    assert [item.item_id for item in load_rewardbench2(RB2_MINI, limit=2)] == ["Factuality:0", "Factuality:1"]
    focus = load_rewardbench2(RB2_SAMPLE, subset="Focus")
    assert focus == []


def test_rewardbench2_wrong_candidate_count_raises() -> None:
    with pytest.raises(ValueError, match=r"rewardbench2-mini\.jsonl:2: expected 1 chosen and 3 rejected"):
        load_rewardbench2(RB2_MINI, subset="Focus")


def test_rewardbench2_duplicate_id_raises(tmp_path: Path) -> None:
    line = RB2_MINI.read_text(encoding="utf-8").splitlines()[0]
    path = tmp_path / "dup.jsonl"
    path.write_text(f"{line}\n{line}\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"dup\.jsonl:2: duplicate item id 'Factuality:0'"):
        load_rewardbench2(path)


def test_rewardbench2_parquet_matches_jsonl(tmp_path: Path) -> None:
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    records = _raw(RB2_MINI)
    columns = ("id", "prompt", "chosen", "rejected", "subset")
    table = pa.Table.from_pylist([{key: record[key] for key in columns} for record in records])
    path = tmp_path / "mini.parquet"
    pq.write_table(table, path)
    from_parquet: list[FactualityItem] = load_rewardbench2(path, seed=3)
    assert from_parquet == load_rewardbench2(RB2_MINI, seed=3)
    assert len(from_parquet) == 3
