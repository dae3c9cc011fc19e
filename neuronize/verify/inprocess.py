"""A project's pytest suite on a simulated host inside this (freshly forked) process: the
differential test forks its runs from a server that imported PyTorch once. The simulation and
the outcome plugin are `neuronize verify`'s (neuronize/audit/child/)."""

from __future__ import annotations

import os
import sys
import tempfile

from neuronize.audit import child
from neuronize.audit.child.hosts import HOST_VAR
from neuronize.audit.child.outcomes import Outcomes

#: pytest options of a run: its output is a log read only when something fails
QUIET = ["-q", "--continue-on-collection-errors", "-p", "no:cacheprovider", "-p", "no:unraisableexception",
         "-W", "ignore"]
#: what every run imports: loaded once by the fork server, not once per run
PRELOAD = ["torch", "torch._dynamo", "torch._inductor.compile_fx", "torch.distributed", "pytest",
           "neuronize.verify.inprocess"]


def run_tests(project: str, host: str, report: str, log: str) -> None:
    """Run ``project``'s tests on ``host``; outcomes (outcomes.py's format) go to ``report``."""
    with open(log, "w") as out:
        os.dup2(out.fileno(), 1)
        os.dup2(out.fileno(), 2)
    os.chdir(project)
    sys.path.insert(0, project)
    os.environ.update({"NEURONIZE_AUDIT_RECORDS": tempfile.mkdtemp(prefix="neuronize-records-"),
                       "NEURONIZE_AUDIT_ROOT": project, "NEURONIZE_AUDIT_LINES": "0", HOST_VAR: host})
    child.start()
    import pytest

    # The project's suite needs none of the plugins installed next to neuronize's own tests.
    os.environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    pytest.main(QUIET, plugins=[Outcomes(report)])
