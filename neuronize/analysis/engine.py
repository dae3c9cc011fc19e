"""The pipeline for one Python file's bytes: pre-filter -> parse -> analyse -> decide -> apply ->
imports -> finish -> emit. This module runs the stages and the rounds; each stage is a module:

- **Pre-filter** (:mod:`neuronize.analysis.prefilter`): a substring test over the raw bytes, built
  from the tokens every enabled rule declares. A file with none of them is never parsed; the first
  walk of a file runs only the rules with the name part of a token of theirs in it
  (:func:`neuronize.analysis.prefilter.candidates`).
- **Parse** once with libcst, on a thread with a deep stack. No metadata wrapper on the way in:
  names come from an import alias table, parents from the walk's own stack.
- **Analyse** (:mod:`neuronize.analysis.dispatch`): one walk (:mod:`neuronize.analysis.walk`:
  syntax nodes only, no node rebuilt); every enabled rule's ``visit_*`` / ``leave_*`` runs on the
  same tree.
- **Positions** are resolved only for files that have findings, and only for reported nodes
  (:mod:`neuronize.analysis.positions`).
- **Decide** which proposed fixes are applied: :mod:`neuronize.decision.policy`, the one decision
  stage (target, role, dispatch, evidence, suppressions, import safety, edit groups, guards).
- **Apply** the accepted fixes in one transformer pass (:mod:`neuronize.writing.apply`). A fix
  inside another fix is deferred and the rules run again on the new tree (at most three rounds).
- **Imports** requested by applied fixes are added or removed once per round
  (:mod:`neuronize.writing.imports`).
- **Finish**: the written code made what a person would write (:mod:`neuronize.writing.tidy`).
- **Emit** bytes; the output must parse and pass the safety nets
  (:mod:`neuronize.writing.safety_nets`), or the file is an error and is left alone.

Pure: bytes in, a :class:`SourceResult` value out; no filesystem, no printing, never raises for
bad input (a bad file is an error value, the run goes on: :mod:`neuronize.analysis.read_errors`).
"""

from __future__ import annotations

import dataclasses
import functools
import re
from collections.abc import Callable, Sequence

import libcst as cst

from neuronize.analysis.deep_stack import on_deep_stack
from neuronize.analysis.dispatch import analyse
from neuronize.analysis.positions import locate_in_code
from neuronize.analysis.prefilter import TokenFilter, candidates, prefilter_for
from neuronize.analysis.read_errors import read_error
from neuronize.analysis.syntax import with_attached_comment, with_usual_indent
from neuronize.analysis.syntax_error import python_syntax_error
from neuronize.decision.policy import Located, Tree, accepts, decide, top_level_pin
from neuronize.decision.suppressions import parse_suppressions
from neuronize.sources.kinds import SourceKind
from neuronize.transform import Report, Transform
from neuronize.types import FileError, Finding, Note, Options, SourceResult
from neuronize.writing.apply import apply, outermost
from neuronize.writing.imports import apply_imports
from neuronize.writing.safety_nets import output_error
from neuronize.writing.tidy import finished

MAX_ROUNDS = 3


def run_source(
    source: bytes,
    rules: Sequence[type[Transform]],
    options: Options = Options(),
    path: str = "<string>",
    prefilter: TokenFilter | None = None,
    fix: bool = True,
    inherited: bytes = b"",
    tidy: bool = True,
) -> SourceResult:
    """Analyse (and, if fixes are accepted and ``fix``, rewrite) one file's bytes.

    Never raises on bad input. With ``fix=False`` (``check``) no fix is applied and ``output``
    stays None; findings still say which fixes would apply. ``inherited``: statements
    that ran before this source (a notebook's earlier cells: imports, the device variable), so
    names they bind are known.
    ``tidy``: the code the fixes wrote is then made what a person would write
    (:func:`neuronize.writing.tidy.tidied`); False shows the rules' own edits (a rule's examples,
    comparisons between targets).
    """
    if b"\x00" in source:
        return SourceResult(error=FileError("binary file (contains NUL bytes); skipped"))
    rules = [r for r in rules if SourceKind.PYTHON in r.kinds]  # rules of other kinds: sources/kinds.py
    pattern = prefilter or prefilter_for(rules)
    if not pattern.search(source):
        return SourceResult(skipped=True)
    try:
        return on_deep_stack(functools.partial(_run_parsed, source, rules, options, path, fix, inherited, tidy))
    except Exception as exc:  # noqa: BLE001 - any failure is this file's error, never the run's
        return SourceResult(error=read_error(exc, source))


_BLANK_TAIL = re.compile(rb"(?<=\n)[ \t\f\r\n]*\Z")


def _split_blank_tail(source: bytes) -> tuple[bytes, bytes]:
    """Split off trailing whitespace-only lines, which libcst does not reproduce byte for byte
    (``x\n\n  \n`` comes back as ``x\n  \n``); they are re-attached untouched."""
    match = _BLANK_TAIL.search(source)
    if match is None or match.start() == 0:
        return source, b""
    return source[: match.start()], source[match.start():]


def not_rewritten(findings: Sequence[Finding], why: str) -> tuple[Finding, ...]:
    """``findings`` of a file that is not rewritten (``why``, after "not applied: "): none of
    their fixes can be applied, and each says so."""
    note: Note = ("refused", f"not applied: {why}")
    return tuple(dataclasses.replace(f, fixable=False, notes=(*f.notes, note)) if f.fixable else f for f in findings)


def _run_parsed(source: bytes, rules: Sequence[type[Transform]], options: Options,
                path: str, fix: bool, inherited_source: bytes = b"", tidy: bool = True) -> SourceResult:
    source, tail = _split_blank_tail(source)
    module = with_attached_comment(cst.parse_module(source))
    if module.default_indent != "    " or b"\n\t" in source:  # PEP 8's four spaces throughout: nothing to settle
        module = with_usual_indent(module)
    inherited = cst.parse_module(inherited_source) if inherited_source else None
    # only the rules this file (or what it inherits) can wake walk the tree; the later rounds run
    # every rule (the fixes may have written any token, and the new code is not rendered to look)
    reports, parents = analyse(module, candidates(source + inherited_source, rules), options, path, source,
                               inherited)
    accepted = accepts(options)
    # the module is printed only to be rewritten: not in check mode, nor when no fix could apply
    # (the decision stage only holds fixes back; if it let one more through, _bytes prints it)
    located, code = _locate(module, reports, whole=fix and any(map(accepted, reports)))
    located, unused = decide(located, options, parse_suppressions(source), rules, Tree(module, parents))
    pins = top_level_pin(located, parents)
    pending = [r for r, _ in located if accepted(r)]
    if not pending or not fix:
        # libcst reads some Python 2 (`except X, e:`) that CPython refuses: say so, as `fix` does
        refused = python_syntax_error(source) if located else None
        findings = _findings(located, _never, unused)
        if refused is not None:  # `fix` refuses the file
            findings = not_rewritten(findings, "the file is not rewritten while Python cannot compile it (see its "
                                               "error line)")
        return SourceResult(findings=findings, would_change=bool(pending) and refused is None, error=refused, pins=pins)
    if _bytes(module, code) != source:
        return SourceResult(
            findings=_findings(located, _never, unused),
            error=FileError("libcst cannot reproduce this file byte for byte; not rewritten"),
        )
    warnings: list[str] = []
    new = module
    later: list[Finding] = []
    # by the rule's own message: the group note may change from one round to the next
    seen = {(r.rule.id, r.message) for r, _ in located if accepted(r)}
    made_later: set[tuple[str, str]] = set()  # the fixes the rounds after the first made
    for round_no in range(MAX_ROUNDS):
        batch = outermost(pending)
        new = apply_imports(apply(new, batch, parents), [req for r in batch for req in r.imports])
        # Applied fixes can reveal more: a fix nested in another, a name an added import now
        # resolves, a guard whose CUDA-only body another rule removed. Run to a fixed point, so
        # that a second run of neuronize changes nothing.
        marker_free = b"neuronize:" not in source
        reports, parents = analyse(new, rules, options, path, source, inherited)  # the bytes as read: a superset test
        if not any(r.fixable for r in reports):
            code = None  # nothing left to fix: no need to place the findings (the finishing passes render)
            break
        again, code = _locate(new, reports)
        marks = parse_suppressions(source if marker_free else _bytes(new, code))
        again, _ = decide(again, options, marks, rules, Tree(new, parents))
        pending = [r for r, _ in again if accepted(r)]
        if not pending:
            break
        made_later.update((r.rule.id, r.message) for r in pending)
        later.extend(dataclasses.replace(f, applied=True) for r, f in again
                     if accepted(r) and (r.rule.id, r.message) not in seen)
        if round_no == MAX_ROUNDS - 1:
            warnings.append(f"{len(pending)} fix(es) still pending after {MAX_ROUNDS} rounds")
    new, code = finished(module, new, code, source, options, tidy, inherited)
    output = _bytes(new, code) + tail
    source += tail
    # Of several accepted fixes for one node only the first is applied (see outermost); a fix
    # nested in another is made only if a later round made it again (the outer one may replace
    # its node: a statement rewritten whole)
    accepted_first = [r for r, _ in located if accepted(r)]
    outer = {id(r) for r in outermost(accepted_first)}
    first_per_node = {id(r) for r in outermost(accepted_first, nested=True)}
    made = {id(r) for r in accepted_first if id(r) in outer or (
        id(r) in first_per_node and (r.rule.id, r.message) in made_later)}
    # a nested fix no later round made again was superseded by the fix around it, which rewrote
    # its code (a CUDA arm kept for CUDA hosts): the later rounds read that code, and had nothing
    # to fix there, as a second run has not
    kept = [(r, f) for r, f in located if id(r) not in first_per_node or id(r) in made]
    findings = _findings(kept, lambda r: id(r) in made, [*unused, *later])
    if output == source:
        return SourceResult(findings=findings, warnings=tuple(warnings), pins=pins)
    error = output_error(source, output, module, new, inherited)
    if error is not None:
        return SourceResult(findings=_findings(located, _never, unused), error=error)
    return SourceResult(findings=findings, output=output, warnings=tuple(warnings), pins=pins)


def _locate(module: cst.Module, reports: Sequence[Report], whole: bool = True) -> tuple[Located, str | None]:
    """The findings of ``reports``, and the module's code if it had to be rendered for them
    (``whole=False``: only as far as the last finding, and no code is returned)."""
    if not reports:
        return [], None
    spans, code = locate_in_code(module, (r.node for r in reports), whole)
    located = []
    for r in reports:
        span = spans[id(r.node)]
        located.append((r, Finding(
            line=span.line, column=span.column, end_line=span.end_line, end_column=span.end_column,
            rule=r.rule.id, name=r.rule.name, safety=r.safety, message=r.message, fixable=r.fixable,
            evidence=r.evidence, notes=r.notes, dependency=r.dependency,
        )))
    return located, code


def _bytes(module: cst.Module, code: str | None) -> bytes:
    """``module.bytes``, from its code when :func:`_locate` has already rendered it."""
    return module.bytes if code is None else code.encode(module.encoding)


def _findings(located: Located, applied: Callable[[Report], bool], extra: Sequence[Finding] = ()
              ) -> tuple[Finding, ...]:
    out = {dataclasses.replace(f, applied=True) if applied(r) else f for r, f in located}
    return tuple(sorted(out | set(extra)))


def _never(report: Report) -> bool:
    return False
