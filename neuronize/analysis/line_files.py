"""The pipeline for one file of a line-based kind (requirements, shell, Dockerfile, configs).

It does for lines what the Python engine (:mod:`neuronize.analysis.engine`) does for trees:
pre-filter -> read lines -> every enabled rule of the kind looks -> decide
(:mod:`neuronize.decision.policy`, as for Python) -> span edits -> emit (untouched lines byte for
byte) -> re-check until nothing is pending (at most three rounds). Pure: bytes in, a
:class:`SourceResult` out, never raises for bad input. Any kind of file enters by
:func:`neuronize.analysis.any_kind.run_kind`.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from pathlib import Path

from neuronize.analysis.engine import MAX_ROUNDS
from neuronize.analysis.prefilter import TokenFilter, prefilter_for
from neuronize.line_rule import KindContext, LineReport, LineRule, TextDocument
from neuronize.sources.kinds import CODE_KINDS, COMMENT_PREFIX, SourceKind, kind_by_content, kind_by_name
from neuronize.sources.lines import DecodeError, Edit, OverlappingEdits, apply_edits, comment_start, decode, split_lines
from neuronize.decision.policy import accepts, decide
from neuronize.decision.suppressions import Suppression, suppressions_in
from neuronize.transform import Transform
from neuronize.types import FileError, Finding, Options, SourceResult


def run_text(source: bytes, kind: SourceKind, rules: Sequence[type[Transform]], options: Options = Options(),
             path: str = "<string>", prefilter: TokenFilter | None = None, fix: bool = True) -> SourceResult:
    if b"\x00" in source:
        return SourceResult(error=FileError("binary file (contains NUL bytes); skipped"))
    line_rules = [r for r in rules if kind in r.kinds and issubclass(r, LineRule)]
    pattern = prefilter or prefilter_for(line_rules, kind)
    if not line_rules or not pattern.search(source):
        return SourceResult(skipped=True)
    try:
        text = decode(source)
    except DecodeError as exc:
        return SourceResult(error=FileError(exc.message, exc.line))
    try:
        return _run(text, kind, line_rules, options, path, fix)
    except Exception as exc:  # noqa: BLE001 - any failure is this file's error, never the run's
        return SourceResult(error=FileError(f"internal error ({type(exc).__name__}: {exc}); please report it"))


Located = list[tuple[LineReport, Finding]]


def _analyse(text: str, kind: SourceKind, rules: Sequence[type[LineRule]], options: Options,
             path: str) -> tuple[TextDocument, Located, list[Finding]]:
    doc = TextDocument(kind, split_lines(text), path)
    ctx = KindContext(options)
    for rule in rules:
        rule(ctx).check(doc)
    located = [(r, _finding(r)) for r in _first_per_span(ctx.reports)]
    kept, unused = decide(located, options, suppressions_of(doc), rules)
    return doc, kept, unused


def _first_per_span(reports: list[LineReport]) -> list[LineReport]:
    """One report per rule and span (a rule that sees a line twice says it once)."""
    seen: set[tuple[str, object]] = set()
    out = []
    for r in reports:
        key = (r.rule.id, r.span)
        if key not in seen:
            seen.add(key)
            out.append(r)
    return out


def _finding(r: LineReport) -> Finding:
    return Finding(line=r.span.line + 1, column=r.span.start + 1, rule=r.rule.id, name=r.rule.name,
                   safety=r.safety, message=r.message, fixable=r.fixable, end_line=r.span.line + 1,
                   end_column=r.span.end + 1, evidence=r.evidence)


def suppressions_of(doc: TextDocument) -> list[Suppression]:
    """``# neuronize: ignore[...]`` comments, in the comment syntax of the document's kind."""
    prefix = COMMENT_PREFIX.get(doc.kind)
    if prefix is None:
        return []
    comments = []
    for index, line in enumerate(doc.lines):
        if "neuronize:" not in line.text:
            continue
        start = comment_start(line.text, prefix)
        if start is not None:
            comments.append((index + 1, start + 1, line.text[start:], not line.text[:start].strip()))
    return suppressions_in(comments)


def _run(text: str, kind: SourceKind, rules: Sequence[type[LineRule]], options: Options, path: str,
         fix: bool) -> SourceResult:
    doc, located, unused = _analyse(text, kind, rules, options, path)
    accepted = accepts(options)
    pending = [r for r, _ in located if accepted(r)]
    if not pending or not fix:
        return SourceResult(findings=_findings(located, set(), unused), would_change=bool(pending))
    applied = {id(r) for r in pending}
    warnings: list[str] = []
    current = text
    for round_no in range(MAX_ROUNDS):
        edits: list[Edit] = [e for r in pending for e in r.edits or ()]
        try:
            current = apply_edits(list(split_lines(current)), edits)
        except OverlappingEdits as exc:
            return SourceResult(findings=_findings(located, set(), unused),
                                error=FileError(f"internal error: {exc}; left alone; please report it"))
        _, again, _ = _analyse(current, kind, rules, options, path)
        pending = [r for r, _ in again if accepted(r)]
        if not pending:
            break
        if round_no == MAX_ROUNDS - 1:
            warnings.append(f"{len(pending)} fix(es) still pending after {MAX_ROUNDS} rounds")
    findings = _findings(located, applied, unused)
    if current == text:
        return SourceResult(findings=findings, warnings=tuple(warnings))
    problem = _invalid(kind, text, current)
    if problem is not None:
        return SourceResult(findings=_findings(located, set(), unused),
                            error=FileError(f"internal error: {problem}; left alone; please report it"))
    return SourceResult(findings=findings, output=current.encode("utf-8"), warnings=tuple(warnings))


def _invalid(kind: SourceKind, before: str, after: str) -> str | None:
    """Why ``after`` is broken where ``before`` was not (JSON must stay JSON), or None."""
    if kind is SourceKind.JSON_CONFIG:
        try:
            json.loads(before)
        except ValueError:
            return None
        try:
            json.loads(after)
        except ValueError as exc:
            return f"the rewritten file would not be valid JSON ({exc})"
    return None


def text_problems(display: str, before: bytes, rebuilt: bytes) -> list[str] | None:
    """What is wrong with ``rebuilt`` (a file of a line-based kind put together from reviewed
    hunks): one line each, empty when it may be written; None when ``display`` is Python or a
    notebook (their own checks apply)."""
    path = Path(display)
    kind = kind_by_name(path) or kind_by_content(path, before)
    if kind is None or kind in CODE_KINDS:
        return None
    try:
        problem = _invalid(kind, decode(before), decode(rebuilt))
    except DecodeError as exc:
        return [exc.message]
    return [] if problem is None else [problem]


def _findings(located: Located, applied: set[int], extra: Sequence[Finding]) -> tuple[Finding, ...]:
    out = {dataclasses.replace(f, applied=True) if id(r) in applied else f for r, f in located}
    return tuple(sorted(out | set(extra)))
