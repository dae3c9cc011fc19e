"""The published hooks, run for real by pre-commit in a temporary git repository."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.slow


def _git(*args: str, cwd: Path) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout


@pytest.fixture(scope="module")
def hook_env(tmp_path_factory):
    """The committed neuronize revision, and one pre-commit home for the module (the hook's
    environment is built once)."""
    if shutil.which("git") is None or shutil.which("pre-commit") is None:
        pytest.skip("git and pre-commit are needed")
    try:
        rev = _git("rev-parse", "HEAD", cwd=ROOT).strip()
    except subprocess.CalledProcessError:
        pytest.skip("neuronize is not a git checkout")
    if "neuronize-check" not in _git("show", f"{rev}:.pre-commit-hooks.yaml", cwd=ROOT):
        pytest.skip("the hooks file is not committed yet")
    return rev, {**os.environ, "PRE_COMMIT_HOME": str(tmp_path_factory.mktemp("pre-commit-home"))}


def _new_repo(path: Path, rev: str, args: str = "") -> Path:
    _git("init", "-q", cwd=path)
    _git("config", "user.email", "dev@example.com", cwd=path)
    _git("config", "user.name", "Dev", cwd=path)
    (path / ".pre-commit-config.yaml").write_text(
        "repos:\n"
        f"  - repo: {ROOT}\n"
        f"    rev: {rev}\n"
        "    hooks:\n"
        "      - id: neuronize-check\n"
        + (f"        args: [{args}]\n" if args else "")
    )
    return path


@pytest.fixture(scope="module")
def project(tmp_path_factory, hook_env):
    rev, env = hook_env
    repo = _new_repo(tmp_path_factory.mktemp("repo"), rev, "--baseline, .neuronize-baseline.json")
    (repo / "legacy.py").write_text("import torch\nmodel = Net().cuda()  # accepted on day one\n")
    subprocess.run(["neuronize", "check", "--write-baseline", ".neuronize-baseline.json", "."],
                   cwd=repo, check=True, capture_output=True)
    _git("add", ".", cwd=repo)
    return repo, env


def _run_hook(project, *files: str) -> subprocess.CompletedProcess[str]:
    repo, env = project
    _git("add", ".", cwd=repo)
    return subprocess.run(["pre-commit", "run", "--files", *files], cwd=repo, env=env,
                          capture_output=True, text=True, timeout=600)


def test_clean_file_passes(project):
    repo, _ = project
    (repo / "clean.py").write_text("import torch\nx = torch.zeros(3, device='neuron')\n")
    proc = _run_hook(project, "clean.py")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Passed" in proc.stdout


def test_baselined_findings_pass(project):
    proc = _run_hook(project, "legacy.py")
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_new_cuda_call_is_blocked_and_a_suppressed_one_passes(project):
    repo, _ = project
    (repo / "new.py").write_text("import torch\nbatch = batch.cuda()\n")
    proc = _run_hook(project, "new.py", "legacy.py")
    assert proc.returncode == 1
    assert "new.py:2:9 NRN102" in proc.stdout
    (repo / "new.py").write_text("import torch\nbatch = batch.cuda()  # neuronize: ignore[NRN102]\n")
    proc = _run_hook(project, "new.py")
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_no_python_files_is_skipped(project):
    repo, _ = project
    (repo / "notes.md").write_text("cuda everywhere\n")
    proc = _run_hook(project, "notes.md")
    assert proc.returncode == 0
    assert "no files to check" in proc.stdout.lower()


def test_monorepo_each_file_uses_its_own_pyproject(tmp_path, hook_env):
    """Two projects in one repository, each with its own [tool.neuronize]: pre-commit runs the
    hook once from the root with files of both, and each file is judged by its own settings."""
    rev, env = hook_env
    (tmp_path / "mono").mkdir()
    repo = _new_repo(tmp_path / "mono", rev)
    (repo / "serving").mkdir()
    (repo / "serving" / "pyproject.toml").write_text(
        '[project]\nname = "serving"\n[tool.neuronize]\nignore = ["cuda-method"]\n')
    (repo / "training" / "generated").mkdir(parents=True)
    (repo / "training" / "pyproject.toml").write_text(
        '[tool.neuronize]\ntarget = "cpu"\nextend-exclude = ["generated/"]\n')
    cuda = "import torch\nbatch = batch.cuda()\n"
    for path in ("serving/app.py", "training/train.py", "training/generated/model_pb.py"):
        (repo / path).write_text(cuda)
    _git("add", ".", cwd=repo)
    proc = subprocess.run(["pre-commit", "run", "--all-files"], cwd=repo, env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    # training/: its own target, and its own exclude although pre-commit names the file
    assert 'training/train.py:2:9 NRN102 [safe fix] `.cuda()` -> `.to("cpu")`' in proc.stdout
    assert "generated" not in proc.stdout
    assert "serving/" not in proc.stdout  # serving/ ignores cuda-method
    (repo / "training" / "train.py").write_text("import torch\nbatch = batch.to('cpu')\n")
    _git("add", ".", cwd=repo)
    proc = subprocess.run(["pre-commit", "run", "--all-files"], cwd=repo, env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_other_kinds_go_through_the_hook(project):
    """Requirements, shell scripts and configs are handed to the hook and checked; text files
    of no kind (a LICENSE, a CI workflow) pass through it untouched."""
    repo, _ = project
    (repo / "requirements.txt").write_text("torch==2.13.0+cu121\n")
    (repo / "train.sh").write_text("#!/bin/bash\nexport NCCL_DEBUG=INFO\n")
    (repo / "LICENSE").write_text("Permission is granted to use cuda.\n")
    (repo / "ci.yaml").write_text("on: push\njobs: {}\n")
    proc = _run_hook(project, "requirements.txt", "train.sh", "LICENSE", "ci.yaml")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "requirements.txt:1:1 NRN601" in proc.stdout
    assert "train.sh:2:8 NRN613" in proc.stdout
    assert "LICENSE" not in proc.stdout and "ci.yaml" not in proc.stdout
    (repo / "requirements.txt").write_text("torch==2.13.0+cu121  # neuronize: ignore[NRN601, NRN604]\n")
    (repo / "train.sh").write_text("#!/bin/bash\n# neuronize: ignore[NRN613]\nexport NCCL_DEBUG=INFO\n")
    proc = _run_hook(project, "requirements.txt", "train.sh", "LICENSE", "ci.yaml")
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_one_summary_for_many_files(tmp_path, hook_env):
    rev, env = hook_env
    repo = _new_repo(tmp_path, rev)
    names = [f"m{i}.py" for i in range(6)]
    for name in names:
        (repo / name).write_text("import torch\nbatch = batch.cuda()\n")
    _git("add", ".", cwd=repo)
    proc = subprocess.run(["pre-commit", "run", "--files", *names], cwd=repo, env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 1
    assert proc.stdout.count("Found ") == 1, proc.stdout
    assert "Found 6 findings in 6 files" in proc.stdout


def test_the_readme_snippet_works_with_a_release_tag(tmp_path, hook_env):
    """The README's snippet, as written, against a release of neuronize tagged as the releases
    are (a clone of this revision, tagged there: the project itself is tagged at release)."""
    import re

    rev, env = hook_env
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("### pre-commit\n"):]
    snippet = re.search(r"```yaml\n(.*?)```", section, re.DOTALL).group(1)
    tag = re.search(r"rev: (\S+)", snippet).group(1)
    assert re.fullmatch(r"\d+\.\d+\.\d+", tag), tag
    release = tmp_path / "release"
    subprocess.run(["git", "clone", "-q", str(ROOT), str(release)], check=True, capture_output=True)
    _git("checkout", "-q", rev, cwd=release)
    _git("tag", "-f", tag, cwd=release)  # the clone may carry the real tag already
    repo = tmp_path / "project"
    repo.mkdir()
    _new_repo(repo, rev)
    (repo / ".pre-commit-config.yaml").write_text(re.sub(r"repo: \S+", f"repo: {release}", snippet))
    (repo / "legacy.py").write_text("import torch\nmodel = Net().cuda()\n")
    subprocess.run(["neuronize", "check", "--write-baseline", ".neuronize-baseline.json", "."], cwd=repo,
                   check=True, capture_output=True)
    (repo / "new.py").write_text("import torch\nbatch = batch.cuda()\n")
    _git("add", ".", cwd=repo)
    proc = subprocess.run(["pre-commit", "run", "--files", "legacy.py", "new.py"], cwd=repo, env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "new.py:2:9 NRN102" in proc.stdout and "legacy.py" not in proc.stdout.split("Found")[0]
