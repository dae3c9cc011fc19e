"""Running the real command line the way a user does."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path


def neuronize(*args: str, cwd: Path | None = None, stdin: bytes | None = None,
              env: dict[str, str] | None = None, timeout: float = 120) -> subprocess.CompletedProcess[bytes]:
    full_env = {**os.environ, "NO_COLOR": "1", **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "neuronize", *args],
        cwd=cwd, input=stdin, capture_output=True, env=full_env, timeout=timeout,
    )


ROOT = Path(__file__).resolve().parent.parent
#: a fixed part of fixtures/pipeline (new pipeline cases do not churn the snapshots built on it)
PIPELINE_FILES = ("custom_kernels", "fsdp_worker", "gpt_trainer", "hf_finetune", "hf_generate")


def pipeline_repo(tmp_path: Path) -> Path:
    """The pipeline fixture as a repository: its ``*.before.py`` files under their real names."""
    repo = tmp_path / "repo"
    repo.mkdir()
    for name in PIPELINE_FILES:
        shutil.copyfile(ROOT / "fixtures" / "pipeline" / f"{name}.before.py", repo / f"{name}.py")
    return repo
