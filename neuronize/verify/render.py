"""A verification as text, JSON and Markdown (for the pull request)."""

from __future__ import annotations

import json
import shlex
from typing import Any

from neuronize.audit.child.hosts import LIMITS
from neuronize.verify.compare import Change, HostResult, NeuronPath, Verification
from neuronize.verify.trees import Hunk

#: lines of a hunk shown under a regression (the JSON has them all)
HUNK_LINES = 14


def _migration_words(v: Verification) -> str:
    fix = "neuronize fix" + (f" --target {v.target}" if v.target else "") + (" --unsafe-fixes" if v.unsafe_fixes else "")
    return f"`{fix}` ({len(v.migration.changed)} file(s) changed, {len(v.migration.hunks)} hunk(s))"


def _run_words(result: HostResult) -> str:
    if result.after is result.before:
        return f"{result.before.seconds:.1f}s; the migration changed nothing, one run"
    words = []
    for run in (result.before, result.after):
        state = " (timed out)" if run.timed_out else ""
        words.append(f"{run.side} {run.seconds:.1f}s{state}")
    return ", ".join(words)


def _counts(result: HostResult) -> str:
    unit = "test(s)" if result.before.tests is not None else "command run(s), compared by exit status"
    text = f"{result.compared} {unit}: {len(result.regressions)} regression(s), {len(result.fixed)} fixed"
    if result.now_skipped:
        text += f", {len(result.now_skipped)} passed before and are skipped after"
    return text


def _neuron_lines(result: HostResult) -> list[str]:
    path = result.neuron_path
    if path is None:
        return []
    lines = _path_lines(path)
    if path.test_cuda_sites:
        lines.append(f"    not counted: {len(path.test_cuda_sites)} CUDA site(s) in test files ("
                     + ", ".join(f"{s['path']}:{s['line']}" for s in path.test_cuda_sites[:5]) + ")")
    return lines


def _path_lines(path: NeuronPath) -> list[str]:
    if path.taken:
        return [f"  Neuron path: taken ({path.device_uses} use(s) of the neuron device, no CUDA call left; "
                f"{path.cuda_sites_before} CUDA site(s) before migration)"]
    if not path.cuda_sites:
        return [f"  Neuron path: no CUDA call left ({path.cuda_sites_before} before migration); the code never "
                "chose a device (it runs where its callers put its tensors)"]
    lines = [f"  Neuron path: NOT taken: {len(path.cuda_sites)} CUDA site(s) still executed after migration "
             f"({path.cuda_sites_before} before migration)"]
    lines += [f"    {s['path']}:{s['line']}: {s['what']} [{s['kind']}, {s['count']}x]" for s in path.cuda_sites]
    return lines


def _hunk_lines(hunk: Hunk, indent: str) -> list[str]:
    shown = hunk.lines[:HUNK_LINES]
    more = len(hunk.lines) - len(shown)
    return [indent + line for line in shown] + ([f"{indent}... ({more} more line(s))"] if more > 0 else [])


def _change_lines(change: Change) -> list[str]:
    lines = [f"  REGRESSION {change.test}: {change.before} -> {change.after}"]
    if change.where:
        lines.append("    traceback through: " + ", ".join(f"{p}:{n}" for p, n in change.where[-6:]))
    if not change.hunks:
        lines.append("    no migrated file on its traceback (the cause is a value that crossed files, or the "
                     "simulation: read the log with --keep)")
    for hunk in change.hunks:
        lines.append(f"    hunk {hunk.header} {' '.join(f'[{r}]' for r in hunk.rules) or '[no rule: imports]'}")
        lines += _hunk_lines(hunk, "      ")
    return lines


def to_text(v: Verification) -> list[str]:
    out = [f"neuronize verify: `{shlex.join(v.command)}` before and after {_migration_words(v)}"]
    out += [f"neuronize verify: warning: {w}" for w in v.migration.warnings]
    for run in v.not_started:
        out.append(f"  {run.host} ({run.side}): could not start: {run.start_error or _tail(run.output)}")
    for result in v.results:
        out += ["", f"{result.host} host: {_counts(result)} [{_run_words(result)}]",
                f"  simulated: {LIMITS[result.host]}"]
        for change in result.regressions:
            out += _change_lines(change)
        out += [f"  fixed {c.test}: {c.before} -> {c.after}" for c in result.fixed]
        out += [f"  now skipped {c.test}" for c in result.now_skipped]
        if result.output_changed:
            out.append("  the command's output changed (compare with --keep)")
        out += _neuron_lines(result)
    out += ["", summary(v)]
    return out


def _tail(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1][:300] if lines else "no output"


def summary(v: Verification) -> str:
    hosts = [r.host for r in v.results if r.regressions]
    fixed = sum(len(r.fixed) for r in v.results)
    runs = sum(r.before.seconds + (r.after.seconds if r.after is not r.before else 0) for r in v.results)
    return (f"{len(v.regressions)} regression(s)" + (f" on {', '.join(hosts)}" if hosts else "")
            + f", {fixed} fixed, on {len(v.results)} host(s); {v.seconds:.1f}s in all, "
            f"{runs:.1f}s of them running the command")


def _change_data(change: Change) -> dict[str, Any]:
    return {"test": change.test, "before": change.before, "after": change.after,
            "traceback": [[p, n] for p, n in change.where], "rules": change.rules,
            "hunks": [{"path": h.path, "new_start": h.new_start, "new_count": h.new_count,
                       "rules": h.rules, "diff": "\n".join(h.lines)} for h in change.hunks]}


def to_data(v: Verification) -> dict[str, Any]:
    hosts = []
    for r in v.results:
        entry: dict[str, Any] = {
            "host": r.host, "simulation": LIMITS[r.host], "compared": r.compared,
            "per_test": r.before.tests is not None,
            "seconds": {"before": round(r.before.seconds, 3), "after": round(r.after.seconds, 3)},
            "timed_out": {"before": r.before.timed_out, "after": r.after.timed_out},
            "regressions": [_change_data(c) for c in r.regressions],
            "fixed": [{"test": c.test, "before": c.before} for c in r.fixed],
            "now_skipped": [c.test for c in r.now_skipped], "output_changed": r.output_changed,
            "tests": {test: list(pair) for test, pair in r.outcomes.items()}}
        if r.neuron_path is not None:
            entry["neuron_path"] = {"taken": r.neuron_path.taken, "state": r.neuron_path.state,
                                    "cuda_sites_after": r.neuron_path.cuda_sites,
                                    "cuda_sites_before": r.neuron_path.cuda_sites_before,
                                    "device_uses": r.neuron_path.device_uses,
                                    "cuda_sites_in_tests": r.neuron_path.test_cuda_sites}
        hosts.append(entry)
    return {"command": v.command, "target": v.target, "unsafe_fixes": v.unsafe_fixes,
            "changed_files": v.migration.changed, "hunks": len(v.migration.hunks),
            "warnings": v.migration.warnings,
            "not_started": [{"host": r.host, "side": r.side, "error": r.start_error or _tail(r.output)}
                            for r in v.not_started],
            "hosts": hosts, "regressions": len(v.regressions), "seconds": round(v.seconds, 3)}


def to_json(v: Verification) -> str:
    return json.dumps(to_data(v), indent=2)


def to_markdown(v: Verification) -> str:
    out = ["## Verification of the migration", "",
           f"`{shlex.join(v.command)}` ran before and after {_migration_words(v)}, each host in a "
           "process of its own.", "",
           "| host | simulated | tests | regressions | fixed | Neuron path |", "|---|---|---|---|---|---|"]
    for r in v.results:
        path = "" if r.neuron_path is None else "taken" if r.neuron_path.taken else \
            f"not taken ({len(r.neuron_path.cuda_sites)} CUDA site(s) left)" if r.neuron_path.cuda_sites else \
            "no device chosen, no CUDA left"
        out.append(f"| {r.host} | {LIMITS[r.host]} | {r.compared} | {len(r.regressions)} | {len(r.fixed)} | {path} |")
    for r in v.results:
        for change in r.regressions:
            out += ["", f"### Regression on {r.host}: `{change.test}` ({change.before} -> {change.after})", ""]
            if change.where:
                out.append("Traceback through " + ", ".join(f"`{p}:{n}`" for p, n in change.where[-6:]) + ".")
            for hunk in change.hunks:
                out += ["", f"`{hunk.header}` {' '.join(hunk.rules)}", "", "```diff", *hunk.lines, "```"]
        if r.neuron_path is not None and r.neuron_path.cuda_sites:
            out += ["", "### CUDA still executed on the Neuron host after migration", ""]
            out += [f"- `{s['path']}:{s['line']}` {s['what']} ({s['count']}x)" for s in r.neuron_path.cuda_sites]
    for run in v.not_started:
        out += ["", f"**{run.host} ({run.side}) could not start:** {run.start_error or _tail(run.output)}"]
    out += ["", summary(v), ""]
    return "\n".join(out)
