"""The command line as people and other tools use it: exit codes, output contracts, options."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from helpers import neuronize, neuronize_process

#: a safe edit, and an unsafe one in a branch of its own (its tensors meet no others there)
CUDA_SCRIPT = b'import torch\nmodel = Net().cuda()\nif resume:\n    batch = batch.cuda(3)\n'
CLEAN_SCRIPT = b'import torch\nprint("no device code here")\n'
#: what `fix` puts above the first host-aware edit: the file keeps its CUDA hosts on the neuron target
ON_NEURON = (b'import torch\n\n\ndef on_neuron() -> bool:\n'
             b'    """True on an AWS Trainium (Neuron) device, False elsewhere."""\n'
             b'    return (\n        hasattr(torch, "accelerator")\n        and torch.accelerator.is_available()\n'
             b'        and torch.accelerator.current_accelerator().type == "neuron"\n    )\n\n\n')
#: CUDA_SCRIPT after its safe fix: `.cuda()` is host-aware, `.cuda(3)` (unsafe) is left
SAFE_FIXED = ON_NEURON + b'model = Net().to("neuron" if on_neuron() else "cuda")\nif resume:\n    batch = batch.cuda(3)\n'


@pytest.fixture
def repo(tmp_path):
    (tmp_path / "train.py").write_bytes(CUDA_SCRIPT)
    (tmp_path / "clean.py").write_bytes(CLEAN_SCRIPT)
    return tmp_path


def test_check_reports_and_exits_1_without_writing(repo):
    proc = neuronize("check", ".", cwd=repo)
    assert proc.returncode == 1
    out = proc.stdout.decode()
    assert "train.py:2:9 NRN102" in out
    assert "train.py:4:13 NRN102" in out
    assert (repo / "train.py").read_bytes() == CUDA_SCRIPT
    assert proc.stderr.decode() == (
        "Found 2 findings in 1 file (1 fixable with `neuronize fix`, 1 with `--unsafe-fixes`).\n")


def test_a_real_process_says_exactly_what_the_in_process_run_says(repo):
    """The tests run the command line in this process (``helpers.neuronize``); the console entry
    point as a new process gives the same exit code and the same bytes on stdout and stderr."""
    for args, stdin in [(("check", "."), None), (("fix", "-", "--stdin-filename", "x.py"), CUDA_SCRIPT)]:
        here = neuronize(*args, cwd=repo, stdin=stdin)
        real = neuronize_process(*args, cwd=repo, stdin=stdin)
        assert (real.returncode, real.stdout, real.stderr) == (here.returncode, here.stdout, here.stderr)


def test_check_clean_tree_exits_0(tmp_path):
    (tmp_path / "clean.py").write_bytes(CLEAN_SCRIPT)
    proc = neuronize("check", str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == b""


def test_no_path_means_current_directory(repo):
    proc = neuronize("check", cwd=repo)
    assert proc.returncode == 1
    assert b"train.py:2:9" in proc.stdout


def test_json_contract(repo):
    proc = neuronize("check", "--output-format", "json", "train.py", "missing.py", cwd=repo)
    assert proc.returncode == 2
    data = json.loads(proc.stdout)
    assert {"findings", "errors"} <= set(data)
    first = data["findings"][0]
    for key, kind in [("path", str), ("line", int), ("column", int), ("rule", str), ("name", str),
                      ("safety", str), ("fixable", bool), ("message", str)]:
        assert isinstance(first[key], kind), key
    assert first["path"] == "train.py"
    assert (first["line"], first["column"]) == (2, 9)
    assert {f["safety"] for f in data["findings"]} <= {"safe", "unsafe", "report-only"}
    assert data["errors"] == [{"path": "missing.py", "message": "no such file or directory"}]


def test_fix_applies_safe_fixes_only_and_exits_1_while_findings_remain(repo):
    proc = neuronize("fix", ".", cwd=repo)
    assert proc.returncode == 1
    assert (repo / "train.py").read_bytes() == SAFE_FIXED
    assert b"NRN102 [unsafe fix]" in proc.stdout


def test_fix_with_unsafe_fixes_leaves_nothing_and_exits_0(repo):
    proc = neuronize("fix", "--unsafe-fixes", ".", cwd=repo)
    assert proc.returncode == 0, proc.stderr
    # nothing is left to do; the CUDA calls stay only as the CUDA hosts' arms
    assert (repo / "train.py").read_bytes() == ON_NEURON + (
        b'model = Net().to("neuron" if on_neuron() else "cuda")\n'
        b'if resume:\n    batch = batch.to("neuron") if on_neuron() else batch.cuda(3)\n')
    assert neuronize("check", ".", cwd=repo).returncode == 0


def test_fix_lists_no_fix_inside_code_another_fix_rewrote(tmp_path):
    # the choice gains a Neuron arm and its CUDA arm stays for CUDA hosts: the `.cuda()` there is
    # no fix left to make (a second run has none), so `fix` says nothing is left and exits 0
    (tmp_path / "t.py").write_bytes(b"import torch\nmodel = model.cuda() if torch.cuda.is_available() else model\n")
    proc = neuronize("fix", "t.py", cwd=tmp_path)
    assert proc.returncode == 0 and b"NRN102" not in proc.stdout, proc.stdout
    assert b"model.cuda()" in (tmp_path / "t.py").read_bytes()
    assert neuronize("fix", "t.py", cwd=tmp_path).returncode == 0


def test_fix_diff_writes_nothing_and_git_applies(repo):
    if shutil.which("git") is None:
        pytest.skip("git not installed")
    proc = neuronize("fix", "--diff", "--unsafe-fixes", ".", cwd=repo)
    assert proc.returncode == 1
    assert (repo / "train.py").read_bytes() == CUDA_SCRIPT
    assert b"\n--- a/train.py\n+++ b/train.py\n" in proc.stdout  # after the reasons (a preamble)
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    subprocess.run(["git", "apply", "--check", "-"], cwd=repo, input=proc.stdout, check=True)
    subprocess.run(["git", "apply", "-"], cwd=repo, input=proc.stdout, check=True)
    assert neuronize("check", ".", cwd=repo).returncode == 0


def test_fix_diff_of_clean_tree_exits_0(tmp_path):
    (tmp_path / "clean.py").write_bytes(CLEAN_SCRIPT)
    proc = neuronize("fix", "--diff", str(tmp_path))
    assert proc.returncode == 0
    assert proc.stdout == b""


@pytest.mark.parametrize("option", [("--select", "NRN9"), ("--ignore", "cuda-method"), ("--ignore", "NRN102")])
def test_select_and_ignore(repo, option):
    proc = neuronize("check", *option, ".", cwd=repo)
    assert b"NRN102" not in proc.stdout


def test_select_by_name_and_prefix(repo):
    for code in ("cuda-method", "NRN1", "nrn102"):
        assert b"NRN102" in neuronize("check", "--select", code, ".", cwd=repo).stdout


def test_unknown_rule_is_an_error(repo):
    proc = neuronize("check", "--select", "NRN999x", ".", cwd=repo)
    assert proc.returncode == 2
    assert b"NRN999x" in proc.stderr


def test_bad_option_exits_2(repo):
    assert neuronize("check", "--no-such-option", cwd=repo).returncode == 2


def test_syntax_error_is_one_line_and_other_files_still_processed(repo):
    (repo / "broken.py").write_bytes(b"import torch\nx = torch.zeros(3).cuda(\n")
    proc = neuronize("fix", ".", cwd=repo)
    assert proc.returncode == 2
    err = proc.stderr.decode()
    [line] = [l for l in err.splitlines() if "broken.py" in l]
    assert line.startswith("error: broken.py:")
    assert "Traceback" not in err
    assert (repo / "train.py").read_bytes() == SAFE_FIXED


def test_binary_and_undecodable_files(repo):
    (repo / "blob.py").write_bytes(b"cuda\x00\x01\x02")
    (repo / "latin.py").write_bytes(b"x = '\xe9'.cuda()\n")
    proc = neuronize("check", ".", cwd=repo)
    assert proc.returncode == 2
    err = proc.stderr.decode()
    assert "error: blob.py: binary file" in err
    assert "error: latin.py:1" in err
    assert "Traceback" not in err
    assert b"train.py:2:9" in proc.stdout


def test_stdin_fix_writes_result_to_stdout(repo):
    proc = neuronize("fix", "-", "--stdin-filename", "x.py", stdin=CUDA_SCRIPT)
    assert proc.stdout == SAFE_FIXED
    assert b"x.py:4:13 NRN102" in proc.stderr
    assert proc.returncode == 1


def test_rules_and_explain():
    listing = neuronize("rules").stdout.decode()
    assert "NRN102" in listing and "cuda-method" in listing
    doc = neuronize("explain", "NRN102").stdout.decode()
    for heading in ("What it does", "Why on TorchNeuron", "Fix safety", "Evidence"):
        assert heading in doc
    assert neuronize("explain", "NRN000").returncode == 2


def test_version():
    from neuronize.sources.config import tomllib

    from helpers import ROOT
    from neuronize import __version__

    proc = neuronize("--version")
    assert proc.returncode == 0
    assert __version__.encode() in proc.stdout
    # one version: the package's and the distribution's (pyproject.toml) agree
    assert tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"] == __version__


def test_result_cache_is_used_and_bypassed(repo, tmp_path_factory):
    cache = tmp_path_factory.mktemp("cache")
    env = {"NEURONIZE_CACHE_DIR": str(cache)}
    assert neuronize("check", "--no-cache", ".", cwd=repo, env=env).returncode == 1
    assert not any(cache.iterdir())
    first = neuronize("check", ".", cwd=repo, env=env)

    def results() -> list[Path]:  # the rule index (rules-*.json) and the project's facts are kept beside them
        return [e for e in cache.rglob("*.json") if not e.name.startswith("rules-") and e.parent.name != "facts"]

    assert len(results()) == 2  # train.py, and that clean.py has no candidate token
    again = neuronize("check", ".", cwd=repo, env=env)
    assert again.stdout == first.stdout and again.returncode == first.returncode == 1
    # another rule selection, other options or other bytes: other entries, never a stale answer
    neuronize("check", "--select", "NRN102", ".", cwd=repo, env=env)
    neuronize("check", "--unsafe-fixes", ".", cwd=repo, env=env)
    (repo / "train.py").write_bytes(CLEAN_SCRIPT + b"x.cuda()\n")
    changed = neuronize("check", ".", cwd=repo, env=env)
    assert len(results()) == 7  # two per run, and the changed train.py
    assert b"train.py:3:1 NRN102" in changed.stdout
