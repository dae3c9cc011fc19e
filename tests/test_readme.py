"""The README's Quick start works as written: the user's path first, then the contributor's.

Exactly two set-up commands (install and try it; install the test dependencies and run the
suite), and every command shown is run here, except `pip install` itself (the test runs in the
environment that command made).
"""

from __future__ import annotations

import re
import shlex
import sys
from pathlib import Path

import pytest
from helpers import ROOT, neuronize, pipeline_repo

README = (ROOT / "README.md").read_text(encoding="utf-8")


def _quick_start_commands() -> list[str]:
    section = README[README.index("## Quick start\n"):README.index("## Using it\n")]
    blocks = re.findall(r"```bash\n(.*?)```", section, re.DOTALL)
    return [line.split("  #")[0].strip() for block in blocks for line in block.splitlines()
            if line.strip()]


def test_two_set_up_commands_user_first_then_contributor() -> None:
    set_up = [c for c in _quick_start_commands() if c.startswith("pip install")]
    assert set_up == [
        "pip install -e . && neuronize fix --diff --unsafe-fixes fixtures/pipeline/gpt_trainer.before.py",
        "pip install -e '.[test]' && python -m pytest",
    ]
    commands = _quick_start_commands()
    assert commands[0] == set_up[0] and commands[-1] == set_up[1]  # user first, tests last
    assert "pip install -e '.[test]'" in (ROOT / ".ci" / "run").read_text()  # CI runs the same


def test_trying_it_on_the_bundled_example_shows_a_diff() -> None:
    install, _, command = _quick_start_commands()[0].partition(" && ")
    assert install == "pip install -e ."
    argv = shlex.split(command)
    assert argv[0] == "neuronize"
    proc = neuronize(*argv[1:], cwd=ROOT)
    assert proc.returncode == 1  # a diff is pending
    # the hunks' reasons come first, as `#` lines that git apply and patch skip
    assert re.match(rb"# fixtures/pipeline/gpt_trainer.before.py, hunk \d+ \(line \d+\):\n", proc.stdout)
    assert b"\n--- a/fixtures/pipeline/gpt_trainer.before.py\n" in proc.stdout
    assert b'"neuron"' in proc.stdout


def test_running_it_on_your_repo(tmp_path: Path) -> None:
    repo = pipeline_repo(tmp_path)
    before = {p.name: p.read_bytes() for p in repo.iterdir()}
    yours = [c for c in _quick_start_commands() if "path/to/your/repo" in c]
    assert [shlex.split(c.strip("()"))[:2] for c in yours] == [
        ["neuronize", "check"], ["neuronize", "fix"], ["cd", "path/to/your/repo"], ["neuronize", "fix"]]
    for command in yours:
        if command.startswith("("):  # neuronize verify: test_verifying_your_repo (slow)
            continue
        argv = [str(repo) if a == "path/to/your/repo" else a for a in shlex.split(command)]
        proc = neuronize(*argv[1:], cwd=tmp_path)
        assert proc.returncode == 1, proc.stderr  # findings remain for a person
    after = {p.name: p.read_bytes() for p in repo.iterdir()}
    assert after != before  # the last command wrote the safe edits


def test_quick_start_states_the_python_version_and_a_virtual_environment() -> None:
    section = README[README.index("## Quick start\n"):README.index("## Using it\n")]
    required = re.search(r'requires-python = ">=(\d+\.\d+)"', (ROOT / "pyproject.toml").read_text())
    assert required is not None
    assert f"Python {required.group(1)} or later" in section
    assert "python3 -m venv .venv && . .venv/bin/activate" in section


@pytest.mark.slow
def test_verifying_your_repo(tmp_path: Path) -> None:
    """`(cd path/to/your/repo && neuronize verify -- python -m pytest)`: eight runs of pytest."""
    repo = pipeline_repo(tmp_path)
    before = {p.name: p.read_bytes() for p in repo.iterdir()}
    command = next(c for c in _quick_start_commands() if "neuronize verify" in c)
    argv = [sys.executable if a == "python" else a for a in shlex.split(command.strip("()"))[3:]]
    assert argv[:2] == ["neuronize", "verify"]
    proc = neuronize(*argv[1:], cwd=repo)
    assert proc.returncode == 0, proc.stdout + proc.stderr  # the example has no test to regress
    assert b"on 4 host(s)" in proc.stdout
    assert before == {p.name: p.read_bytes() for p in repo.iterdir()}  # your files are never changed
