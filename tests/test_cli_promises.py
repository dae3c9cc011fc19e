"""What the command line promises a ruff user, checked the way a person meets it (the CLI run
in-process through its console entry point): statistics that add up, an ignored rule that stays
silent, one summary worded for its command, and the small things a user notices."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from helpers import neuronize

#: NRN102: two safe `.cuda()` and one unsafe `.cuda(3)`; NRN205: one unsafe `.half()`
MIXED = b"import torch\nmodel = Net().cuda()\ny = x.cuda()\nif resume:\n    batch = batch.cuda(3)\nmodel.half()\n"
#: a CUDA-kernel file: its NRN102 `.cuda()` is report-only
KERNEL = b"import torch\nimport pycuda.autoinit\nz = w.cuda()\n"


def _out(proc) -> str:  # type: ignore[no-untyped-def]
    return proc.stdout.decode()


def _err(proc) -> str:  # type: ignore[no-untyped-def]
    return proc.stderr.decode()


# -- 3: --statistics ----------------------------------------------------------------------------
def test_statistics_say_how_many_each_way_and_add_up_to_the_summary(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_bytes(MIXED)
    (tmp_path / "kernel.py").write_bytes(KERNEL)
    proc = neuronize("check", "--no-cache", "--statistics", ".", cwd=tmp_path)
    rows = _out(proc).splitlines()
    assert rows[0].split() == ["4", "NRN102", "[-]", "cuda-method", "2", "fixable,", "1", "with",
                               "--unsafe-fixes,", "1", "not", "fixable"]
    assert "1  NRN205  [-] half-precision-model" in rows[1] and rows[1].endswith("1 with --unsafe-fixes")
    assert rows[2].endswith("1 not fixable") and "[ ]" in rows[2]
    summary = _err(proc)
    fixable = sum(int(n) for n in re.findall(r"(\d+) fixable", _out(proc)))
    later = sum(int(n) for n in re.findall(r"(\d+) with --unsafe-fixes", _out(proc)))
    assert f"({fixable} fixable with `neuronize fix`, {later} with `--unsafe-fixes`)" in summary
    unsafe = neuronize("check", "--no-cache", "--statistics", "--unsafe-fixes", ".", cwd=tmp_path)
    first = _out(unsafe).splitlines()[0]
    assert first.split()[:4] == ["4", "NRN102", "[-]", "cuda-method"] and first.endswith("3 fixable, 1 not fixable")
    assert "1  NRN205  [*] half-precision-model" in _out(unsafe)


# -- 4: an ignored rule silences its sites ------------------------------------------------------
OWNED = b"""import argparse
p = argparse.ArgumentParser()
p.add_argument("--device", default="cuda")
model.to("cuda")  # neuronize: ignore[NRN101]
"""


def test_an_ignored_or_suppressed_rule_is_not_reported_by_the_catch_all(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_bytes(OWNED)
    (tmp_path / "b.py").write_bytes(OWNED)
    (tmp_path / "pyproject.toml").write_text('[tool.neuronize]\nper-file-ignores = {"b.py" = ["NRN101"]}\n')
    plain = _out(neuronize("check", "--no-cache", "--output-format", "concise", ".", cwd=tmp_path))
    assert "a.py:3:36 NRN101" in plain and "NRN999" not in plain  # per-file-ignores: b.py silent
    assert "b.py" not in plain
    ignored = neuronize("check", "--no-cache", "--output-format", "concise", "--ignore", "NRN101", ".", cwd=tmp_path)
    assert _out(ignored) == "" and ignored.returncode == 0, _out(ignored)
    # a rule that is not selected does not own anything: the catch-all alone reports it all
    alone = _out(neuronize("check", "--no-cache", "--output-format", "concise", "--select", "NRN999", "a.py",
                           cwd=tmp_path))
    assert "a.py:3:36 NRN999" in alone


# -- 5: one summary per run, worded for its command ---------------------------------------------
def _summaries(err: str) -> list[str]:
    return [line for line in err.splitlines() if not line.startswith("neuronize:")]


def test_check_with_a_baseline_has_one_summary_that_does_not_contradict_itself(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_bytes(MIXED)
    assert neuronize("check", "--write-baseline", "base.json", ".", cwd=tmp_path).returncode == 0
    proc = neuronize("check", "--baseline", "base.json", ".", cwd=tmp_path)
    assert proc.returncode == 0
    [summary] = _summaries(_err(proc))
    assert "baselined findings not shown" in summary and "would change" not in summary, summary
    assert not summary.startswith("All checks passed")


def test_check_verbose_has_one_summary_and_no_advice_to_pass_a_flag_already_passed(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_bytes(MIXED)
    (tmp_path / "kernel.py").write_bytes(KERNEL)
    proc = neuronize("check", "-v", "--unsafe-fixes", ".", cwd=tmp_path)
    [summary] = _summaries(_err(proc))
    assert "2 files checked" in summary and "--unsafe-fixes" in summary
    assert "are applied with --unsafe-fixes" not in summary and "(s)" not in summary
    fixed = neuronize("fix", "--unsafe-fixes", ".", cwd=tmp_path)
    [summary] = _summaries(_err(fixed))
    assert "with --unsafe-fixes" not in summary and "(s)" not in summary, summary
    assert summary.startswith("2 files checked: 1 changed"), summary


def test_json_says_would_change_in_check_and_changed_after_fix(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_bytes(MIXED)
    checked = json.loads(_out(neuronize("check", "--output-format", "json", ".", cwd=tmp_path)))
    assert checked["summary"]["would_change"] == 1 and "changed" not in checked["summary"]
    diff = neuronize("fix", "--diff", "--output-format", "json", ".", cwd=tmp_path)
    assert json.JSONDecoder().raw_decode(diff.stderr.decode())[0]["summary"]["would_change"] == 1
    fixed = json.loads(_out(neuronize("fix", "--output-format", "json", ".", cwd=tmp_path)))
    assert fixed["summary"]["changed"] == 1 and "would_change" not in fixed["summary"]


# -- 6: the small things users notice ----------------------------------------------------------
def test_color_always_colours_the_concise_format(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_bytes(MIXED)
    coloured = _out(neuronize("check", "--color", "always", "--output-format", "concise", ".", cwd=tmp_path))
    assert "\x1b[" in coloured and "train.py:2:9" in coloured
    plain = _out(neuronize("check", "--color", "never", "--output-format", "concise", ".", cwd=tmp_path))
    assert "\x1b[" not in plain and re.sub(r"\x1b\[[0-9;]*m", "", coloured) == plain


def test_a_select_typo_gets_a_did_you_mean(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_bytes(MIXED)
    proc = neuronize("check", "--select", "cuda-methd", ".", cwd=tmp_path)
    assert proc.returncode == 2
    assert "did you mean cuda-method?" in _err(proc)
    assert "did you mean NRN102?" in _err(neuronize("check", "--ignore", "NRN1O2", ".", cwd=tmp_path))


def test_selecting_no_rule_at_all_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_bytes(MIXED)
    proc = neuronize("check", "--select", "NRN1", "--ignore", "NRN1", ".", cwd=tmp_path)
    assert proc.returncode == 2
    assert "no rule left to run" in _err(proc)


def test_notebook_hunks_in_a_diff_carry_their_rule_tags(tmp_path: Path) -> None:
    from test_review_layers import _notebook

    (tmp_path / "n.ipynb").write_bytes(_notebook(b'import torch\nmodel.to("cuda")\ny = 1\nx = w.cuda()\n'))
    diff = _out(neuronize("fix", "--diff", "n.ipynb", cwd=tmp_path))
    assert "[NRN101 safe]" in diff and "[NRN102 safe]" in diff, diff


def test_the_report_shows_one_diff_block_for_two_findings_on_a_line(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_bytes(b"import torch\nx = a.cuda() + b.cuda()\ny = c.cuda()\n")
    report = _out(neuronize("report", "a.py", cwd=tmp_path))
    assert report.count("-x = a.cuda() + b.cuda()") == 1
    assert ("[a.py:2](a.py#L2) NRN102 (safe): `.cuda()` -> `.to(\"neuron\" if <the accelerator is Neuron> else "
            "\"cuda\")`: CUDA hosts keep CUDA, as the program's device choice does (2 on this line)\n") in report
    assert report.count("```diff") == 2


def test_dependency_findings_of_one_rule_are_one_line_across_files(tmp_path: Path) -> None:
    for folder, text in (("a", "torch>=1.6\n"), ("b", "torch==2.0.1\n"), ("c", "torch\n"), ("e", "torch==1.13\n")):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "requirements.txt").write_text(text)
    (tmp_path / "t.py").write_bytes(b"import torch\nx = y.cuda()\n")
    lines = _out(neuronize("check", "--output-format", "concise", ".", cwd=tmp_path)).splitlines()
    assert len([line for line in lines if "NRN604" in line]) == 1, lines
    [line] = [line for line in lines if "NRN604" in line]
    assert "and 3 more in other dependency files: " in line and "e/requirements.txt:1:1" in line
    assert any(line.startswith("t.py:2:5 NRN102") for line in lines)
    every = _out(neuronize("check", "--output-format", "concise", "--show-repeats", ".", cwd=tmp_path))
    assert every.count("NRN604") == 4


def test_audit_does_not_call_a_site_missed_when_a_catch_all_finding_fed_it(tmp_path: Path) -> None:
    from neuronize.audit.join import join
    from neuronize.audit.launch import ProcessRecord, RawRun

    script = tmp_path / "load.py"
    script.write_text('import os\nimport torch\nrank = int(os.environ.get("RANK", "0"))\nwhere = f"cuda:{rank}"\n'
                      'state = torch.load("ckpt.pt", map_location=where)\n')
    raw = RawRun(command=["python", str(script)], returncode=0, processes=[ProcessRecord(1, [str(script)], None, True)])
    raw.sites = [{"kind": "placement", "what": "torch.load(map_location='cuda:0')", "file": str(script), "line": 5,
                  "via": "", "redirect": "", "touch": True, "count": 1, "pids": [1]}]
    raw.lines = {str(script): set(range(1, 6))}
    [site] = join(raw, tmp_path, pretend_cuda=False).sites
    assert site.status == "covered" and site.rules == ["NRN999"] and site.finding_lines == [4]


# -- issue 23, item 4: findings you can read at a glance ----------------------------------------
def test_concise_findings_fit_a_line_and_a_site_is_one_entry(tmp_path: Path) -> None:
    from helpers import ROOT

    for name in ("gpt_trainer", "guards_migrated_in_same_run", "custom_kernels", "hf_finetune"):
        (tmp_path / f"{name}.py").write_bytes((ROOT / "fixtures" / "pipeline" / f"{name}.before.py").read_bytes())
    (tmp_path / "infer.py").write_bytes(b"import torch\n\n\ndef run(model, x):\n    with torch.cuda.amp.autocast():\n"
                                        b"        return model(x)\n")
    lines = _out(neuronize("check", "--unsafe-fixes", "--output-format", "concise", "--show-repeats", ".",
                           cwd=tmp_path)).splitlines()
    lengths = sorted(len(line) for line in lines if "--unsafe-fixes:" not in line)
    # about 120 characters (the figure): half of them within 110, none past 130
    assert lengths[len(lengths) // 2] <= 110 and lengths[-1] <= 130, [line for line in lines if len(line) > 130]
    assert all(len(line) <= 170 for line in lines)  # a site and what --unsafe-fixes adds to it
    assert not any("[evidence:" in line or "[edit group" in line for line in lines)
    sites = [line.split(" [")[0] for line in lines]
    assert len(sites) == len(set(sites)) or all(  # one entry per site and rule
        a.split()[1] != b.split()[1] for a, b in zip(lines, lines[1:]) if a.split()[0] == b.split()[0])
    # a fix held back by a decision says so, in a few words
    [event] = [line for line in lines if line.startswith("custom_kernels.py:45:18 NRN114")]
    assert "[report-only]" in event and event.endswith("(not applied: this file holds GPU-kernel code)")
    [autocast] = [line for line in lines if line.startswith("infer.py:5:10 NRN201")]
    assert "[safe fix]" in autocast and autocast.endswith("(--unsafe-fixes: + `dtype=torch.bfloat16`)")
    # beside a loss scaler, an autocast has no safe form (Neuron's default dtype is float16)
    [scaled] = [line for line in lines if line.startswith("guards_migrated_in_same_run.py:14:10 NRN201")]
    assert "[unsafe fix]" in scaled
    # the reasons are in the full format
    full = _out(neuronize("check", "--unsafe-fixes", "--output-format", "full", ".", cwd=tmp_path))
    assert "[evidence: SRC]" in full and "bf16 is the Neuron-preferred type" in full
