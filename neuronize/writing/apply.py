"""Applying the accepted fixes of a round to the tree, in one transformer pass; the comments of
what is removed are kept."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import libcst as cst

from neuronize.analysis.context import collect_imports
from neuronize.analysis.purity import Qualify, is_pure, is_pure_context
from neuronize.analysis.walk import Parents
from neuronize.transform import Report


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


def apply(module: cst.Module, reports: Sequence[Report], parents: Parents) -> cst.Module:
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


def outermost(reports: Sequence[Report], nested: bool = False) -> list[Report]:
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
