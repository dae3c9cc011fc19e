"""Every kind of source through the one pipeline: discovery, lossless lines, suppressions,
baseline, diff, review, report, SARIF and the command line (issue 15)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, strategies as st

from neuronize import api
from neuronize.analysis.any_kind import run_kind
from neuronize.analysis.line_files import text_problems
from neuronize.registry import all_rules
from neuronize.sources.discover import discover
from neuronize.sources.kinds import SourceKind, kind_of, parse_kinds
from neuronize.sources.lines import Edit, apply_edits, join_lines, split_lines
from neuronize.sources.requirements import setup_cfg_items
from neuronize.sources.shell import MAKE, makefile_lines
from neuronize.types import Options

RULES = all_rules()
UNSAFE = Options(unsafe_fixes=True)


# -- lossless lines ---------------------------------------------------------------------------
@given(st.text(alphabet=st.sampled_from(["a", " ", "#", "\t", "\n", "\r", "é", "\ufeff", "'", '"']),
               max_size=60))
def test_lines_round_trip_any_text(text):
    assert join_lines(split_lines(text)) == text
    assert apply_edits(split_lines(text), []) == text


def test_an_edit_changes_only_its_span():
    text = "a = 1\r\nkey: 'x'  # keep\r\nlast"
    lines = split_lines(text)
    assert [line.ending for line in lines] == ["\r\n", "\r\n", ""]
    assert apply_edits(lines, [Edit(1, 6, 7, "neuron")]) == "a = 1\r\nkey: 'neuron'  # keep\r\nlast"


@pytest.mark.parametrize("kind,source", [
    (SourceKind.REQUIREMENTS, b"\xef\xbb\xbf# deps\r\ntorch==2.13.0+cu121 ; sys_platform == 'linux'  # gpu\r\n"
                              b"numpy\t\r\n\r\n'quoted'"),
    (SourceKind.SHELL, b"#!/bin/sh\r\nexport CUDA_VISIBLE_DEVICES='1'\r\necho \"# not a comment\"\r\n"),
    (SourceKind.YAML_CONFIG, b"trainer:\r\n  precision: '16-mixed'   # amp\r\n  devices: 2"),
    (SourceKind.JSON_CONFIG, b'{"fp16": {"enabled": true},\r\n "train_batch_size": 8, "device": "cuda:0"}'),
    (SourceKind.DOCKERFILE, b"FROM nvidia/cuda:12.1.0-base\r\nENV CUDA_VISIBLE_DEVICES=0\r\n"),
    (SourceKind.MAKEFILE, b"# gpus\r\ntrain:\r\n\tCUDA_VISIBLE_DEVICES=$(GPUS) python train.py\r\n\t@echo \"# kept\"\t"),
    (SourceKind.SETUP_CFG, b"[options]\r\ninstall_requires =\r\n\ttorch==2.13.0+cu121  ; python_version >= '3.10'\r\n"
                           b"    # pins\r\n\tnumpy"),
])
def test_untouched_bytes_survive_and_a_second_run_changes_nothing(kind, source):
    result = run_kind(source, kind, RULES, UNSAFE, path="f")
    assert result.error is None, result.error
    assert result.findings
    if result.output is not None:
        fixed = {f.line for f in result.findings if f.applied}
        old, new = source.split(b"\r\n"), result.output.split(b"\r\n")
        for number, line in enumerate(old, 1):
            assert number in fixed or line in new, line  # the same bytes, ending and all
        assert b"\n" not in result.output.replace(b"\r\n", b"")  # CRLF throughout, added lines too
        assert new[-1] == old[-1] or len(old) in fixed  # no final newline stays so
        assert run_kind(result.output, kind, RULES, UNSAFE, path="f").output is None


def test_makefile_recipes_are_shell_and_its_own_lines_are_make():
    text = "# note\nGPUS ?= 0,1\ntrain: data\n\tpython a.py \\\n  --gpus $(GPUS)  # go\n\t# shell comment\n"
    lines = [(line.index, line.code, line.instruction) for line in makefile_lines(split_lines(text))]
    assert lines == [(1, "GPUS ?= 0,1", MAKE), (2, "train: data", MAKE), (3, "\tpython a.py \\", ""),
                     (4, "  --gpus $(GPUS)  ", "")]


def test_setup_cfg_requirements_are_read_in_their_sections_only():
    text = ("[options]\npython_requires = >=3.10\ninstall_requires = numpy\n    torch>=2.1  # cpu\n"
            "    ; note\n    file: reqs.txt\ntests_require =\n    pytest\n[options.extras_require]\n"
            "gpu =\n\tcupy-cuda12x\n[tool:pytest]\naddopts = -q\n")
    found = [(r.line, r.name, r.start) for r in setup_cfg_items(split_lines(text))]
    assert found == [(2, "numpy", 19), (3, "torch", 4), (10, "cupy-cuda12x", 1)]


def test_undecodable_file_is_an_error_naming_its_line():
    result = run_kind(b"numpy\ntorch==2.13.0+cu121 \xff\n", SourceKind.REQUIREMENTS, RULES, UNSAFE)
    assert result.error is not None and result.error.line == 2 and "UTF-8" in result.error.message


# -- discovery ---------------------------------------------------------------------------------
def _tree(root: Path) -> None:
    files = {
        "train.py": "x = 1\n", "requirements.txt": "torch\n", "requirements/dev.txt": "pytest\n",
        "constraints-gpu.txt": "torch\n", "notes.txt": "cuda\n", "pyproject.toml": "[project]\n",
        "scripts/run.sh": "echo\n", "scripts/launch": "#!/usr/bin/env bash\necho\n", "scripts/tool": "#!/usr/bin/python\n",
        "docker/Dockerfile": "FROM x\n", "docker/gpu.Dockerfile": "FROM x\n", "Containerfile": "FROM x\n",
        "configs/accelerate.yaml": "distributed_type: MULTI_GPU\n", "configs/ds.json": '{"zero_optimization": {}}\n',
        ".github/workflows/ci.yml": "on: push\n", "data/vocab.json": '{"hello": 1}\n', "job.slurm": "#SBATCH -N 1\n",
        "environment.yml": "dependencies:\n  - cudatoolkit\n", "Makefile": "all:\n\techo\n",
        "tools/gpu.mk": "X = 1\n", "GNUmakefile": "all:\n", "setup.cfg": "[options]\n",
        # lock files are generated from the environment files: not read
        "conda-lock.yml": "package:\n- name: pytorch-cuda\n  platform: linux-64\n  device: x\n",
        "envs/gpu.conda-lock.yaml": "package: []\n",
    }
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)


def test_discovery_finds_every_kind_by_name_or_content(tmp_path):
    _tree(tmp_path)
    found, _ = discover([str(tmp_path)])
    kinds = {f.path.relative_to(tmp_path).as_posix(): f.kind for f in found}
    assert kinds == {
        "train.py": "python", "requirements.txt": "requirements", "requirements/dev.txt": "requirements",
        "constraints-gpu.txt": "requirements", "pyproject.toml": "pyproject", "scripts/run.sh": "shell",
        "scripts/launch": "shell", "docker/Dockerfile": "dockerfile", "docker/gpu.Dockerfile": "dockerfile",
        "Containerfile": "dockerfile", "configs/accelerate.yaml": "yaml-config",
        "configs/ds.json": "json-config", "job.slurm": "shell", "environment.yml": "conda",
        "Makefile": "makefile", "tools/gpu.mk": "makefile", "GNUmakefile": "makefile", "setup.cfg": "setup-cfg",
    }


def test_requirements_pulled_in_with_r_are_requirements_too(tmp_path):
    (tmp_path / "requirements.txt").write_text("-r deps/base.txt\n--constraint=pins.txt\n-r https://x/y.txt\n")
    (tmp_path / "deps").mkdir()
    (tmp_path / "deps" / "base.txt").write_text("-r ../common.txt\ntorch==2.13.0+cu121\n")
    (tmp_path / "pins.txt").write_text("numpy<3\n")
    (tmp_path / "common.txt").write_text("tqdm\n")
    (tmp_path / "other.txt").write_text("not pulled in\n")
    found, _ = discover([str(tmp_path)])
    assert sorted((f.display, f.kind) for f in found) == [
        (f"{tmp_path}/common.txt", "requirements"), (f"{tmp_path}/deps/base.txt", "requirements"),
        (f"{tmp_path}/pins.txt", "requirements"), (f"{tmp_path}/requirements.txt", "requirements")]


def test_discovery_limited_to_some_kinds(tmp_path):
    _tree(tmp_path)
    found, _ = discover([str(tmp_path)], kinds=parse_kinds("python,dockerfile"))
    assert {f.kind for f in found} == {SourceKind.PYTHON, SourceKind.DOCKERFILE}


def test_explicit_files_of_no_kind_are_passed_over_quietly(tmp_path):
    _tree(tmp_path)
    (tmp_path / "LICENSE").write_text("MIT\n")
    names = ["notes.txt", ".github/workflows/ci.yml", "LICENSE", "scripts/tool", "requirements.txt"]
    found, skipped = discover([str(tmp_path / n) for n in names])
    assert [(Path(f.display).name, f.kind) for f in found] == [("tool", "python"), ("requirements.txt", "requirements")]
    assert not skipped


def test_unknown_kind_names_are_refused():
    with pytest.raises(ValueError, match="unknown source kind 'docker'"):
        parse_kinds("python,docker")


# -- suppressions and baseline -----------------------------------------------------------------
@pytest.mark.parametrize("kind,source", [
    (SourceKind.REQUIREMENTS, b"# neuronize: ignore[NRN601]\ntorch==2.13.0+cu121\n"),
    (SourceKind.REQUIREMENTS, b"torch==2.13.0+cu121  # neuronize: ignore[cuda-torch-build]\n"),
    (SourceKind.SHELL, b"export NCCL_DEBUG=INFO  # neuronize: ignore[NRN613]\n"),
    (SourceKind.DOCKERFILE, b"# neuronize: ignore[NRN621]\nFROM nvidia/cuda:12.1.0-base\n"),
    (SourceKind.YAML_CONFIG, b"device: cuda  # neuronize: ignore[NRN633]\n"),
    (SourceKind.MAKEFILE, b"export NCCL_DEBUG = INFO  # neuronize: ignore[NRN613]\n"),
    (SourceKind.SETUP_CFG, b"[options]\ninstall_requires =\n    # neuronize: ignore[NRN601]\n    torch==2.13.0+cu121\n"),
])
def test_suppression_comments_in_every_kind(kind, source):
    result = run_kind(source, kind, RULES, UNSAFE)
    suppressed = {"NRN601", "NRN613", "NRN621", "NRN633"}
    assert not [f for f in result.findings if f.rule in suppressed], result.findings
    assert result.output is None or b"+cu121" in result.output


def test_json_has_no_comments_so_no_suppressions():
    result = run_kind(b'{"device": "cuda", "_c": "# neuronize: ignore[NRN633]"}', SourceKind.JSON_CONFIG,
                      RULES, UNSAFE)
    assert [f.rule for f in result.findings] == ["NRN633"]


def test_unused_suppression_in_a_shell_script():
    result = run_kind(b"echo hi  # neuronize: ignore[NRN613]\nexport NCCL_DEBUG=1\n", SourceKind.SHELL, RULES,
                      Options(report_unused_suppressions=True))
    assert [f.rule for f in result.findings] == ["NRN000", "NRN613"]


def test_misspelt_suppression_in_a_dockerfile_is_reported_as_in_python():
    # one decision stage (neuronize.decision.policy) for every kind: a typo silences nothing, and says so
    result = run_kind(b"FROM nvidia/cuda:12.1.0-base  # neuronize: ignore[NRN6211]\n", SourceKind.DOCKERFILE,
                      RULES, UNSAFE)
    assert sorted(f.rule for f in result.findings) == ["NRN000", "NRN621"]
    assert "unknown rule `NRN6211` in a suppression" in next(f.text for f in result.findings if f.rule == "NRN000")


def test_baseline_covers_other_kinds(tmp_path):
    (tmp_path / "requirements.txt").write_text("flash-attn\nnvidia-cudnn-cu12\n")
    (tmp_path / "ds.json").write_text('{"train_batch_size": 8, "fp16": {"enabled": true}}\n')
    run = api.analyse_paths([str(tmp_path)], RULES, fix=False, cache=False)
    baseline_file = tmp_path / "baseline.json"
    entries = frozenset(api.baseline_entries(run, baseline_file))
    assert len(entries) == 3
    kept, dropped = api.apply_baseline(run, entries, baseline_file)
    assert dropped == 3 and not any(f.result.findings for f in kept.files)
    (tmp_path / "requirements.txt").write_text("# moved down a line\nflash-attn\nnvidia-cudnn-cu12\nxformers\n")
    run = api.analyse_paths([str(tmp_path)], RULES, fix=False, cache=False)
    kept, dropped = api.apply_baseline(run, entries, baseline_file)
    assert dropped == 3
    assert [f.rule for fr in kept.files for f in fr.result.findings] == ["NRN603"]


# -- review of reassembled files ----------------------------------------------------------------
def test_review_checks_a_rebuilt_config_as_its_kind():
    before = b'{"device": "cuda"}\n'
    assert text_problems("cfg.json", before, b'{"device": "neuron"}\n') == []
    assert text_problems("cfg.json", before, b'{"device": neuron"}\n')[0].startswith("the rewritten file would not")
    assert text_problems("requirements.txt", b"torch\n", b"torch==2\n") == []
    assert text_problems("train.py", b"x\n", b"y\n") is None


# -- the command line ------------------------------------------------------------------------------
def _neuronize(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "neuronize", *args], cwd=cwd, capture_output=True, text=True,
                          env={"NO_COLOR": "1", "PATH": "/usr/bin:/bin", "NEURONIZE_CACHE_DIR": str(cwd / ".c")})


def test_kinds_flags_and_config(tmp_path):
    (tmp_path / "requirements.txt").write_text("torch==2.13.0+cu121\n")
    (tmp_path / "train.sh").write_text("export NCCL_DEBUG=INFO\n")
    (tmp_path / "t.py").write_text("x.cuda()\n")
    rules_of = lambda proc: sorted({line.split()[1] for line in proc.stdout.splitlines()})  # noqa: E731
    assert rules_of(_neuronize("check", "--kinds", "requirements", ".", cwd=tmp_path)) == ["NRN601", "NRN604"]
    assert rules_of(_neuronize("check", "--exclude-kinds", "python,requirements", ".", cwd=tmp_path)) == ["NRN613"]
    (tmp_path / "pyproject.toml").write_text('[tool.neuronize]\nextend-exclude-kinds = ["shell", "python"]\n')
    assert rules_of(_neuronize("check", ".", cwd=tmp_path)) == ["NRN601", "NRN604"]
    (tmp_path / "pyproject.toml").write_text('[tool.neuronize]\nkinds = ["shel"]\n')
    proc = _neuronize("check", ".", cwd=tmp_path)
    assert proc.returncode == 2 and "unknown source kind 'shel'" in proc.stderr


def test_sarif_and_json_name_the_other_kinds(tmp_path):
    (tmp_path / "Dockerfile").write_text("FROM nvidia/cuda:12.4.1-runtime-ubuntu22.04\n")
    proc = _neuronize("check", "--output-format", "sarif", ".", cwd=tmp_path)
    sarif = json.loads(proc.stdout)
    results = sarif["runs"][0]["results"]
    assert results[0]["ruleId"] == "NRN621"
    assert results[0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"].endswith("Dockerfile")


def test_diff_then_fix_writes_the_same_bytes(tmp_path):
    (tmp_path / "requirements.txt").write_bytes(b"torch==2.13.0+cu121\r\n" + b"numpy\r\n" * 7 + b"torchaudio==2.13.0+cu121")
    proc = _neuronize("fix", "--diff", "--unsafe-fixes", ".", cwd=tmp_path)
    assert "+torchaudio==2.13.0" in proc.stdout and "\\ No newline at end of file" in proc.stdout
    patch = proc.stdout
    _neuronize("fix", "--unsafe-fixes", ".", cwd=tmp_path)
    neuronx = b'torch-neuronx==2.13.*; platform_system == "Linux" and platform_machine == "x86_64"\r\n'
    assert (tmp_path / "requirements.txt").read_bytes() == (b"torch==2.13.0\r\n" + neuronx + b"numpy\r\n" * 7
                                                            + b"torchaudio==2.13.0")
    assert sum(line.startswith("@@ ") for line in patch.splitlines()) == 2


def test_a_config_read_on_every_host_keeps_its_cuda_values(tmp_path):
    # the trainer keeps its CUDA hosts (its placements become host-aware), and they read the same
    # config: a value cannot choose by host, so each is reported with what Trainium needs
    (tmp_path / "cfg.yaml").write_bytes(b"precision: 16-mixed\ndevice: cuda\n")
    (tmp_path / "train.py").write_bytes(b"import torch\nmodel = torch.nn.Linear(2, 2).cuda()\n")
    _neuronize("fix", "--unsafe-fixes", ".", cwd=tmp_path)
    assert (tmp_path / "cfg.yaml").read_bytes() == b"precision: 16-mixed\ndevice: cuda\n"
    assert b'"neuron" if on_neuron() else "cuda"' in (tmp_path / "train.py").read_bytes()
    proc = _neuronize("check", "--output-format", "concise", ".", cwd=tmp_path)
    assert proc.stdout.splitlines() == ["cfg.yaml:1:12 NRN633 [report-only] `precision: 16-mixed` stays",
                                        "cfg.yaml:2:9 NRN633 [report-only] `device: cuda` stays"]


def test_stdin_takes_its_kind_from_the_file_name(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "neuronize", "fix", "--unsafe-fixes", "-", "--stdin-filename",
                           "requirements-gpu.txt"], input="torch==2.14.0+cu124\n", capture_output=True, text=True,
                          cwd=tmp_path)
    assert proc.stdout.startswith("torch==2.14.0\ntorch-neuronx==2.14.*;")


def test_interactive_review_of_a_requirements_file_takes_hunk_by_hunk():
    from neuronize.presenting.diff import Style
    from neuronize.presenting.review import review_file

    before = b"torch==2.13.0+cu121\nnumpy\n\n\n\n\n\n\nexport=1\ntorchvision==0.28.0+cu121\n"
    result = run_kind(before, SourceKind.REQUIREMENTS, RULES, UNSAFE, path="requirements.txt")
    answers = iter(["n", "y"])
    outcome = review_file("requirements.txt", before, result.output, result.findings,
                          ask=lambda prompt: next(answers), say=lambda line: None, style=Style(False))
    assert outcome.output == b"torch==2.13.0+cu121\nnumpy\n\n\n\n\n\n\nexport=1\ntorchvision==0.28.0\n"
