"""Reviewing edits hunk by hunk: ``neuronize fix -i``.

Two parts:

- **Pure** (no terminal, no filesystem): :func:`neuronize.presenting.hunks.split_hunks` cuts one file's
  before/after bytes into hunks (the model ``--diff`` shares), each carrying the findings whose
  original lines it touches. :func:`rebuild` makes the file's bytes from a set of accepted
  hunks, byte for byte (CRLF, a BOM, a missing final newline all survive: hunks are made of the
  file's own byte lines).
  :func:`check_rebuilt` parses the result and looks for names it leaves undefined that neither
  the original nor the fully fixed file leaves undefined (an import removed while a use remains,
  a new name whose import was rejected).
- **The prompt loop** (:func:`review_file`, :func:`review_run`): the ``git add -p`` / Bowler keys,
  with the input and output functions injected so it is tested without a terminal. Only the
  parent process calls it, and it hands each file to the injected ``write`` (the command line
  passes the atomic writer of :mod:`neuronize.api`) right after that file's review, so ``q``
  keeps the files already reviewed. It never touches a file itself.
"""

from __future__ import annotations

import ast
import builtins
import dataclasses
import difflib
from dataclasses import dataclass, field
from collections.abc import Callable, Iterable, Mapping, Sequence

from neuronize.presenting.diff import Style

# Hunk and split_hunks are also imported from here by tests (home: neuronize.presenting.hunks)
from neuronize.presenting.hunks import (Hunk, assigned_names, binding_verb, edit_groups,  # noqa: F401
                                        finding_label, import_names, in_file_lines, split_by_safety, split_hunk,
                                        split_hunks, text_of)
from neuronize.sources.lines import byte_lines, encoding_of
from neuronize.analysis.line_files import text_problems
from neuronize.presenting.report import counted
from neuronize.types import FileResult, Finding, RunResult, Safety


def rebuild(before: bytes, after: bytes, hunks: Sequence[Hunk], accepted: Iterable[int]) -> bytes:
    """``before`` with the accepted hunks applied (all: ``after``; none: ``before``), byte-exact."""
    old, new = byte_lines(before), byte_lines(after)
    chosen = set(accepted)
    out: list[bytes] = []
    pos = 0
    for h in hunks:
        out.extend(old[pos:h.old_start])
        out.extend(new[h.new_start:h.new_end] if h.index in chosen else old[h.old_start:h.old_end])
        pos = h.old_end
    out.extend(old[pos:])
    return b"".join(out)


def line_map(before: bytes, after: bytes) -> Callable[[int], int]:
    """Map a 1-based line of ``before`` to the line holding it (or its replacement) in ``after``."""
    from neuronize.analysis.positions import position_map

    mapped = position_map(before, after)
    return lambda line: mapped(line, 1)[0]


# -- checking a rebuilt file -------------------------------------------------------------------
_BUILTINS = frozenset(dir(builtins)) | {"__file__", "__name__", "__doc__", "__builtins__", "__spec__",
                                         "__loader__", "__package__", "__path__", "__annotations__",
                                         "__dict__", "__class__", "__qualname__", "__module__"}


@dataclass
class _Names:
    used: dict[str, int] = field(default_factory=dict)  # name -> first line used
    bound: set[str] = field(default_factory=set)
    imported: set[str] = field(default_factory=set)
    star: bool = False


def _names(tree: ast.AST) -> _Names:
    names = _Names()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            if isinstance(node.ctx, ast.Load):
                names.used.setdefault(node.id, node.lineno)
            else:
                names.bound.add(node.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                if alias.name == "*":
                    names.star = True
                    continue
                bound = alias.asname or alias.name.split(".")[0]
                names.bound.add(bound)
                names.imported.add(bound)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.bound.add(node.name)
        elif isinstance(node, ast.arg):
            names.bound.add(node.arg)
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            names.bound.update(node.names)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            names.bound.add(node.name)
        elif isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name:
            names.bound.add(node.name)
        elif isinstance(node, ast.MatchMapping) and node.rest:
            names.bound.add(node.rest)
    return names


def _undefined(names: _Names) -> dict[str, int]:
    if names.star:
        return {}
    return {n: line for n, line in names.used.items() if n not in names.bound and n not in _BUILTINS}


def _parse(data: bytes) -> ast.AST | None:
    try:
        return ast.parse(data)
    except (SyntaxError, ValueError):
        return None


def check_rebuilt(before: bytes, after: bytes, rebuilt: bytes,
                  hunks: Sequence[Hunk] = (), accepted: Iterable[int] = ()) -> list[str]:
    """Problems with ``rebuilt`` (one line each); empty when it is safe to write."""
    if rebuilt in (before, after):
        return []
    if rebuilt.lstrip().startswith(b"{"):  # a notebook: must stay valid JSON
        import json

        try:
            json.loads(rebuilt)
        except ValueError as exc:
            return [f"the notebook would not be valid JSON ({exc})"]
        return []
    try:
        tree = ast.parse(rebuilt)
    except (SyntaxError, ValueError) as exc:
        lineno = getattr(exc, "lineno", None)
        where = f"line {lineno}: " if lineno else ""
        return [f"{where}the file would not parse ({getattr(exc, 'msg', exc)})"]
    chosen = set(accepted)
    now = _undefined(_names(tree))
    known: set[str] = set()
    for data in (before, after):
        other = _parse(data)
        if other is not None:
            known |= set(_undefined(_names(other)))
    encoding = encoding_of(before)
    old, new = byte_lines(before), byte_lines(after)
    problems = []
    for name, line in sorted(now.items(), key=lambda item: item[1]):
        if name in known:
            continue
        culprit = ""
        for h in hunks:
            new_text, old_text = text_of(new[h.new_start:h.new_end], encoding), text_of(old[h.old_start:h.old_end], encoding)
            new_names, old_names = import_names(new_text), import_names(old_text)
            if name in new_names and name not in old_names and h.index not in chosen:
                culprit = f": hunk {h.index + 1}, which adds its import, was rejected"
                break
            if name in assigned_names(new_text) and name not in assigned_names(old_text) and h.index not in chosen:
                culprit = f": hunk {h.index + 1}, which {binding_verb(name, new_text)} it, was rejected"
                break
            if name in old_names and name not in new_names and h.index in chosen:
                culprit = f": hunk {h.index + 1}, which removes its import, was accepted"
                break
        problems.append(f"line {line}: `{name}` would be used but not defined{culprit}")
    return problems


# -- the prompt loop ---------------------------------------------------------------------------
HELP = """\
y - apply this hunk
n - do not apply this hunk
a - apply this hunk and all later hunks in this file
d - do not apply this hunk or any later hunk in this file
s - split this hunk into smaller hunks (one per changed line or block)
q - quit; do not apply this hunk or any other one (hunks already accepted in this file are kept)
? - print help
A hunk that only adds or removes imports is not asked about: it follows the edits it serves.
The hunks of one edit group (fixes applied together or not at all) follow the first answered."""


def _keys(hunk: Hunk) -> str:
    return "y,n,a,d,s,q,?" if _splittable(hunk) else "y,n,a,d,q,?"


def _splittable(hunk: Hunk) -> bool:
    return bool(hunk.findings) and len(split_hunk(hunk, hunk.findings)) > 1


def render_hunk(display: str, before: bytes, after: bytes, hunk: Hunk, total: int,
                style: Style, context: int = 3) -> str:
    """A hunk as the reviewer sees it: where, why (rules, classes, reasons), then the lines."""
    old, new = byte_lines(before), byte_lines(after)
    encoding = encoding_of(before)
    lines_label = (f"line {hunk.first_line}" if hunk.old_end - hunk.old_start <= 1
                   else f"lines {hunk.first_line}-{hunk.old_end}")
    out = [style.header(f"{display}: hunk {hunk.index + 1}/{total}, {lines_label} [{hunk.safety.value}]")]
    for finding in hunk.findings:
        out.append(style.note(f"  {finding.line}:{finding.column} " + finding_label(finding)))
    for note in hunk.notes:
        out.append(style.note(f"  {note}"))

    def show(prefix: str, lines: Sequence[bytes]) -> None:
        for raw in lines:
            text = raw.decode(encoding, errors="replace").lstrip("\ufeff").rstrip("\r\n")
            out.append(style.line(prefix, text))
            if not raw.endswith((b"\n", b"\r")):
                out.append("\\ No newline at end of file")

    show(" ", old[max(0, hunk.old_start - context):hunk.old_start])
    for tag, i1, i2, j1, j2 in hunk.ops:
        if tag == "equal":
            show(" ", old[i1:i2])
        else:
            show("-", old[i1:i2])
            show("+", new[j1:j2])
    show(" ", old[hunk.old_end:hunk.old_end + context])
    return "\n".join(out)


@dataclass
class FileOutcome:
    """What the reviewer decided for one file."""

    accepted: set[int]
    hunks: list[Hunk]
    output: bytes | None  # None: write nothing
    quit: bool = False
    problems: list[str] = field(default_factory=list)
    #: the file's findings with ``applied`` as decided (two-round reviews mark them themselves)
    findings: tuple[Finding, ...] | None = None


Ask = Callable[[str], str]
Say = Callable[[str], None]


def review_file(display: str, before: bytes, after: bytes, findings: Sequence[Finding], *,
                ask: Ask, say: Say, style: Style, prompt_for: Callable[[Hunk], bool] = lambda h: True,
                proposed: Sequence[Hunk] | None = None) -> FileOutcome:
    """Ask about every hunk of one file; rebuild and re-check the file from the answers.

    ``prompt_for(hunk)`` False means "apply without asking" (``--review unsafe`` for safe hunks).
    ``ask`` returns the answer line (raising EOFError counts as ``q``). ``proposed``: the hunks
    to ask about (default: :func:`split_hunks` of the change).
    """
    located = in_file_lines(display, before, findings)
    if proposed is None:
        proposed = split_hunks(before, after, located, whole=display.endswith(".ipynb"))
    while True:
        hunks, accepted, quit_ = _ask_hunks(display, before, after, proposed, ask=ask, say=say,
                                            style=style, prompt_for=prompt_for)
        output = rebuild(before, after, hunks, accepted)
        if output == before:
            return FileOutcome(accepted, hunks, None, quit_)
        problems = text_problems(display, before, output)  # requirements, shell, configs...
        if problems is None:
            problems = check_rebuilt(before, after, output, hunks, accepted)
        if not problems:
            marked = mark_applied(located, hunks, accepted, output == after)
            return FileOutcome(accepted, hunks, output, quit_, findings=tuple(
                dataclasses.replace(f, applied=m.applied) for f, m in zip(findings, marked, strict=True)))
        say(style.error(f"{display}: the accepted hunks do not make a valid file:"))
        for problem in problems:
            say(style.error(f"  {display}: {problem}"))
        if quit_:
            say(f"{display}: nothing written")
            return FileOutcome(set(), hunks, None, True, problems)
        answer = _answer(ask, f"Review {display} again (r) or leave it unchanged (s) [r,s]? ", "rs")
        if answer != "r":
            say(f"{display}: nothing written")
            return FileOutcome(set(), hunks, None, answer == "q", problems)


def _answer(ask: Ask, prompt: str, allowed: str) -> str:
    while True:
        try:
            answer = ask(prompt).strip().lower()
        except EOFError:
            return "q"
        if len(answer) == 1 and answer in allowed:
            return answer


def _ask_hunks(display: str, before: bytes, after: bytes, hunks: Sequence[Hunk], *, ask: Ask, say: Say,
               style: Style, prompt_for: Callable[[Hunk], bool]) -> tuple[list[Hunk], set[int], bool]:
    """The hunks (after any ``s``plit, renumbered), the accepted ones, and whether ``q`` was hit.

    Import hunks are not asked about: once the edits they serve are decided they follow them
    (:func:`follow_edits`), and only a conflict (an edit needs the import, another rejected edit
    still uses a name it removes) is put to the reviewer, right after those edits. The hunks of
    an edit group (:func:`neuronize.presenting.hunks.edit_groups`) follow the answer given for the first.
    """
    hunks = list(hunks)
    accepted: set[int] = set()
    decided: set[int] = set()
    rest: str | None = None  # "a" or "d" once chosen for the rest of the file
    quit_ = False
    position = 0
    #: the answer given for each edit group: its other hunks follow it (applied together or not at all)
    group_choice: dict[str, bool] = {}

    def settle_imports(final: bool) -> None:
        for h in hunks:
            if h.index in decided or not _is_import_hunk(h):
                continue
            if not final and not all(i in decided for i in h.serves):
                continue
            choice = follow_edits(h, accepted)
            if choice is None and not final and not quit_:
                choice = ask_one(h, conflict=True)
            decided.add(h.index)
            if choice:
                accepted.add(h.index)
            served = ", ".join(str(i + 1) for i in h.serves)
            verb = "applied" if choice else "not applied"
            say(style.note(f"{display}: hunk {h.index + 1}/{len(hunks)} (imports) {verb}, "
                           f"following {'hunk' if len(h.serves) == 1 else 'hunks'} {served}"))

    def ask_one(hunk: Hunk, conflict: bool = False) -> bool | None:
        """y/n for one hunk (None: quit); ``s`` splits it in ``hunks`` and asks about the parts."""
        nonlocal rest, quit_
        say(render_hunk(display, before, after, hunk, len(hunks), style))
        groups = set(edit_groups(hunk))
        others = [h.index + 1 for h in hunks if h is not hunk and groups & set(edit_groups(h))]
        if others:
            say(style.note(f"  one edit group with {'hunk' if len(others) == 1 else 'hunks'} {', '.join(map(str, others))} "
                           f"({', '.join(f'`{g}`' for g in sorted(groups))}): your answer applies to them too"))
        if conflict:
            say(style.note("  an edit you applied needs this import, and an edit you skipped "
                           "still uses a name it removes: decide"))
        while True:
            try:
                answer = ask(f"({hunk.index + 1}/{len(hunks)}) Apply this hunk to {display} "
                             f"[{_keys(hunk)}]? ").strip().lower()
            except EOFError:
                answer = "q"
            if answer in ("y", "n", "a", "d", "q") or (answer == "s" and _splittable(hunk)):
                break
            say(style.note(HELP))
        if answer == "q":
            quit_ = True
            return None
        if answer == "s":
            _split_in_place(hunks, hunk.index)
            return None
        if answer in ("a", "d"):
            rest = answer
        return answer in ("y", "a")

    while position < len(hunks) and not quit_:
        hunk = hunks[position]
        position += 1
        if _is_import_hunk(hunk):
            settle_imports(final=False)
            continue
        parts = split_by_safety(hunk, hunk.findings) if prompt_for(hunk) else [hunk]
        if any(not prompt_for(part) for part in parts) and len(parts) > 1:
            # `--review unsafe`: a hunk holding safe and unsafe edits is split, as `s` would, so the
            # safe part is applied without a question and only the unsafe part is asked
            say(style.note(f"{display}: hunk {hunk.index + 1}/{len(hunks)} holds safe and unsafe edits: "
                           f"split in {len(parts)}, the safe part(s) applied without asking"))
            _split_in_place(hunks, hunk.index, parts)
            decided, accepted = _shifted(decided, hunk.index, len(parts) - 1), _shifted(accepted, hunk.index, len(parts) - 1)
            position = hunk.index
            continue
        groups = edit_groups(hunk)
        followed = {group_choice[g] for g in groups if g in group_choice}
        if len(followed) == 1:
            choice: bool | None = followed.pop()
            rules = ", ".join(dict.fromkeys(f.rule for f in hunk.findings))
            say(style.note(f"{display}: hunk {hunk.index + 1}/{len(hunks)} ({rules}) "
                           f"{'applied' if choice else 'not applied'}, like the hunk already decided in its edit "
                           f"group ({', '.join(f'`{g}`' for g in groups)})"))
        elif not prompt_for(hunk):
            choice = True
            rules = ", ".join(dict.fromkeys(f.rule for f in hunk.findings)) or "imports"
            say(style.note(f"{display}: hunk {hunk.index + 1}/{len(hunks)} ({rules}, safe) applied without asking"))
        elif rest is not None:
            choice = rest == "a"
        else:
            size = len(hunks)
            choice = ask_one(hunk)
            if len(hunks) != size:  # split: ask again from the first part
                decided = _shifted(decided, hunk.index, len(hunks) - size)
                accepted = _shifted(accepted, hunk.index, len(hunks) - size)
                position = hunk.index
                continue
        if choice is None:
            break
        decided.add(hunk.index)
        if choice:
            accepted.add(hunk.index)
        for group in groups:
            group_choice.setdefault(group, choice)
        settle_imports(final=False)
    settle_imports(final=True)
    return hunks, accepted, quit_


def _is_import_hunk(hunk: Hunk) -> bool:
    return not hunk.findings and bool(hunk.serves)


def follow_edits(hunk: Hunk, accepted: set[int]) -> bool | None:
    """Whether an import hunk goes in, given the accepted edit hunks: not if no edit it serves
    is accepted; yes if every edit that stops using a name it removes is accepted; None (ask)
    when an accepted edit needs it but a rejected one still uses a name it removes."""
    if not any(i in accepted for i in hunk.serves):
        return False
    if all(i in accepted for i in hunk.requires):
        return True
    needed = any(i in accepted for i in hunk.serves if i not in hunk.requires)
    return None if needed else False


def _shifted(indices: set[int], at: int, by: int) -> set[int]:
    """Hunk numbers after the hunk ``at`` became ``by + 1`` hunks (those before it keep theirs)."""
    return {i if i < at else i + by for i in indices}


def _split_in_place(hunks: list[Hunk], index: int, parts: Sequence[Hunk] | None = None) -> None:
    """Replace ``hunks[index]`` by its ``parts`` (default: ``s``'s, :func:`split_hunk`); renumber
    every hunk and its links."""
    if parts is None:
        parts = split_hunk(hunks[index], hunks[index].findings)
    shift = len(parts) - 1

    def moved(i: int) -> tuple[int, ...]:
        if i < index:
            return (i,)
        if i == index:
            return tuple(range(index, index + len(parts)))
        return (i + shift,)

    renumbered = [*hunks[:index], *parts, *hunks[index + 1:]]
    hunks[:] = [dataclasses.replace(h, index=position,
                                    serves=tuple(j for i in h.serves for j in moved(i)),
                                    requires=tuple(j for i in h.requires for j in moved(i)))
                for position, h in enumerate(renumbered)]


def mark_applied(findings: Iterable[Finding], hunks: Sequence[Hunk], accepted: set[int],
                 complete: bool) -> tuple[Finding, ...]:
    """The findings with ``applied`` true only for those in accepted hunks.

    ``complete``: every hunk was accepted (an applied finding that touches no hunk counts then).
    """
    in_hunks: dict[Finding, list[int]] = {}
    for h in hunks:
        for f in h.findings:
            in_hunks.setdefault(f, []).append(h.index)
    out = []
    for f in findings:
        if f.applied:  # a finding split over several hunks is applied when all of them are
            keep = all(i in accepted for i in in_hunks[f]) if f in in_hunks else complete
            f = dataclasses.replace(f, applied=keep)
        out.append(f)
    return tuple(out)


@dataclass(frozen=True)
class SafeLayer:
    """What plain ``fix`` (no unsafe fixes) makes of a file: its output (None: unchanged) and
    findings."""

    output: bytes | None
    findings: tuple[Finding, ...]


def _key(f: Finding) -> tuple[object, ...]:
    return (f.rule, f.cell, f.line, f.column, f.end_line, f.end_column)


def rebase(hunks: Sequence[Hunk], base: bytes, onto: bytes) -> tuple[list[Hunk], list[Hunk]]:
    """``hunks`` of a change from ``base``, moved onto ``onto`` (``base`` with some of its own
    lines changed back): (the hunks whose old lines ``onto`` still has, renumbered, in ``onto``'s
    line numbers; the hunks that touch a line ``onto`` does not have)."""
    old, now = byte_lines(base), byte_lines(onto)
    kept: dict[int, int] = {}
    for tag, i1, i2, j1, _ in difflib.SequenceMatcher(None, old, now, autojunk=False).get_opcodes():
        if tag == "equal":
            kept.update((i1 + k, j1 + k) for k in range(i2 - i1))
    kept[len(old)] = len(now)  # the end of the file
    moved, dropped = [], []
    for h in hunks:
        # a replacement needs its old lines, in one piece; an insertion, the lines on both sides
        span = range(h.old_start, h.old_end) if h.old_end > h.old_start else range(h.old_start - 1, h.old_start + 1)
        span = range(max(span.start, 0), span.stop)
        shift = kept[span.start] - span.start if span.start in kept else None
        if shift is None or any(kept.get(i) != i + shift for i in span):
            dropped.append(h)
            continue
        ops = tuple((tag, i1 + shift, i2 + shift, j1, j2) for tag, i1, i2, j1, j2 in h.ops)
        moved.append(dataclasses.replace(h, old_start=h.old_start + shift, old_end=h.old_end + shift, ops=ops))
    gone = {h.index for h in dropped}
    orphans = [h for h in moved if not h.findings and h.serves and set(h.serves) <= gone]
    moved = [h for h in moved if h not in orphans]
    number = {h.index: i for i, h in enumerate(moved)}
    moved = [dataclasses.replace(h, index=number[h.index], serves=tuple(number[i] for i in h.serves if i in number),
                                 requires=tuple(number[i] for i in h.requires if i in number)) for h in moved]
    return moved, [*dropped, *orphans]


def _follow(before: bytes, after: bytes) -> Callable[[int], int]:
    """Map a 1-based line of ``before`` to its line in ``after``, line for line through the
    blocks a change replaced (the safe fixes rewrite lines in place or add lines after them)."""
    ops = difflib.SequenceMatcher(None, byte_lines(before), byte_lines(after), autojunk=False).get_opcodes()

    def follow(line: int) -> int:
        i = line - 1
        for _, i1, i2, j1, j2 in ops:
            if i1 <= i < i2:
                return j1 + min(i - i1, max(j2 - j1 - 1, 0)) + 1
        return line

    return follow


def review_layered(display: str, before: bytes, after: bytes, findings: Sequence[Finding],
                   layer: SafeLayer, *, ask: Ask, say: Say, style: Style,
                   prompt_for: Callable[[Hunk], bool] = lambda h: True) -> FileOutcome:
    """``fix -i`` with unsafe fixes: two rounds, so that no hunk holds a safe edit and an unsafe
    one. First the edits plain ``fix`` makes (``layer``: answering ``n`` to every later question
    leaves exactly its file), then the unsafe fixes, as a change on top of them; an unsafe
    hunk that needs a line of a safe hunk the reviewer rejected is not offered."""
    safe_after = layer.output if layer.output is not None else before
    safe_keys = {_key(f) for f in layer.findings if f.applied}
    first = review_file(display, before, safe_after, [f for f in layer.findings if f.applied], ask=ask,
                        say=say, style=style, prompt_for=prompt_for)
    middle = first.output if first.output is not None else before
    unsafe = [f for f in findings if f.applied and _key(f) not in safe_keys]
    marked: dict[tuple[object, ...], bool] = {}
    if first.findings is not None:
        marked.update((_key(f), f.applied) for f in first.findings)
    second = FileOutcome(set(), [], None)
    if not first.quit and safe_after != after:
        to_safe = _follow(before, safe_after)
        located = [dataclasses.replace(f, line=to_safe(f.line), end_line=to_safe(max(f.end_line, f.line)))
                   for f in in_file_lines(display, before, unsafe)]
        # every change of this round comes from an unsafe fix, whichever findings it touches
        hunks = [dataclasses.replace(h, safety=Safety.UNSAFE)
                 for h in split_hunks(safe_after, after, located, whole=display.endswith(".ipynb"))]
        moved, dropped = rebase(hunks, safe_after, middle)
        for h in dropped:
            rules = ", ".join(dict.fromkeys(f.rule for f in h.findings)) or "imports"
            say(style.note(f"{display}: an unsafe edit ({rules}) at line {h.first_line} is not offered: "
                           "it changes a line of a safe hunk you did not apply"))
        if moved:
            say(style.note(f"{display}: the unsafe fixes (--unsafe-fixes), on top of the safe ones"))
            second = review_file(display, middle, after, unsafe, ask=ask, say=say, style=style,
                                 prompt_for=prompt_for, proposed=moved)
            located_by_key = {_key(o): _key(n) for o, n in zip(unsafe, located, strict=True)}
            taken = {f for h in second.hunks if h.index in second.accepted for f in h.findings}
            refused = {f for h in second.hunks if h.index not in second.accepted for f in h.findings}
            if second.output is not None:
                for f in unsafe:
                    here = [g for g in (*taken, *refused) if _key(g) == located_by_key[_key(f)]]
                    marked[_key(f)] = bool(here) and all(g in taken for g in here)
    output = second.output if second.output is not None else first.output
    out_findings = tuple(dataclasses.replace(f, applied=f.applied and marked.get(_key(f), False))
                         for f in findings)
    shift = len(first.hunks)
    hunks_all = [*first.hunks, *(dataclasses.replace(h, index=h.index + shift) for h in second.hunks)]
    accepted = set(first.accepted) if first.output is not None else set()
    accepted |= {i + shift for i in second.accepted} if second.output is not None else set()
    return FileOutcome(accepted, hunks_all, output, first.quit or second.quit,
                       [*first.problems, *second.problems], findings=out_findings)


def review_run(run: RunResult, *, ask: Ask, say: Say, style: Style,
               write: Callable[[FileResult], FileResult],
               prompt_for: Callable[[Hunk], bool] = lambda h: True,
               safe: Mapping[str, SafeLayer] | None = None) -> RunResult:
    """Review every changed file of ``run``, file by file, handing each file to ``write`` right
    after its review (``write`` returns it as written, or with the reason it was not as its
    error). Returns the new RunResult: only the accepted edits count as applied; files not
    written have ``output`` None. ``safe``: by file, what plain ``fix`` makes of it, when ``run``
    holds unsafe fixes too: those files are reviewed in two rounds (:func:`review_layered`)."""
    out = RunResult(skipped=run.skipped)
    stop = False
    for f in run.files:
        if stop or not f.result.changed or f.source is None or f.path is None or f.error is not None:
            if stop and f.result.changed:
                f = _unchanged(f)
            out.files.append(f)
            continue
        assert f.result.output is not None
        if safe is not None and f.display in safe:
            outcome = review_layered(f.display, f.source, f.result.output, f.result.findings,
                                     safe[f.display], ask=ask, say=say, style=style, prompt_for=prompt_for)
        else:
            outcome = review_file(f.display, f.source, f.result.output, f.result.findings, ask=ask,
                                  say=say, style=style, prompt_for=prompt_for)
        stop = outcome.quit
        if outcome.output is None:
            out.files.append(_unchanged(f))
            continue
        assert outcome.findings is not None
        findings = outcome.findings
        pending = dataclasses.replace(f, result=dataclasses.replace(f.result, findings=findings,
                                                                    output=outcome.output))
        written = write(pending)
        if written.written:
            say(f"{f.display}: wrote {len(outcome.accepted)} of {counted(len(outcome.hunks), 'hunk')}")
        out.files.append(written)
    return out


def _unchanged(f: FileResult) -> FileResult:
    """``f`` as left alone: nothing applied, nothing to write."""
    findings = tuple(dataclasses.replace(x, applied=False) for x in f.result.findings)
    return dataclasses.replace(f, result=dataclasses.replace(f.result, findings=findings, output=None))


def review_summary(proposed: RunResult, reviewed: RunResult) -> str:
    """The summary after ``fix -i``: the fixes applied and skipped in the files under review
    (those the fixes would change), and how many of them were written."""
    from collections import Counter

    offered: Counter[str] = Counter()
    applied: Counter[str] = Counter()
    files = written = 0
    for before, after in zip(proposed.files, reviewed.files, strict=True):
        if not before.result.changed or before.error is not None:
            continue
        files += 1
        written += after.written
        offered.update(x.rule for x in before.result.findings if x.applied)
        applied.update(x.rule for x in after.result.findings if x.applied and after.written)
    skipped = offered - applied
    detail = f" ({', '.join(f'{r}: {n}' for r, n in sorted(skipped.items()))})" if skipped else ""
    return (f"{counted(files, 'file')} reviewed, {written} written: "
            f"{counted(sum(applied.values()), 'fix', 'fixes')} applied, {sum(skipped.values())} skipped{detail}")


def hold_back(f: FileResult, held: Callable[[Finding], bool]) -> FileResult:
    """``f`` without the edits of the findings ``held`` picks (``fix --baseline``): the hunks
    holding one are not applied and import hunks follow the edits kept, as in review. A result
    that is not a valid file leaves the file unchanged."""
    if not f.result.changed or f.source is None or not any(held(x) for x in f.result.findings if x.applied):
        return f
    assert f.result.output is not None
    hunks = split_hunks(f.source, f.result.output, f.result.findings, whole=f.display.endswith(".ipynb"))
    accepted = {h.index for h in hunks if not _is_import_hunk(h) and not any(held(x) for x in h.findings)}
    accepted |= {h.index for h in hunks if _is_import_hunk(h) and follow_edits(h, accepted)}
    output = rebuild(f.source, f.result.output, hunks, accepted)
    if output == f.source or check_rebuilt(f.source, f.result.output, output, hunks, accepted):
        return _unchanged(f)
    findings = mark_applied(f.result.findings, hunks, accepted, output == f.result.output)
    return dataclasses.replace(f, result=dataclasses.replace(f.result, findings=findings, output=output))
