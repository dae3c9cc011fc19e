"""Running the command line the way a user does: in this process, or as a real process.

``neuronize(...)`` runs ``neuronize.cli:main`` (the console script's entry point) in the test
process, with argv, environment, working directory and standard streams set as a shell would set
them, and returns what ``subprocess.run`` returns: the exit code and the bytes on stdout and
stderr. A new interpreter proves nothing more for most tests and costs an import of libcst and
every rule (~1 s on the CI machine) each time. ``neuronize_process(...)`` starts the real
``python -m neuronize``, for what only a process shows: signals, terminals, crashes, time-outs.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner


def neuronize(*args: str, cwd: Path | None = None, stdin: bytes | None = None,
              env: dict[str, str] | None = None) -> subprocess.CompletedProcess[bytes]:
    """Run ``neuronize ARGS`` in this process; the result of ``subprocess.run(..., capture_output=True)``."""
    from neuronize.cli import main

    runner = CliRunner()
    old_argv, old_cwd = sys.argv, os.getcwd()
    # main() ignores SIGINT once the work is done (for interpreter shutdown): not in pytest.
    old_sigint = signal.getsignal(signal.SIGINT)
    code: int | str | None = 0
    with runner.isolation(input=stdin, env={"NO_COLOR": "1", **(env or {})}) as (out, err, _):
        sys.argv = ["neuronize", *args]
        try:
            if cwd is not None:
                os.chdir(cwd)
            main()
        except SystemExit as exc:
            code = exc.code
        finally:
            sys.argv = old_argv
            os.chdir(old_cwd)
            signal.signal(signal.SIGINT, old_sigint)
            sys.stdout.flush()
            sys.stderr.flush()
        stdout, stderr = out.getvalue(), err.getvalue()
    if code is None:
        code = 0
    elif not isinstance(code, int):  # sys.exit("message"): printed on stderr, exit 1
        stderr += f"{code}\n".encode()
        code = 1
    return subprocess.CompletedProcess(["neuronize", *args], code, stdout, stderr)


def full_report(*paths: str) -> str:
    """The full report of ``neuronize check`` on ``paths``, its whitespace folded to single spaces:
    a message the report wraps over lines reads as one."""
    return " ".join(neuronize("check", "--no-cache", "--output-format", "full", *paths).stdout.decode().split())


def neuronize_process(*args: str, cwd: Path | None = None, stdin: bytes | None = None,
                      env: dict[str, str] | None = None, timeout: float = 120
                      ) -> subprocess.CompletedProcess[bytes]:
    """Run ``python -m neuronize ARGS`` as a new process."""
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
