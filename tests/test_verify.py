"""`neuronize verify` and `fix --verify` (issue 25): the project's own tests before and after the
migration on simulated hosts, regressions traced to the hunks that caused them.

The slow tests run the command as a user does, on a copy of the differential harness's project
(fixtures/differential/tinytrain) with a regression planted in it: a function that returns early
where CUDA is missing, which an unsafe fix lets go on on Neuron, and a test that calls it on any
host.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from test_differential import KNOWN_REGRESSIONS

from neuronize.audit.child.outcomes import frames
from neuronize.verify.command import split_command
from neuronize.verify.compare import compare
from neuronize.verify.runs import Run
from neuronize.verify.trees import parse_diff

ROOT = Path(__file__).resolve().parent.parent
PROJECT = ROOT / "fixtures" / "differential" / "tinytrain"

PLANTED = '''import torch


def scaled(x):
    """``x`` as the fused kernels scale it: they run where CUDA is; elsewhere it passes as it is."""
    if not torch.cuda.is_available():
        return x
    return x * 2


def checked(x, expected):
    got = scaled(x)
    if not torch.equal(got, expected):
        raise ValueError(f"the kernels scale {x} to {expected}, not {got}")
    return got
'''
# an unsafe fix (NRN110) lets the code after the early return run on Neuron, which doubles the
# value: the module's own check fails there (every other host keeps its path)
PLANTED_TEST = '''import torch

from tinytrain.planted import checked


def test_scaling_is_the_kernels():
    x = torch.tensor([1.0])
    checked(x, x * 2 if torch.cuda.is_available() else x)
'''

DIFF = '''# comment lines of fix --diff are skipped
--- a/pkg/a.py
+++ b/pkg/a.py
@@ -3,4 +3,5 @@ [NRN101 safe] [NRN110 unsafe]
 import torch
-x = "cuda"
+x = "neuron"
+y = 1
 z = 2
--- a/pkg/b.py
+++ b/pkg/b.py
@@ -10 +10 @@
-import torch.cuda
+import torch
'''


def test_diff_hunks_carry_their_file_lines_and_rules():
    first, second = parse_diff(DIFF)
    assert (first.path, first.new_start, first.new_count, first.rules) == ("pkg/a.py", 3, 5, ["NRN101 safe", "NRN110 unsafe"])
    assert first.covers(4) and first.covers(7) and not first.covers(8)
    assert first.lines[0].startswith("@@") and first.lines[-1] == " z = 2"
    assert (second.path, second.new_start, second.new_count, second.rules) == ("pkg/b.py", 10, 1, [])


def test_command_is_what_follows_the_double_dash():
    argv = ["neuronize", "verify", "src", "--hosts", "cpu", "--", "python", "-m", "pytest", "-x"]
    assert split_command(("src", "python", "-m", "pytest", "-x"), argv) == (["src"], ["python", "-m", "pytest", "-x"])
    assert split_command(("python", "-m", "pytest"), ["neuronize", "verify", "python"]) == ([], ["python", "-m", "pytest"])


def test_traceback_frames_of_every_pytest_style(tmp_path):
    text = ('tests/test_a.py:12: in test_x\n    f()\npkg/a.py:4: RuntimeError\n'
            '  File "/abs/pkg/b.py", line 9, in g\n')
    assert frames(text, "/work") == [["/work/tests/test_a.py", 12], ["/work/pkg/a.py", 4], ["/abs/pkg/b.py", 9]]


def test_regressions_fixed_and_skipped_are_told_apart(tmp_path):
    hunks = parse_diff(DIFF)
    tree = tmp_path / "after"

    def run(side: str, tests: dict[str, tuple[str, list]]) -> Run:
        return Run("cpu", side, tree, 0, tests={t: {"outcome": o, "where": w} for t, (o, w) in tests.items()})

    before = run("before", {"t::broken": ("passed", []), "t::repaired": ("failed", []),
                            "t::skipped": ("passed", []), "t::gone": ("passed", [])})
    after = run("after", {"t::broken": ("failed", [[str(tree / "t.py"), 3], [str(tree / "pkg/a.py"), 4]]),
                          "t::repaired": ("passed", []), "t::skipped": ("skipped", [])})
    result = compare(before, after, hunks)
    broken, gone = result.regressions
    assert (broken.test, broken.after, broken.where) == ("t::broken", "failed", [("t.py", 3), ("pkg/a.py", 4)])
    assert broken.hunks == [hunks[0]] and broken.rules == ["NRN101", "NRN110"]
    assert (gone.test, gone.after, gone.hunks) == ("t::gone", "not run", [])
    assert [c.test for c in result.fixed] == ["t::repaired"]
    assert [c.test for c in result.now_skipped] == ["t::skipped"]


def _planted_copy(tmp_path: Path) -> Path:
    project = tmp_path / "tinytrain"
    shutil.copytree(PROJECT, project, ignore=shutil.ignore_patterns("__pycache__"))
    (project / "tinytrain" / "planted.py").write_text(PLANTED)
    (project / "tests" / "test_planted.py").write_text(PLANTED_TEST)
    return project


def _neuronize(project: Path, *args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTEST_DISABLE_PLUGIN_AUTOLOAD="1")  # the project needs no plugin
    return subprocess.run([sys.executable, "-m", "neuronize", *args], cwd=project, capture_output=True,
                          text=True, timeout=900, env=env)


def _digest(project: Path) -> dict[str, bytes]:
    return {str(p.relative_to(project)): p.read_bytes() for p in sorted(project.rglob("*.py"))}


@pytest.mark.slow
def test_verify_finds_the_planted_regression_with_its_hunk(tmp_path):
    project = _planted_copy(tmp_path)
    untouched = _digest(project)
    done = _neuronize(project, "verify", "--unsafe-fixes", "--hosts", "cpu,neuron", "--output-format", "json",
                      "--", sys.executable, "-m", "pytest", "-q")
    assert done.returncode == 1, done.stdout + done.stderr
    report = json.loads(done.stdout)
    cpu, neuron = report["hosts"]
    assert cpu["per_test"] and cpu["compared"] > 20

    def known(host: str) -> set[str]:  # the differential harness's rows of this run (neuron, unsafe fixes)
        return {test for target, fixes, on, test in KNOWN_REGRESSIONS if (target, fixes, on) == ("neuron", "unsafe", host)}

    assert {r["test"] for r in cpu["regressions"]} <= known("cpu"), cpu["regressions"]  # the early return kept there
    regression = {r["test"]: r for r in neuron["regressions"]}["tests/test_planted.py::test_scaling_is_the_kernels"]
    assert regression["after"] == "failed" and "NRN110" in regression["rules"]
    assert [h["path"] for h in regression["hunks"]] == ["tinytrain/planted.py"]
    assert "+    if not (on_neuron() or torch.cuda.is_available()):" in regression["hunks"][0]["diff"]
    assert any(path == "tinytrain/planted.py" for path, _ in regression["traceback"])
    # on the simulated Neuron host the migration is what the goals wanted, but for the planted
    # early return and the harness's known rows
    planted = {"tests/test_planted.py::test_scaling_is_the_kernels"}
    assert {r["test"] for r in neuron["regressions"]} <= known("neuron") | planted, neuron["regressions"]
    assert {f["test"].rsplit("::", 1)[1] for f in neuron["fixed"]} >= {"test_goal_picks_neuron"}
    assert "neuron_path" in neuron and neuron["neuron_path"]["device_uses"] > 0
    assert "no Neuron compiler" in neuron["simulation"]
    assert _digest(project) == untouched  # the user's files are never changed


@pytest.mark.slow
def test_fix_verify_holds_back_the_file_a_regression_points_to(tmp_path):
    project = _planted_copy(tmp_path)
    planted = (project / "tinytrain" / "planted.py").read_bytes()
    done = _neuronize(project, "fix", "--unsafe-fixes", "--verify", "--", sys.executable, "-m", "pytest", "-q",
                      "tests/test_planted.py", "tests/test_devices.py")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "held back tinytrain/planted.py: neuron: tests/test_planted.py::test_scaling_is_the_kernels" in done.stderr
    assert (project / "tinytrain" / "planted.py").read_bytes() == planted
    assert '"neuron"' in (project / "tinytrain" / "devices.py").read_text()  # verified edits are written


@pytest.mark.slow
def test_a_command_that_cannot_start_exits_2(tmp_path):
    project = tmp_path / "p"
    project.mkdir()
    (project / "main.py").write_text("import sys\nsys.exit(0)\n")
    done = _neuronize(project, "verify", "--hosts", "cpu", "--", "no-such-command-here")
    assert done.returncode == 2, done.stdout + done.stderr
    assert "could not start" in done.stdout
    ok = _neuronize(project, "verify", "--hosts", "cpu,cuda", "--output-format", "markdown", "--",
                    sys.executable, "main.py")
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "| cuda | CUDA code paths run on the CPU" in ok.stdout


def test_neuron_path_counts_the_program_not_its_tests(tmp_path):
    def run(sites: list[tuple[str, str]]) -> Run:
        return Run("neuron", "after", tmp_path, 0, tests={}, sites=[
            {"file": str(tmp_path / path), "line": 3, "what": what, "kind": kind, "count": 1, "touch": kind == "cuda-api"}
            for path, what, kind in sites])

    skip_check = ("tests/test_gpu.py", "torch.cuda.is_available", "cuda-api")
    placed = ("pkg/train.py", "to('neuron')", "device-placement")
    path = compare(run([("pkg/train.py", "torch.cuda.synchronize", "cuda-api")]), run([skip_check, placed]), []).neuron_path
    assert path.state == "taken" and path.cuda_sites_before == 1 and len(path.test_cuda_sites) == 1
    left = compare(run([]), run([("pkg/train.py", "torch.cuda.synchronize", "cuda-api")]), []).neuron_path
    assert left.state == "cuda-left" and left.cuda_sites[0]["path"] == "pkg/train.py"
    assert compare(run([]), run([skip_check]), []).neuron_path.state == "no-device"
