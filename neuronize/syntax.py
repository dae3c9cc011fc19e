"""Names and statements read without a full tree walk: the cheap half of reading a module."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence

import libcst as cst


def dotted_name(node: cst.CSTNode) -> str | None:
    """``a.b.c`` for a Name/Attribute chain, else None."""
    parts: list[str] = []
    while isinstance(node, cst.Attribute):
        parts.append(node.attr.value)
        node = node.value
    if not isinstance(node, cst.Name):
        return None
    parts.append(node.value)
    return ".".join(reversed(parts))


def iter_statements(body: Sequence[cst.CSTNode]) -> Iterator[cst.CSTNode]:
    """Every statement of ``body``, nested blocks included, parents before children; never
    an expression (so never inside a lambda or comprehension)."""
    for stmt in body:
        yield stmt
        for block in _blocks_of(stmt):
            yield from iter_statements(block)


def _blocks_of(stmt: cst.CSTNode) -> Iterable[Sequence[cst.CSTNode]]:
    for attr in ("body", "orelse", "finalbody", "handlers", "cases"):
        part = getattr(stmt, attr, None)
        if part is None or isinstance(stmt, cst.SimpleStatementLine):
            continue
        if isinstance(part, cst.BaseSuite):
            if isinstance(part, cst.IndentedBlock):
                yield part.body
        elif isinstance(part, (cst.Else, cst.If, cst.Finally)):
            yield from _blocks_of_clause(part)
        elif isinstance(part, Sequence):
            for clause in part:
                yield from _blocks_of_clause(clause)


def _blocks_of_clause(clause: cst.CSTNode) -> Iterable[Sequence[cst.CSTNode]]:
    if isinstance(clause, cst.If):
        yield [clause]
        return
    body = getattr(clause, "body", None)
    if isinstance(body, cst.IndentedBlock):
        yield body.body


def module_matches(module: str, packages: Iterable[str]) -> str | None:
    """The entry of ``packages`` that ``module`` is, or is a submodule of."""
    for package in packages:
        if module == package or module.startswith(package + "."):
            return package
    return None
