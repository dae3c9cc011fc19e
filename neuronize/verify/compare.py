"""Before against after, per host: regressions (with the hunks on their tracebacks), fixed tests,
and on the neuron host whether the migrated program took the Neuron path."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from neuronize.audit.child.outcomes import frames
from neuronize.verify.runs import Run, relative
from neuronize.verify.trees import Hunk, Migration

#: the pseudo test id of a command that is not pytest (compared by exit status)
COMMAND = "(the command)"
#: recorder kinds that mean "the program used the simulated device"
DEVICE_USE = ("device-placement", "accelerator")


@dataclass
class Change:
    test: str
    before: str
    after: str
    where: list[tuple[str, int]] = field(default_factory=list)  # project files on the traceback
    hunks: list[Hunk] = field(default_factory=list)  # hunks of those files, those on a frame first

    @property
    def rules(self) -> list[str]:
        return sorted({rule.split()[0] for hunk in self.hunks for rule in hunk.rules})

    @property
    def files(self) -> list[str]:
        return sorted({hunk.path for hunk in self.hunks})


@dataclass
class NeuronPath:
    """What the migrated program still asked of CUDA on the Neuron host, and whether it used
    the Neuron device at all."""

    cuda_sites: list[dict]  # after migration, outside tests: {"path", "line", "what", "kind", "count"}
    cuda_sites_before: int
    device_uses: int  # placements on "neuron" and torch.accelerator calls, after migration
    test_cuda_sites: list[dict] = field(default_factory=list)  # in test files (not the program's path)

    @property
    def taken(self) -> bool:
        return not self.cuda_sites and self.device_uses > 0

    @property
    def state(self) -> str:
        """taken; cuda-left (CUDA still executed); no-device (neither: the code never chose one)."""
        return "cuda-left" if self.cuda_sites else "taken" if self.device_uses else "no-device"


@dataclass
class HostResult:
    host: str
    before: Run
    after: Run
    regressions: list[Change]
    fixed: list[Change]
    now_skipped: list[Change]  # passed before, skipped after: no failure, but no proof either
    compared: int  # tests (or 1: the command) compared
    output_changed: bool = False
    neuron_path: NeuronPath | None = None
    outcomes: dict[str, tuple[str, str]] = field(default_factory=dict)  # test -> (before, after)


def _outcomes(run: Run) -> dict[str, dict]:
    if run.tests is not None:
        return run.tests
    outcome = "timed out" if run.timed_out else "passed" if run.returncode == 0 else f"exit {run.returncode}"
    where = frames(run.output.replace("<project>", str(run.tree)), str(run.tree))
    return {COMMAND: {"outcome": outcome, "where": where}}


def _where(test: str, after: dict[str, dict], run: Run) -> list[tuple[str, int]]:
    """Project files on the test's traceback (or its module's collection error's)."""
    entry = after.get(test)
    raw = entry["where"] if entry else next(
        (e["where"] for node, e in after.items() if test.startswith(node) and e["outcome"] == "error"), [])
    found = []
    for path, line in raw:
        name = relative(path, run.tree)
        if name != path and (name, line) not in found:
            found.append((name, line))
    return found


def attribute(where: list[tuple[str, int]], hunks: list[Hunk]) -> list[Hunk]:
    """The hunks of the files on a traceback: those holding a frame's line first."""
    files = {path for path, _ in where}
    on_line = [h for h in hunks if any(path == h.path and h.covers(line) for path, line in where)]
    return on_line + [h for h in hunks if h.path in files and h not in on_line]


def compare(before: Run, after: Run, hunks: list[Hunk]) -> HostResult:
    old, new = _outcomes(before), _outcomes(after)
    regressions, fixed, skipped = [], [], []
    for test in sorted(old):
        was, now = old[test]["outcome"], new.get(test, {}).get("outcome", "not run")
        if was == "passed" and now == "skipped":
            skipped.append(Change(test, was, now))
        elif was == "passed" and now != "passed":
            where = _where(test, new, after)
            regressions.append(Change(test, was, now, where, attribute(where, hunks)))
        elif was in ("failed", "error") and now == "passed":
            fixed.append(Change(test, was, now))
    result = HostResult(before.host, before, after, regressions, fixed, skipped, len(old))
    result.outcomes = {test: (old.get(test, {}).get("outcome", "not run"),
                              new.get(test, {}).get("outcome", "not run")) for test in sorted(set(old) | set(new))}
    if before.tests is None:
        result.output_changed = before.output != after.output
    if before.host == "neuron":
        result.neuron_path = neuron_path(before, after)
    return result


def is_test_file(path: str) -> bool:
    """A test module or conftest: its CUDA checks (a skip on a missing GPU) are not the program's path."""
    parts = path.split("/")
    name = parts[-1]
    return name == "conftest.py" or name.startswith("test_") or name.endswith("_test.py") or \
        any(part in ("tests", "test") for part in parts[:-1])


def _cuda_sites(run: Run, tests: bool) -> list[dict]:
    sites = [{"path": relative(s["file"], run.tree), "line": s["line"], "what": s["what"], "kind": s["kind"],
              "count": s["count"]} for s in run.sites if s.get("touch", True) and s["kind"] not in DEVICE_USE]
    return [s for s in sites if is_test_file(s["path"]) == tests]


def neuron_path(before: Run, after: Run) -> NeuronPath:
    uses = sum(s["count"] for s in after.sites if s["kind"] in DEVICE_USE)
    return NeuronPath(_cuda_sites(after, False), len(_cuda_sites(before, False)), uses,
                      _cuda_sites(after, True))


@dataclass
class Verification:
    command: list[str]
    target: str | None
    unsafe_fixes: bool
    root: Path
    migration: Migration
    results: list[HostResult]
    not_started: list[Run]
    seconds: float = 0.0

    @property
    def regressions(self) -> list[Change]:
        return [change for result in self.results for change in result.regressions]
