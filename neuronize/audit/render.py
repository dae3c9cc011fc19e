"""The audit as text lines (stdout) and as the JSON contract (``--output``, ``--output-format
json``); the Markdown section lives with the other report renderers (neuronize/presenting/report.py)."""

from __future__ import annotations

import json
import os
import shlex

from neuronize.presenting.report import counted
from neuronize.audit.join import Audit, Site

KIND_WORDS = {"cuda-api": "torch.cuda call", "placement": "CUDA placement", "autocast": "CUDA autocast",
              "grad-scaler": "CUDA GradScaler", "compile": "torch.compile (Inductor)",
              "process-group": "NCCL process group", "env": "CUDA environment variable",
              "unsupported": "cannot run without a GPU", "accelerator": "torch.accelerator"}


def display(path: str) -> str:
    relative = os.path.relpath(path)
    return path if relative.startswith("..") else relative


def outcome(audit: Audit) -> str:
    raw = audit.raw
    if raw.returncode is None:
        return f"not started: {raw.start_error}"
    if raw.timed_out:
        return "stopped by --max-seconds (records kept)"
    return "finished" if raw.returncode == 0 else f"failed with exit code {raw.returncode}"


def _site_line(site: Site) -> str:
    text = f"  {display(site.file)}:{site.line}: {site.what}"
    if site.via:
        text += f" (via {site.via})"
    notes = [KIND_WORDS.get(site.kind, site.kind), f"{site.count}x"]
    if site.processes > 1:
        notes.append(f"{site.processes} processes")
    if site.redirect:
        notes.append(f"pretend-cuda: {site.redirect}")
    if not site.touch:
        notes.append("not a CUDA touch here")
    text += f"  [{', '.join(notes)}]"
    if site.status == "covered":
        how = {"line": "on this line", "guard": "on the enclosing condition",
               "value": "rewrites the device/backend value this line receives"}[site.match]
        lines = ", ".join(str(n) for n in site.finding_lines)
        text += f"\n      covered by {', '.join(site.rules)} (line {lines}: {how})"
    return text


def to_text(audit: Audit) -> list[str]:
    raw = audit.raw
    out = [f"neuronize audit: `{shlex.join(raw.command)}`"
           + (" with --pretend-cuda" if audit.pretend_cuda else "")
           + f": {outcome(audit)} after {raw.seconds:.1f}s, {len(raw.processes)} process(es) recorded"]
    sections = (
        ("MISSED by the static rules (runtime-only CUDA sites: migrate these by hand)", "missed"),
        ("Covered by static findings", "covered"),
        ("Device chosen by torch.accelerator in this file (device-agnostic: no migration needed)",
         "agnostic"),
        ("In code outside the project (installed packages; not analysed)", "outside"),
        ("Also recorded (no CUDA touch by itself)", "note"),
    )
    for title, status in sections:
        sites = audit.by_status(status)
        if sites:
            out += ["", f"{title} ({len(sites)}):"]
            out += [_site_line(s) for s in sites]
    if audit.never_executed:
        out += ["", f"Static findings on lines that never ran ({len(audit.never_executed)}; the "
                    "audit cannot confirm them, keep or drop them by review):"]
        out += [f"  {display(f.file)}:{f.line}: {f.rule} {f.message.splitlines()[0][:100]}"
                for f in audit.never_executed]
    for error in audit.errors:
        out.append(f"neuronize audit: static analysis failed for {error}")
    out += ["", summary(audit)]
    return out


def summary(audit: Audit) -> str:
    touches = audit.touches
    return (f"{counted(len(touches), 'CUDA touch site')}: {len(audit.by_status('missed'))} missed by the "
            f"static rules, {len(audit.by_status('covered'))} covered, "
            f"{len(audit.by_status('agnostic'))} device-agnostic, "
            f"{len(audit.by_status('outside'))} outside the project; "
            f"{counted(len(audit.never_executed), 'static finding')} never executed; "
            f"{counted(len(audit.analysed), 'file')} analysed")


def to_data(audit: Audit) -> dict:
    raw = audit.raw
    return {
        "command": raw.command,
        "pretend_cuda": audit.pretend_cuda,
        "outcome": outcome(audit),
        "returncode": raw.returncode,
        "timed_out": raw.timed_out,
        "seconds": round(raw.seconds, 3),
        "processes": [{"pid": p.pid, "rank": p.rank, "argv": p.argv, "finished": p.finished}
                      for p in raw.processes],
        "touches": len(audit.touches),
        "sites": [{"path": display(s.file), "line": s.line, "kind": s.kind, "what": s.what,
                   "via": s.via, "count": s.count, "processes": s.processes, "touch": s.touch,
                   "pretend_cuda": s.redirect, "status": s.status, "match": s.match,
                   "rules": s.rules, "finding_lines": s.finding_lines} for s in audit.sites],
        "never_executed": [{"path": display(f.file), "line": f.line, "end_line": f.end_line,
                            "rule": f.rule, "message": f.message} for f in audit.never_executed],
        "analysed": [display(p) for p in audit.analysed],
        "errors": audit.errors,
    }


def to_json(audit: Audit) -> str:
    return json.dumps(to_data(audit), indent=2)
