"""The flags ruff users reach for, and the human output formats, used as a person types them.

Colour and the default format on a terminal are checked in a real pseudo-terminal (pexpect);
everything else through the console entry point (``helpers.neuronize``).
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import pytest

from helpers import neuronize

CUDA = b"import torch\nmodel = Net().cuda()\nx.half()\nimport apex\n"
CLEAN = b"print(1)\n"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    (tmp_path / "train.py").write_bytes(CUDA)
    (tmp_path / "clean.py").write_bytes(CLEAN)
    return tmp_path


def _out(proc) -> str:  # type: ignore[no-untyped-def]
    return proc.stdout.decode()


def _err(proc) -> str:  # type: ignore[no-untyped-def]
    return proc.stderr.decode()


# -- check --fix / --diff, --fix-only ---------------------------------------------------------------

def test_check_fix_is_fix(repo: Path, tmp_path_factory) -> None:
    twin = tmp_path_factory.mktemp("twin")
    (twin / "train.py").write_bytes(CUDA)
    (twin / "clean.py").write_bytes(CLEAN)
    via_check = neuronize("check", "--fix", ".", cwd=repo)
    via_fix = neuronize("fix", ".", cwd=twin)
    assert (via_check.returncode, via_check.stdout, via_check.stderr) == (
        via_fix.returncode, via_fix.stdout, via_fix.stderr)
    assert (repo / "train.py").read_bytes() == (twin / "train.py").read_bytes() != CUDA


def test_check_diff_is_fix_diff(repo: Path) -> None:
    via_check = neuronize("check", "--diff", ".", cwd=repo)
    via_fix = neuronize("fix", "--diff", ".", cwd=repo)
    assert via_check.returncode == via_fix.returncode == 1
    assert via_check.stdout == via_fix.stdout
    assert b"+model = Net().to(" in via_check.stdout
    assert (repo / "train.py").read_bytes() == CUDA


def test_fix_only_lists_nothing_and_exits_0(repo: Path) -> None:
    proc = neuronize("check", "--fix-only", ".", cwd=repo)
    assert proc.returncode == 0, _err(proc)
    assert _out(proc) == ""
    assert b".to(" in (repo / "train.py").read_bytes()  # the safe fix was applied


def test_exit_non_zero_on_fix(repo: Path) -> None:
    (repo / "train.py").write_bytes(b"import torch\nmodel = Net().cuda()\n")
    assert neuronize("fix", "--exit-non-zero-on-fix", ".", cwd=repo).returncode == 1
    assert b".to(" in (repo / "train.py").read_bytes()
    # nothing left to change: 0 again
    assert neuronize("fix", "--exit-non-zero-on-fix", ".", cwd=repo).returncode == 0
    (repo / "train.py").write_bytes(b"import torch\nmodel = Net().cuda()\n")
    assert neuronize("fix", ".", cwd=repo).returncode == 0  # without the flag: nothing left, 0
    (repo / "train.py").write_bytes(b"import torch\nmodel = Net().cuda()\n")
    assert neuronize("check", "--fix-only", "--exit-non-zero-on-fix", ".", cwd=repo).returncode == 1


def test_exit_zero_keeps_errors_at_2(repo: Path) -> None:
    assert neuronize("check", "--exit-zero", ".", cwd=repo).returncode == 0
    (repo / "broken.py").write_bytes(b"x = y.cuda(\n")
    assert neuronize("check", "--exit-zero", ".", cwd=repo).returncode == 2


def test_extend_select_adds_to_the_configured_selection(repo: Path) -> None:
    (repo / "pyproject.toml").write_text('[tool.neuronize]\nselect = ["NRN102"]\n')
    rules = {line.split()[1] for line in _out(neuronize("check", ".", cwd=repo)).splitlines()}
    assert rules == {"NRN102"}
    extended = neuronize("check", "--extend-select", "NRN903,NRN205", ".", cwd=repo)
    assert {line.split()[1] for line in _out(extended).splitlines()} == {"NRN102", "NRN205", "NRN903"}


# -- statistics, summary, verbose -------------------------------------------------------------------

def test_statistics_counts_by_rule(repo: Path) -> None:
    (repo / "more.py").write_bytes(b"import torch\na = m.cuda()\nb = m.cuda()\n")
    proc = neuronize("check", "--statistics", ".", cwd=repo)
    assert proc.returncode == 1
    assert _out(proc).splitlines() == [
        "3  NRN102  [*] cuda-method           3 fixable",
        "1  NRN205  [-] half-precision-model  1 with --unsafe-fixes",
        "1  NRN903  [ ] cuda-only-library     1 not fixable",
    ]
    unsafe = neuronize("check", "--statistics", "--unsafe-fixes", ".", cwd=repo)
    assert "1  NRN205  [*] half-precision-model  1 fixable" in _out(unsafe).splitlines()


def test_check_summary_is_one_short_line(repo: Path) -> None:
    proc = neuronize("check", ".", cwd=repo)
    assert _err(proc) == ("Found 3 findings in 1 file (1 fixable with `neuronize fix`, "
                          "1 with `--unsafe-fixes`).\n")
    (repo / "train.py").write_bytes(CLEAN)
    assert _err(neuronize("check", ".", cwd=repo)) == "All checks passed: no CUDA-specific code found.\n"
    assert _err(neuronize("check", "-q", ".", cwd=repo)) == ""


def test_verbose_adds_the_detailed_summary(repo: Path) -> None:
    err = _err(neuronize("check", "-v", ".", cwd=repo))
    assert "neuronize: 2 files found, 1 without CUDA-specific tokens (not parsed)\n" in err
    assert err.splitlines()[-1].endswith("; 2 files checked: 1 would change, 1 unchanged, 0 failed.")


@pytest.mark.parametrize("setup", ["empty", "excluded", "excluded-file"])
def test_nothing_to_check_says_so(tmp_path: Path, setup: str) -> None:
    folder = tmp_path / "src"
    folder.mkdir()
    args = ["check", "src"]
    if setup != "empty":
        (folder / "m.py").write_bytes(CUDA)
        (tmp_path / "pyproject.toml").write_text('[tool.neuronize]\nextend-exclude = ["src/"]\n')
    if setup == "excluded-file":
        args = ["check", "--force-exclude", "src/m.py"]
    proc = neuronize(*args, cwd=tmp_path)
    assert proc.returncode == 0
    expected = {
        "empty": "neuronize: warning: no Python files or notebooks found in src; nothing checked\n",
        "excluded": "neuronize: warning: no file to check in src: every Python file there is "
                    "excluded",
        "excluded-file": "neuronize: warning: src/m.py is excluded by the configuration "
                         "(--force-exclude); nothing checked\n",
    }[setup]
    assert _err(proc).startswith(expected), _err(proc)


# -- formats ---------------------------------------------------------------------------------------

def test_concise_is_the_default_off_a_terminal(repo: Path) -> None:
    default = neuronize("check", ".", cwd=repo)
    assert default.stdout == neuronize("check", "--output-format", "concise", ".", cwd=repo).stdout
    assert default.stdout == neuronize("check", "--output-format", "text", ".", cwd=repo).stdout
    assert _out(default).splitlines()[0].startswith("train.py:2:9 NRN102 [safe fix] ")


def test_full_format_shows_the_line_and_a_caret(repo: Path) -> None:
    (repo / "tabs.py").write_bytes(b"import torch\nif ok:\n\tm = net.cuda()  # one tab\n"
                                   b"y = call(\n    torch.cuda.memory_allocated(\n        0))\n")
    proc = neuronize("check", "--output-format", "full", "tabs.py", cwd=repo)
    out = _out(proc)
    assert "\x1b[" not in out  # NO_COLOR, and not a terminal
    assert out.startswith(
        "NRN102 [safe fix] `.cuda()` -> `.to(\"neuron\" if <the accelerator is Neuron> else \"cuda\")`: "
        "CUDA hosts keep CUDA, as the program's device choice does\n"
        "  --> tabs.py:3:6\n"
        "  |\n"
        "3 |         m = net.cuda()  # one tab\n"
        "  |             ^^^^^^^^^^\n"
        "  |\n"
        "\n"), out
    assert ("  --> tabs.py:5:5\n"
            "  |\n"
            "5 |     torch.cuda.memory_allocated(\n"
            "  |     ^^^^^^^^^^^^^^^^^^^^^^^^^^^^\n"
            "6 |         0))\n"
            "  |         ^^\n"
            "  |\n") in out


def test_full_format_in_a_notebook_shows_the_cell_line(tmp_path: Path) -> None:
    import json

    cell = {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
            "source": ["import torch\n", "m = net.cuda()\n"]}
    notebook = {"cells": [{"cell_type": "markdown", "metadata": {}, "source": ["# t"]}, cell],
                "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    (tmp_path / "nb.ipynb").write_text(json.dumps(notebook))
    out = _out(neuronize("check", "--output-format", "full", "nb.ipynb", cwd=tmp_path))
    assert "  --> nb.ipynb:cell 2:2:5\n  |\n2 | m = net.cuda()\n  |     ^^^^^^^^^^\n" in out


@pytest.mark.parametrize(("choice", "env", "coloured"), [
    ("always", {}, True),
    ("never", {"FORCE_COLOR": "1"}, False),
    ("auto", {"FORCE_COLOR": "1"}, True),  # FORCE_COLOR wins over the NO_COLOR the helper sets
    ("auto", {}, False),  # NO_COLOR (set by the helper), and not a terminal
])
def test_color_choice(repo: Path, choice: str, env: dict[str, str], coloured: bool) -> None:
    proc = neuronize("check", "--output-format", "full", "--color", choice, ".", cwd=repo, env=env)
    assert ("\x1b[31;1mNRN102\x1b[0m" in _out(proc)) is coloured
    diff = neuronize("fix", "--diff", "--color", choice, ".", cwd=repo, env=env)
    assert ("\x1b[" in _out(diff)) is coloured


# -- a real terminal ------------------------------------------------------------------------------

pexpect = pytest.importorskip("pexpect")
ANSI = re.compile(r"\x1b\[[0-9;]*m")


def _terminal(args: list[str], cwd: Path, env: dict[str, str]) -> str:
    full_env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR")}
    child = pexpect.spawn(sys.executable, ["-m", "neuronize", *args], cwd=str(cwd),
                          env={**full_env, **env}, encoding="utf-8", timeout=120,
                          dimensions=(50, 200))
    child.expect(pexpect.EOF)
    child.close()
    return child.before.replace("\r\n", "\n")


@pytest.mark.slow
def test_a_terminal_gets_the_full_format_in_colour(repo: Path) -> None:
    shown = _terminal(["check", "train.py"], repo, {})
    assert "\x1b[31;1mNRN102\x1b[0m \x1b[36m[safe fix]\x1b[0m" in shown
    plain = ANSI.sub("", shown)
    assert "  --> train.py:2:9\n  |\n2 | model = Net().cuda()\n  |         ^^^^^^^^^^^^\n" in plain
    assert plain.rstrip().endswith("Found 3 findings in 1 file (1 fixable with `neuronize fix`, "
                                   "1 with `--unsafe-fixes`).")
    no_colour = _terminal(["check", "train.py"], repo, {"NO_COLOR": "1"})
    assert "\x1b[" not in no_colour and "2 | model = Net().cuda()" in no_colour
    concise = _terminal(["check", "--output-format", "concise", "--color", "never", "train.py"],
                        repo, {})
    assert concise.startswith("train.py:2:9 NRN102 [safe fix] ")
