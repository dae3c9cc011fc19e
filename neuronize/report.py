"""Renderers of one result model: text lines, the JSON contract, and the stderr summary."""

from __future__ import annotations

import json
from collections import Counter

from neuronize import TORCHNEURON_TARGET, __version__
from neuronize.api import RunResult
from neuronize.transform import Safety


def _pending(run: RunResult, include_applied: bool):  # type: ignore[no-untyped-def]
    for f in run.files:
        for finding in f.result.findings:
            if include_applied or not (finding.applied and f.result.changed):
                yield f, finding


def text_findings(run: RunResult, include_applied: bool = True) -> list[str]:
    """``path:line:col NRNxxx [safety] message`` lines, in file order."""
    lines = []
    for f, finding in _pending(run, include_applied):
        tag = "report-only" if not finding.fixable else f"{finding.safety.value} fix"
        if finding.applied and f.written:
            tag = "fixed"
        lines.append(
            f"{f.display}:{finding.line}:{finding.column} {finding.rule} [{tag}] {finding.message}"
        )
    return lines


def error_lines(run: RunResult) -> list[str]:
    lines = []
    for f in run.errors:
        err = f.error
        assert err is not None
        where = f.display if err.line is None else f"{f.display}:{err.line}"
        if err.line is not None and err.column is not None:
            where += f":{err.column}"
        lines.append(f"error: {where}: {err.message}")
    for s in run.skipped:
        lines.append(f"error: {s.display}: {s.reason}" if "no such" in s.reason else f"note: {s.display}: {s.reason}")
    return lines


def to_json(run: RunResult, include_applied: bool = True) -> str:
    findings = [finding.to_json(f.display) for f, finding in _pending(run, include_applied)]
    errors = [f.error.to_json(f.display) for f in run.errors if f.error is not None]
    errors += [{"path": s.display, "message": s.reason} for s in run.skipped if "no such" in s.reason]
    payload = {
        "version": __version__,
        "target": TORCHNEURON_TARGET,
        "findings": findings,
        "errors": errors,
        "summary": summary_counts(run),
    }
    return json.dumps(payload, indent=2, ensure_ascii=False)


def summary_counts(run: RunResult) -> dict[str, object]:
    applied: Counter[str] = Counter()
    left: Counter[str] = Counter()
    for f in run.files:
        for finding in f.result.findings:
            if finding.applied and (f.written or f.result.changed):
                applied[finding.safety.value] += 1
            else:
                left[finding.rule] += 1
    errors = len(run.errors)
    changed = sum(1 for f in run.files if f.result.changed and f.error is None)
    return {
        "files": len(run.files),
        "changed": changed,
        "unchanged": len(run.files) - changed - errors,
        "failed": errors,
        "fixes": dict(sorted(applied.items())),
        "findings_left": dict(sorted(left.items())),
    }


def summary_line(run: RunResult, *, wrote: bool) -> str:
    counts = summary_counts(run)
    verb = "changed" if wrote else "would change"
    fixes = counts["fixes"]
    assert isinstance(fixes, dict)
    left = counts["findings_left"]
    assert isinstance(left, dict)
    parts = [
        f"{counts['files']} file(s) checked: {counts['changed']} {verb}, "
        f"{counts['unchanged']} unchanged, {counts['failed']} failed"
    ]
    if fixes:
        parts.append(
            "fixes " + ("applied" if wrote else "available") + ": "
            + ", ".join(f"{n} {s}" for s, n in fixes.items())
        )
    if left:
        total = sum(left.values())
        parts.append(f"{total} finding(s) left (" + ", ".join(f"{r}: {n}" for r, n in left.items()) + ")")
    unsafe_left = any(
        finding.safety is Safety.UNSAFE and not finding.applied
        for f in run.files for finding in f.result.findings
    )
    if unsafe_left:
        parts.append("unsafe fixes are applied with --unsafe-fixes")
    return "; ".join(parts)
