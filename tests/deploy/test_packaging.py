"""The distribution ships one top-level package, ``pcfjudge``: no ``app`` package that would clash with users' own, and
none of the lab, which is a distribution of its own (``lab/``: ``pcfjudge_lab`` and the benchmark data)."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.support.basics import ROOT


def _wheel(source: Path, out: Path, pattern: str) -> Path:
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", str(source), "--no-deps", "--no-build-isolation", "-q", "-w", str(out)],
        check=True,
        capture_output=True,
    )
    (wheel,) = out.glob(pattern)
    return wheel


@pytest.mark.slow
def test_wheel_contains_only_the_pcfjudge_package(tmp_path: Path) -> None:
    wheel = _wheel(ROOT, tmp_path, "pcfjudge-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    tops = {name.split("/")[0] for name in names}
    assert tops == {"pcfjudge", f"{wheel.name.split('-')[0]}-{wheel.name.split('-')[1]}.dist-info"}, tops
    assert "pcfjudge/__init__.py" in names and "pcfjudge/judging/consensus.py" in names
    assert not any(name.startswith("app/") for name in names)
    static = ROOT / "app" / "pcfjudge" / "static"  # the playground page, served at / from package data
    assert {f"pcfjudge/static/{f.name}" for f in static.iterdir()} <= set(names)
    assert "pcfjudge/static/index.html" in names
    entry_points = next(n for n in names if n.endswith("entry_points.txt"))
    assert "pcfjudge = pcfjudge.cli.main:main" in zipfile.ZipFile(wheel).read(entry_points).decode()
    # the lab is a distribution of its own: no benchmark data, fake provider, eval or bench in the service's wheel
    assert not [n for n in names if n.startswith("pcfjudge/tooling/") or n.endswith((".jsonl", ".bib", "LICENSE"))]
    assert not [n for n in names if "fakeprovider" in n or "pcfjudge_lab" in n]
    metadata = zipfile.ZipFile(wheel).read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    assert "Provides-Extra: eval" not in metadata and "matplotlib" not in metadata


@pytest.mark.slow
def test_the_labs_wheel_holds_the_lab_and_the_benchmark_data(tmp_path: Path) -> None:
    wheel = _wheel(ROOT / "lab", tmp_path, "pcfjudge_lab-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    tops = {name.split("/")[0] for name in names}
    assert tops == {"pcfjudge_lab", f"{wheel.name.split('-')[0]}-{wheel.name.split('-')[1]}.dist-info"}, tops
    data = ROOT / "lab" / "pcfjudge_lab" / "data"
    shipped = {f"pcfjudge_lab/{p.relative_to(data.parent).as_posix()}" for p in data.rglob("*") if p.is_file()}
    assert shipped <= names, sorted(shipped - names)
    for bench in ("judgebench", "rewardbench2"):  # each set with its source, licence and citation
        assert {f"pcfjudge_lab/data/{bench}/{n}" for n in ("README.md", "LICENSE", "CITATION.bib")} <= names
    assert {
        "pcfjudge_lab/data/README.md",
        "pcfjudge_lab/commands.py",
        "pcfjudge_lab/fakeprovider/fake_server.py",
    } <= names
    metadata = zipfile.ZipFile(wheel).read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    for requirement in ("pcfjudge>=", "matplotlib", "pyarrow", "tqdm", "scipy"):
        assert f"Requires-Dist: {requirement}" in metadata, requirement
    assert "Provides-Extra: hub" in metadata


def test_a_user_package_named_app_imports_next_to_ours(tmp_path: Path) -> None:
    """A FastAPI project's own ``app`` package and pcfjudge live side by side (it used to break the old layout)."""
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "__init__.py").write_text('NAME = "the user\'s app"\n')
    (tmp_path / "app" / "judging.py").write_text("VALUE = 42\n")
    script = (
        "import app, app.judging, pcfjudge\n"
        "from pcfjudge.api.app import create_app\n"
        "from pcfjudge.judging.consensus import aggregate\n"
        'assert app.NAME == "the user\'s app" and app.judging.VALUE == 42, app.__file__\n'
        "assert pcfjudge.__version__ and create_app and aggregate\n"
        "print(app.__file__, pcfjudge.__file__)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    user_app, ours = done.stdout.split()
    assert Path(user_app).parent == tmp_path / "app" and Path(ours).parent.name == "pcfjudge"


def test_public_surface_is_curated_and_light() -> None:
    """``import pcfjudge`` gives the version and the HTTP models, and loads no server, cache or provider SDK."""
    script = (
        "import sys, pcfjudge\n"
        "missing = [n for n in pcfjudge.__all__ if not hasattr(pcfjudge, n)]\n"
        "heavy = sorted({m.split('.')[0] for m in sys.modules} & {'fastapi', 'starlette', 'redis', 'openai', 'anthropic'})\n"
        "print(missing, heavy, pcfjudge.__version__)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert done.stdout.split(maxsplit=2)[:2] == ["[]", "[]"], done.stdout
    import pcfjudge

    assert {"__version__", "ListwiseRequest", "ListwiseResponse", "PairwiseRequest", "PairwiseResponse"} <= set(
        pcfjudge.__all__
    )
