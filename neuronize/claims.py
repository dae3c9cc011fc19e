"""Which code a rule has claimed: a catch-all rule's findings give way to every other rule's.

A catch-all rule (``Transform.catch_all``, e.g. NRN999 ``cuda-leftover``) scans for CUDA-specific
code wherever it is, without knowing which of it the specific rules already fix or report. Rather
than repeat their matchers, the engine drops, after the one walk of a file, each catch-all report
on code another rule reported in the same walk (a fix or a report, suppressed or not): the same
node, a node inside it, or a node enclosing it up to its statement. A reported compound statement
(an ``if``, a ``with``, a function) claims its header, never its body: a finding on
``if torch.cuda.is_available():`` says nothing about the CUDA strings in the block under it.

Pure: reports and the walk's parent map in, the kept reports out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import libcst as cst

from neuronize.transform import Report

#: nodes that end the upward search: a block is never claimed through what encloses it
_BLOCKS = (cst.BaseSuite, cst.Module)


def drop_claimed(reports: Sequence[Report], parents: Mapping[int, cst.CSTNode]) -> list[Report]:
    """``reports`` without the catch-all reports on code another rule reported."""
    if not any(r.rule.catch_all for r in reports):
        return list(reports)
    claimed: set[int] = set()  # the nodes other rules reported
    enclosing: set[int] = set()  # and every node enclosing one of them
    for r in reports:
        if not r.rule.catch_all:
            claimed.add(id(r.node))
            enclosing |= r.ancestor_ids
    if not claimed:
        return list(reports)
    return [r for r in reports if not (
        r.rule.catch_all and (id(r.node) in enclosing or _claimed_upwards(r.node, claimed, parents)))]


def _claimed_upwards(node: cst.CSTNode, claimed: set[int], parents: Mapping[int, cst.CSTNode]) -> bool:
    """``node`` or an enclosing node up to its statement is in ``claimed``; a compound statement
    counts only when ``node`` is in its header (its test, items, decorators...), not its body."""
    child = node
    while True:
        if id(child) in claimed:
            return True
        parent = parents.get(id(child))
        if parent is None or isinstance(parent, _BLOCKS) or isinstance(child, _BLOCKS):
            return False
        if isinstance(parent, cst.BaseCompoundStatement):
            return id(parent) in claimed
        child = parent
