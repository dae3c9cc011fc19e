"""Renderers of one result model: text lines, the JSON contract, the stderr summary, and the
migration report formats (Markdown, SARIF 2.1.0, GitHub workflow annotations)."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Hashable, Iterable

from neuronize import TORCHNEURON_TARGET, __version__
from neuronize.presenting.concise import MIN_WIDTH, WIDTH, adds, fold_variants, headline, held
from neuronize.presenting.diff import Style
from neuronize.presenting.links import RELATIVE, Links
from neuronize.presenting.repeats import collapse, more, repeat_key
from neuronize.types import EFFORTS, SECTIONS, FileResult, Finding, RunResult, Safety, SkipReason


def _pending(run: RunResult, include_applied: bool) -> Iterable[tuple[FileResult, Finding]]:
    for f in run.files:
        for finding in f.result.findings:
            if include_applied or not (finding.applied and f.result.changed):
                yield f, finding


def location(display: str, finding: Finding) -> str:
    """``path:line:col``, or ``path:cell N:line:col`` inside a notebook."""
    cell = f"cell {finding.cell}:" if finding.cell is not None else ""
    return f"{display}:{cell}{finding.line}:{finding.column}"


def finding_tag(f: FileResult, finding: Finding) -> str:
    """What can be done about a finding: ``safe fix``, ``unsafe fix``, ``report-only``, ``fixed``."""
    if finding.applied and f.written:
        return "fixed"
    return "report-only" if not finding.fixable else f"{finding.safety.value} fix"


def text_findings(run: RunResult, include_applied: bool = True, show_repeats: bool = False,
                  style: Style | None = None) -> list[str]:
    """``path:line:col NRNxxx [safety] message`` lines, in file order; a report-only finding
    repeated elsewhere is one line with the other places (:mod:`neuronize.presenting.repeats`), unless
    ``show_repeats`` (``--show-repeats``): then every place is a line of its own. ``style``
    colours the place, the rule and the tag as the ``full`` format does."""
    style = style or Style()
    pending, variants = fold_variants(list(_pending(run, include_applied)))
    items = [(f, x, []) for f, x in pending] if show_repeats else collapse(pending, _text_key)
    lines = []
    for f, finding, repeats in items:
        like = "in other dependency files" if _in_dependency_file(f, finding) else "like it"
        others = more([location(g.display, x) for g, x in repeats], like=like)
        where, tag = location(f.display, finding), "[" + finding_tag(f, finding) + "]"
        room = WIDTH - len(f"{where} {finding.rule} {tag} ")
        width, why = max(room, MIN_WIDTH), held(finding)
        what = headline(finding.message, width)
        if why and len(what) + len(why) > width:
            # the code the finding names comes first: a reason that would cut it short is one word
            if headline(finding.message, width - len(why)).endswith("…`"):
                why = " (not applied)"
            what = headline(finding.message, width - len(why))
        what += why
        if id(finding) in variants:
            what += adds(finding.message, variants[id(finding)])
        lines.append(f"{style.header(where)} {style.error(finding.rule)} {style.hunk(tag)} {what}{others}")
    return lines


def _in_dependency_file(f: FileResult, finding: Finding) -> bool:
    """A report-only finding of a requirements file, ``pyproject.toml``, ``setup.cfg``, conda
    environment or ``cog.yaml``: said once per rule in the text output, however many files repeat it."""
    from pathlib import Path

    from neuronize.sources.kinds import DEPENDENCY_KINDS, kind_by_name

    return not finding.fixable and not finding.applied and kind_by_name(Path(f.display)) in DEPENDENCY_KINDS


def _text_key(f: FileResult, finding: Finding) -> Hashable | None:
    return (finding.rule, "dependency files") if _in_dependency_file(f, finding) else repeat_key(finding)


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
        lines.append(f"error: {s.display}: {s.reason}" if s.reason is SkipReason.NO_SUCH_FILE else f"note: {s.display}: {s.reason}")
    return lines


def to_json(run: RunResult, include_applied: bool = True, wrote: bool = False) -> str:
    """The JSON contract. Its summary counts the files that ``changed`` when the run wrote them
    (``fix``), else those that ``would_change``."""
    findings = [finding.to_json(f.display) for f, finding in _pending(run, include_applied)]
    errors = [f.error.to_json(f.display) for f in run.errors if f.error is not None]
    errors += [{"path": s.display, "message": s.reason} for s in run.missing]
    summary = {(key if wrote or key != "changed" else "would_change"): value
               for key, value in summary_counts(run).items()}
    payload = {
        "version": __version__,
        "target": TORCHNEURON_TARGET,
        "findings": findings,
        "errors": errors,
        "summary": summary,
    }
    return json.dumps(payload, indent=2, ensure_ascii=False)


def summary_counts(run: RunResult) -> dict[str, object]:
    applied: Counter[str] = Counter()
    fixable: Counter[str] = Counter()
    left: Counter[str] = Counter()
    for f in run.files:
        for finding in f.result.findings:
            if finding.applied and (f.written or f.result.changed):
                applied[finding.safety.value] += 1
            else:
                left[finding.rule] += 1
                if finding.fixable:
                    fixable[finding.safety.value] += 1
    errors = len(run.errors)
    changed = sum(1 for f in run.files if (f.result.changed or f.result.would_change) and f.error is None)
    return {
        "files": len(run.files),
        "changed": changed,
        "unchanged": len(run.files) - changed - errors,
        "failed": errors,
        "fixes": dict(sorted(applied.items())),
        "fixable_left": dict(sorted(fixable.items())),
        "findings_left": dict(sorted(left.items())),
    }


def counted(n: int, word: str, plural: str | None = None) -> str:
    """``1 file``, ``2 files`` (``plural`` for a word that is not made with ``s``)."""
    return f"{n} {word}" if n == 1 else f"{n} {plural or word + 's'}"


def files_line(run: RunResult, *, wrote: bool) -> str:
    """``3 files checked: 1 changed, 2 unchanged, 0 failed`` (``would change`` unless ``wrote``)."""
    counts = summary_counts(run)
    verb = "changed" if wrote else "would change"
    files = counts["files"]
    assert isinstance(files, int)
    return (f"{counted(files, 'file')} checked: {counts['changed']} {verb}, "
            f"{counts['unchanged']} unchanged, {counts['failed']} failed")


def summary_line(run: RunResult, *, wrote: bool, unsafe_fixes: bool = False) -> str:
    """``fix``'s one-line summary. ``unsafe_fixes``: the run had them on (so it does not advise
    the flag)."""
    counts = summary_counts(run)
    fixes = counts["fixes"]
    assert isinstance(fixes, dict)
    left = counts["findings_left"]
    assert isinstance(left, dict)
    parts = [files_line(run, wrote=wrote)]
    if fixes:
        parts.append(
            "fixes " + ("applied" if wrote else "available") + ": "
            + ", ".join(f"{n} {s}" for s, n in fixes.items())
        )
    fixable = counts["fixable_left"]
    assert isinstance(fixable, dict)
    if fixable and not fixes:
        parts.append("fixable: " + ", ".join(f"{n} {s}" for s, n in fixable.items()))
    if left:
        total = sum(left.values())
        parts.append(f"{counted(total, 'finding')} left (" + ", ".join(f"{r}: {n}" for r, n in left.items()) + ")")
    unsafe_left = any(
        finding.safety is Safety.UNSAFE and finding.fixable and not finding.applied
        for f in run.files for finding in f.result.findings
    )
    if unsafe_left and not unsafe_fixes:
        parts.append("unsafe fixes are applied with --unsafe-fixes")
    return "; ".join(parts)


# -- migration report: kinds, effort, dependencies ---------------------------------------------
#: The report's sections, in order: ``(key, title, ())`` (each rule names its ``section``).
KINDS: tuple[tuple[str, str, tuple[str, ...]], ...] = tuple((k, t, ()) for k, t in SECTIONS.items())
EFFORT_ORDER = EFFORTS


def kind_of(rule_id: str) -> tuple[str, str]:
    """``(key, title)`` of the report section a rule's leftover findings go in (its ``section``)."""
    from neuronize.registry import rule_by_code

    rule = rule_by_code(rule_id)
    if rule is None:
        return "other", "Other"
    return rule.section, SECTIONS[rule.section]


def effort(finding: Finding) -> str:
    """How much work a finding still needs once neuronize is done: ``none`` for a safe fix,
    ``low`` for an unsafe one (review the diff), else the rule's ``effort``."""
    if finding.applied or finding.fixable:
        return "none" if finding.safety is Safety.SAFE else "low"
    from neuronize.registry import rule_by_code

    rule = rule_by_code(finding.rule)
    return rule.effort if rule is not None else "medium"


def dependency(finding: Finding) -> str:
    """``hard`` / ``optional`` for a CUDA-only import (an NRN90x finding's field), else ``""``."""
    return finding.dependency or ""


def _done(f: FileResult, finding: Finding) -> bool:
    """The edit is made (written) or would be made by `fix` (computed, not written)."""
    return finding.applied and (f.written or f.result.changed)


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _link(display: str, finding: Finding, links: Links = RELATIVE) -> str:
    """``[path:line](path#Lline)``, the target absolute with a link base; in a file this run
    wrote, the line is where it is now (see ``neuronize.api.write_file``)."""
    where = location(display, finding).rsplit(":", 1)[0]  # path[:cell N]:line
    anchor = f"#L{finding.line}" if getattr(finding, "cell", None) is None else ""
    return f"[{where}]({links.target(display)}{anchor})"


#: at most this many lines of each side of an edit are shown in the report
EDIT_LINES = 6


def _edit_block(f: FileResult, finding: Finding, ops: Iterable[tuple[str, int, int, int, int]]) -> list[str]:
    """The lines an applied edit changed, as a small ``diff`` block under its list item:
    the actual before -> after, from the file's change blocks that touch the finding."""
    from neuronize.sources.lines import byte_lines, encoding_of
    from neuronize.analysis.positions import counterpart

    if f.source is None or f.result.output is None or getattr(finding, "cell", None) is not None:
        return []
    old, new = byte_lines(f.source), byte_lines(f.result.output)
    encoding = encoding_of(f.source)
    lo, hi = finding.line - 1, max(finding.end_line, finding.line)  # 0-based, half-open, as read
    before: list[bytes] = []
    after: list[bytes] = []
    for tag, i1, i2, j1, j2 in ops:
        if tag == "equal" or not (i1 < hi and i2 > lo if i2 > i1 else lo <= i1 <= hi):
            continue
        mine = range(max(i1, lo), min(i2, hi))
        if tag == "replace":
            # the lines the finding's own lines became; a line rewritten beyond recognition
            # became the lines of the block no other old line became
            became = {i: counterpart(old[i].decode(encoding, "replace"), new, j1, j2, i - i1, encoding)
                      for i in range(i1, i2)}
            ours = {k for i in mine if (k := became[i]) is not None}
            if any(became[i] is None for i in mine):
                ours |= set(range(j1, j2)) - set(became.values())
            else:  # the lines no old line became continue the one above them (a statement split)
                owners = {k: i for i, k in became.items() if k is not None}
                owner = None
                for k in range(j1, j2):
                    owner = owners.get(k, owner)
                    if k not in owners and owner in mine:
                        ours.add(k)
            after += [new[k] for k in sorted(ours)]
        else:
            after += new[j1:j2]
        before += [old[i] for i in mine]
    if not before and not after:
        return []

    def side(prefix: str, lines: list[bytes]) -> list[str]:
        text = [prefix + raw.decode(encoding, "replace").lstrip("\ufeff").rstrip("\r\n")
                for raw in lines[:EDIT_LINES]]
        if len(lines) > EDIT_LINES:
            text.append(f"{prefix}... ({len(lines) - EDIT_LINES} more line(s))")
        return text

    fence = "````" if any(b"```" in raw for raw in (*before, *after)) else "```"
    return [f"  {fence}diff", *(f"  {line}" for line in (*side("-", before), *side("+", after))),
            f"  {fence}"]


def _as_read(f: FileResult, finding: Finding) -> Finding:
    """``finding`` at its place in the file as read (it is where it is now once written)."""
    if f.written and len(f.as_read) == len(f.result.findings):
        return f.as_read[f.result.findings.index(finding)]
    return finding


def _evidence_legend(findings: Iterable[Finding]) -> list[str]:
    """What each ``[evidence: X]`` mark in the report means, with where to read more."""
    from neuronize.decision.evidence import EVIDENCE_MEANINGS

    used = sorted({x.evidence.value for x in findings if x.evidence is not None and x.evidence.value != "DOC"})
    if not used:
        return []
    out = ["", "## Evidence marks", "",
           "A finding resting on less than the TorchNeuron documentation says so with a mark "
           "(`neuronize explain MARK` prints the same):", ""]
    out += [f"- `[evidence: {mark}]`: {EVIDENCE_MEANINGS.get(mark, mark)}" for mark in used]
    return out


def to_markdown(run: RunResult, command: str = "neuronize report", links: Links = RELATIVE) -> str:
    """One Markdown document for a pull request or the repository (see README, "Reports");
    ``links`` makes its links absolute (``--link-base``, or the repository's web address)."""
    from neuronize.analysis.positions import line_ops
    from neuronize.sources.lines import byte_lines
    from neuronize.registry import rule_by_code

    wrote = any(f.written for f in run.files)
    counts = summary_counts(run)
    edits = [(f, x) for f in run.files for x in f.result.findings if _done(f, x)]
    left = [(f, x) for f in run.files for x in f.result.findings if not _done(f, x)]
    failed = list(run.errors)
    missing = list(run.missing)
    out = ["# TorchNeuron migration report", ""]
    out.append(f"Generated by neuronize {__version__} with rules targeting {TORCHNEURON_TARGET}. "
               f"Regenerate with `{command}` and compare after upgrading neuronize or TorchNeuron.")
    out += ["", "## Summary", "", "| | count |", "|---|---:|"]
    out.append(f"| files scanned | {counts['files']} |")
    out.append(f"| files {'edited' if wrote else 'needing edits'} | {counts['changed']} |")
    out.append(f"| files unchanged | {counts['unchanged']} |")
    out.append(f"| files failed | {counts['failed'] + len(missing)} |")  # type: ignore[operator]
    by_safety = Counter(x.safety.value for _, x in edits)
    detail = ", ".join(f"{n} {s}" for s, n in sorted(by_safety.items()))
    out.append(f"| edits {'made' if wrote else 'that `neuronize fix` makes'} | {len(edits)}"
               + (f" ({detail})" if detail else "") + " |")
    unsafe_left = sum(1 for _, x in left if x.fixable)
    out.append(f"| fixes not applied (unsafe: review, then `--unsafe-fixes` or `fix -i`) | {unsafe_left} |")
    out.append(f"| findings for a person | {len(left) - unsafe_left} |")

    out += ["", "## Edits", ""]
    if not edits:
        out.append("None.")
    else:
        out += ["| rule | name | safety | count | effort | what it changes |", "|---|---|---|---:|---|---|"]
        rows: dict[tuple[str, str], list] = {}
        for f, x in edits:
            rows.setdefault((x.rule, x.safety.value), []).append((f, x))
        for (rule_id, safety), items in sorted(rows.items()):
            rule = rule_by_code(rule_id)
            summary = _cell(rule.summary()) if rule is not None else ""
            out.append(f"| {rule_id} | `{items[0][1].name}` | {safety} | {len(items)} | "
                       f"{effort(items[0][1])} | {summary} |")
        out += ["", "Every edit:", ""]
        changes = {id(f): line_ops(byte_lines(f.source), byte_lines(f.result.output)) for f, _ in edits
                   if f.source is not None and f.result.output is not None}
        entries = [(f, f"- {_link(f.display, x, links)} {x.rule} ({x.safety.value}): {_cell(x.text)}",
                    _edit_block(f, _as_read(f, x), changes.get(id(f), ()))) for f, x in edits]
        # findings whose edits make one block (two on a line): their lines, then the block once
        shared: list[tuple[FileResult, Counter[str], list[str]]] = []
        for f, bullet, block in entries:
            if shared and shared[-1][0] is f and shared[-1][2] == block and block:
                shared[-1][1][bullet] += 1
            else:
                shared.append((f, Counter([bullet]), block))
        for _, bullets, block in shared:
            out += [bullet + (f" ({n} on this line)" if n > 1 else "") for bullet, n in bullets.items()]
            out += block

    out += ["", "## Left to do", ""]
    if not left:
        out.append("Nothing: every finding is migrated.")
    groups: dict[str, list] = {}
    titles: dict[str, str] = {}
    for f, x in left:
        key, title = kind_of(x.rule)
        groups.setdefault(key, []).append((f, x))
        titles[key] = title
    for key, _, _ in KINDS:
        if key not in groups:
            continue
        items = groups[key]
        rules_here = ", ".join(sorted({x.rule for _, x in items}))
        out += [f"### {titles[key]} ({len(items)}: {rules_here})", "",
                "| where | rule | status | dependency | effort | path forward |",
                "|---|---|---|---|---|---|"]
        for f, x, repeats in collapse(items):
            status = f"{x.safety.value} fix not applied" if x.fixable else "report-only"
            places = [_link(g.display, y, links) for g, y in repeats]
            where = f"{_link(f.display, x, links)}{more(places, limit=None)}"
            out.append(f"| {where} | {x.rule} `{x.name}` | {status} | "
                       f"{dependency(x) or '-'} | {effort(x)} | {_cell(x.text)} |")
        out.append("")
    if left:
        out += ["### Effort by rule", "", "| rule | name | left | effort |", "|---|---|---:|---|"]
        per_rule: dict[str, list[Finding]] = {}
        for _, x in left:
            per_rule.setdefault(x.rule, []).append(x)
        for rule_id, xs in sorted(per_rule.items()):
            worst = max((effort(x) for x in xs), key=EFFORT_ORDER.index)
            out.append(f"| {rule_id} | `{xs[0].name}` | {len(xs)} | {worst} |")

    if failed or missing:
        out += ["", "## Files that failed", ""]
        for f in failed:
            assert f.error is not None
            where = f.display if f.error.line is None else f"{f.display}:{f.error.line}"
            out.append(f"- {where}: {_cell(f.error.message)}")
        for s in missing:
            out.append(f"- {s.display}: {s.reason}")

    out += ["", "## Files", "", "| file | edits | left | status |", "|---|---:|---:|---|"]
    for f in run.files:
        if f.result.skipped and not f.result.findings:
            continue
        n_edits = sum(1 for x in f.result.findings if _done(f, x))
        n_left = len(f.result.findings) - n_edits
        status = ("failed" if f.error is not None else "edited" if f.written
                  else "needs edits" if (f.result.changed or getattr(f.result, "would_change", False))
                  else "findings left" if n_left else "clean")
        out.append(f"| {f.display.replace('|', '%7C')} | {n_edits} | {n_left} | {status} |")
    skipped_clean = sum(1 for f in run.files if f.result.skipped and not f.result.findings)
    if skipped_clean:
        out += ["", f"{skipped_clean} more file(s) contain no CUDA-specific code."]
    if wrote:
        out += ["", "Line numbers are those of the files as this run wrote them."]
    out += _evidence_legend(x for f in run.files for x in f.result.findings)
    return "\n".join(out) + "\n"


# -- SARIF 2.1.0 and GitHub annotations ---------------------------------------------------------
SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"


def _level(finding: Finding) -> str:
    """SARIF level: cannot migrate (NRN9xx) ``error``; other report-only and unsafe ``warning``;
    a safe fix ``note``."""
    if not finding.fixable and finding.rule.startswith("NRN9"):
        return "error"
    if finding.safety is Safety.SAFE and finding.fixable:
        return "note"
    return "warning"


def _uri(display: str) -> str:
    from urllib.parse import quote

    return quote(display.replace("\\", "/"))


def to_sarif(run: RunResult, include_applied: bool = True) -> str:
    """SARIF 2.1.0, as GitHub code scanning loads it (``upload-sarif``)."""
    from neuronize.presenting.docs import explain_rule
    from neuronize.registry import rule_by_code

    pending = list(_pending(run, include_applied))
    rule_ids = sorted({x.rule for _, x in pending})
    index = {r: i for i, r in enumerate(rule_ids)}
    rules = []
    for rule_id in rule_ids:
        rule = rule_by_code(rule_id)
        name = rule.name if rule is not None else rule_id
        summary = rule.summary() if rule is not None else rule_id
        entry: dict[str, object] = {
            "id": rule_id,
            "name": name,
            "shortDescription": {"text": summary},
            "fullDescription": {"text": summary},
            "defaultConfiguration": {"level": "warning" if rule is None or rule.safety is not Safety.SAFE
                                     else "note"},
            "properties": {"tags": ["torchneuron", "migration"],
                           "safety": rule.safety.value if rule is not None else "",
                           "evidence": rule.evidence.value if rule is not None else ""},
        }
        if rule is not None:
            entry["help"] = {"text": explain_rule(rule)}
        rules.append(entry)
    results = []
    for f, x in pending:
        region: dict[str, int] = {"startLine": max(1, x.line), "startColumn": max(1, x.column)}
        if x.end_line >= x.line and x.end_line > 0:
            region["endLine"] = x.end_line
            if x.end_column > 0 and (x.end_line > x.line or x.end_column > x.column):
                region["endColumn"] = x.end_column
        results.append({
            "ruleId": x.rule,
            "ruleIndex": index[x.rule],
            "level": _level(x),
            "message": {"text": x.text},
            "locations": [{"physicalLocation": {"artifactLocation": {"uri": _uri(f.display)},
                                                "region": region}}],
            "properties": {"safety": x.safety.value, "fixable": x.fixable, "applied": x.applied,
                           "effort": effort(x), "kind": kind_of(x.rule)[1]},
        })
    notifications = []
    for f in run.errors:
        assert f.error is not None
        loc: dict[str, object] = {"artifactLocation": {"uri": _uri(f.display)}}
        if f.error.line is not None:
            loc["region"] = {"startLine": f.error.line}
        notifications.append({"level": "error", "message": {"text": f.error.message},
                              "locations": [{"physicalLocation": loc}]})
    for s in run.skipped:
        if s.reason is SkipReason.NO_SUCH_FILE:
            notifications.append({"level": "error", "message": {"text": f"{s.display}: {s.reason}"}})
    log = {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {"name": "neuronize", "version": __version__,
                                "semanticVersion": __version__, "rules": rules,
                                "properties": {"torchneuronTarget": TORCHNEURON_TARGET}}},
            "invocations": [{"executionSuccessful": not notifications,
                             "toolExecutionNotifications": notifications}],
            "results": results,
        }],
    }
    return json.dumps(log, indent=2, ensure_ascii=False)


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def to_github(run: RunResult, include_applied: bool = True) -> list[str]:
    """GitHub Actions workflow commands (``::warning file=...,line=...::message``), one a line."""
    levels = {"error": "error", "warning": "warning", "note": "notice"}
    lines = []
    for f, x in _pending(run, include_applied):
        props = [f"file={_escape_property(f.display)}", f"line={x.line}", f"col={x.column}"]
        if x.end_line >= x.line > 0:
            props.append(f"endLine={x.end_line}")
            if x.end_line == x.line and x.end_column > x.column:
                props.append(f"endColumn={x.end_column}")
        props.append(f"title={_escape_property(f'{x.rule} {x.name} ({x.safety.value})')}")
        lines.append(f"::{levels[_level(x)]} {','.join(props)}::{_escape_data(x.text)}")
    for f in run.errors:
        assert f.error is not None
        props = [f"file={_escape_property(f.display)}"]
        if f.error.line is not None:
            props.append(f"line={f.error.line}")
        lines.append(f"::error {','.join(props)}::{_escape_data(f.error.message)}")
    for s in run.skipped:
        if s.reason is SkipReason.NO_SUCH_FILE:
            lines.append(f"::error file={_escape_property(s.display)}::{_escape_data(s.reason)}")
    return lines


def audit_markdown(audit: dict) -> str:
    """The "Runtime audit" section of the migration report, from `neuronize audit`'s JSON."""
    out = ["## Runtime audit", ""]
    flag = " --pretend-cuda" if audit.get("pretend_cuda") else ""
    out.append(f"`neuronize audit{flag} -- {' '.join(audit['command'])}`: {audit['outcome']}, "
               f"{len(audit['processes'])} process(es), {audit['touches']} CUDA touch site(s).")
    titles = (("missed", "Missed by the static rules (migrate by hand)"),
              ("covered", "Covered by static findings"),
              ("agnostic", "Device chosen by torch.accelerator (device-agnostic)"),
              ("outside", "Outside the project (installed packages)"),
              ("note", "Also recorded (no CUDA touch by itself)"))
    for status, title in titles:
        sites = [s for s in audit["sites"] if s["status"] == status]
        if not sites:
            continue
        out += ["", f"### {title} ({len(sites)})", "", "| where | what | runs | rules |",
                "|---|---|---:|---|"]
        for s in sites:
            rules = ", ".join(s["rules"]) or "—"
            out.append(f"| `{s['path']}:{s['line']}` | {_cell(s['what'])} | {s['count']} | {rules} |")
    never = audit["never_executed"]
    if never:
        out += ["", f"### Static findings never executed ({len(never)})", ""]
        out += [f"- `{f['path']}:{f['line']}` {f['rule']}: {_cell(f['message'].splitlines()[0])}"
                for f in never]
    return "\n".join(out) + "\n"
