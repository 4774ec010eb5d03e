"""score_judgments_file on a hand-computed judgments file, plus markdown output and error cases."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pcfjudge_lab.eval.score import format_markdown, score_judgments_file

RECORDS: list[dict[str, object]] = [
    # both games agree with the label (game 2 "B>A" flips to "A>B"): +1 +1 -> correct; game 1 correct
    {"source": "mmlu-pro-law", "label": "A>B", "judgments": [{"decision": "A>B"}, {"decision": "B>A"}]},
    # second game failed: +1 + 0 -> correct; game 1 correct
    {"source": "mmlu-pro-history", "label": "B>A", "judgments": [{"decision": "B>A"}, None]},
    # order-inconsistent: +1, flipped "B>A" -1 -> 0 -> wrong; game 1 correct
    {"source": "livebench-math", "label": "A>B", "judgments": [{"decision": "A>B"}, {"decision": "A>B"}]},
    # judge failed entirely (no judgments) -> 0 -> wrong; game 1 wrong
    {"source": "livecodebench", "label": "B>A"},
    # "B>>A" -> "B>A" = -1, tie 0 -> wrong; game 1 wrong
    {"source": "mmlu-pro-law", "label": "A>B", "judgments": [{"decision": "B>>A"}, {"decision": "A=B"}]},
]

# overall 2/5 = 40; mmlu-pro 2/3 = 66.67; livebench-math 0/1; livecodebench 0/1; no livebench-reasoning.
# source macro over raw sources: law 1/2 = 50, history 100, math 0, livecodebench 0 -> 150/4 = 37.5.
# single game: records 1-3 -> 3/5 = 60.
EXPECTED = {
    "n": 5,
    "judgebench": {
        "overall": 40.0,
        "mmlu-pro": 66.67,
        "livebench-reasoning": None,
        "livebench-math": 0.0,
        "livecodebench": 0.0,
    },
    "source_macro": 37.5,
    "single_game": 60.0,
}


def _write(tmp_path: Path, records: list[dict[str, object]]) -> Path:
    path = tmp_path / "judgments.jsonl"
    path.write_text("".join(json.dumps(record) + "\n" for record in records), encoding="utf-8")
    return path


def test_score_hand_computed(tmp_path: Path) -> None:
    assert score_judgments_file(_write(tmp_path, RECORDS)) == EXPECTED


def test_score_empty_file(tmp_path: Path) -> None:
    assert score_judgments_file(_write(tmp_path, [])) == {
        "n": 0,
        "judgebench": {
            "overall": None,
            "mmlu-pro": None,
            "livebench-reasoning": None,
            "livebench-math": None,
            "livecodebench": None,
        },
        "source_macro": None,
        "single_game": None,
    }


def test_score_errors_name_the_line(tmp_path: Path) -> None:
    bad_source: list[dict[str, object]] = [
        RECORDS[0],
        {"source": "arena-hard", "label": "A>B", "judgments": []},
    ]
    with pytest.raises(ValueError, match=r"judgments\.jsonl:2: unknown JudgeBench source"):
        score_judgments_file(_write(tmp_path, bad_source))
    with pytest.raises(ValueError, match=r"judgments\.jsonl:1: 'label' and 'source'"):
        score_judgments_file(_write(tmp_path, [{"source": "livecodebench"}]))


def test_format_markdown(tmp_path: Path) -> None:
    table = format_markdown(score_judgments_file(_write(tmp_path, RECORDS)))
    lines = table.splitlines()
    assert lines[:3] == ["| metric | value |", "|---|---:|", "| pairs (n) | 5 |"]
    assert "| JudgeBench overall (%) | 40.00 |" in lines
    assert "| JudgeBench mmlu-pro (%) | 66.67 |" in lines
    assert "| JudgeBench livebench-reasoning (%) | n/a |" in lines
    assert "| source macro (%) | 37.50 |" in lines
    assert "| single game (%) | 60.00 |" in lines
