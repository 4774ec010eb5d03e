"""What ``pcfjudge eval … --data`` names: benchmark data shipped with the lab, the full sets on the hub, or a file.

    judgebench:gpt-4o              JudgeBench ``gpt`` split, 350 pairs (bundled, MIT)
    judgebench:claude-3-5-sonnet   JudgeBench ``claude`` split, 270 pairs (bundled, MIT)
    rewardbench2:sample            the first six RewardBench 2 Factuality records (bundled, ODC-BY)
    hub                            the full set from the Hugging Face hub (extra ``hub``): ScalerLab/JudgeBench split
                                   ``gpt`` (``hub:claude`` for the other) or allenai/reward-bench-2 split ``test``
    a path                         a JSONL file of your own (RewardBench 2 also Parquet)

The bundled copies live in ``pcfjudge_lab/data/`` with their sources, licences and citations beside them; nothing here
reads a path outside the package or the user's own.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

Benchmark = Literal["judgebench", "rewardbench2"]

DATA_DIR = Path(__file__).resolve().parents[1] / "data"  # package data: pcfjudge_lab/data/
HUB = "hub"
HUB_REPOS: dict[Benchmark, str] = {"judgebench": "ScalerLab/JudgeBench", "rewardbench2": "allenai/reward-bench-2"}
HUB_SPLITS: dict[Benchmark, tuple[str, ...]] = {"judgebench": ("gpt", "claude"), "rewardbench2": ("test",)}


@dataclass(frozen=True, slots=True)
class Bundled:
    """A data file shipped in ``pcfjudge_lab/data/``."""

    benchmark: Benchmark
    file: str  # relative to DATA_DIR
    records: int
    what: str

    @property
    def path(self) -> Path:
        return DATA_DIR / self.file


BUNDLED: dict[str, Bundled] = {
    "judgebench:gpt-4o": Bundled(
        "judgebench", "judgebench/judgebench-gpt-4o.jsonl", 350, "JudgeBench gpt split (responses by gpt-4o)"
    ),
    "judgebench:claude-3-5-sonnet": Bundled(
        "judgebench",
        "judgebench/judgebench-claude-3-5-sonnet.jsonl",
        270,
        "JudgeBench claude split (responses by claude-3-5-sonnet)",
    ),
    "rewardbench2:sample": Bundled(
        "rewardbench2", "rewardbench2/factuality-sample.jsonl", 6, "the first six RewardBench 2 Factuality records"
    ),
}


@dataclass(frozen=True, slots=True)
class HubData:
    """The full set on the Hugging Face hub: ``repo`` (an id, or a local directory holding a downloaded copy)."""

    repo: str
    split: str


def names(benchmark: Benchmark) -> list[str]:
    """The bundled names of ``benchmark``, as ``--data`` takes them."""
    return [name for name, data in BUNDLED.items() if data.benchmark == benchmark]


def bundled(name: str) -> Path:
    """The path of a bundled data file by name (e.g. ``judgebench:gpt-4o``); KeyError names the known ones."""
    if name not in BUNDLED:
        raise KeyError(f"no bundled data named {name!r}; known: {', '.join(BUNDLED)}")
    return BUNDLED[name].path


def _choices(benchmark: Benchmark) -> str:
    splits = "|".join(HUB_SPLITS[benchmark])
    hub = f"'hub' (or 'hub:{splits}')" if len(HUB_SPLITS[benchmark]) > 1 else "'hub'"
    own = "'synthetic:N' or a JSONL/Parquet file" if benchmark == "rewardbench2" else "a JSONL file"
    return f"{', '.join(repr(n) for n in names(benchmark))}, {hub}, {own}"


def resolve(benchmark: Benchmark, spec: str, hub_repo: str | None = None) -> Path | HubData:
    """``--data`` for ``benchmark``: a bundled file's path, a ``HubData``, or the user's own file.

    ValueError says what is wrong and lists what is accepted: another benchmark's data, an unknown bundled name, a
    hub split that does not exist, a file that is not there.
    """
    is_hub = spec == HUB or spec.startswith(f"{HUB}:")
    if hub_repo is not None and not is_hub:
        raise ValueError(f"--hub-repo {hub_repo} applies only with --data hub (got --data {spec})")
    if spec in BUNDLED:
        data = BUNDLED[spec]
        if data.benchmark != benchmark:
            raise ValueError(f"--data {spec} is {data.benchmark} data; `eval {benchmark}` takes {_choices(benchmark)}")
        return data.path
    if is_hub:
        split = spec.partition(":")[2] or HUB_SPLITS[benchmark][0]
        if split not in HUB_SPLITS[benchmark]:
            raise ValueError(f"--data {spec}: {HUB_REPOS[benchmark]} has no split {split!r}; use {_choices(benchmark)}")
        return HubData(hub_repo or HUB_REPOS[benchmark], split)
    path = Path(spec).expanduser()
    if path.is_file():
        return path
    prefix = spec.partition(":")[0]
    if ":" in spec and prefix in HUB_REPOS:
        raise ValueError(f"--data {spec}: no such bundled data; `eval {benchmark}` takes {_choices(benchmark)}")
    raise ValueError(f"--data {spec}: no such file; `eval {benchmark}` takes {_choices(benchmark)}")


def hub_rows(data: HubData) -> list[tuple[str, dict[str, object]]]:
    """The records of ``data.split`` through ``datasets.load_dataset`` (extra ``hub``), each with where it came from.

    ``data.repo`` may be a local directory (a downloaded copy of the hub repository), which needs no network.
    """
    try:
        import datasets
    except ImportError as exc:
        raise RuntimeError(f"--data hub needs the lab's hub extra: pip install 'pcfjudge-lab[hub]' ({exc})") from exc
    try:
        dataset = datasets.load_dataset(data.repo, split=data.split)
    except Exception as exc:  # the hub's errors are many (network, auth, missing split): all say the same to the user
        raise RuntimeError(
            f"could not load {data.repo} split {data.split!r} ({type(exc).__name__}: {exc}); the hub needs network "
            "access, or pass a local copy with --hub-repo DIR"
        ) from exc
    return [(f"{data.repo}[{data.split}] row {i}", dict(row)) for i, row in enumerate(dataset, start=1)]
