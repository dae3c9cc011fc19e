"""Differential test (issue 11): an edit never breaks a test that passed, wherever it passed.

fixtures/differential/tinytrain/ is a small training package with its own pytest suite, written
in the patterns CUDA projects use (device choice with a CPU fallback, autocast and GradScaler
enabled on ``device == "cuda"``, guarded synchronize, process-group setup, checkpoint loading,
argparse choices, ``.half()``, capability probes, kernel choice on ``x.is_cuda``, import-time
``torch.compile`` (plain, with CUDA's autotuning mode, with an Inductor option), a torchrun-style
set-up with NCCL, ``set_device`` and TF32 (``launch.py``), and in ``choices.py`` what ``torch.cuda.is_available()`` decides: an assert, a backend by
expression and by statement, a half dtype, a guarded and a flagged synchronize, an early exit,
``.cuda()``...), and a sampler that seeds a random generator on its device through a helper of
another module (``sampling.py``). Its suite runs on the four simulated hosts of ``neuronize verify``
(neuronize/audit/child/hosts.py: plain CPU, the NVIDIA box the code was written for, a Neuron
host, a Mac-like MPS host), once on the original and once on each of the six rewrites
(``neuronize fix --target neuron|accelerator|cpu``, with and without ``--unsafe-fixes``). Every
test that passed on a host before passes there after; the
``test_goal_*`` tests (the Neuron host picks, seeds and synchronises the Neuron device) pass after
the ``neuron`` rewrites on the Neuron host; the ``test_cuda_box_*`` tests (the package keeps its
CUDA path) run on the CUDA host only.

Every run is a fresh process forked from a server that has imported PyTorch once (a
``multiprocessing`` forkserver), so the 21 runs do not pay PyTorch's import 21 times.

KNOWN_REGRESSIONS lists what the rules still break today, one entry per (target, fixes, host,
test) with the rule responsible and why. It is the rules' to-do list, held strictly: an unlisted
regression fails, and so does a listed one that no longer happens (remove its entry). The failure
message of an unlisted regression names the rules that cause it on their own (the variant re-run
with ``--select`` of each rule in its diff); a regression that needs two rules shows none.
"""

from __future__ import annotations

import functools
import hashlib
import json
import multiprocessing
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch", reason="the differential test runs a PyTorch project (pip install -e '.[test]')")
pytestmark = pytest.mark.execution

ROOT = Path(__file__).resolve().parent.parent
PROJECT = ROOT / "fixtures" / "differential" / "tinytrain"

from neuronize.audit.child.hosts import HOSTS  # noqa: E402
from neuronize.verify.inprocess import PRELOAD, run_tests  # noqa: E402

TARGETS = ("neuron", "accelerator", "cpu")
FIXES = ("safe", "unsafe")
VARIANTS = [(target, fixes) for target in TARGETS for fixes in FIXES]
#: seconds one run of the project's suite may take (it takes a few)
SUITE_TIMEOUT = 180
GOAL = "::test_goal_"
#: a rule named in a hunk header of ``fix --diff``
RULE_IN_HUNK = re.compile(r"\[(NRN\d+) (?:safe|unsafe)\]")

#: What the rules still break, one row per pattern: (targets, fixes, hosts, test, "rules: why").
#: A row stands for every combination of the targets, fixes and hosts it names.
_KNOWN: list[tuple[str, str, str, str, str]] = [
    ("cpu", "safe unsafe", "cuda", "test_cuda_box.py::test_cuda_box_picks_cuda",
     "--target cpu aims the device choice at the CPU by design (a local check of the migration): the "
     "CUDA box runs on the CPU"),
    ("cpu", "safe unsafe", "cuda", "test_cuda_box.py::test_cuda_box_scales_the_loss",
     "--target cpu: the scaler follows the picked device, the CPU by design"),
    ("cpu", "unsafe", "cuda", "test_cuda_box.py::test_cuda_box_default_device_is_cuda",
     "--target cpu: the `--device` default is the CPU by design"),
    ("cpu", "safe unsafe", "cuda", "test_launch.py::test_cuda_box_ddp_keeps_nccl_its_gpu_and_tf32",
     "--target cpu: the process group is gloo and the device the CPU, by design"),
    ("cpu", "safe unsafe", "cuda", "test_choices.py::test_cuda_box_keeps_its_synchronize",
     "--target cpu: CUDA's synchronize becomes the CPU's by design"),
    ("cpu", "safe unsafe", "cuda", "test_choices.py::test_cuda_box_moves_the_model_to_cuda",
     "--target cpu: `.cuda()` becomes `.to(\"cpu\")` by design"),
    ("cpu", "safe unsafe", "cuda", "test_handoff.py::test_cuda_box_places_the_batch_on_cuda",
     "--target cpu: `.cuda()` becomes `.to(\"cpu\")` by design"),
    ("accelerator", "unsafe", "mps", "test_choices.py::test_settle_runs",
     "NRN110 on --target accelerator: a CUDA check stored in a flag becomes \"an accelerator is here\" "
     "(unsafe), so the MPS host synchronizes through `torch.mps`, which the simulated MPS host cannot run"),
    ("cpu", "safe unsafe", "cuda", "test_timing.py::test_cuda_box_times_with_cuda_events",
     "--target cpu: the picked device is the CPU by design, which has no events"),
    ("cpu", "safe unsafe", "cuda", "test_serving.py::test_cuda_box_embeds_a_batch",
     "--target cpu: the chosen device is the CPU by design"),
    ("cpu", "safe unsafe", "cuda", "test_checkpoint.py::test_cuda_box_saves_the_cuda_generator",
     "--target cpu: the picked device is the CPU by design, whose state is saved apart"),
    ("cpu", "safe unsafe", "cpu mps", "test_compiled.py::test_inductor_hosts_keep_autotuning_and_the_inductor_option",
     "--target cpu compiles as Neuron would, for a local check of the migration, by design: CUDA's mode "
     "and the Inductor options go"),
    ("neuron", "safe", "neuron", "test_timing.py::test_a_step_takes_some_time",
     "NRN101 (safe) picks Neuron in devices.py while the CUDA events timing.py then creates become "
     "host-aware only with --unsafe-fixes (NRN114, SRC evidence): no edit group spans two modules yet"),
    ("neuron", "safe", "neuron", "test_timing.py::test_overlapped_copy_moves_every_tensor",
     "as test_a_step_takes_some_time, for the side stream (NRN114)"),
    ("neuron", "safe", "neuron", "test_checkpoint.py::test_training_state_resumes_the_step",
     "as test_a_step_takes_some_time, for the RNG state saved for a non-CPU device (NRN112)"),
    ("accelerator", "safe unsafe", "neuron mps", "test_checkpoint.py::test_training_state_resumes_the_step",
     "NRN101 moves the device to the current accelerator while NRN112 --target accelerator only "
     "reports `torch.cuda.get_rng_state()` read as a value: the save takes CUDA's call on another accelerator"),
    ("accelerator", "safe", "neuron mps", "test_timing.py::test_a_step_takes_some_time",
     "NRN101 (safe) moves the device to the accelerator; the events become device-generic only with "
     "--unsafe-fixes (NRN114)"),
    ("accelerator", "safe", "neuron mps", "test_timing.py::test_overlapped_copy_moves_every_tensor",
     "as test_a_step_takes_some_time, for the side stream"),
    ("accelerator", "unsafe", "cuda neuron mps", "test_timing.py::test_a_step_takes_some_time",
     "NRN114 --target accelerator writes the device-generic `torch.Event`, for which the simulated "
     "hosts have no stand-in (it needs a real device)"),
    ("accelerator", "unsafe", "neuron mps", "test_timing.py::test_overlapped_copy_moves_every_tensor",
     "NRN114 --target accelerator writes `torch.Stream`, for which the simulated hosts have no stand-in"),
    ("accelerator", "unsafe", "cuda", "test_timing.py::test_cuda_box_times_with_cuda_events",
     "as test_a_step_takes_some_time"),
]
#: Goals a safe-only run of the neuron target leaves unmet by design, with why: an edit group with an
#: unsafe member is not applied by a safe-only run (keeping what worked comes before the goal).
#: Held strictly too: such a goal that passes must be removed from here.
SAFE_ONLY_UNMET_GOALS: dict[str, str] = {
    "tests/test_launch.py::test_goal_ddp_takes_the_neuron_process_group":
        "the device, its backend and `set_device` move as one edit group, unsafe (a device index is dropped)",
    "tests/test_choices.py::test_goal_requires_and_finds_the_accelerator":
        "NRN110: an assert extended to Neuron lets the code after it run there, which the rule cannot judge: unsafe",
    "tests/test_choices.py::test_goal_settles_by_flag":
        "NRN110: a check stored in a flag is extended only by an unsafe fix (what the flag switches on elsewhere "
        "is not followed)",
    "tests/test_choices.py::test_goal_doubles":
        "NRN110: `if not <check>: return x` lets the code after it run on Neuron, which returns a value the rule "
        "cannot judge: unsafe",
    "tests/test_handoff.py::test_goal_places_the_batch_on_neuron":
        "NRN110: a flag handed on to another module is extended only by an unsafe fix (what it switches "
        "on there is not followed)",
    "tests/test_timing.py::test_goal_times_with_neuron_events": "NRN114 is unsafe (SRC evidence)",
    "tests/test_timing.py::test_goal_copies_on_a_neuron_stream": "NRN114 is unsafe (SRC evidence)",
    "tests/test_checkpoint.py::test_goal_saves_and_restores_the_neuron_generator":
        "NRN112 is unsafe (SRC evidence), and its save and load are one edit group",
}
KNOWN_REGRESSIONS: dict[tuple[str, str, str, str], str] = {
    (target, fixes, host, f"tests/{test}"): why
    for targets, fixes_list, hosts, test, why in _KNOWN
    for target in targets.split()
    for fixes in fixes_list.split()
    for host in hosts.split()
}


def _tree_digest(root: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts:
            digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


@functools.cache
def _forkserver() -> multiprocessing.context.BaseContext:
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(PRELOAD)
    return context


class Runs:
    """Copies of the project (original and rewrites) and the outcomes of their suites per host,
    computed once per test process; identical trees share their runs."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.outcomes: dict[tuple[str, str], dict[str, str]] = {}
        self.logs: dict[tuple[str, str], str] = {}
        self.trees: dict[tuple[tuple[str, str] | None, str], Path] = {}

    def tree(self, variant: tuple[str, str] | None, select: str = "") -> Path:
        """The project as the variant's ``neuronize fix`` leaves it (None: the original);
        ``select`` passes ``--select`` (to find the rule behind a regression)."""
        key = (variant, select)
        if key not in self.trees:
            name = "original" if variant is None else "-".join((*variant, select)).strip("-")
            dest = self.workdir / name / PROJECT.name
            shutil.copytree(PROJECT, dest, ignore=shutil.ignore_patterns("__pycache__"))
            if variant is not None:
                target, fixes = variant
                command = [sys.executable, "-m", "neuronize", "fix", "--quiet", "--target", target]
                command += ["--unsafe-fixes"] if fixes == "unsafe" else []
                command += ["--select", select] if select else []
                done = subprocess.run([*command, str(dest)], capture_output=True, text=True, timeout=120)
                assert done.returncode in (0, 1), done.stderr
            self.trees[key] = dest
        return self.trees[key]

    def run(self, variant: tuple[str, str] | None, host: str, select: str = "") -> dict[str, str]:
        """Outcome per test id of the variant's suite on ``host``."""
        tree = self.tree(variant, select)
        key = (_tree_digest(tree), host)
        if key not in self.outcomes:
            report, log = tree.parent / f"{host}.json", tree.parent / f"{host}.log"
            process = _forkserver().Process(target=run_tests, args=(str(tree), host, str(report), str(log)))
            process.start()
            process.join(SUITE_TIMEOUT)
            if process.is_alive():
                process.kill()
                process.join()
            assert report.exists(), f"the suite did not finish on {host}:\n{log.read_text()[-4000:]}"
            self.outcomes[key] = {test: entry["outcome"] for test, entry in json.loads(report.read_text()).items()}
            self.logs[key] = log.read_text()
        return self.outcomes[key]

    def log(self, variant: tuple[str, str] | None, host: str) -> str:
        return self.logs[(_tree_digest(self.tree(variant)), host)]

    def blame(self, variant: tuple[str, str], host: str, tests: set[str]) -> dict[str, list[str]]:
        """For each test, the rules that make it regress when applied alone (``--select``)."""
        target, fixes = variant
        command = [sys.executable, "-m", "neuronize", "fix", "--diff", "--target", target, str(self.tree(None))]
        command += ["--unsafe-fixes"] if fixes == "unsafe" else []
        diff = subprocess.run(command, capture_output=True, text=True, timeout=120).stdout
        before = self.run(None, host)
        found = {rule: regressions(before, self.run(variant, host, rule), goals_must_pass=False)
                 for rule in sorted(set(RULE_IN_HUNK.findall(diff)))}
        return {test: [rule for rule, lost in found.items() if test in lost] for test in sorted(tests)}


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> Runs:
    return Runs(tmp_path_factory.mktemp("differential"))


@pytest.mark.parametrize("host", HOSTS)
def test_original_suite_is_a_fair_baseline(runs, host):
    """The original passes its whole suite on every host, except the goals on the Neuron host."""
    outcomes = runs.run(None, host)
    failed = {test for test, outcome in outcomes.items() if outcome not in ("passed", "skipped")}
    goals = {test for test in outcomes if GOAL in test}
    assert len(outcomes) > 20 and goals
    assert failed == (goals if host == "neuron" else set()), runs.log(None, host)


def regressions(before: dict[str, str], after: dict[str, str], goals_must_pass: bool) -> dict[str, str]:
    """Tests that passed before (or goals, if they must pass) and do not pass after."""
    expected = {test for test, outcome in before.items() if outcome == "passed"}
    if goals_must_pass:
        expected |= {test for test in before if GOAL in test}
    return {test: after.get(test, "not run") for test in sorted(expected) if after.get(test) != "passed"}


@pytest.mark.parametrize("host", HOSTS)
@pytest.mark.parametrize(("target", "fixes"), VARIANTS)
def test_rewrite_keeps_what_passed(runs, target, fixes, host):
    before = runs.run(None, host)
    after = runs.run((target, fixes), host)
    found = regressions(before, after, goals_must_pass=target == "neuron" and host == "neuron")
    known = {test for (t, f, h, test) in KNOWN_REGRESSIONS if (t, f, h) == (target, fixes, host)}
    if (target, fixes, host) == ("neuron", "safe", "neuron"):
        known |= set(SAFE_ONLY_UNMET_GOALS)
    unlisted = {test: outcome for test, outcome in found.items() if test not in known}
    fixed = sorted(known - set(found))
    assert not unlisted, (
        f"new regressions of --target {target} ({fixes} fixes) on the {host} host: {unlisted}\n"
        f"rules that cause them alone: {runs.blame((target, fixes), host, set(unlisted))}\n"
        + runs.log((target, fixes), host)[-6000:]
    )
    assert not fixed, f"these now pass: remove them from KNOWN_REGRESSIONS / SAFE_ONLY_UNMET_GOALS: {fixed}"


def test_regressions_script_lists_a_broken_test(tmp_path):
    """scripts/regressions.py on a two-test repository: the test the migration breaks is listed
    (a test of a float16 cast's rounding, which an unsafe fix of `--target cpu` makes bfloat16 on
    every host; the test names no float16, which would keep the cast)."""
    repo = tmp_path / "repo"
    (repo / "tests").mkdir(parents=True)
    (repo / "lib.py").write_text(
        'import torch\n\nDEVICE = "cuda" if torch.cuda.is_available() else "cpu"\n\n\n'
        "def halved(x):\n    return x.to(DEVICE).half()\n"
    )
    (repo / "tests" / "test_lib.py").write_text(
        "import torch\nfrom lib import halved\n\n\ndef test_tuned():\n"
        "    assert halved(torch.tensor([1.001])).item() == 1.0009765625\n\n\ndef test_untouched():\n    assert True\n"
    )
    env = dict(os.environ, PYTEST_DISABLE_PLUGIN_AUTOLOAD="1")  # the repository needs no plugin
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "regressions.py"), str(repo), "--target", "cpu", "--unsafe-fixes",
         "--", "-q"],
        capture_output=True, text=True, timeout=300, env=env,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "regressed: 1\n  tests.test_lib::test_tuned (failed)" in done.stdout, done.stdout
    assert ".half()" in (repo / "lib.py").read_text()  # the original is never modified
