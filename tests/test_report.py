"""Migration report (Markdown), SARIF 2.1.0, GitHub annotations, and the stderr summary.

Update the Markdown snapshot with ``pytest tests/test_report.py --snapshot-update`` and read the
``git diff`` of tests/snapshots/.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from conftest import ROOT
from helpers import neuronize, pipeline_repo
from neuronize import TORCHNEURON_TARGET, __version__
from neuronize.registry import all_rules
from neuronize.presenting.report import KINDS, dependency, effort, kind_of
from neuronize.transform import Finding, Safety

SNAPSHOTS = Path(__file__).parent / "snapshots"


def test_markdown_report_of_the_pipeline_fixture(tmp_path, snapshot):
    repo = pipeline_repo(tmp_path)
    proc = neuronize("report", ".", cwd=repo)
    assert proc.returncode == 0, proc.stderr
    text = proc.stdout.decode()
    snapshot.snapshot_dir = SNAPSHOTS
    snapshot.assert_match(text, "pipeline_report.md")
    assert __version__ in text and TORCHNEURON_TARGET in text
    for heading in ("## Summary", "## Edits", "## Left to do", "### Custom kernels", "### CUDA-only libraries",
                    "### Review-needed comparisons and checks", "### Effort by rule", "## Files"):
        assert heading in text, heading
    # every finding is either an edit or a leftover, each with a file:line link and its message
    check = json.loads(neuronize("check", "--output-format", "json", ".", cwd=repo).stdout)
    assert check["findings"]
    for f in check["findings"]:
        link = f"[{f['path']}:{f['line']}]({f['path']}#L{f['line']})"
        assert link in text, link
        assert " ".join(f["message"].split()).replace("|", "\\|") in text
    assert "| hard |" in text and "| optional |" in text


def test_report_writes_a_file_and_never_touches_sources(tmp_path):
    source = b"import torch\nimport apex\nm = Net().cuda()\n"
    (tmp_path / "t.py").write_bytes(source)
    proc = neuronize("report", "-o", "REPORT.md", ".", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == b""
    assert (tmp_path / "t.py").read_bytes() == source
    text = (tmp_path / "REPORT.md").read_text()
    assert text.startswith("# TorchNeuron migration report\n")
    assert "| NRN102 | `cuda-method` | safe | 1 | none |" in text
    assert "### CUDA-only libraries (1: NRN903)" in text
    # the line of the import in the file as fixed (the edit above it added lines)
    assert re.search(r"\[t\.py:(\d+)\]\(t\.py#L\1\) \| NRN903 `cuda-only-library` \| report-only \| hard \| medium \|", text)
    assert "Regenerate with `neuronize report .`" in text


def test_report_exits_2_when_a_file_fails(tmp_path):
    (tmp_path / "bad.py").write_bytes(b"x = torch.zeros(3).cuda(\n")
    proc = neuronize("report", ".", cwd=tmp_path)
    assert proc.returncode == 2
    assert "## Files that failed" in proc.stdout.decode()


def test_check_markdown_and_fix_report_file(tmp_path):
    (tmp_path / "t.py").write_bytes(b"m = Net().cuda()\nimport apex\n")
    proc = neuronize("check", "--output-format", "markdown", ".", cwd=tmp_path)
    assert proc.returncode == 1
    assert "safe fix not applied" in proc.stdout.decode()  # check never applies
    proc = neuronize("fix", "--report", "r.md", "t.py", cwd=tmp_path)
    text = (tmp_path / "r.md").read_text()
    assert "| files edited | 1 |" in text and "| edits made | 1 (1 safe) |" in text
    assert "[t.py:13](t.py#L13) NRN102 (safe)" in text  # below the `on_neuron` helper the fix added
    # the line of the import in the file as fixed (the edit above it added lines)
    assert re.search(r"\[t\.py:(\d+)\]\(t\.py#L\1\) \| NRN903 `cuda-only-library` \| report-only \| hard \| medium \|", text)


def _required_sarif_structure(log: dict) -> None:
    """What SARIF 2.1.0 requires (sarif-schema-2.1.0.json) and GitHub code scanning reads."""
    assert log["version"] == "2.1.0"
    assert log["$schema"].endswith("sarif-2.1.0.json")
    assert isinstance(log["runs"], list) and log["runs"]
    for run in log["runs"]:
        driver = run["tool"]["driver"]
        assert isinstance(driver["name"], str) and driver["name"]
        rules = driver.get("rules", [])
        ids = [r["id"] for r in rules]
        assert len(ids) == len(set(ids))
        for rule in rules:
            assert isinstance(rule["shortDescription"]["text"], str)
            assert rule["defaultConfiguration"]["level"] in ("none", "note", "warning", "error")
        for result in run["results"]:
            assert isinstance(result["message"]["text"], str) and result["message"]["text"]
            assert result["level"] in ("none", "note", "warning", "error")
            assert rules[result["ruleIndex"]]["id"] == result["ruleId"]
            for location in result["locations"]:
                physical = location["physicalLocation"]
                uri = physical["artifactLocation"]["uri"]
                assert uri and not uri.startswith("/") and "\\" not in uri and " " not in uri
                region = physical["region"]
                assert region["startLine"] >= 1 and region.get("startColumn", 1) >= 1
                assert region.get("endLine", region["startLine"]) >= region["startLine"]
                if region.get("endLine", region["startLine"]) == region["startLine"] and "endColumn" in region:
                    assert region["endColumn"] > region.get("startColumn", 1)
        for invocation in run.get("invocations", []):
            assert isinstance(invocation["executionSuccessful"], bool)


def test_sarif_has_the_required_structure(tmp_path):
    repo = pipeline_repo(tmp_path)
    proc = neuronize("check", "--output-format", "sarif", ".", cwd=repo)
    assert proc.returncode == 1
    log = json.loads(proc.stdout)
    _required_sarif_structure(log)
    results = log["runs"][0]["results"]
    assert len(results) == len(json.loads(
        neuronize("check", "--output-format", "json", ".", cwd=repo).stdout)["findings"])
    levels = {r["ruleId"]: r["level"] for r in results}
    assert levels["NRN902"] == "error" and levels["NRN101"] == "note" and levels["NRN103"] == "warning"
    # a failed file is a notification, not a crash
    other = tmp_path / "other"
    other.mkdir()
    (other / "my file.py").write_bytes(b"m = Net().cuda()\n")
    (other / "bad.py").write_bytes(b"x = y.cuda(\n")
    proc = neuronize("report", "--output-format", "sarif", ".", cwd=other)
    assert proc.returncode == 2
    log = json.loads(proc.stdout)
    _required_sarif_structure(log)
    assert log["runs"][0]["invocations"][0]["executionSuccessful"] is False
    assert log["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == \
        "my%20file.py"


def test_sarif_validates_against_the_schema_when_available():
    jsonschema = pytest.importorskip("jsonschema")
    schema_file = SNAPSHOTS / "sarif-schema-2.1.0.json"
    if not schema_file.exists():
        pytest.skip("SARIF schema not vendored")
    proc = neuronize("check", "--output-format", "sarif", "fixtures/pipeline/gpt_trainer.before.py", cwd=ROOT)
    jsonschema.validate(json.loads(proc.stdout), json.loads(schema_file.read_text()))


def test_github_annotations(tmp_path):
    (tmp_path / "a,b.py").write_bytes(b"m = Net().cuda()\nimport apex\nif resume:\n    x.cuda(1)\n")
    proc = neuronize("check", "--output-format", "github", ".", cwd=tmp_path)
    assert proc.returncode == 1
    lines = proc.stdout.decode().splitlines()
    assert lines[0].startswith("::notice file=a%2Cb.py,line=1,col=5,endLine=1,endColumn=17,")
    assert ",title=NRN102 cuda-method (safe)::" in lines[0]
    assert lines[1].startswith("::error file=a%2Cb.py,line=2,col=1,")
    assert lines[2].startswith("::warning ") and "title=NRN102 cuda-method (unsafe)" in lines[2]
    for line in lines:
        assert re.fullmatch(r"::(notice|warning|error) [^:]+::.+", line), line


def test_every_rule_has_a_kind_and_an_effort():
    keys = {k for k, _, _ in KINDS}
    for rule in all_rules():
        key, title = kind_of(rule.id)
        assert key in keys and key != "other", rule.id
        finding = Finding(1, 1, rule.id, rule.name, rule.safety, "m", rule.safety is not Safety.REPORT_ONLY)
        assert effort(finding) in ("none", "low", "medium", "high")
    assert kind_of("NRN103")[0] == "review" and kind_of("NRN909")[0] == "distributed"
    assert kind_of("NRN901")[0] == "kernels" and kind_of("NRN903")[0] == "libraries"
    assert kind_of("NRN899") == ("other", "Other")


def test_dependency_is_a_field_of_the_finding():
    from neuronize.analysis.engine import run_source

    code = b"import apex\ntry:\n    import flash_attn\nexcept ImportError:\n    flash_attn = None\nx.cuda()\n"
    found = {f.rule + ":" + str(f.line): f for f in run_source(code, all_rules(), fix=False).findings}
    assert dependency(found["NRN903:1"]) == "hard" and "(HARD dependency" in found["NRN903:1"].text
    assert dependency(found["NRN903:3"]) == "optional" and "(OPTIONAL dependency" in found["NRN903:3"].text
    assert dependency(found["NRN102:6"]) == ""


@pytest.mark.parametrize("command", [("check",), ("fix",), ("fix", "--diff")])
def test_summary_after_every_run(tmp_path, command):
    (tmp_path / "t.py").write_bytes(b"m = Net().cuda()\nif resume:\n    x.cuda(1)\nimport apex\n")
    (tmp_path / "clean.py").write_bytes(b"print(1)\n")
    (tmp_path / "bad.py").write_bytes(b"y = x.cuda(\n")
    proc = neuronize(*command, "-v", ".", cwd=tmp_path)  # check's detailed summary needs -v
    summary = proc.stderr.decode().splitlines()[-1]
    verb = "changed" if command == ("fix",) else "would change"
    if command == ("check",):  # one line: what was found, then what would change
        assert summary.startswith("Found 3 findings in 1 file (1 fixable with `neuronize fix`, 1 with "
                                  "`--unsafe-fixes`); 1 file could not be checked; 3 files checked: 1 would change"), summary
    else:
        assert summary.startswith(f"3 files checked: 1 {verb}"), summary
        assert "2 findings left (NRN102: 1, NRN903: 1)" in summary
    assert "1 unchanged, 1 failed" in summary
    if command == ("fix",):
        assert "fixes applied: 1 safe" in summary
    assert neuronize(*command, "--quiet", ".", cwd=tmp_path).stderr.decode().count("files checked") == 0


# -- a report ready for a pull request (issue 14 item 7) ----------------------------------------
#: on the neuron target `fix --unsafe-fixes` keeps lines 2-3 for CUDA hosts (line 3 below the 11-line
#: `on_neuron` helper, at 14) and lays line 4's host-aware move out over lines 15-17; on the CPU target
#: it deletes lines 2-3 and edits line 4 in place, now line 2
PR_SOURCE = (b"import torch\nfrom torch.backends import cudnn\ncudnn.benchmark = True\n"
             b"x = torch.zeros(2).cuda(); y = torch.cuda.max_memory_allocated()\n")
#: the links' tests are about addresses, not the device policy: the CPU target's one-line edits
ONE_LINE = ("--target", "cpu")


def test_fix_report_shows_each_edit_before_and_after_at_its_written_line(tmp_path):
    (tmp_path / "t.py").write_bytes(PR_SOURCE)
    proc = neuronize("fix", "--unsafe-fixes", "--report", "MIGRATION.md", "t.py", cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr  # NRN113 is left
    text = (tmp_path / "MIGRATION.md").read_text()
    # the cuDNN flag is kept for CUDA hosts: no edit, a finding left at its written line
    assert "NRN350 (unsafe)" not in text and "  -cudnn.benchmark = True\n" not in text
    assert ("| [t.py:14](t.py#L14) | NRN350 `cudnn-flag` | report-only | - | medium | `cudnn.benchmark = True` "
            "kept for CUDA hosts: a cuDNN setting, meaningless on Neuron, but harmless there,") in text
    # the host-aware move: the whole statement it became, from its first written line
    assert ("- [t.py:15](t.py#L15) NRN102 (safe): `.cuda()` -> `.to(\"neuron\" if <the accelerator is Neuron> "
            "else \"cuda\")`: CUDA hosts keep CUDA, as the program's device choice does\n  ```diff\n"
            "  -x = torch.zeros(2).cuda(); y = torch.cuda.max_memory_allocated()\n"
            "  +x = torch.zeros(2).to(\n"
            "  +    \"neuron\" if on_neuron() else \"cuda\"\n"
            "  +); y = torch.cuda.max_memory_allocated()\n  ```\n") in text
    # every evidence mark the report uses is explained in it, as `neuronize explain` explains it
    legend = text.split("## Evidence marks", 1)[1]
    for mark in ("INF", "SRC"):
        tag, meaning = neuronize("explain", mark).stdout.decode().strip().split("]: ", 1)
        assert f"- `{tag}]`: {meaning}" in legend


def test_every_evidence_mark_resolves_to_a_sentence():
    from neuronize.decision.evidence import EVIDENCE_MEANINGS
    from neuronize.types import Evidence

    assert set(EVIDENCE_MEANINGS) == {e.value for e in Evidence}
    for mark in EVIDENCE_MEANINGS:
        proc = neuronize("explain", mark.lower())
        assert proc.returncode == 0 and proc.stdout.decode().startswith(f"[evidence: {mark}]: ")
    explained = neuronize("explain", "NRN350").stdout.decode()
    assert f"Evidence INF: {EVIDENCE_MEANINGS['INF']}" in explained


def test_link_base_makes_links_absolute(tmp_path):
    (tmp_path / "t.py").write_bytes(PR_SOURCE)
    proc = neuronize("report", "--unsafe-fixes", "--link-base", "https://example.org/acme/train/blob/main",
                     "t.py", cwd=tmp_path)
    assert "[t.py:4](https://example.org/acme/train/blob/main/t.py#L4) NRN102" in proc.stdout.decode()


def _git(cwd, *args: str) -> str:
    import subprocess

    env = {"GIT_AUTHOR_NAME": "a", "GIT_AUTHOR_EMAIL": "a@b", "GIT_COMMITTER_NAME": "a",
           "GIT_COMMITTER_EMAIL": "a@b", "PATH": __import__("os").environ["PATH"]}
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True,
                          text=True).stdout.strip()


@pytest.mark.skipif(__import__("shutil").which("git") is None, reason="needs git")
def test_links_follow_the_git_remote_commit_and_branch(tmp_path):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "t.py").write_bytes(PR_SOURCE)
    _git(tmp_path, "init", "-q", "-b", "migrate")
    _git(tmp_path, "remote", "add", "origin", "git@github.com:acme/train.git")
    _git(tmp_path, "add", ".")
    _git(tmp_path, "commit", "-q", "-m", "start")
    sha = _git(tmp_path, "rev-parse", "HEAD")
    base = "https://github.com/acme/train/blob"
    # `report` reads the commit: links at that commit, paths from the repository's top
    text = neuronize("report", "--unsafe-fixes", *ONE_LINE, ".", cwd=tmp_path / "src").stdout.decode()
    assert f"[t.py:4]({base}/{sha}/src/t.py#L4) NRN102" in text
    relative = neuronize("report", "--link-base", "none", *ONE_LINE, ".", cwd=tmp_path / "src").stdout.decode()
    assert "[t.py:4](t.py#L4)" in relative
    # `fix --report`: the lines as written, on the branch the edits will be pushed on
    neuronize("fix", "--unsafe-fixes", *ONE_LINE, "--report", "../MIGRATION.md", ".", cwd=tmp_path / "src")
    text = (tmp_path / "MIGRATION.md").read_text()
    assert f"[t.py:2]({base}/migrate/src/t.py#L2) NRN102" in text


@pytest.mark.parametrize(("remote", "web"), [
    ("git@github.com:acme/train.git", ("https://github.com/acme/train", "github")),
    ("https://github.com/acme/train", ("https://github.com/acme/train", "github")),
    ("ssh://git@gitlab.com:2222/group/sub/train.git", ("https://gitlab.com/group/sub/train", "gitlab")),
    ("https://user@bitbucket.org/acme/train.git", ("https://bitbucket.org/acme/train", "bitbucket")),
    ("/srv/git/train.git", None),
    ("git@example.com:acme/train.git", None),
])
def test_web_address_of_a_remote(remote, web):
    from neuronize.presenting.links import web_address

    assert web_address(remote) == web
