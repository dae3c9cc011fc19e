"""Hunks: the one model of a change that ``neuronize fix --diff`` prints and ``fix -i`` asks about.

A :class:`Hunk` is a stretch of old lines replaced by new ones, with the findings whose edits it
holds (rule id, safety, one-line reason: :func:`finding_label`), notes on the edits no finding
covers (imports the engine added or removed), and the weakest safety of what it holds. Two
groupings of one file's change into hunks:

- :func:`context_hunks`: a unified diff's hunks, changes merged with the context lines around
  them as ``diff -u`` does; their header names the findings inside (:func:`header_note`);
- :func:`split_hunks`: review's hunks, one decision each: change blocks one finding spans are one
  hunk, so a fix is never half-applied, and a hunk no finding covers (imports) is linked, by
  name, to the hunks that need it.
"""

from __future__ import annotations

import ast
import dataclasses
import difflib
import re
import textwrap
from dataclasses import dataclass
from collections.abc import Iterable, Sequence, Set as AbstractSet

from neuronize.analysis.positions import counterpart
from neuronize.sources.lines import byte_lines, encoding_of
from neuronize.types import Finding, Safety

#: a difflib opcode: (tag, old start, old end, new start, new end)
Op = tuple[str, int, int, int, int]




@dataclass(frozen=True)
class Hunk:
    """One change, as ``--diff`` prints it and ``-i`` asks about it. Indices are 0-based into the
    old/new lines (byte lines for review, text lines for a diff)."""

    index: int
    old_start: int
    old_end: int
    new_start: int
    new_end: int
    #: the difflib opcodes inside the hunk (equal stretches between two blocks of one finding)
    ops: tuple[Op, ...]
    findings: tuple[Finding, ...] = ()
    #: explanations of an edit no finding covers (imports), and the hunks it goes with
    notes: tuple[str, ...] = ()
    serves: tuple[int, ...] = ()
    #: the hunks that must all be applied for this one to be (they stop using a name it removes)
    requires: tuple[int, ...] = ()
    safety: Safety = Safety.SAFE

    @property
    def first_line(self) -> int:
        """1-based first old line the hunk touches (for a pure insertion: the line after it)."""
        return self.old_start + 1


def safety_of(findings: Iterable[Finding]) -> Safety:
    """A hunk's safety: unsafe if any fix inside it is."""
    return Safety.UNSAFE if any(f.safety is Safety.UNSAFE for f in findings) else Safety.SAFE


def findings_touching(findings: Iterable[Finding], i1: int, i2: int) -> list[Finding]:
    """The findings whose original lines touch the change of old lines ``[i1, i2)`` (0-based).

    A pure insertion (``i1 == i2``) sits between old lines ``i1`` and ``i1 + 1`` (1-based) and
    touches a finding on either."""
    lo, hi = (i1 + 1, i2) if i2 > i1 else (i1, i1 + 1)
    return [f for f in findings if f.line <= hi and max(f.end_line, f.line) >= lo]


def in_file_lines(display: str, source: bytes, findings: Sequence[Finding]) -> list[Finding]:
    """The findings with their lines counted in the file (a notebook's count within a cell: moved
    to the line of the notebook that holds them), in the same order."""
    if not display.endswith(".ipynb"):
        return list(findings)
    from neuronize.sources.notebook import file_line

    out = []
    for f in findings:
        line = file_line(source, f.cell, f.line) if f.cell is not None else None
        end = file_line(source, f.cell, max(f.end_line, f.line)) if f.cell is not None else None
        out.append(f if line is None else dataclasses.replace(f, line=line, end_line=end or line))
    return out


def finding_label(finding: Finding) -> str:
    """``[NRN101 safe] reason``: rule id, safety class and the one-line reason."""
    reason = " ".join(finding.text.split())
    return f"[{finding.rule} {finding.safety.value}] {reason}"


def edit_groups(hunk: Hunk) -> tuple[str, ...]:
    """The edit groups the findings of ``hunk`` belong to: fixes applied together or not at all."""
    return tuple(dict.fromkeys(f.group for f in hunk.findings if f.group is not None))


_IMPORT_LINE = re.compile(r"^\s*(import|from)\s")


def import_names(text: str) -> list[str]:
    """Names bound by the import statements in ``text`` (a few whole lines of a file)."""
    try:
        tree = ast.parse(textwrap.dedent(text))
    except SyntaxError:
        statements = [line.strip() for line in text.splitlines() if _IMPORT_LINE.match(line)]
        tree = ast.Module(body=[], type_ignores=[])
        for statement in statements:
            try:
                tree.body.extend(ast.parse(statement).body)
            except SyntaxError:
                continue
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                if alias.name != "*":
                    names.append(alias.asname or alias.name.split(".")[0])
    return list(dict.fromkeys(names))


#: a line that binds a name; in a notebook's JSON a code line starts with a quote
_BINDING = re.compile(r'^\s*"?(?:def ([A-Za-z_]\w*)\(|([A-Za-z_]\w*) = (?!=))')


def assigned_names(text: str) -> list[str]:
    """Names that the one-line assignments ``name = ...`` and the ``def name(`` lines of ``text``
    bind (in a hunk no finding covers: the device ``--target accelerator`` names once per scope,
    the Neuron test a module defines once)."""
    return list(dict.fromkeys(m.group(1) or m.group(2) for m in map(_BINDING.match, text.splitlines()) if m))


def binding_verb(name: str, text: str) -> str:
    """How a note says that ``text`` binds ``name``: it "defines" a function, "assigns" a value."""
    return "defines" if re.search(rf'^\s*"?def {re.escape(name)}\(', text, re.MULTILINE) else "assigns"


# -- a unified diff's hunks --------------------------------------------------------------------
def context_hunks(old: Sequence[str], new: Sequence[str], findings: Sequence[Finding] = (),
                  context: int = 3) -> list[Hunk]:
    """The hunks of a unified diff of ``old`` and ``new`` (text lines, with their endings), with
    ``context`` lines around each change (difflib's grouping: ``diff -u``'s hunks). Each holds the
    applied findings its changes touch; changes no finding touches get a note on the imports they
    add or remove and the helper functions they define."""
    hunks = []
    for index, group in enumerate(difflib.SequenceMatcher(None, old, new).get_grouped_opcodes(context)):
        inside: list[Finding] = []
        unexplained = []
        for block in (op for op in group if op[0] != "equal"):
            touching = [f for f in findings_touching(findings, block[1], block[2]) if f.applied]
            inside.extend(f for f in touching if f not in inside)
            if not touching:
                unexplained.append(block)
        old_text = "".join("".join(old[i1:i2]) for _, i1, i2, _, _ in unexplained)
        new_text = "".join("".join(new[j1:j2]) for _, _, _, j1, j2 in unexplained)
        old_names, new_names = import_names(old_text), import_names(new_text)
        imports = [f"adds `{n}`" for n in new_names if n not in old_names]
        imports += [f"removes `{n}`" for n in old_names if n not in new_names]
        defined = [f"defines `{n}`" for n in assigned_names(new_text)
                   if n not in assigned_names(old_text) and binding_verb(n, new_text) == "defines"]
        notes = tuple(f"[{tag}] " + ", ".join(what) + " for the edits in this file"
                      for tag, what in (("imports", imports), ("helper", defined)) if what)
        first, last = group[0], group[-1]
        hunks.append(Hunk(index, first[1], last[2], first[3], last[4], tuple(group), tuple(sorted(inside)),
                          notes=notes, safety=safety_of(inside)))
    return hunks


def header_note(hunk: Hunk) -> str:
    """What a diff's hunk header says after its ``@@``: the import notes, then a label per
    finding (``[NRN101 safe] reason``)."""
    return " ".join([*hunk.notes, *(finding_label(f) for f in hunk.findings)])


def short_note(hunk: Hunk, width: int) -> str:
    """The header note cut to ``width`` columns: ``[imports]`` and ``[NRN101 safe]`` tags only
    (the reasons go elsewhere), and ``+N more`` for tags that do not fit."""
    tags = [*(note.split(" ", 1)[0] for note in hunk.notes), *(f"[{f.rule} {f.safety.value}]" for f in hunk.findings)]
    tags = list(dict.fromkeys(tags))
    for shown in range(len(tags), 0, -1):
        more = f" +{len(tags) - shown} more" if shown < len(tags) else ""
        text = " ".join(tags[:shown]) + more
        if len(text) <= width:
            return text
    return ""


# -- review's hunks ----------------------------------------------------------------------------
def _blocks(old: Sequence[bytes], new: Sequence[bytes]) -> list[Op]:
    matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
    return [op for op in matcher.get_opcodes() if op[0] != "equal"]



def text_of(lines: Iterable[bytes], encoding: str) -> str:
    """Byte lines as text (for reading names in them), without a BOM."""
    return b"".join(lines).decode(encoding, errors="replace").lstrip("\ufeff")


def split_hunks(before: bytes, after: bytes, findings: Iterable[Finding] = (), whole: bool = False
                ) -> list[Hunk]:
    """Cut the change from ``before`` to ``after`` into reviewable hunks (see the module doc).

    ``whole``: one hunk for the whole change (notebooks, whose finding lines count within a cell).
    """
    old, new = byte_lines(before), byte_lines(after)
    applied = [f for f in findings if f.applied]
    found = _blocks(old, new)
    blocks = _refine(_lines_added_first(found, old, new, encoding_of(before)), applied)
    added = {block for block in blocks if block[0] == "insert" and block not in found}  # no finding's lines
    if whole:
        if not blocks:
            return []
        first, last = blocks[0], blocks[-1]
        span = tuple(op for op in difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes()
                     if first[1] <= op[1] and op[2] <= last[2] and not (op[0] == "equal" and op[1] == op[2]))
        return [Hunk(0, first[1], last[2], first[3], last[4], span, tuple(sorted(applied)),
                     safety=safety_of(applied))]
    # union-find over blocks: a finding spanning several blocks joins them into one hunk
    parent = list(range(len(blocks)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    owners: dict[int, list[Finding]] = {}
    for finding in applied:
        touched = [i for i, (_, i1, i2, _, _) in enumerate(blocks)
                   if blocks[i] not in added and findings_touching([finding], i1, i2)]
        for i in touched[1:]:
            parent[find(i)] = find(touched[0])
        if touched:
            owners.setdefault(find(touched[0]), []).append(finding)
    groups: dict[int, list[int]] = {}
    for i in range(len(blocks)):
        groups.setdefault(find(i), []).append(i)
    grouped = sorted(groups.values(), key=lambda members: members[0])
    # Merged groups may interleave with other blocks: absorb anything lying between their ends.
    merged: list[list[int]] = []
    for members in grouped:
        if merged and members[0] <= merged[-1][-1]:
            merged[-1] = sorted(set(merged[-1]) | set(members))
            merged[-1] = list(range(merged[-1][0], merged[-1][-1] + 1))
        else:
            merged.append(list(range(members[0], members[-1] + 1)))
    hunks = [_hunk(index, [blocks[k] for k in members], applied, added) for index, members in enumerate(merged)]
    return _link_imports(hunks, old, new, encoding_of(before))


def _hunk(index: int, blocks: Sequence[Op], applied: Sequence[Finding], added: AbstractSet[Op] = frozenset()) -> Hunk:
    """One review hunk made of change ``blocks`` (in order), with the equal stretches between;
    ``added``: blocks of lines written for the edits below them, which hold no finding."""
    ops: list[Op] = []
    for block in blocks:
        if ops:
            _, _, pi2, _, pj2 = ops[-1]
            if pi2 < block[1]:
                ops.append(("equal", pi2, block[1], pj2, block[3]))
        ops.append(block)
    inside = sorted({f for b in blocks if b not in added for f in applied if findings_touching([f], b[1], b[2])})
    first, last = blocks[0], blocks[-1]
    return Hunk(index, first[1], last[2], first[3], last[4], tuple(ops), tuple(inside),
                safety=safety_of(inside))


def _lines_added_first(blocks: Sequence[Op], old: Sequence[bytes], new: Sequence[bytes], encoding: str) -> list[Op]:
    """Blocks whose replacement opens with whole statements no old line became (a helper
    definition or an import the edits below need, written right above the first edited line)
    cut in two: those added lines, then the replacement, so that they are a hunk of their own as
    anywhere else."""
    out: list[Op] = []
    for block in blocks:
        tag, i1, i2, j1, j2 = block
        first = counterpart(old[i1].decode(encoding, "replace"), new, j1, j2, 0, encoding) \
            if tag == "replace" and j2 - j1 > i2 - i1 else None
        if first is None or first == j1 or not _parses(b"".join(new[j1:first])):
            out.append(block)
            continue
        out += [("insert", i1, i1, j1, first), ("replace", i1, i2, first, j2)]
    return out


def _parses(code: bytes) -> bool:
    try:
        ast.parse(code)
    except (SyntaxError, ValueError):
        return False
    return True


def _refine(blocks: Sequence[Op], applied: Sequence[Finding]) -> list[Op]:
    """Blocks cut where the findings they hold change: a block replacing as many lines as it
    has, line for line, is cut between lines touched by different findings, so that two fixes on
    neighbouring lines (one safe, one unsafe) are two decisions, not one."""
    out: list[Op] = []
    for block in blocks:
        tag, i1, i2, j1, j2 = block
        if tag != "replace" or i2 - i1 != j2 - j1 or i2 - i1 < 2:
            out.append(block)
            continue
        start, key = 0, None
        for k in range(i2 - i1 + 1):
            here = frozenset(findings_touching(applied, i1 + k, i1 + k + 1)) if k < i2 - i1 else None
            if k and here != key:
                out.append(("replace", i1 + start, i1 + k, j1 + start, j1 + k))
                start = k
            key = here
    return out


def split_hunk(hunk: Hunk, applied: Sequence[Finding]) -> list[Hunk]:
    """``s`` in review, as in ``git add -p``: the hunk cut into one hunk per change block (a
    finding spanning several blocks no longer holds them together). Indices are left to the
    caller; import links are not recomputed (a split hunk holds edits, not imports)."""
    blocks = [op for op in hunk.ops if op[0] != "equal"]
    pieces: list[Op] = []
    for block in blocks:
        tag, i1, i2, j1, j2 = block
        if tag == "replace" and i2 - i1 == j2 - j1:
            pieces.extend(("replace", i1 + k, i1 + k + 1, j1 + k, j1 + k + 1) for k in range(i2 - i1))
        else:
            pieces.append(block)
    if len(pieces) < 2:
        return [hunk]
    return [_hunk(hunk.index, [piece], applied) for piece in pieces]


def split_by_safety(hunk: Hunk, applied: Sequence[Finding]) -> list[Hunk]:
    """``--review unsafe``'s automatic split: the hunk cut like ``s`` (:func:`split_hunk`), then
    neighbouring parts of the same safety joined again, so that a safe edit sharing a hunk with an
    unsafe one (a safe finding spanning lines that also hold an unsafe edit) is applied without a
    question and only the unsafe part is asked. ``[hunk]`` when it is of one safety, or when a
    part holds no finding (nothing then says how safe that part is)."""
    parts = split_hunk(hunk, applied)
    if any(not part.findings for part in parts):
        return [hunk]
    runs: list[list[Hunk]] = []
    for part in parts:
        if runs and runs[-1][-1].safety is part.safety:
            runs[-1].append(part)
        else:
            runs.append([part])
    if len(runs) < 2:
        return [hunk]
    return [_hunk(hunk.index, [op for part in run for op in part.ops if op[0] != "equal"], applied)
            for run in runs]


def _uses(text: str, name: str) -> bool:
    return re.search(rf"(?<![\w.]){re.escape(name)}\b", text) is not None


def _link_imports(hunks: list[Hunk], old: Sequence[bytes], new: Sequence[bytes], encoding: str) -> list[Hunk]:
    """Explain the hunks no finding covers: imports the engine added or removed for other hunks."""
    out = list(hunks)
    for h in hunks:
        if h.findings:
            continue
        old_text = text_of(old[h.old_start:h.old_end], encoding)
        new_text = text_of(new[h.new_start:h.new_end], encoding)
        old_names, new_names = import_names(old_text), import_names(new_text)
        old_assigned = assigned_names(old_text)
        added = [(n, "adds the import of") for n in new_names if n not in old_names]
        added += [(n, binding_verb(n, new_text)) for n in assigned_names(new_text) if n not in old_assigned]
        removed = [n for n in old_names if n not in new_names]
        notes: list[str] = []
        serves: set[int] = set()
        requires: set[int] = set()
        for name, what in added:
            users = [o.index for o in hunks if o is not h
                     and _uses(_strip_imports(text_of(new[o.new_start:o.new_end], encoding)), name)]
            serves.update(users)
            notes.append(f"{what} `{name}`" + _for(users, hunks))
        for name in removed:
            users = [o.index for o in hunks if o is not h
                     and _uses(_strip_imports(text_of(old[o.old_start:o.old_end], encoding)), name)]
            serves.update(users)
            requires.update(users)
            notes.append(f"removes the import of `{name}`, unused once the edits are made" + _for(users, hunks))
        if not notes:
            notes.append("no rule: a side effect of the edits in this file")
        safety = Safety.UNSAFE if any(hunks[i].safety is Safety.UNSAFE for i in serves) else Safety.SAFE
        out[h.index] = dataclasses.replace(h, notes=tuple(notes), serves=tuple(sorted(serves)),
                                           requires=tuple(sorted(requires)), safety=safety)
    return out


def _strip_imports(text: str) -> str:
    return "\n".join(line for line in text.splitlines() if not re.match(r"\s*(import|from)\s", line))


def _for(users: Sequence[int], hunks: Sequence[Hunk]) -> str:
    if not users:
        return ""
    parts = []
    for i in users:
        rules = ", ".join(dict.fromkeys(f.rule for f in hunks[i].findings)) or "imports"
        parts.append(f"hunk {i + 1} ({rules})")
    return " (goes with " + ", ".join(parts) + ")"
