"""scripts/regressions.py on a small real repository: the suite before and after a migration."""

from __future__ import annotations

import subprocess
import sys

import pytest

from helpers import ROOT

SCRIPT = ROOT / "scripts" / "regressions.py"


def _repo(root, slow_test: bool = False):
    repo = root / "repo"
    repo.mkdir()
    (repo / "model.py").write_text("import torch\n\ndef pick():\n    return 'cuda' if torch.cuda.is_available() else 'cpu'\n")
    tests = "from model import pick\n\ndef test_pick():\n    assert pick() in ('cpu', 'cuda', 'neuron')\n"
    if slow_test:
        tests += "\ndef test_slow():\n    import time\n    time.sleep(60)\n"
    (repo / "test_model.py").write_text(tests)
    return repo


@pytest.mark.slow
def test_a_relative_keep_directory_holds_both_reports_and_the_diff(tmp_path):
    _repo(tmp_path)
    done = subprocess.run([sys.executable, str(SCRIPT), "repo", "--keep", "kept", "--", "-q"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "before: 1 passed" in done.stdout and "after:  1 passed" in done.stdout
    assert {"before.xml", "after.xml", "neuronize.diff"} <= {p.name for p in (tmp_path / "kept").iterdir()}


@pytest.mark.slow
def test_a_run_cut_short_compares_what_it_finished(tmp_path):
    _repo(tmp_path, slow_test=True)
    done = subprocess.run([sys.executable, str(SCRIPT), "repo", "--timeout", "8", "--", "-q", "-p", "no:randomly"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300)
    lines = done.stdout.splitlines()  # interrupted as Ctrl-C: pytest still reports what it finished
    assert lines[0].startswith("before: ") and "passed" in lines[0] and lines[0].endswith("(cut short)"), done.stdout
    assert lines[1].endswith("(cut short)") and "regressed: 0" in done.stdout
