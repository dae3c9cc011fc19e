"""Which code a rule has claimed: a catch-all rule's findings give way to every other rule's.

A catch-all rule (``Transform.catch_all``, e.g. NRN999 ``cuda-leftover``) scans for CUDA-specific
code wherever it is, without knowing which of it the specific rules already fix or report. Rather
than repeat their matchers, the engine drops, after the one walk of a file, each catch-all report
on code another rule reported in the same walk (a fix or a report, suppressed or not): the same
node, a node inside it, or a node enclosing it up to its statement. A reported compound statement
(an ``if``, a ``with``, a function) claims its header, never its body: a finding on
``if torch.cuda.is_available():`` says nothing about the CUDA strings in the block under it.

An ignored rule (``ignore``, ``per-file-ignores``) silences its sites, as in ruff: where a
catch-all rule runs, each ignored rule runs too as a *claimer* (:func:`claimer`), whose reports
claim their code and are then dropped, so the catch-all does not report that code instead.

Pure: reports and the walk's parent map in, the kept reports out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import libcst as cst

from neuronize.rule_index import CLAIMER
from neuronize.transform import Report, Transform

#: nodes that end the upward search: a block is never claimed through what encloses it
_BLOCKS = (cst.BaseSuite, cst.Module)

__all__ = ["CLAIMER", "claimer", "drop_claimed", "is_claimer"]
_CLAIMERS: dict[type[Transform], type[Transform]] = {}


def claimer(rule: type[Transform]) -> type[Transform]:
    """``rule`` as a claimer: it runs and claims the code it reports, and none of its reports is
    kept (no finding, no fix)."""
    if rule not in _CLAIMERS:
        _CLAIMERS[rule] = type(f"_Claims{rule.__name__}", (rule,), {"__doc__": rule.__doc__})
    return _CLAIMERS[rule]


def is_claimer(rule: type[Transform]) -> bool:
    return rule in _CLAIMERS.values()


def drop_claimed(reports: Sequence[Report], parents: Mapping[int, cst.CSTNode]) -> list[Report]:
    """``reports`` without the catch-all reports on code another rule reported, and without the
    claimers' reports."""
    if not any(r.rule.catch_all for r in reports):
        return [r for r in reports if not is_claimer(r.rule)]
    claimed: set[int] = set()  # the nodes other rules reported
    enclosing: set[int] = set()  # and every node enclosing one of them
    for r in reports:
        if not r.rule.catch_all:
            claimed.add(id(r.node))
            enclosing |= r.ancestor_ids
    return [r for r in reports if not is_claimer(r.rule) and not (
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
