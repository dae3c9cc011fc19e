"""The wheel ships the rules as neuronize.transforms and never a top-level `transforms`."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.slow
def test_wheel_maps_transforms_under_neuronize(tmp_path):
    subprocess.run(
        [sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(tmp_path), str(ROOT)],
        check=True, capture_output=True,
    )
    [wheel] = tmp_path.glob("neuronize-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    assert not any(n.startswith("transforms/") for n in names), "a top-level transforms package leaked"
    for module in (ROOT / "transforms").glob("*.py"):
        assert f"neuronize/transforms/{module.name}" in names, module.name
    assert "neuronize/analysis/engine.py" in names
    # every module of the package, sub-packages included (a package missing from pyproject's list
    # installs without it: `neuronize.verify` once did, and the pre-commit hook failed to start)
    for module in (ROOT / "neuronize").rglob("*.py"):
        assert f"neuronize/{module.relative_to(ROOT / 'neuronize').as_posix()}" in names, module


def test_transforms_refuses_a_top_level_import():
    proc = subprocess.run(
        [sys.executable, "-c", "import transforms"], cwd=ROOT, capture_output=True, text=True
    )
    assert proc.returncode != 0
    assert "neuronize.transforms" in proc.stderr


def test_rules_import_as_neuronize_transforms():
    import neuronize.transforms

    assert Path(neuronize.transforms.__file__).parent == ROOT / "transforms"


def test_rules_load_from_the_checkout_under_test(tmp_path):
    """The package, its rules and a `python -m neuronize` started elsewhere all come from this
    checkout, not from another install or worktree (an editable install of a sibling checkout
    would test that one's rules)."""
    import neuronize
    import neuronize.transforms
    from neuronize.registry import all_rules

    assert Path(neuronize.__file__).resolve().parent == ROOT / "neuronize"
    assert [Path(p).resolve() for p in neuronize.transforms.__path__] == [ROOT / "transforms"]
    for rule in all_rules():
        assert Path(sys.modules[rule.__module__].__file__).resolve().parent.parent == ROOT / "transforms", rule.id
    child = subprocess.run(
        [sys.executable, "-c", "import neuronize, neuronize.transforms as t; print(neuronize.__file__); print(t.__file__)"],
        cwd=tmp_path, capture_output=True, text=True, check=True,
    )
    assert [Path(line).resolve().parent for line in child.stdout.splitlines()] == [ROOT / "neuronize", ROOT / "transforms"]
