"""Explained diffs: every hunk header names its findings, and the output still applies."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from helpers import neuronize
from neuronize.presenting.diff import Style, unified_diff, wants_color
from neuronize.presenting.hunks import findings_touching, import_names
from neuronize.transform import Finding, Safety

TWO_PLACES = (
    b"import torch.nn as nn\n"
    + b"".join(b"w%d = %d\n" % (i, i) for i in range(10))
    + b"model = Net().cuda()\n"
    + b"".join(b"x%d = %d\n" % (i, i) for i in range(12))
    + b"y = x.half()\n"
)
#: the CPU target makes `.cuda()` a one-line edit whose short reason fits its hunk's header (on the
#: neuron target the move is host-aware and its helper joins the imports' hunk): headers are the subject
ONE_LINE = ("--target", "cpu")


def _finding(line: int, rule: str = "NRN102", safety: Safety = Safety.SAFE, applied: bool = True,
             message: str = "why") -> Finding:
    return Finding(line=line, column=1, rule=rule, name="n", safety=safety, message=message,
                   fixable=True, end_line=line, end_column=5, applied=applied)


def _git_apply(cwd, patch: bytes) -> None:
    subprocess.run(["git", "init", "-q"], cwd=cwd, check=True)
    subprocess.run(["git", "apply", "--check", "-"], cwd=cwd, input=patch, check=True)
    subprocess.run(["git", "apply", "-"], cwd=cwd, input=patch, check=True)


def test_each_hunk_header_names_rule_safety_and_reason(tmp_path):
    (tmp_path / "t.py").write_bytes(TWO_PLACES)
    proc = neuronize("fix", "--diff", "--unsafe-fixes", *ONE_LINE, "t.py", cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    headers = [l for l in proc.stdout.decode().splitlines() if l.startswith("@@")]
    assert len(headers) == 3, headers  # the import the engine adds, .cuda(), the .half() call
    assert re.match(r"@@ -1,\d+ \+1,\d+ @@ \[imports\] adds `torch` for the edits", headers[0])
    assert "[NRN102 safe] " in headers[1] and "NRN205" not in headers[1]
    assert "[NRN205 unsafe]" in headers[2]
    assert all(len(h) <= 100 for h in headers)
    # a reason too long for the header is in full before the file's `---` line
    preamble = proc.stdout.decode().split("--- a/t.py")[0]
    assert "# t.py, hunk 3 (line 22):\n#   [NRN205 unsafe] " in preamble and "[evidence: INF]" in preamble


@pytest.mark.skipif(shutil.which("git") is None or shutil.which("patch") is None, reason="needs git and patch")
def test_long_reasons_leave_headers_short_and_the_diff_applies(tmp_path):
    straddle = (b"import torch\nwith torch.autocast(\"cuda\",\n"
                b"                    dtype=torch.float16, enabled=x.cuda().is_cuda):\n    y = model(x)\n")
    for tool in ("git", "patch"):
        work = tmp_path / tool
        (work / "pkg").mkdir(parents=True)
        (work / "t.py").write_bytes(TWO_PLACES)
        (work / "pkg" / "s.py").write_bytes(straddle)
        (work / "ruff.toml").write_text("line-length = 120\n")  # the straddling layout stays as it is
        # on the CPU target the straddling layout is kept (a host-aware edit lays the statement out anew)
        proc = neuronize("fix", "--diff", "--unsafe-fixes", *ONE_LINE, ".", cwd=work)
        text = proc.stdout.decode()
        assert all(len(line) <= 100 for line in text.splitlines() if line.startswith(("@@", "#")))
        assert "@@ -1,4 +1,4 @@ [NRN201 safe] [NRN102 safe] [NRN104 unsafe]\n" in text
        assert "#   [NRN104 unsafe] `x.cuda().is_cuda` -> " in text  # the reason, in the preamble
        if tool == "git":
            subprocess.run(["git", "init", "-q"], cwd=work, check=True)
            subprocess.run(["git", "apply", "--check", "-"], cwd=work, input=proc.stdout, check=True)
            subprocess.run(["git", "apply", "-"], cwd=work, input=proc.stdout, check=True)
        else:
            subprocess.run(["patch", "-p1", "--dry-run", "--quiet"], cwd=work, input=proc.stdout, check=True)
            subprocess.run(["patch", "-p1", "--quiet"], cwd=work, input=proc.stdout, check=True)
        assert neuronize("fix", "--diff", "--unsafe-fixes", *ONE_LINE, ".", cwd=work).stdout == b""


@pytest.mark.skipif(shutil.which("git") is None or shutil.which("patch") is None, reason="needs git and patch")
@pytest.mark.parametrize("newline", [b"\n", b"\r\n"], ids=["lf", "crlf"])
@pytest.mark.parametrize("final_newline", [True, False], ids=["final-newline", "no-final-newline"])
def test_annotated_diff_applies_with_git_and_patch(tmp_path, newline, final_newline):
    source = TWO_PLACES.replace(b"\n", newline)
    if not final_newline:
        source = source[: -len(newline)]
    for tool in ("git", "patch"):
        work = tmp_path / tool
        work.mkdir()
        (work / "t.py").write_bytes(source)
        proc = neuronize("fix", "--diff", "--unsafe-fixes", "t.py", cwd=work)
        # the host-aware move's reason is too long for its header: it is in the preamble
        assert b" @@ [NRN102 safe]\n" in proc.stdout and b"#   [NRN102 safe] `.cuda()` -> " in proc.stdout, proc.stdout
        if tool == "git":
            _git_apply(work, proc.stdout)
        else:
            subprocess.run(["patch", "-p1", "--quiet"], cwd=work, input=proc.stdout, check=True)
        fixed = (work / "t.py").read_bytes()
        assert neuronize("check", "--select", "NRN102,NRN113", "t.py", cwd=work).returncode == 0
        assert fixed.endswith(newline) == final_newline
        assert (b"\r\n" in fixed) == (newline == b"\r\n")


def test_findings_touching_replacements_and_insertions():
    f3, f5 = _finding(3), _finding(5)
    assert findings_touching([f3, f5], 2, 3) == [f3]  # old line 3 replaced
    assert findings_touching([f3, f5], 3, 3) == [f3]  # inserted after line 3
    assert findings_touching([f3, f5], 4, 4) == [f5]  # inserted between lines 4 and 5
    assert findings_touching([f3, f5], 5, 7) == []


def test_annotation_lists_only_applied_findings_in_the_hunk():
    before = b"a = 1\nb = 2\nc = 3\n"
    after = b"a = 1\nb = 20\nc = 3\n"
    findings = [_finding(2, message="b -> 20"), _finding(2, rule="NRN999", applied=False)]
    diff = unified_diff("m.py", before, after, findings=findings)
    assert diff.splitlines()[2] == "@@ -1,3 +1,3 @@ [NRN102 safe] b -> 20"


def test_unannotated_diff_is_the_plain_unified_diff():
    before, after = b"a\nb\n", b"a\nc\n"
    assert unified_diff("m.py", before, after) == "--- a/m.py\n+++ b/m.py\n@@ -1,2 +1,2 @@\n a\n-b\n+c\n"
    assert unified_diff("m.py", before, before) == ""


def test_import_names():
    assert import_names("import torch_neuronx\nfrom a.b import c as d, e\nimport x.y\n") == [
        "torch_neuronx", "d", "e", "x"]
    assert import_names("    import torch_neuronx\n") == ["torch_neuronx"]
    assert import_names("from a import (b,\n") == []


def test_colour_only_when_asked(monkeypatch):
    class Tty:
        def isatty(self) -> bool:
            return True

    monkeypatch.delenv("NO_COLOR", raising=False)
    assert wants_color(Tty()) is True
    assert wants_color(Tty(), "never") is False
    monkeypatch.setenv("NO_COLOR", "1")
    assert wants_color(Tty()) is False
    monkeypatch.delenv("NO_COLOR")
    assert wants_color(open(__file__)) is False  # not a terminal
    coloured = unified_diff("m.py", b"a\n", b"b\n", findings=[_finding(1)], style=Style(True))
    assert "\x1b[31m-a\x1b[0m\n" in coloured and "\x1b[32m+b\x1b[0m\n" in coloured
    assert "\x1b[33m[NRN102 safe] why\x1b[0m" in coloured


def test_piped_diff_has_no_colour(tmp_path):
    (tmp_path / "t.py").write_bytes(TWO_PLACES)
    proc = neuronize("fix", "--diff", "t.py", cwd=tmp_path, env={"NO_COLOR": ""})
    assert b"\x1b[" not in proc.stdout and b"@@ -9,7 +21,7 @@ [NRN102 safe]" in proc.stdout  # below the helper
