#!/usr/bin/env python
"""Run a real repository's test suite before and after ``neuronize fix`` and list what regressed.

Usage::

    python scripts/regressions.py REPO [--target neuron|accelerator|cpu] [--unsafe-fixes]
        [--select CODES] [--python PYTHON] [--timeout SECONDS] [--keep DIR] [-- PYTEST_ARGS...]

REPO is a checkout of public code that you cloned and keep outside this project; it is never
modified. The script copies it (without ``.git``) to a temporary directory and there

1. runs ``PYTHON -m pytest PYTEST_ARGS`` (the *before* run; a JUnit XML report gives every test
   id its outcome),
2. writes the migration's diff to ``neuronize.diff`` (``neuronize fix --diff``) and applies it
   (``neuronize fix --target T [--unsafe-fixes] [--select CODES]``),
3. runs the same pytest command again (the *after* run),

then prints the tests that passed before and do not pass after (failed, errored, skipped or
vanished), the tests that started passing, and the counts of both runs. The exit code is 1 when
something regressed, 2 when the before run reported no test (nothing was measured), else 0.

Options:

- ``--python``: the interpreter that has the repository's dependencies (its own virtual
  environment); neuronize itself runs with the interpreter running this script.
- ``--timeout``: seconds each pytest run may take (default 900); a run cut short is interrupted
  as Ctrl-C would (pytest then writes the report of the tests it finished); the tests an *after*
  run cut short never reached are listed as not reached, not as regressions.
- ``--keep DIR``: work in DIR (created, must not exist; a relative path is taken from the current
  directory) and leave the copy, the diff and both JUnit reports there for reading.
- after ``--``: what pytest runs, e.g. ``-- tests/test_model.py -k "not gpu" -x``.
  ``-p no:cacheprovider`` is always added so that the copy stays clean.

The repository's tests should be ones that pass on a CPU-only machine: the point is the
invariant that an edit never breaks what worked (issue 11). Example::

    git clone https://github.com/karpathy/minGPT /tmp/realrepos/minGPT
    python scripts/regressions.py /tmp/realrepos/minGPT --unsafe-fixes -- tests -q
"""

from __future__ import annotations

import argparse
import shutil
import signal
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

PASSED = "passed"


def junit_outcomes(report: Path) -> dict[str, str]:
    """Outcome per test id (``classname::name``) in a pytest JUnit XML report."""
    if not report.exists():
        return {}
    outcomes = {}
    for case in ET.parse(report).getroot().iter("testcase"):
        if not case.get("name"):
            continue  # an interrupted run's report holds an unnamed case: no test of the suite
        test = f"{case.get('classname', '')}::{case.get('name', '')}"
        tags = {child.tag for child in case}
        outcome = next((tag for tag in ("error", "failure", "skipped") if tag in tags), PASSED)
        outcomes[test] = "failed" if outcome == "failure" else outcome
    return outcomes


def run_pytest(python: str, workdir: Path, args: list[str], report: Path, timeout: int
               ) -> tuple[dict[str, str], bool]:
    """The outcome of each test, and whether the run finished within ``timeout`` seconds. A run
    cut short gets SIGINT, as Ctrl-C: pytest ends the session and writes the report of what it
    finished (a kill would leave none)."""
    command = [python, "-m", "pytest", "-p", "no:cacheprovider", f"--junitxml={report}", *args]
    # SIGINT as it is at a terminal: a job a shell starts in the background inherits it ignored,
    # and Python then installs no KeyboardInterrupt for it
    proc = subprocess.Popen(command, cwd=workdir, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        proc.wait(timeout=timeout)
        return junit_outcomes(report), True
    except subprocess.TimeoutExpired:
        print(f"pytest did not finish within {timeout}s: interrupted; comparing the tests it finished",
              file=sys.stderr)
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=120)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        return junit_outcomes(report), False


def migrate(workdir: Path, options: argparse.Namespace, diff: Path) -> None:
    command = [sys.executable, "-m", "neuronize", "fix", "--quiet", "--target", options.target]
    command += ["--unsafe-fixes"] if options.unsafe_fixes else []
    command += ["--select", options.select] if options.select else []
    shown = subprocess.run([*command, "--diff", "."], cwd=workdir, capture_output=True, text=True)
    diff.write_text(shown.stdout)
    done = subprocess.run([*command, "."], cwd=workdir, capture_output=True, text=True)
    if done.returncode not in (0, 1):
        sys.exit(f"neuronize fix failed ({done.returncode}):\n{done.stderr}")


def compare(before: dict[str, str], after: dict[str, str], after_finished: bool = True
            ) -> tuple[dict[str, str], list[str], list[str]]:
    """(tests that passed before and not after, with their new outcome; tests newly passing;
    tests that passed before and that an after run cut short never reached)."""
    lost = [t for t in sorted(before) if before[t] == PASSED and after.get(t) != PASSED]
    unreached = [t for t in lost if t not in after and not after_finished]
    regressed = {t: after.get(t, "not run") for t in lost if t not in unreached}
    fixed = sorted(t for t, outcome in after.items() if outcome == PASSED and before.get(t) != PASSED)
    return regressed, fixed, unreached


def summary(outcomes: dict[str, str]) -> str:
    counts: dict[str, int] = {}
    for outcome in outcomes.values():
        counts[outcome] = counts.get(outcome, 0) + 1
    return ", ".join(f"{n} {outcome}" for outcome, n in sorted(counts.items())) or "no test reported"


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    pytest_args = argv[argv.index("--") + 1 :] if "--" in argv else []
    own = argv[: argv.index("--")] if "--" in argv else argv
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("repo", type=Path)
    parser.add_argument("--target", choices=["neuron", "accelerator", "cpu"], default="neuron")
    parser.add_argument("--unsafe-fixes", action="store_true")
    parser.add_argument("--select", default="")
    parser.add_argument("--python", default=sys.executable)
    parser.add_argument("--timeout", type=int, default=900)
    parser.add_argument("--keep", type=Path)
    options = parser.parse_args(own)

    # absolute: pytest runs in the copy, and a relative report path would land inside it
    base = (options.keep or Path(tempfile.mkdtemp(prefix="neuronize-regressions-"))).resolve()
    workdir = base / options.repo.resolve().name
    shutil.copytree(options.repo, workdir, ignore=shutil.ignore_patterns(".git"), symlinks=True)
    try:
        before, before_finished = run_pytest(options.python, workdir, pytest_args, base / "before.xml",
                                             options.timeout)
        migrate(workdir, options, base / "neuronize.diff")
        after, after_finished = run_pytest(options.python, workdir, pytest_args, base / "after.xml",
                                           options.timeout)
    finally:
        if options.keep is None:
            shutil.rmtree(base, ignore_errors=True)
    regressed, fixed, unreached = compare(before, after, after_finished)
    print(f"before: {summary(before)}{'' if before_finished else ' (cut short)'}")
    print(f"after:  {summary(after)}{'' if after_finished else ' (cut short)'}")
    if unreached:
        print(f"not reached by the after run (cut short): {len(unreached)}")
    print(f"regressed: {len(regressed)}")
    for test, outcome in regressed.items():
        print(f"  {test} ({outcome})")
    if fixed:
        print(f"now passing: {len(fixed)}")
        for test in fixed:
            print(f"  {test}")
    if not before:
        print("nothing measured: the before run reported no test", file=sys.stderr)
        return 2
    return 1 if regressed else 0


if __name__ == "__main__":
    sys.exit(main())
