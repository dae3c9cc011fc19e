"""Join the recorded sites with the static findings of the files they are in.

A runtime site is *covered* when a static finding explains it: one on the same line (within the
finding's span), one on the test of an ``if``/``while`` that encloses the line (the rule saw the
CUDA branch), or, for a placement, autocast or process group whose CUDA value came from a
variable, a finding in the same file that rewrites a device or backend value (the fix changes
what the line receives) or reports one the catch-all found left in the code. Otherwise it is *missed*: the static rules did not see it. Sites in
files outside the project (installed packages) are listed apart, and so are placements in a file
whose device came from ``torch.accelerator`` (*agnostic*: the same code picks the Neuron device)
and records that are no CUDA touch by themselves (*note*). Static findings on lines that never
ran are listed too: the audit cannot vouch for them either way.
"""

from __future__ import annotations

import ast
import os
from dataclasses import dataclass, field
from pathlib import Path
from collections.abc import Iterable

from neuronize.audit.launch import RawRun
from neuronize.types import Finding

#: findings whose fix rewrites a device value (placements and autocast receive it)
DEVICE_VALUE_RULES = ("NRN101", "NRN103")
#: findings whose fix rewrites a process-group backend value
BACKEND_VALUE_RULES = ("NRN401",)
VALUE_RULES = {"placement": DEVICE_VALUE_RULES, "autocast": DEVICE_VALUE_RULES,
               "grad-scaler": DEVICE_VALUE_RULES, "process-group": BACKEND_VALUE_RULES}
_PACKAGES = ("site-packages", "dist-packages")


@dataclass
class Site:
    kind: str
    what: str
    file: str
    line: int
    count: int
    processes: int
    touch: bool
    via: str = ""
    redirect: str = ""
    status: str = "missed"  # covered | missed | agnostic | note | outside
    match: str = ""  # line | guard | value
    rules: list[str] = field(default_factory=list)
    finding_lines: list[int] = field(default_factory=list)


@dataclass
class StaticFinding:
    file: str
    line: int
    end_line: int
    rule: str
    message: str
    executed: bool | None  # None: no line data for the file


@dataclass
class Audit:
    raw: RawRun
    sites: list[Site]
    never_executed: list[StaticFinding]
    analysed: list[str]
    errors: list[str]
    pretend_cuda: bool
    root: Path

    @property
    def touches(self) -> list[Site]:
        return [s for s in self.sites if s.touch]

    def by_status(self, status: str) -> list[Site]:
        return [s for s in self.sites if s.status == status]


def in_project(path: str, root: Path) -> bool:
    absolute = os.path.abspath(path)
    return absolute.startswith(str(root) + os.sep) and not any(p in absolute for p in _PACKAGES)


def scripts_of(command: Iterable[str]) -> list[str]:
    """The Python files named on the command line (the script, torchrun's training script)."""
    return [arg for arg in command if arg.endswith(".py") and os.path.isfile(arg)]


def static_findings(files: list[str]) -> tuple[dict[str, list], list[str]]:
    """Findings of the enabled rules per absolute path (the project's config applies), errors."""
    from neuronize import api
    from neuronize.sources.config import Config, find_config, load_config
    from neuronize.analysis.context import Options
    from neuronize.registry import all_rules, select_rules

    if not files:
        return {}, []
    found = find_config(Path(files[0]))
    config = load_config(found) if found is not None else Config()
    rules = select_rules(all_rules(), list(config.select or ()), list(config.ignore))
    options = Options(target=config.target or "neuron", unsafe_fixes=bool(config.unsafe_fixes))  # type: ignore[arg-type]
    run = api.analyse_paths(files, rules, options, jobs=1, fix=False, config=config, cache=False)
    by_file = {os.path.abspath(f.path): list(f.result.findings) for f in run.files if f.path is not None}
    errors = [f"{f.display}: {f.error.message}" for f in run.errors if f.error is not None]
    return by_file, errors


def _guard_tests(source: str, line: int) -> list[tuple[int, int]]:
    """Line spans of the tests of the ``if``/``while`` statements and conditional expressions
    that enclose ``line`` (not counting the test itself)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return []
    spans = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.If, ast.While, ast.IfExp)) and node.end_lineno is not None:
            test = node.test
            if node.lineno <= line <= node.end_lineno and not (
                    test.lineno <= line <= (test.end_lineno or test.lineno)):
                spans.append((test.lineno, test.end_lineno or test.lineno))
    return spans


def _cover(site: Site, findings: list, source: str | None, ran: set[int] | None) -> None:
    def spans(f: Finding) -> tuple[int, int]:
        return f.line, max(f.line, f.end_line or f.line)

    same_line = [f for f in findings if spans(f)[0] <= site.line <= spans(f)[1]]
    guards = _guard_tests(source, site.line) if source is not None and not same_line else []
    guarding = [f for f in findings if any(a <= f.line <= b for a, b in guards)]
    # a device setting that never ran gave nothing; a catch-all finding (a CUDA device or backend
    # value left in the code) names the value the line may receive: the rules saw it
    from neuronize.registry import all_rules

    catch_all = {r.id for r in all_rules() if r.catch_all}
    value = [f for f in findings if (f.rule in VALUE_RULES.get(site.kind, ()) and f.fixable
                                     or site.kind in VALUE_RULES and f.rule in catch_all)
             and (ran is None or f.line in ran)]
    for match, chosen in (("line", same_line), ("guard", guarding), ("value", value)):
        if chosen:
            site.status, site.match = "covered", match
            site.rules = sorted({f.rule for f in chosen})
            site.finding_lines = sorted({f.line for f in chosen})
            return


def join(raw: RawRun, root: Path, pretend_cuda: bool) -> Audit:
    sites = [Site(kind=s["kind"], what=s["what"], file=s["file"], line=s["line"], count=s["count"],
                  processes=len(s["pids"]), touch=s.get("touch", True), via=s.get("via", ""),
                  redirect=s.get("redirect", "")) for s in raw.sites]
    project = {s.file for s in sites if in_project(s.file, root)}
    project.update(os.path.abspath(p) for p in scripts_of(raw.command) if in_project(p, root))
    analysed = sorted(project)
    findings, errors = static_findings(analysed)
    sources: dict[str, str | None] = {}
    for site in sites:
        if site.file not in project:
            site.status = "outside"
            continue
        if site.file not in sources:
            try:
                sources[site.file] = Path(site.file).read_text(encoding="utf-8", errors="replace")
            except OSError:
                sources[site.file] = None
        _cover(site, findings.get(site.file, []), sources[site.file], raw.lines.get(site.file))
        if site.status == "missed" and not site.touch:
            site.status = "note"
    agnostic_files = {s.file for s in sites if s.kind == "accelerator"}
    for site in sites:
        if site.status == "missed" and site.kind in ("placement", "autocast") and site.file in agnostic_files:
            site.status = "agnostic"
    never = []
    for file, found in findings.items():
        ran = raw.lines.get(file)
        if ran is not None:  # a process that never wrote its lines still ran its sites' lines
            ran = ran | {s.line for s in sites if s.file == file}
        for f in found:
            end = max(f.line, f.end_line or f.line)
            executed = None if ran is None else any(n in ran for n in range(f.line, end + 1))
            if executed is False:
                never.append(StaticFinding(file, f.line, end, f.rule, f.text, executed))
    return Audit(raw, sites, never, analysed, errors, pretend_cuda, root)
