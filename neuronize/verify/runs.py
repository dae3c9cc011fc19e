"""One run of the user's command in one tree on one simulated host, in a process of its own.

The command runs under the audit's bootstrap (neuronize/audit/launch.py) with the host's
simulation (neuronize/audit/child/hosts.py) and, when it runs pytest, a plugin that writes each
test's outcome and traceback files (neuronize/audit/child/outcomes.py; ``PYTEST_ADDOPTS``).
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from collections.abc import Sequence

from neuronize.audit.child.outcomes import OUTCOMES_VAR
from neuronize.audit.launch import run_command

#: pytest's exit codes for "internal error" and "usage error": the suite never ran
PYTEST_DID_NOT_RUN = (3, 4)
_PACKAGES = ("site-packages", "dist-packages")


@dataclass
class Run:
    host: str
    side: str  # before | after
    tree: Path
    returncode: int | None  # None: could not be started
    start_error: str = ""
    timed_out: bool = False
    seconds: float = 0.0
    tests: dict[str, dict] | None = None  # test id -> {"outcome", "where"}; None: no pytest ran
    output: str = ""  # stdout and stderr, the tree's path replaced by <project>
    sites: list[dict] = field(default_factory=list)  # what the audit recorder saw (program files)

    @property
    def started(self) -> bool:
        return self.returncode is not None and not (
            self.tests is not None and not self.tests and self.returncode in PYTEST_DID_NOT_RUN)


def _python_path(tree: Path) -> list[str]:
    """The tree first on the import path (src layouts too): an installed (or editable) copy of
    the project must not stand in for the tree under test."""
    return [str(p) for p in (tree, tree / "src") if p.is_dir()]


def run(command: Sequence[str], tree: Path, cwd: Path, host: str, side: str, max_seconds: float) -> Run:
    with tempfile.TemporaryDirectory(prefix="neuronize-verify-run-") as temp:
        outcomes, log = Path(temp) / "outcomes", Path(temp) / "output.log"
        outcomes.mkdir()
        addopts = " ".join(p for p in (os.environ.get("PYTEST_ADDOPTS", ""), "-p _neuronize_audit.outcomes") if p)
        env = {OUTCOMES_VAR: str(outcomes), "PYTEST_ADDOPTS": addopts,
               "PYTHONPATH": os.pathsep.join([*_python_path(tree), *filter(None, [os.environ.get("PYTHONPATH")])])}
        raw = run_command(command, pretend_cuda=host == "cuda", max_seconds=max_seconds, root=tree, host=host,
                          cwd=cwd, log=log, env=env, trace_lines=False)
        result = Run(host, side, tree, raw.returncode, raw.start_error, raw.timed_out, raw.seconds)
        if log.exists():
            result.output = log.read_text(encoding="utf-8", errors="replace").replace(str(tree), "<project>")
        files = sorted(outcomes.glob("*.json"))
        if files:
            result.tests = {}
            for path in files:
                result.tests.update(json.loads(path.read_text(encoding="utf-8")))
        result.sites = [site for site in raw.sites if in_tree(site["file"], tree)]
    return result


def in_tree(path: str, tree: Path) -> bool:
    absolute = os.path.abspath(path)
    return absolute.startswith(str(tree) + os.sep) and not any(p in absolute for p in _PACKAGES)


def relative(path: str, tree: Path) -> str:
    return Path(os.path.abspath(path)).relative_to(tree).as_posix() if in_tree(path, tree) else path
