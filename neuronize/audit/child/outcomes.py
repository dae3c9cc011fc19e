"""A pytest plugin: the outcome of every test id and the files its failure went through.

``neuronize verify`` loads it into the command's pytest (``-p _neuronize_audit.outcomes``, the
directory in ``NEURONIZE_VERIFY_OUTCOMES``); the differential test passes :class:`Outcomes`
itself. Each pytest session writes one JSON file: ``{test id: {"outcome": passed | failed |
error | skipped, "where": [[path, line], ...]}}``; ``error`` is a module that could not be
collected, or a fixture that failed. Paths are absolute; the last frame comes last.
"""

from __future__ import annotations

import json
import os
import re
from typing import Any

#: ``path.py:12: ...`` (pytest's long, short and line tracebacks) or ``File "path.py", line 12``
#: (native ones)
_FRAME = re.compile(r'^\s*File "(?P<native>[^"]+)", line (?P<native_line>\d+)'
                    r'|^(?P<path>[^\s:"][^:\n]*\.py):(?P<line>\d+):', re.M)
OUTCOMES_VAR = "NEURONIZE_VERIFY_OUTCOMES"


def frames(text: str, base: str) -> list[list[Any]]:
    """``[path, line]`` of each frame named in a traceback's text, paths made absolute."""
    found: list[list[Any]] = []
    for match in _FRAME.finditer(text):
        path = match.group("native") or match.group("path")
        line = int(match.group("native_line") or match.group("line"))
        path = os.path.normpath(os.path.join(base, path))
        if [path, line] not in found:
            found.append([path, line])
    return found


class Outcomes:
    def __init__(self, path: str) -> None:
        self.path = path
        self.tests: dict[str, dict[str, Any]] = {}
        self.base = os.getcwd()

    def _failed(self, nodeid: str, outcome: str, report: Any) -> None:
        entry = self.tests.setdefault(nodeid, {"outcome": outcome, "where": []})
        entry["outcome"] = "failed" if "failed" in (outcome, entry["outcome"]) else outcome
        for frame in frames(getattr(report, "longreprtext", "") or "", self.base):
            if frame not in entry["where"]:
                entry["where"].append(frame)

    def pytest_sessionstart(self, session: Any) -> None:
        self.base = str(session.config.invocation_params.dir)

    def pytest_collectreport(self, report: Any) -> None:
        if report.failed:
            self._failed(report.nodeid, "error", report)

    def pytest_runtest_logreport(self, report: Any) -> None:
        if report.failed:
            self._failed(report.nodeid, "failed" if report.when == "call" else "error", report)
        elif report.skipped and report.when != "teardown":
            self.tests.setdefault(report.nodeid, {"outcome": "skipped", "where": []})
        elif report.when == "call":
            self.tests.setdefault(report.nodeid, {"outcome": "passed", "where": []})

    def pytest_sessionfinish(self) -> None:
        with open(self.path, "w", encoding="utf-8") as out:
            json.dump(self.tests, out, indent=1, sort_keys=True)


def pytest_configure(config: Any) -> None:
    directory = os.environ.get(OUTCOMES_VAR)
    # pytest-xdist's workers report to their controller, which records for them
    if directory and os.path.isdir(directory) and not hasattr(config, "workerinput"):
        path = os.path.join(directory, f"{os.getpid()}-{len(os.listdir(directory))}.json")
        config.pluginmanager.register(Outcomes(path), "neuronize-verify-outcomes")
