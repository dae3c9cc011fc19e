"""The pipeline for one file's bytes: pre-filter -> parse -> analyse -> decide -> apply -> imports -> emit.

Pure: bytes in, a :class:`SourceResult` value out; no filesystem, no printing, never raises for
bad input (a bad file is an error value, the run goes on).

- **Pre-filter**: a regex over the raw bytes, built from the tokens every enabled rule declares.
  A file with none of them is never parsed.
- **Parse** once with libcst. No metadata wrapper on the way in: names come from an import alias
  table, parents from the walk's own stack.
- **Analyse**: one walk (:mod:`neuronize.analysis.walk`: syntax nodes only, no node rebuilt); every
  enabled rule's ``visit_*`` / ``leave_*`` runs on the same tree. A catch-all rule's findings on
  code another rule reported are then dropped (:mod:`neuronize.decision.claims`).
- **Positions** are resolved only for files that have findings, and only for reported nodes
  (:mod:`neuronize.analysis.positions`).
- **Decide** which proposed fixes are applied: :mod:`neuronize.decision.policy`, the one decision stage
  (target, role, dispatch, evidence, suppressions, import safety, edit groups, guards).
- **Apply** the accepted fixes in one transformer pass. A fix inside another fix is deferred and
  the rules run again on the new tree (at most three rounds).
- **Imports** requested by applied fixes are added or removed once, at the end.
- **Emit** bytes; the output must parse, or the file is an error and is left alone.
"""

from __future__ import annotations

import ast
import dataclasses
import itertools
import re
import threading
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Sequence
from typing import TypeVar

import libcst as cst

from neuronize.decision.claims import drop_claimed
from neuronize.analysis.context import FileContext, ImportTable, collect_imports
from neuronize.analysis.positions import locate_in_code
from neuronize.analysis.import_safety import hazards, neuron_tests
from neuronize.decision.policy import Located, Tree, accepts, decide
from neuronize.analysis.purity import Qualify, is_pure, is_pure_context
from neuronize.sources.kinds import SourceKind
from neuronize.decision.suppressions import parse_suppressions
from neuronize.analysis.syntax_error import python_syntax_error
from neuronize.transform import Report, Reporter, Transform

# FileError and SourceResult are also imported from here by tests (their home is neuronize.types)
from neuronize.types import FileError, Finding, ImportRequest, Options, SourceResult, Target
from neuronize.analysis.undefined import introduced
from neuronize.analysis.walk import walk

MAX_ROUNDS = 3


# -- pre-filter ----------------------------------------------------------------------------
class TokenFilter:
    """Whether a file's bytes contain any token of the enabled rules.

    A token that contains another (``.cuda(`` and ``cuda``) is dropped: the shorter one decides.
    Plain substring tests (``memmem`` in C) beat a regex alternation of ~100 literals by ~7x here:
    ``re`` tries every alternative at every position.
    """

    def __init__(self, tokens: Iterable[bytes]) -> None:
        unique = sorted(set(tokens), key=lambda t: (len(t), t))
        kept: list[bytes] = []
        for token in unique:
            if not any(shorter in token for shorter in kept):
                kept.append(token)
        self.tokens = tuple(kept)

    def search(self, source: bytes) -> bytes | None:
        """The first token found in ``source``, or None."""
        for token in self.tokens:
            if token in source:
                return token
        return None


def prefilter_for(rules: Iterable[type[Transform]], kind: SourceKind | None = SourceKind.PYTHON) -> TokenFilter:
    """The pre-filter of ``rules`` for files of ``kind``: every token any of those that read the
    kind declares (the tokens of a requirements rule must not make every Python file a
    candidate); ``kind=None``: of every rule."""
    return TokenFilter(tok for rule in rules if kind is None or kind in rule.kinds for tok in rule.tokens)


# -- analysis ------------------------------------------------------------------------------
#: id(node) -> parent node, for the nodes the analysis walk passed
Parents = dict[int, cst.CSTNode]


class _Dispatch:
    """Sends each node to every rule's ``visit_<Type>`` / ``leave_<Type>`` (Fixit-style batching)."""

    def __init__(self, rules: Sequence[Transform], ctx: FileContext) -> None:
        self._stack = ctx.stack
        #: id(node) -> its parent, for every node the walk passes (lets _apply skip the rest)
        self.parents: dict[int, cst.CSTNode] = {}
        self._visit: dict[type, list[Callable[[cst.CSTNode], object]]] = {}
        self._leave: dict[type, list[Callable[[cst.CSTNode], object]]] = {}
        self._methods: dict[str, tuple[list[Callable[[cst.CSTNode], object]], ...]] = defaultdict(lambda: ([], []))
        for rule in rules:
            for attr in dir(type(rule)):
                if attr.startswith("visit_"):
                    self._methods[attr[6:]][0].append(getattr(rule, attr))
                elif attr.startswith("leave_"):
                    self._methods[attr[6:]][1].append(getattr(rule, attr))

    def _lookup(self, kind: type) -> None:
        visit, leave = self._methods.get(kind.__name__, ((), ()))
        self._visit[kind], self._leave[kind] = list(visit), list(leave)

    def enter(self, node: cst.CSTNode) -> None:
        if self._stack:
            self.parents[id(node)] = self._stack[-1]
        self._stack.append(node)
        kind = type(node)
        if kind not in self._visit:
            self._lookup(kind)
        for method in self._visit[kind]:
            method(node)

    def leave(self, node: cst.CSTNode) -> None:
        for method in self._leave[type(node)]:
            method(node)
        self._stack.pop()


def _analyse(module: cst.Module, rules: Sequence[type[Transform]], options: Options,
             path: str, source: bytes, inherited: ImportTable | None = None) -> tuple[list[Report], Parents]:
    ctx = FileContext(module=module, names=collect_imports(module, inherited), options=options, path=path,
                      source=source)
    reporter = Reporter()
    dispatch = _Dispatch([rule.for_file(ctx, reporter) for rule in rules], ctx)
    walk(module, dispatch.enter, dispatch.leave)
    return drop_claimed(reporter.reports, dispatch.parents), dispatch.parents


# -- applying fixes ------------------------------------------------------------------------
def _comment_lines(stmt: cst.CSTNode) -> list[cst.EmptyLine]:
    """The comments that must survive when ``stmt`` is deleted."""
    lines = list(getattr(stmt, "leading_lines", ()))
    keep = lines if any(line.comment for line in lines) else []
    trailing = getattr(stmt, "trailing_whitespace", None)
    if isinstance(trailing, cst.TrailingWhitespace) and trailing.comment is not None:
        keep.append(cst.EmptyLine(indent=True, comment=trailing.comment))
    return keep


def _own_comments(stmt: cst.SimpleStatementLine) -> tuple[list[cst.EmptyLine], list[cst.EmptyLine]]:
    """What happens to the comments of a deleted line: ``(kept, attached)``.

    Its trailing comment is its own and goes with it (``flag = True  # faster``). The comment
    lines right above it, with no blank line between (``attached``), go too if it ends its group
    of lines; comments above a blank line belong to what follows, and stay.
    """
    lines = list(stmt.leading_lines)
    split = max((i + 1 for i, line in enumerate(lines) if line.comment is None), default=0)
    return lines[:split], lines[split:]


def _block_comments(block: cst.BaseSuite) -> list[cst.EmptyLine]:
    """The comments left in a block that removals emptied (its ``pass`` line, its footer), and
    the one after its header's colon."""
    keep: list[cst.EmptyLine] = []
    header = getattr(block, "header", None) or getattr(block, "trailing_whitespace", None)
    if isinstance(header, cst.TrailingWhitespace) and header.comment is not None:
        keep.append(cst.EmptyLine(indent=True, comment=header.comment))
    if isinstance(block, cst.IndentedBlock):
        for stmt in block.body:
            keep.extend(line for line in stmt.leading_lines if line.comment)  # type: ignore[attr-defined]
        keep.extend(line for line in block.footer if line.comment)
    return keep


class _Applier(cst.CSTTransformer):
    """Replaces reported nodes (by identity) with their fixes; keeps blocks valid on deletion.

    Enters only the nodes on the way to a fix (``on_path``; None: every node). A libcst
    transformer rebuilds every node it enters, about 1.5 parses for a whole module, whatever the
    number of fixes; the rest of the tree is kept as it is.

    A block that removals empty gets ``pass``; then the statement that owns it goes too when its
    header has no side effects (:mod:`neuronize.analysis.purity`): an ``if`` without ``else``, a ``for`` /
    ``while``, a ``with`` of pure context managers; an emptied ``else`` / ``finally`` clause goes.
    Comments survive, as they do for any removal.
    """

    def __init__(self, fixes: dict[int, Report], on_path: set[int] | None, qualify: Qualify) -> None:
        super().__init__()
        self._fixes = fixes
        self._on_path = on_path
        self._qualify = qualify
        #: id(pass marker) -> (marker, comments kept, comments attached to the deleted statement),
        #: for _drop_removed
        self._removed: dict[int, tuple[cst.CSTNode, list[cst.EmptyLine], list[cst.EmptyLine]]] = {}
        #: blocks (and one-line suites) that removals emptied, by id; the nodes are held so that
        #: no other node can take the id of one that was garbage-collected
        self._emptied: dict[int, cst.CSTNode] = {}

    def on_visit(self, node: cst.CSTNode) -> bool:
        return self._on_path is None or id(node) in self._on_path

    def on_leave(self, original_node, updated_node):  # type: ignore[no-untyped-def]
        report = self._fixes.get(id(original_node))
        if report is not None:
            replacement = report.replacement
            if isinstance(replacement, cst.RemovalSentinel) and isinstance(original_node, cst.SimpleStatementLine):
                return self._marker(*_own_comments(original_node))
            if isinstance(replacement, cst.RemovalSentinel) and isinstance(original_node, cst.BaseCompoundStatement):
                return self._marker(_comment_lines(original_node))
            return replacement
        if isinstance(updated_node, (cst.IndentedBlock, cst.Module)):
            return self._drop_removed(updated_node)
        if isinstance(updated_node, (cst.SimpleStatementLine, cst.SimpleStatementSuite)) and not updated_node.body:
            emptied = updated_node.with_changes(body=[cst.Pass()])
            if isinstance(emptied, cst.SimpleStatementSuite):
                self._emptied[id(emptied)] = emptied
            return emptied
        if isinstance(updated_node, (cst.If, cst.For, cst.While, cst.With, cst.Try)):
            return self._prune(updated_node)
        return updated_node

    def _marker(self, comments: list[cst.EmptyLine], attached: list[cst.EmptyLine] | None = None
                ) -> cst.SimpleStatementLine:
        """A stand-in for a deleted statement, dropped from its block by :meth:`_drop_removed`.

        ``comments`` stay; ``attached`` (the comment lines right above the statement) go with it
        when it ends its group of lines (see :meth:`_drop_removed`), and stay otherwise.
        """
        marker = cst.SimpleStatementLine(body=[cst.Pass()])
        self._removed[id(marker)] = (marker, comments, attached or [])
        return marker

    def _prune(self, node: cst.BaseCompoundStatement) -> cst.CSTNode:
        """``node`` without the clauses removals emptied, or a marker when nothing of it is left."""
        comments: list[cst.EmptyLine] = []
        orelse = getattr(node, "orelse", None)
        if orelse is not None and id(orelse) in self._removed:  # an elif that went entirely
            comments += self._removed.pop(id(orelse))[1]
            node = node.with_changes(orelse=None)
        elif isinstance(orelse, cst.Else) and self._was_emptied(orelse.body):
            comments += _block_comments(orelse.body)
            node = node.with_changes(orelse=None)
        if isinstance(node, cst.Try) and node.finalbody is not None and self._was_emptied(node.finalbody.body):
            if node.handlers:
                comments += _block_comments(node.finalbody.body)
                node = node.with_changes(finalbody=None)
            elif node.orelse is None and isinstance(node.body, cst.IndentedBlock):
                # try: X / finally: (emptied) is X
                body = list(node.body.body)
                lead = list(node.leading_lines)
                body[0] = body[0].with_changes(leading_lines=[*lead, *body[0].leading_lines])  # type: ignore[attr-defined]
                tail = comments + _block_comments(node.finalbody.body)  # type: ignore[union-attr]
                if tail:
                    body.append(self._marker(tail))
                return cst.FlattenSentinel(body)  # type: ignore[return-value]
        if self._was_emptied(node.body) and getattr(node, "orelse", None) is None and self._pure_header(node):
            return self._marker([*_comment_lines(node), *comments, *_block_comments(node.body)])
        if comments:
            node = node.with_changes(leading_lines=[*node.leading_lines, *comments])
        return node

    def _ends_group(self, stmts: list[cst.BaseStatement], index: int) -> bool:
        """Whether the statement at ``index`` (deleted) and the deleted ones right after it end
        a group of lines: the block ends, or a blank line comes before the next kept statement."""
        for stmt in stmts[index + 1:]:
            removed = self._removed.get(id(stmt))
            # a marker has no lines of its own: those of the statement it stands for
            lines = [*removed[1], *removed[2]] if removed else getattr(stmt, "leading_lines", ())
            if any(line.comment is None for line in lines):
                return True
            if removed is None:
                return False
        return True

    def _was_emptied(self, block: cst.CSTNode) -> bool:
        return self._emptied.get(id(block)) is block

    def _pure_header(self, node: cst.BaseCompoundStatement) -> bool:
        if isinstance(node, (cst.If, cst.While)):
            return is_pure(node.test, self._qualify)
        if isinstance(node, cst.For):
            return node.asynchronous is None and is_pure(node.iter, self._qualify)
        if isinstance(node, cst.With):
            return node.asynchronous is None and all(
                item.asname is None and is_pure_context(item, self._qualify) for item in node.items)
        return False

    def _drop_removed(self, block: cst.IndentedBlock | cst.Module) -> cst.CSTNode:
        if not any(id(stmt) in self._removed for stmt in block.body):
            return block
        body: list[cst.BaseStatement] = []
        carry: list[cst.EmptyLine] = []
        gap: list[cst.EmptyLine] = []  # blank lines that set a deleted line apart from what came before
        stmts = list(block.body)
        for i, stmt in enumerate(stmts):
            removed = self._removed.get(id(stmt))
            if removed is not None:
                _, kept, attached = removed
                if attached and not self._ends_group(stmts, i):
                    kept, attached = [*kept, *attached], []  # it also speaks of the lines after
                if any(line.comment for line in kept):
                    carry.extend(kept)
                elif not carry:
                    gap = gap or kept
                continue
            if carry or (not body and i > 0):
                lines = [*carry, *stmt.leading_lines]  # type: ignore[attr-defined]
                while not body and lines and lines[0].comment is None:
                    lines.pop(0)  # what stood above is gone: no blank line opens the block
                stmt = stmt.with_changes(leading_lines=lines)
                carry = []
            elif gap and not stmt.leading_lines:  # type: ignore[attr-defined]
                stmt = stmt.with_changes(leading_lines=gap)  # the code after keeps that separation
            gap = []
            body.append(stmt)
        if isinstance(block, cst.IndentedBlock) and not body:
            emptied = block.with_changes(body=[cst.SimpleStatementLine(body=[cst.Pass()], leading_lines=carry)])
            self._emptied[id(emptied)] = emptied
            return emptied
        return block.with_changes(body=body, footer=[*carry, *block.footer])


def _apply(module: cst.Module, reports: Sequence[Report], parents: Parents) -> cst.Module:
    fixes = {id(r.node): r for r in reports}
    applier = _Applier(fixes, _ancestors_and_self(module, fixes, parents), collect_imports(module).qualify)
    result = module.visit(applier)
    assert isinstance(result, cst.Module)
    return result


def _ancestors_and_self(module: cst.Module, keys: Iterable[int], parents: Parents) -> set[int] | None:
    """The ids of the nodes ``keys`` and of all their ancestors; None if the walk did not pass
    one of them (a node it skips, such as a comma: then every node must be entered)."""
    found = {id(module)}
    for key in keys:
        while key not in found:
            parent = parents.get(key)
            if parent is None:
                return None
            found.add(key)
            key = id(parent)
    return found


def _outermost(reports: Sequence[Report], nested: bool = False) -> list[Report]:
    """Fixes not nested inside another fix of this round (``nested=True``: nested ones too),
    and one fix per node: the first reported."""
    ids = {id(r.node) for r in reports}
    seen: set[int] = set()
    chosen = []
    for r in reports:
        if (not nested and r.ancestor_ids & ids) or id(r.node) in seen:
            continue
        seen.add(id(r.node))
        chosen.append(r)
    return chosen


def _apply_imports(module: cst.Module, requests: Iterable[ImportRequest]) -> cst.Module:
    requests = list(dict.fromkeys(requests))
    if not requests:
        return module
    # Imported here: libcst.codemod pulls in libcst.matchers (~0.2 s), needed only by files
    # whose fixes add or remove imports.
    from libcst.codemod import CodemodContext
    from libcst.codemod.visitors import AddImportsVisitor, RemoveImportsVisitor

    context = CodemodContext()
    adds = [r for r in requests if not r.remove]
    removes = [r for r in requests if r.remove]
    if adds:
        for r in adds:
            AddImportsVisitor.add_needed_import(context, r.module, r.obj, r.asname)
        before = {_code(stmt) for stmt in module.body}
        module = _after_environment(module.visit(_top_level(AddImportsVisitor)(context)), before)
    if removes:
        context = CodemodContext()
        for r in removes:
            RemoveImportsVisitor.remove_unused_import(context, r.module, r.obj, r.asname)
        module = RemoveImportsVisitor(context).transform_module(module)
    return module


_Adder = TypeVar("_Adder", bound=cst.CSTTransformer)


def _top_level(adder: type[_Adder]) -> type[_Adder]:
    """libcst's ``AddImportsVisitor`` entering only what it reads and writes: the module's own
    simple statements (its docstring, its imports, where it inserts). Run whole, it rebuilds
    every node of the module and walks it twice more (a copy for metadata it does not use, and
    its gathering of the leading imports): about ten parses for a file that gains an import."""

    class TopLevel(adder):  # type: ignore[misc, valid-type]
        def visit_Module(self, node: cst.Module) -> None:
            leading = list(itertools.takewhile(lambda stmt: isinstance(stmt, cst.SimpleStatementLine), node.body))
            super().visit_Module(node.with_changes(body=leading))

        def on_visit(self, node: cst.CSTNode) -> bool:
            return bool(super().on_visit(node)) and type(node) in (cst.Module, cst.SimpleStatementLine)

    return TopLevel


def _sets_environment(stmt: cst.BaseStatement) -> bool:
    """``os.environ[...] = ...``, ``os.environ.setdefault(...)``, ``os.putenv(...)``: settings a
    library may read when it is imported, so imports added by fixes go after them."""
    if not isinstance(stmt, cst.SimpleStatementLine):
        return False
    code = cst.Module([]).code_for_node(stmt)
    return "environ" in code or "putenv" in code


def _imports_only(stmt: cst.BaseStatement, *also: type) -> bool:
    """A line of import statements (and of ``also``, e.g. a docstring's ``Expr``)."""
    return isinstance(stmt, cst.SimpleStatementLine) and all(
        isinstance(s, (cst.Import, cst.ImportFrom, *also)) for s in stmt.body)


def _code(stmt: cst.CSTNode) -> str:
    return cst.Module([]).code_for_node(stmt).strip()


def _after_environment(module: cst.Module, before: set[str]) -> cst.Module:
    """Move the import lines the engine added (statements whose code is not in ``before``) below the
    environment settings of the module's opening section."""
    body = list(module.body)
    opening = 0
    while opening < len(body) and (_sets_environment(body[opening]) or _imports_only(body[opening], cst.Expr)):
        opening += 1
    settings = [i for i in range(opening) if _sets_environment(body[i])]
    if not settings:
        return module
    last = settings[-1]
    added = [stmt for stmt in body[:last] if _imports_only(stmt) and _code(stmt) not in before]
    if not added:
        return module
    kept = [stmt for stmt in body[: last + 1] if all(stmt is not a for a in added)]
    return module.with_changes(body=[*kept, *added, *body[last + 1:]])


# -- positions ------------------------------------------------------------------------------
def _locate(module: cst.Module, reports: Sequence[Report]) -> tuple[Located, str | None]:
    """The findings of ``reports``, and the module's code if it had to be rendered for them."""
    if not reports:
        return [], None
    spans, code = locate_in_code(module, (r.node for r in reports))
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


# -- the pipeline --------------------------------------------------------------------------
def _error_for(exc: BaseException, source: bytes) -> FileError:
    if isinstance(exc, cst.ParserSyntaxError):
        # CPython's message and position: what the user's editor and interpreter say
        described = python_syntax_error(source)
        if described is not None:
            return described
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else "invalid syntax"
        return FileError(f"libcst cannot parse this file, though Python can: {first}", exc.raw_line,
                         exc.raw_column + 1)
    if isinstance(exc, UnicodeDecodeError):
        line = source[: exc.start].count(b"\n") + 1
        return FileError(f"cannot decode: {exc.reason} (byte 0x{source[exc.start]:02x})", line)
    if isinstance(exc, SyntaxError):
        # The encoding cookie names an unknown codec, or the bytes do not decode: find where.
        if exc.lineno is None:
            try:
                source.decode("utf-8")
            except UnicodeDecodeError as bad:
                line = source[: bad.start].count(b"\n") + 1
                return FileError(
                    f"cannot decode as UTF-8 (byte 0x{source[bad.start]:02x}) and no encoding "
                    "declaration says otherwise", line)
        return FileError(f"cannot read: {exc.msg}", exc.lineno)
    if isinstance(exc, LookupError):
        return FileError(f"cannot decode: {exc}", 1)
    if isinstance(exc, RecursionError):
        return FileError("too deeply nested for the parser (RecursionError); left alone")
    return FileError(f"internal error ({type(exc).__name__}: {exc}); please report it")


def run_source(
    source: bytes,
    rules: Sequence[type[Transform]],
    options: Options = Options(),
    path: str = "<string>",
    prefilter: TokenFilter | None = None,
    fix: bool = True,
    inherited: bytes = b"",
    tidy: bool = True,
    cell: bool = False,
) -> SourceResult:
    """Analyse (and, if fixes are accepted and ``fix``, rewrite) one file's bytes.

    Never raises on bad input. With ``fix=False`` (``check``) no fix is applied and ``output``
    stays None; findings still say which fixes would apply. ``inherited``: import statements
    that ran before this source (a notebook's earlier cells), so names they bind are known.
    ``tidy``: the code the fixes wrote is then made what a person would write (:func:`_tidied`);
    False shows the rules' own edits (a rule's examples, comparisons between targets). ``cell``:
    the source is a notebook cell, read on its own: a function it defined would be one per cell,
    so the Neuron test stays written out.
    """
    if b"\x00" in source:
        return SourceResult(error=FileError("binary file (contains NUL bytes); skipped"))
    rules = [r for r in rules if SourceKind.PYTHON in r.kinds]  # rules of other kinds: sources/kinds.py
    pattern = prefilter or prefilter_for(rules)
    if not pattern.search(source):
        return SourceResult(skipped=True)
    try:
        return _on_deep_stack(_run_parsed, source, rules, options, path, fix, inherited, tidy, cell)
    except Exception as exc:  # noqa: BLE001 - any failure is this file's error, never the run's
        return SourceResult(error=_error_for(exc, source))


#: libcst's native parser recurses on the C stack: ~2000 nested brackets overflow a default
#: 8 MB thread stack and kill the process (a segfault cannot be caught). Parsing runs on a
#: thread with a large stack instead; Python-level recursion limits then fail cleanly, as an
#: error for that one file.
_DEEP_STACK = 512 * 1024 * 1024


def _on_deep_stack(func: Callable[..., SourceResult], *args: object) -> SourceResult:
    """``func(*args)`` on a thread of its own with a ``_DEEP_STACK`` stack (a plain thread: the
    executor of concurrent.futures would cost its import, and logging's, at every start)."""
    outcome: list[SourceResult] = []
    failure: list[BaseException] = []

    def target() -> None:
        try:
            outcome.append(func(*args))
        except BaseException as exc:  # noqa: BLE001 - re-raised in the caller's thread
            failure.append(exc)

    previous = threading.stack_size(_DEEP_STACK)
    try:
        thread = threading.Thread(target=target, name="neuronize-parse", daemon=True)
        thread.start()
    finally:
        threading.stack_size(previous)
    thread.join()
    if failure:
        raise failure[0]
    return outcome[0]


_BLANK_TAIL = re.compile(rb"(?<=\n)[ \t\f\r\n]*\Z")


def _split_blank_tail(source: bytes) -> tuple[bytes, bytes]:
    """Split off trailing whitespace-only lines, which libcst does not reproduce byte for byte
    (``x\n\n  \n`` comes back as ``x\n  \n``); they are re-attached untouched."""
    match = _BLANK_TAIL.search(source)
    if match is None or match.start() == 0:
        return source, b""
    return source[: match.start()], source[match.start():]


def _run_parsed(source: bytes, rules: Sequence[type[Transform]], options: Options,
                path: str, fix: bool, inherited_source: bytes = b"", tidy: bool = True,
                cell: bool = False) -> SourceResult:
    source, tail = _split_blank_tail(source)
    module = cst.parse_module(source)
    inherited = collect_imports(cst.parse_module(inherited_source)) if inherited_source else None
    reports, parents = _analyse(module, rules, options, path, source, inherited)
    located, code = _locate(module, reports)
    located, unused = decide(located, options, parse_suppressions(source), rules, Tree(module, parents))
    accepted = accepts(options)
    pending = [r for r, _ in located if accepted(r)]
    if not pending or not fix:
        # libcst reads some Python 2 (`except X, e:`) that CPython refuses: say so, as `fix` does
        refused = python_syntax_error(source) if located else None
        return SourceResult(findings=_findings(located, _never, unused), would_change=bool(pending),
                            error=refused)
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
    for round_no in range(MAX_ROUNDS):
        batch = _outermost(pending)
        new = _apply_imports(_apply(new, batch, parents), [req for r in batch for req in r.imports])
        # Applied fixes can reveal more: a fix nested in another, a name an added import now
        # resolves, a guard whose CUDA-only body another rule removed. Run to a fixed point, so
        # that a second run of neuronize changes nothing.
        marker_free = b"neuronize:" not in source
        reports, parents = _analyse(new, rules, options, path, source, inherited)  # the bytes as read: a superset test
        again, code = _locate(new, reports)
        marks = parse_suppressions(source if marker_free else _bytes(new, code))
        again, _ = decide(again, options, marks, rules, Tree(new, parents))
        pending = [r for r, _ in again if accepted(r)]
        if not pending:
            break
        later.extend(dataclasses.replace(f, applied=True) for r, f in again
                     if accepted(r) and (r.rule.id, r.message) not in seen)
        if round_no == MAX_ROUNDS - 1:
            warnings.append(f"{len(pending)} fix(es) still pending after {MAX_ROUNDS} rounds")
    if options.target is Target.ACCELERATOR:
        from neuronize.writing.device_name import name_device
        from neuronize.writing.guards_merged import merge_guards

        named = merge_guards(name_device(new, source), source)
        if named is not new:
            new, code = named, None
    if tidy and new is not module:
        new, code = _tidied(new, code, source, options, name_tests=not cell)
    output = _bytes(new, code) + tail
    source += tail
    # Of several accepted fixes for one node only the first is applied (see _outermost).
    first_per_node = {id(r) for r in _outermost([r for r, _ in located if accepted(r)], nested=True)}
    findings = _findings(located, lambda r: id(r) in first_per_node, [*unused, *later])
    if output == source:
        return SourceResult(findings=findings, warnings=tuple(warnings))
    try:
        tree = ast.parse(output)
    except SyntaxError as exc:
        try:
            ast.parse(source)
            problem = f"internal error: the rewritten file would not parse ({exc.msg}); please report it"
        except SyntaxError:  # libcst accepts what CPython refuses (e.g. `except X, e:`)
            described = python_syntax_error(source)
            assert described is not None
            return SourceResult(findings=_findings(located, _never, unused), error=dataclasses.replace(
                described, message=f"{described.message}; left alone"))
        return SourceResult(findings=_findings(located, _never, unused),
                            error=FileError(f"{problem}; left alone", exc.lineno))
    # the safety nets compare the output with the source: one AST of the source serves both
    source_tree = _python_tree(source)
    undefined = introduced(source_tree, tree) if source_tree is not None else set()
    if undefined:  # a rule wrote a name without asking for its import
        return SourceResult(findings=_findings(located, _never, unused), error=FileError(
            f"internal error: the fixes would use undefined name(s) {', '.join(sorted(undefined))}; "
            "left alone; please report it"))
    added = hazards(tree, neuron_tests(new)) - (
        hazards(source_tree, neuron_tests(module)) if source_tree is not None else Counter())
    if added:  # a safety net: _import_safe should have held these fixes back
        return SourceResult(findings=_findings(located, _never, unused), error=FileError(
            f"internal error: the rewritten module would evaluate {next(iter(added))} at import; left alone"))
    return SourceResult(findings=findings, output=output, warnings=tuple(warnings))


def _tidied(new: cst.Module, code: str | None, source: bytes, options: Options,
            name_tests: bool) -> tuple[cst.Module, str | None]:
    """The code the fixes wrote, as a person would write it: defaults resolved in the body
    (:mod:`neuronize.writing.late_defaults`), the Neuron test defined once
    (:mod:`neuronize.writing.neuron_test`), lines within the project's length
    (:mod:`neuronize.writing.wrapped`)."""
    from neuronize.writing.late_defaults import late_defaults
    from neuronize.writing.neuron_test import name_neuron_test
    from neuronize.writing.wrapped import limit_for, wrap_long_lines

    tidied = late_defaults(new, source)
    if name_tests:
        tidied = name_neuron_test(tidied, source)
    tidied = wrap_long_lines(tidied, source, limit_for(source, options.line_length))
    return (new, code) if tidied is new else (tidied, None)


def _python_tree(source: bytes) -> ast.Module | None:
    try:
        return ast.parse(source)
    except SyntaxError:
        return None


def _never(report: Report) -> bool:
    return False
