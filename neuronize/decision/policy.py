"""The decision stage: which of the fixes the rules propose are applied, for every kind of source.

Rules only report what they see and what they would write: a :class:`~neuronize.transform.Report`
(Python) or :class:`~neuronize.line_rule.LineReport` (the line-based kinds) holds the proposed
replacement and the facts of where the rule saw it (the role of the code, the device dispatch
around it). This module decides, in this order, each step seeing what the previous ones left:

1. **target**: a rule writes fixes for its ``targets`` only; under another ``--target`` its fix is
   reported, not applied (note ``target``); so is a fix that writes an API of torch (or
   transformers) newer than a release the project's requirements admit (``Transform.needs``;
   note ``requirement``), unless it keeps the original call in front of the newer one's test (or
   the code keeps CUDA for its role, step 2, which says so);
2. **role**: code whose role makes CUDA the point (GPU kernels, CUDA tests, Inductor, CUDA graphs:
   :mod:`neuronize.analysis.roles`) keeps CUDA (note ``role``; the finding leaves its edit group);
3. **dispatch**: a branch of a dispatch over devices (``if cuda ... elif mps ...``) stays for the
   device it serves (note ``dispatch``); not held: a fix that puts a choice in front of the
   reported node kept whole (``"neuron" if <test> else <the whole chain>``, where the node heads
   a chooser such as ``"cuda" if cuda else "mps" if mps else "cpu"``): every device of the
   dispatch keeps its branch, and Neuron gains one;
4. **evidence**: a safe fix resting on SRC, 3P or INF evidence is unsafe (never applied silently);
5. **suppressions**: ``# neuronize: ignore[...]`` drops findings and their fixes; unused and
   misspelt suppressions are findings (NRN000);
6. **import safety**: a fix that would run Neuron-only code when the module is imported is
   reported, not applied (note ``import-safety``; Python only, :mod:`neuronize.analysis.import_safety`);
7. **edit groups**: the fixes of one group are applied together or not at all, at the weakest
   safety among them; a member suppressed or held back holds back the group (note ``group``).
   The device edits of one region of code (a function, or the branch of an ``if`` in it: where
   the tensors they place meet) wait for what the region holds (Python only): a process group
   moved to Neuron (a ``"neuron"`` group beside tensors kept on ``"cuda:<rank>"`` runs on no
   host), an unsafe placement (``.cuda(rank)``: a safe-only run moves none of its neighbours), a
   CUDA call kept there that raises without CUDA (``torch.cuda.current_device()``; a
   constructor's holds its class), a CUDA device string that no rule migrates (the catch-all's finding: ``move_embed(model,
   "cuda")``): moved without it, the code's tensors and what it hands on sit on two devices; a placement
   pinned to CUDA that no rule moves (a model placed on GPUs by its loader, ``device_map="auto"``
   or ``{"": 0}``; a legacy CUDA tensor type, ``torch.cuda.FloatTensor if cuda else
   torch.FloatTensor``) forms one with the device edits of its function, or of the file where it
   is at module level: the tensors it meets stay where it is. The device edits after an
   ``if``/``elif``/``else`` every branch of which keeps CUDA wait with it. The findings of one decision
   written in one expression form a group too: the arms of a conditional expression that chooses
   between devices, the arguments of a call that wraps a model with its device ids, and a
   ``with torch.cuda.stream(s):`` with the work in its body;
8. **guards**: an edit to the test of an ``if`` (or conditional expression) is as safe as the
   weakest edit of the code it guards, and is not made when that code keeps a reported line (note
   ``guard``); edits to tests of the same condition in one function (or the methods of one
   class) form an edit group, settled
   as in step 7 (Python only);
9. **guarded code**: the other way round, an edit in the code a test guards (an ``if`` body, a
   conditional expression's first arm) whose test a rule proposed to edit (to take Neuron in) is
   made only with that test edit: as safe as it at most, and not made where the test stays as it
   is (held back, suppressed): behind a test Neuron never passes, the edit changes nothing on
   Neuron and only risks CUDA (note ``guard``; Python only).

What is left is applied when it is safe, or unsafe and ``--unsafe-fixes`` was given
(:func:`accepts`). The engines (:mod:`neuronize.analysis.engine`, :mod:`neuronize.analysis.line_files`) call
:func:`decide` and apply what it accepts; nothing else decides.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple, TypeVar

import libcst as cst

from neuronize.decision.claims import is_claimer
from neuronize.analysis.import_safety import (
    OPTIONAL_TORCH, hazard, imports_torch_optionally, lazy_annotations, neuron_tests, runs_before_torch,
    torch_imported_at,
)
from neuronize.analysis.walk import Parents, ancestors, iter_syntax
from neuronize.analysis.syntax import (
    binding_scope, chain_head, chain_links, dotted_name, else_ends_early, ends_early, is_false_or_none, is_main_test, is_script,
    one_line, stored_once, without_not,
)
from neuronize.decision.suppressions import Suppression, unknown_codes
from neuronize.transform import Transform
from neuronize.types import Finding, Note, Options, Safety

#: a rule's report (``Report`` or ``LineReport``: both have ``rule``, ``safety``, ``evidence``,
#: ``group``, ``notes``, ``fixable`` and ``without_fix``)
R = TypeVar("R", bound=Any)
Located = list[tuple[R, Finding]]

UNUSED_SUPPRESSION = ("NRN000", "unused-suppression")

#: safety classes, strongest first
_WEAKNESS = (Safety.SAFE, Safety.UNSAFE, Safety.REPORT_ONLY)


@dataclasses.dataclass(frozen=True)
class Tree:
    """What the Python-only steps need of the file: its module and the walk's parent links."""

    module: cst.Module
    parents: Parents


def accepts(options: Options) -> Callable[[Any], bool]:
    """Whether a report's fix is applied, once :func:`decide` has settled it."""
    def accepted(report: Any) -> bool:
        return report.fixable and (
            report.safety is Safety.SAFE or (report.safety is Safety.UNSAFE and options.unsafe_fixes)
        )

    return accepted


def decide(located: Located[R], options: Options, suppressions: Sequence[Suppression],
           rules: Sequence[type[Transform]], tree: Tree | None = None) -> tuple[Located[R], list[Finding]]:
    """Steps 1 to 9 over a file's reports and their findings: what is left, with the findings on
    the suppressions (unused ones with ``--unused-suppressions``, misspelt ones always). ``tree``:
    the file's Python tree, for the steps that read it (None for the line-based kinds)."""
    proposed = [r.node for r, _ in located if r.fixable] if tree is not None else []  # step 9: what the rules wanted to edit
    gated = [_gate(pair, options) for pair in located]
    kept, unused = _suppress(gated, suppressions, rules, options)
    if tree is not None:
        kept = _import_safe(kept, tree, options.imported_elsewhere)
    # a member suppressed, or held back by import safety (a new report), holds back its group
    kept_ids = {id(r) for r, _ in kept}
    held = {r.group: "" for r, _ in gated if r.group is not None and id(r) not in kept_ids}
    device = options.target.value
    elsewhere = _pinned_elsewhere(options) if tree is not None else None
    unsafe = {elsewhere.group: elsewhere.why} if elsewhere is not None and not elsewhere.held else {}
    if tree is not None:
        joined = _one_decision_joins(_regions_hold_moves(kept, tree.parents, device), tree.parents)
        kept, grouped = _pins_hold_devices(joined, tree.parents, device, elsewhere)
        held = {**held, **grouped}
    settled = _settle_groups(kept, held, unsafe=unsafe)
    if tree is None:
        return settled, unused
    chained, why = _chains_hold_what_follows(settled, tree.parents, device, accepts(options))
    if chained:  # settled again from before step 7, with the groups that now wait
        kept = [(dataclasses.replace(r, group=chained[i]), f) if i in chained else (r, f) for i, (r, f) in enumerate(kept)]
        settled = _settle_groups(kept, {**held, **why}, unsafe=unsafe)
    settled = _guards_follow_bodies(settled, tree.parents)
    # after the guards took their bodies' safety: a guard kept for its body keeps its siblings
    same_tests, groups = _same_tests_grouped(settled, tree.parents)
    settled = _settle_groups(same_tests, {}, only=groups)
    return _bodies_follow_guards(settled, proposed, tree.module, tree.parents), unused


def _changed(pair: tuple[R, Finding], *, note: Note | None = None, hold: bool = False,
             safety: Safety | None = None, ungroup: bool = False) -> tuple[R, Finding]:
    """A report and its finding after a step: with ``note``; without the fix (``hold``); at
    ``safety``; out of its edit group (``ungroup``)."""
    r, f = pair
    changes: dict[str, Any] = {}
    if note is not None:
        changes["notes"] = (*r.notes, note)
    if safety is not None:
        changes["safety"] = safety
    if ungroup:
        changes["group"] = None
    r = r.without_fix(**changes) if hold else dataclasses.replace(r, **changes)
    f = dataclasses.replace(f, safety=r.safety, fixable=r.fixable,
                            notes=(*f.notes, note) if note is not None else f.notes)
    return r, f


# -- steps 1 to 4: each report on its own ------------------------------------------------------
def _gate(pair: tuple[R, Finding], options: Options) -> tuple[R, Finding]:
    r, _ = pair
    if not r.fixable:
        return pair
    if options.target not in r.rule.targets:
        # the rule's fix is Neuron-specific: under another target it is advice, not an edit
        return _changed(pair, hold=True, safety=Safety.REPORT_ONLY, note=(
            "target", f"that is the `--target neuron` fix; no automatic `--target {options.target}` fix: "
                      "migrate by hand"))
    for package, needs in r.rule.needs:
        # the newer API runs on Neuron alone; or the code is CUDA's for its role, which step 2 says
        if _in_front(r) or getattr(r, "role", None) is not None:
            break
        newest = dict(options.newest_releases or ()).get(package)
        oldest = dict(options.oldest_releases or ()).get(package)
        new_in = f"not applied: it writes an API new in {package} {needs[0]}.{needs[1]}, and the project's"
        if newest is not None and newest < needs:
            return _changed(pair, hold=True, safety=Safety.REPORT_ONLY, note=(
                "requirement", f"{new_in} {package} requirement stops at {newest[0]}."
                               f"{newest[1] if newest[1] != 99 else 'x'}, which CUDA hosts keep; raise that requirement first"))
        if oldest is not None and oldest < needs:
            return _changed(pair, hold=True, safety=Safety.REPORT_ONLY, note=(
                "requirement", f"{new_in} {package} requirement admits {oldest[0]}.{oldest[1]}, which a "
                               f"CUDA host may keep; raise it to `{package}>={needs[0]}.{needs[1]}` first"))
    role = getattr(r, "role", None)
    if role is not None:
        return _changed(pair, hold=True, safety=Safety.REPORT_ONLY, ungroup=True, note=("role", role))
    dispatch = getattr(r, "dispatch", ())
    if dispatch and not _in_front(r):
        return _changed(pair, hold=True, safety=Safety.REPORT_ONLY, note=(
            "dispatch", f"not applied: this branch is part of a dispatch over devices (also "
                        f"{', '.join(dispatch)}): keep it for the device it serves and give Neuron a "
                        "branch of its own if it has none"))
    if r.evidence.weak and r.safety is Safety.SAFE:
        return _changed(pair, safety=Safety.UNSAFE)
    return pair


def _in_front(r: Any) -> bool:
    """``r``'s fix puts a choice in front of its node, which it keeps whole: the replacement is a
    conditional expression whose ``else`` is the node (parentheses aside). Additive: the dispatch
    the node heads is left as it was, behind the new test; an API the test puts in front
    (``torch.autocast(...) if <Neuron> else torch.cuda.amp.autocast(...)``) runs on Neuron alone."""
    node, new = getattr(r, "node", None), getattr(r, "replacement", None)
    if not isinstance(new, cst.IfExp) or not isinstance(node, cst.BaseExpression):
        return False
    return new.orelse.with_changes(lpar=(), rpar=()).deep_equals(node.with_changes(lpar=(), rpar=()))


# -- step 5: suppressions ----------------------------------------------------------------------
def _covers(suppression: Suppression, finding: Finding) -> bool:
    lines = range(finding.line, max(finding.line, finding.end_line) + 1)
    return any(line in suppression.applies_to for line in lines)


def _suppress(located: Located[R], suppressions: Sequence[Suppression], rules: Sequence[type[Transform]],
              options: Options) -> tuple[Located[R], list[Finding]]:
    """Drop what ``# neuronize: ignore`` comments silence (findings and their fixes alike)."""
    if not suppressions:
        return located, []
    kept = [(r, f) for r, f in located if not any(s.matches(f) and _covers(s, f) for s in suppressions)]
    unused: list[Finding] = _misspelt(suppressions)
    if options.report_unused_suppressions:
        used = {id(s) for _, f in located for s in suppressions if s.matches(f) and _covers(s, f)}
        unused += unused_suppressions(suppressions, used, rules)
    return kept, unused


def unused_suppressions(suppressions: Sequence[Suppression], used: set[int],
                        rules: Sequence[type[Transform]]) -> list[Finding]:
    """NRN000 for each suppression (by ``id``) not in ``used`` that names an enabled rule (or
    every rule). A rule that only runs to claim the code it owns for the catch-all (an ignored
    rule, :func:`neuronize.decision.claims.is_claimer`) is not enabled."""
    enabled = {r.id for r in rules if not is_claimer(r)} | {r.name for r in rules if not is_claimer(r)}
    found = []
    for s in suppressions:
        relevant = s.codes is None or any(c.upper() in enabled or c in enabled for c in s.codes)
        if id(s) not in used and relevant:
            what = "every rule" if s.codes is None else ", ".join(sorted(s.codes))
            found.append(Finding(s.line, 1, *UNUSED_SUPPRESSION, Safety.REPORT_ONLY,
                                 f"unused suppression ({what}): nothing is reported here any more",
                                 False, s.line, 1))
    return found


def _misspelt(suppressions: Sequence[Suppression]) -> list[Finding]:
    """A suppression naming no rule is reported whatever the options: its typo silences nothing."""
    from neuronize.registry import all_rules

    ids = frozenset({r.id for r in all_rules()} | {UNUSED_SUPPRESSION[0]})
    names = frozenset({r.name for r in all_rules()} | {UNUSED_SUPPRESSION[1]})
    found = []
    for s in suppressions:
        for code, close in unknown_codes(s, ids, names):
            hint = f" (did you mean {close}?)" if close else " (see `neuronize rules`)"
            found.append(Finding(s.line, s.column, *UNUSED_SUPPRESSION, Safety.REPORT_ONLY,
                                 f"unknown rule `{code}` in a suppression: it silences nothing{hint}",
                                 False, s.line, s.column))
    return found


# -- step 6: import safety ---------------------------------------------------------------------
def _import_safe(located: Located[R], tree: Tree, imported: bool = False) -> Located[R]:
    """Fixes that would make the module fail to import on a host without Neuron become findings
    (:mod:`neuronize.analysis.import_safety`), whichever rule proposed them. ``imported``: another
    file of the run imports the module, so its top level runs there too, even where it is a script."""
    # a script's top level is the program; its defaults still run at start
    script = is_script(tree.module) and not imported
    lazy = lazy_annotations(tree.module)
    tests = neuron_tests(tree.module)  # the module's own `on_neuron()`: a call of it is the test
    optional = imports_torch_optionally(tree.module)
    torch_at = torch_imported_at(tree.module)
    out: Located[R] = []
    for pair in located:
        why = hazard(pair[0], tree.parents, lazy, defaults_only=script, tests=tests,
                     optional_torch=optional) if pair[0].fixable else None
        if why is None and runs_before_torch(pair[0], tree.module, tree.parents, lazy, torch_at):
            pair = _changed(pair, hold=True, note=(
                "import-safety", "not applied: it runs above the module's `import torch`, and the test for "
                                 "Neuron it writes needs torch; move the value below that import by hand"))
        elif why is not None:
            host = "torch" if why == OPTIONAL_TORCH else "Neuron"
            pair = _changed(pair, hold=True, note=(
                "import-safety", f"not applied, import safety: {why} would run at import; the module would no "
                                 f"longer import on a host without {host}"))
        out.append(pair)
    return out


# -- step 7: edit groups -----------------------------------------------------------------------
def _settle_groups(located: Located[R], held: dict[str, str], only: set[str] | None = None,
                   unsafe: dict[str, str] | None = None) -> Located[R]:
    """Edit groups (``group``, one per name in a file): each member takes the weakest safety of the
    group; when a member has no fix, or was suppressed (``held``: the group, and why if known), no
    fix of the group is applied. ``unsafe``: groups as weak as an unsafe edit they need in another
    file, and why.
    Findings name their group, so review treats it as one decision. ``only``: settle these groups
    (the others are settled already)."""
    unsafe = unsafe or {}
    weakest: dict[str, Safety] = {}
    members: dict[str, int] = {}
    waits: dict[str, str] = {}  # a group held back -> the member without a fix it waits for
    for r, f in located:
        if r.group is not None and (only is None or r.group in only):
            own = r.safety if r.fixable and r.group not in held else Safety.REPORT_ONLY
            floor = Safety.UNSAFE if r.group in unsafe else Safety.SAFE
            weakest[r.group] = max(weakest.get(r.group, floor), own, key=_WEAKNESS.index)
            members[r.group] = members.get(r.group, 0) + 1
            if not r.fixable and r.group not in waits:
                shown = f" (`{r.subject}`)" if r.subject is not None and len(r.subject) <= 60 else ""
                waits[r.group] = f"it waits for {r.rule.id} at line {f.line}{shown}, which is not fixed here"
    settled: Located[R] = []
    for pair in located:
        r = pair[0]
        if r.group not in members or (members[r.group] == 1 and r.group not in held and r.group not in unsafe):
            settled.append(pair)  # a group of one edit is that edit: nothing to say about it
            continue
        group = weakest[r.group]
        if not r.fixable:
            pair = _changed(pair, note=("group", f"edit group `{r.group}`"))
        elif group is Safety.REPORT_ONLY:
            why = waits.get(r.group) or held.get(r.group) or "another edit of the group cannot be made"
            pair = _changed(pair, hold=True, note=("group", f"edit group `{r.group}`: not applied, {why}"))
        elif group is not r.safety:
            like = (f"like the edit it needs in another file: {unsafe[r.group]}" if r.group in unsafe
                    and group is Safety.UNSAFE else "like its weakest edit")
            pair = _changed(pair, safety=group, note=("group", f"edit group `{r.group}`: {group}, {like}"))
        else:
            pair = _changed(pair, note=("group", f"edit group `{r.group}`"))
        settled.append((pair[0], dataclasses.replace(pair[1], group=r.group)))
    return settled


# -- step 8: guards ----------------------------------------------------------------------------
def _guards_follow_bodies(located: Located[R], parents: Parents) -> Located[R]:
    """An edit to the test of an ``if`` (or of a conditional expression) is as safe as the weakest
    fix in its body (or naming it as its ``guard``: a fix of the whole statement around a call in
    its first arm), and not made when the body keeps code a rule reports: a guard rewritten for
    Neuron around a body left for CUDA would switch that body on where it cannot run, or off where
    it used to run (a safe-only run that migrates ``if torch.cuda.is_available():`` but keeps its
    unsafe body; ``torch.cuda.memory_reserved() if torch.cuda.is_available() else 0``)."""
    guards: dict[int, cst.If | cst.IfExp] = {}
    for r, _ in located:
        if r.fixable:
            guard = _guard_of(r.node, parents)
            if guard is not None:
                guards[id(r)] = guard
    if not guards:
        return located
    body_safety: dict[int, Safety] = {}
    for tested in {id(g): g for g in guards.values()}.values():
        weakest = Safety.SAFE
        body, past = tested.body, _code_after(tested, parents)
        for r, _ in located:
            # code past an early exit runs on Neuron once the exit lets Neuron through: kept code
            # that is harmless there does not hold the exit back (around a body, it leaves no edit to make)
            is_past = any(_inside(r.node, part, parents) for part in past)
            names_it = getattr(r, "guard", None) is tested and not _inside(r.node, tested.test, parents)
            if is_past or names_it or _inside(r.node, body, parents):
                own = r.safety if r.fixable else Safety.SAFE if is_past and r.harmless else Safety.REPORT_ONLY
                weakest = max(weakest, own, key=_WEAKNESS.index)
        body_safety[id(tested)] = weakest
    copied = {id(r.guard) for r, _ in located if r.fixable and _copies_guard(r, parents)}
    out: Located[R] = []
    for pair in located:
        guard = guards.get(id(pair[0]))
        weakest = body_safety[id(guard)] if guard is not None else Safety.SAFE
        if guard is not None and id(guard) in copied:
            out.append(_changed(pair, hold=True, note=(
                "guard", "not applied: the fix of its statement gives Neuron a copy without this test, which stays "
                         "CUDA's")))
        elif guard is None or _WEAKNESS.index(weakest) <= _WEAKNESS.index(pair[0].safety):
            out.append(pair)
        elif weakest is Safety.REPORT_ONLY:
            out.append(_changed(pair, hold=True, note=(
                "guard", "not applied: the guarded code keeps code reported for CUDA; a guard and its body "
                         "move together")))
        else:
            out.append(_changed(pair, safety=weakest, note=("guard", f"{weakest}, like the edits of its guarded code")))
    return out


#: the sections of the rules whose edits run where the tensors are: placements, and autocast device
#: types and compile backends (:func:`_regions_hold_moves`, :func:`_chains_hold_what_follows`)
_PLACING = ("device", "precision", "compile")


def _regions_hold_moves(located: Located[R], parents: Parents, device: str) -> Located[R]:
    """The device edits one region of code makes (a function, or the branch of an ``if``/``else``
    in it, where the tensors they place meet) wait for what the region holds:
    - a process group moved to the target's ``device`` (outright or host-aware): its processes and
      their tensors move together (a ``"neuron"`` process group beside a model kept on ``"cuda"``,
      or the other way round, runs on no host); the device edits of the file's functions that
      create none join it too (the training loop beside the ``__main__`` block that creates it);
    - a CUDA device string the catch-all reports (no rule migrates it): moved without it, the
      code's tensors and what it hands on sit on two devices; at a script's module level it holds
      the whole file, and elsewhere it joins a process group moved outright (a ``"neuron"`` group
      beside it breaks the CUDA box; a host-aware one keeps every host without it);
    - an unsafe placement (a GPU index dropped): a safe-only run moves none of its neighbours;
    - a CUDA call kept there that raises without CUDA (``torch.cuda.current_device()``,
      ``torch.cuda.set_device(0)`` run first), or a finding of a rule whose code does
      (``stops_without_cuda``: ``subprocess.run(["nvidia-smi"])``): on Neuron the region stops
      there, moved or not.
    The device edits are placements, autocast device types and compile backends (those run where
    the tensors are).
    What a constructor (``__init__``) holds, its class holds: the object is not made without it.
    The edits of a region join the edit group of what holds it, settled by :func:`_settle_groups`:
    they wait for their weakest member. An edit already in a group keeps it."""
    creating = [r for r, _ in located if r.group is not None and r.fixable and r.rule.section == "distributed"
                and _writes_device(r, device)]
    left = [r for r, _ in located if r.rule.catch_all and not r.fixable and _names_cuda_device(r.node)
            and not isinstance(parents.get(id(r.node)), _ENTRIES)]
    holds = [r for r, _ in located if r.group is None and r.fixable and r.safety is not Safety.SAFE
             and _places_on_cuda(r.node) and r.rule.section == "device" and _writes_device(r, device)]
    raising = [r for r, _ in located if (not r.fixable or r.safety is not Safety.SAFE)
               and (r.rule.stops_without_cuda and not r.harmless or _raises_without_cuda(r.node, parents))]
    if not creating and not left and not holds and not raising:
        return located
    moves = [r for r, _ in located
             if r.group is None and r.fixable and r.rule.section in _PLACING and _writes_device(r, device)]
    holds += [r for r in raising if _holds_any(_region_of(r.node, parents), moves, parents)]

    def holding(region: cst.CSTNode | None) -> str:
        """The group a region's edits join: a process group created in it (``if distributed:``
        within the function holding it), else the region's own."""
        return min((r.group for r in creating if region is None or _inside(r.node, region, parents)),
                   default=_devices_in(region, parents))

    regions: dict[int, str] = {}  # id of a region (of None: the module level) -> the group holding it
    for r in creating:
        regions.setdefault(id(_region_of(r.node, parents)), r.group)
    script_level = None  # a script's own flow keeps a CUDA device: what its functions make meets it
    for r in left:
        region = _region_of(r.node, parents)
        if region is None and moves and is_script(_module_of(r.node, parents)):
            script_level = regions.setdefault(id(None), holding(region))
        elif region is not None and _holds_any(region, moves, parents):
            regions.setdefault(id(region), holding(region))
    # a GPU index in a function that creates a process group is the rank's: it moves with the group
    groups_in = {id(_function_of(r.node, parents)): r.group for r in creating}
    for r in holds:
        region = _region_of(r.node, parents)
        regions.setdefault(id(region), r.group or groups_in.get(id(_function_of(r.node, parents))) or holding(region))
    made_at_module_level = _makers_join(regions, moves, parents)
    # a group created in a branch (``if distributed:``) leaves the program a path without it
    process_group = min((r.group for r in creating if not _branched(_region_of(r.node, parents))), default=None)
    outright = min((r.group for r in creating if _moves_outright(r, device)), default=None)
    moved = {id(r) for r in moves}
    leftover = {id(r) for r in left}
    holders = {id(r) for r in holds}
    out: Located[R] = []
    for r, f in located:
        if r.group is None and (id(r) in moved or id(r) in leftover or id(r) in holders):
            name = next((regions[id(a)] for a in ancestors(r.node, parents) if id(a) in regions),
                        regions.get(id(None)) or script_level
                        or (made_at_module_level if _region_of(r.node, parents) is None else None))
            if name is None and id(r) in moved and id(_function_of(r.node, parents)) not in groups_in:
                name = process_group
            elif name is None and id(r) in leftover:
                name = outright
            if name is not None:
                r = dataclasses.replace(r, group=name)
        out.append((r, f))
    return out


def _makers_join(regions: dict[int, str], moves: Sequence[Any], parents: Parents) -> str | None:
    """A region that makes an object of a class of the module whose device edits wait
    (``self.stream = torch.cuda.Stream(device=device)`` in its constructor) meets what the object
    keeps, or stops where its constructor does: the region's device edits join the class's group,
    and so do those of the regions that make its objects in turn (a class's default device handed
    to such a class). Those regions are added to ``regions``. The group the module's own statements
    join (the ``__main__`` block that builds one) is returned apart: ``regions`` reads the module
    level as the whole module."""
    if not moves:
        return None
    module = _module_of(moves[0].node, parents)
    classes = {s.name.value: s for s in module.body if isinstance(s, cst.ClassDef)}
    unheld = {id(region): region for r in moves if id(region := _region_of(r.node, parents)) not in regions}
    module_level: str | None = None
    while True:
        held = {name: regions[id(c)] for name, c in classes.items() if id(c) in regions}
        joining = {key: held[made] for key, region in unheld.items()
                   if key not in regions and (region is not None or module_level is None)
                   and (made := _makes_one_of(region if region is not None else module, held)) is not None}
        if not joining:
            return module_level
        module_level = joining.pop(id(None), module_level)
        regions.update(joining)


def _makes_one_of(region: cst.CSTNode, classes: dict[str, str]) -> str | None:
    """The first of ``classes`` (by name) whose object the code of ``region`` makes (``Llama(...)``):
    a class's own methods, a function's body, else the module's own statements."""
    if not classes:
        return None
    pending = list(region.children) if isinstance(region, cst.Module) else [region]
    while pending:
        node = pending.pop()
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value in classes:
            return node.func.value
        if not (isinstance(region, cst.Module) and isinstance(node, (cst.FunctionDef, cst.ClassDef))):
            pending.extend(node.children)
    return None


def _chains_hold_what_follows(settled: Located[R], parents: Parents, device: str,
                              accepted: Callable[[Any], bool]) -> tuple[dict[int, str], dict[str, str]]:
    """The device edits after an ``if``/``elif``/``else`` chain every branch of which keeps CUDA
    (a device edit there is not made, or a CUDA call kept there raises without CUDA: the model
    ``if use_pp: load(device="cuda:0") else: load(device=f"cuda:{rank}")`` places) wait with it:
    the tensors placed after the chain meet what its branches placed, which stays on CUDA on every
    path. Returns the index (in ``settled``) of each such edit with the group it joins (its own,
    else one named after the chain), and the groups that wait with why."""
    pins = [(r, f) for r, f in settled if not accepted(r) and _keeps_cuda(r, parents, device)]
    pinned: dict[int, tuple[cst.If, set[int]]] = {}  # id of a chain's head -> (head, ids of its branches pinned)
    for r, _ in pins:
        for a in ancestors(r.node, parents):
            owner = parents.get(id(a))
            head = _chain_of(owner, parents) if isinstance(a, cst.BaseSuite) and _branch_of_choice(owner) else None
            if head is not None:
                pinned.setdefault(id(head), (head, set()))[1].add(id(a))
    waiting = [head for head, branches in pinned.values() if _every_branch(head, branches)]
    joined: dict[int, str] = {}
    why: dict[str, str] = {}
    for head in waiting:
        line = next(f.line for r, f in pins if _inside(r.node, head, parents))
        test = one_line(head.test)
        for i, (r, _) in enumerate(settled):
            if (i not in joined and accepted(r) and r.rule.section in _PLACING
                    and _writes_device(r, device) and _follows(r.node, head, parents)):
                joined[i] = r.group or f"devices after the choice on {test}"
                why[joined[i]] = f"every branch of `if {test}` above keeps CUDA (line {line}), and what it places meets what they placed"
    return joined, why


def _keeps_cuda(report: Any, parents: Parents, device: str) -> bool:
    """A report not applied keeps CUDA where it is: a device edit, a CUDA placement reported, a
    CUDA call that raises without CUDA."""
    return ((report.rule.section in ("device", "distributed") and (
        _writes_device(report, device) or _places_on_cuda(report.node)))
        or report.rule.stops_without_cuda and not report.harmless or _raises_without_cuda(report.node, parents))


def _chain_of(owner: cst.CSTNode | None, parents: Parents) -> cst.If | None:
    """The first ``if`` of the ``if``/``elif``/``else`` chain whose branch ``owner`` (an ``if`` or
    an ``else``) is, if it is one (not the ``else`` of a loop or a ``try``)."""
    branch = parents.get(id(owner)) if isinstance(owner, cst.Else) else owner
    return chain_head(branch, parents) if isinstance(branch, cst.If) else None


def _every_branch(head: cst.If, branches: set[int]) -> bool:
    """Every branch of the chain ``head`` starts is in ``branches`` (ids of bodies), and it ends
    in an ``else``: no path through it misses one."""
    *_, last = chain_links(head)
    return isinstance(last.orelse, cst.Else) and all(id(body) in branches for body in _branch_bodies(head))


def _follows(node: cst.CSTNode, head: cst.If, parents: Parents) -> bool:
    """``node`` is in a statement of the block of ``head`` that comes after it."""
    block = parents.get(id(head))
    statement = next((a for a in ancestors(node, parents) if parents.get(id(a)) is block), None)
    order = {id(s): i for i, s in enumerate(getattr(block, "body", ()))}
    return statement is not None and order[id(statement)] > order[id(head)]


#: the nodes whose value is an entry of a table or a list (``device_list = ["cuda", "cpu"]``): a
#: CUDA string there is a choice offered, not a placement the code's tensors meet
_ENTRIES = (cst.Element, cst.ListComp, cst.SetComp, cst.GeneratorExp)


def _branch_of_choice(node: cst.CSTNode | None) -> bool:
    """``node`` (the owner of a block) is an ``if`` or ``else`` that chooses a path: not the
    script's ``if __name__ == "__main__":``, whose body is the program itself."""
    return isinstance(node, cst.Else) or (isinstance(node, cst.If) and not is_main_test(node.test))


def _branched(region: cst.CSTNode | None) -> bool:
    return isinstance(region, (cst.BaseSuite, cst.IfExp))


def _region_of(node: cst.CSTNode, parents: Parents) -> cst.CSTNode | None:
    """The code where the tensors ``node`` places meet the others': the branch of an ``if`` (or
    its ``else``) or the conditional expression it is in, else its function (its class, for a
    constructor: the object's methods meet what it made), else None (the module level)."""
    child = node
    for a in ancestors(node, parents):
        if isinstance(a, cst.FunctionDef):
            owner = parents.get(id(parents.get(id(a))))
            return owner if a.name.value == "__init__" and isinstance(owner, cst.ClassDef) else a
        if (isinstance(a, cst.IfExp) and child is not a.test) or (
                isinstance(a, cst.BaseSuite) and _branch_of_choice(parents.get(id(a)))):
            return a
        child = a
    return None


def _holds_any(region: cst.CSTNode | None, moves: Sequence[Any], parents: Parents) -> bool:
    """A device edit of ``moves`` lies in ``region`` (None: the module, which holds them all)."""
    return bool(moves) if region is None else any(_inside(m.node, region, parents) for m in moves)


#: CUDA calls that raise on a host without CUDA (the others answer, or do nothing, there)
_RAISING = frozenset({
    "torch.cuda.current_device", "torch.cuda.set_device", "torch.cuda.get_device_properties",
    "torch.cuda.get_device_name", "torch.cuda.get_device_capability", "torch.cuda.synchronize",
    "torch.cuda.Event", "torch.cuda.Stream", "torch.cuda.current_stream", "torch.cuda.mem_get_info",
})


def _raises_without_cuda(node: cst.CSTNode, parents: Parents) -> bool:
    """``node`` is a call of a CUDA function that raises without CUDA, the function it calls (a
    reference that is not called raises nothing), or the statement that is the call."""
    if isinstance(node, cst.SimpleStatementLine) and len(node.body) == 1 and isinstance(node.body[0], cst.Expr):
        node = node.body[0].value
    if isinstance(node, cst.Call):
        return dotted_name(node.func) in _RAISING
    call = parents.get(id(node))
    return isinstance(call, cst.Call) and call.func is node and dotted_name(node) in _RAISING


def _devices_in(region: cst.CSTNode | None, parents: Parents) -> str:
    """The name of the edit group of the device edits of a region (:func:`_region_of`)."""
    if isinstance(region, cst.FunctionDef):
        return f"devices in {region.name.value}()"
    if isinstance(region, cst.ClassDef):
        return f"devices of class {region.name.value}"
    if region is None:
        return "devices in module level"
    if isinstance(region, cst.IfExp):
        return f"devices chosen on {one_line(region.test)}"
    branch = parents[id(region)]
    test = next(a.test for a in ancestors(region, parents) if isinstance(a, cst.If))
    if isinstance(branch, cst.Else):
        return f"devices in the `else` of `if {one_line(test)}`"
    return f"devices under `if {one_line(test)}`"


#: the keywords by which a call that wraps a model names the devices it runs on
_DEVICE_IDS = frozenset({"device_ids", "output_device", "device_id"})


def _one_decision_joins(located: Located[R], parents: Parents) -> Located[R]:
    """The findings of one decision written in one expression are one edit group, applied whole or
    not at all (an edit already in a group keeps it):
    - the arguments of a call that wraps a model and names its devices
      (``DistributedDataParallel(model.cuda(), device_ids=[torch.cuda.current_device()])``, and the
      wrappers of other libraries that take the same keywords): the model's placement moves with
      the devices it is given, or neither does; moved alone, Neuron would still ask CUDA for the
      device ids;
    - the arms of a conditional expression that chooses between devices (``torch.device("cuda") if
      rank is None else torch.device(f"cuda:{rank}")``): one arm moved alone sends the other case
      of the same choice to CUDA on Neuron;
    - the stream a ``with torch.cuda.stream(s):`` enters and the work done on it (a prefetcher's
      ``batch.cuda(non_blocking=True)``): the work moves with its stream, or stays CUDA's with it."""
    containers: dict[int, tuple[str, list[int]]] = {}
    for i, (r, _) in enumerate(located):
        found = _stream_block_around(r.node, parents) or _decision_around(r.node, parents)
        if found is not None:
            containers.setdefault(id(found[0]), (found[1], []))[1].append(i)
    joined = {i: name for name, members in containers.values()
              if len(members) > 1 and any(located[i][0].fixable for i in members)
              for i in members if located[i][0].group is None}
    if not joined:
        return located
    return [(dataclasses.replace(r, group=joined[i]), f) if i in joined else (r, f) for i, (r, f) in enumerate(located)]


def _stream_block_around(node: cst.CSTNode, parents: Parents) -> tuple[cst.CSTNode, str] | None:
    """The innermost ``with`` that enters a CUDA stream (``torch.cuda.stream(s)``) around ``node``,
    in its items or its body, and the name of its edit group."""
    for parent in ancestors(node, parents):
        if isinstance(parent, cst.With):
            entered = next((item.item for item in parent.items if isinstance(item.item, cst.Call)
                            and (dotted_name(item.item.func) or "").endswith("cuda.stream")), None)
            if entered is not None:
                return parent, f"work on the CUDA stream of `with {one_line(entered)}`"
        if isinstance(parent, (cst.FunctionDef, cst.ClassDef)):
            return None
    return None


def _decision_around(node: cst.CSTNode, parents: Parents) -> tuple[cst.CSTNode, str] | None:
    """The expression of one decision in which ``node`` sits, within its statement, and the name of
    its edit group: a call with a device-ids keyword (:data:`_DEVICE_IDS`) whose argument holds
    it, or a conditional expression whose arm holds it, whichever is nearer."""
    child = node
    for parent in ancestors(node, parents):
        if isinstance(parent, cst.Call) and isinstance(child, cst.Arg) and any(
                a.keyword is not None and a.keyword.value in _DEVICE_IDS for a in parent.args):
            return parent, f"devices of {dotted_name(parent.func) or 'a wrapper'}(...)"
        if isinstance(parent, cst.IfExp) and child is not parent.test:
            test = one_line(parent.test)
            return parent, f"devices chosen on {test if len(test) <= 40 else test[:37] + '...'}"
        if isinstance(parent, (cst.BaseSmallStatement, cst.BaseCompoundStatement)):
            return None
        child = parent
    return None


#: the pins that hold every device edit of their file, wherever they are made: the program stops
#: there before any of its code runs on Neuron (a set-up of NCCL processes the script calls first)
PROCESS_SET_UP = "devices of a program whose process set-up stays NCCL"
#: a choice kept for CUDA that makes a value on CUDA, else on the CPU (``if torch.cuda.is_available():
#: eps = torch.cuda.FloatTensor(n).normal_() else: eps = torch.FloatTensor(n).normal_()``): on Neuron
#: it makes the CPU's, which every Neuron placement of the program would then meet
DATA_CHOICE = "devices of a program whose data choice stays CUDA's"
#: a model wrapped in ``DataParallel`` on every host: on Neuron the wrapper scatters its inputs
#: over the Neuron devices with CUDA's collectives, so the program's placements there gain nothing
WRAPPED_MODEL = "devices of a program whose model DataParallel wraps"
#: a program that stops where CUDA is missing (``if not torch.cuda.is_available(): raise`` in its
#: ``main()`` or at the module level): no code of the file reaches Neuron before that check lets it
REQUIRED_CUDA = "devices of a program that stops where CUDA is missing"
#: ``torch.set_default_tensor_type("torch.cuda.FloatTensor")``: every tensor the program makes
#: without a device is CUDA's, which every Neuron placement of the program would then meet
DEFAULT_TYPE = "devices of a program whose default tensor type is CUDA's"
#: a pool of worker processes whose task places work on a device: on Neuron the first worker's
#: runtime takes the NeuronCores, and the others find none free
WORKER_POOL = "devices of a program whose worker processes each place work on the device"
#: the default process group on gloo beside DistributedDataParallel: DDP over gloo raises on a model
#: moved to Neuron, so the program's placements move only with a Neuron group
GLOO_GROUP = "devices of a program whose DDP process group is gloo"
#: a random generator made on a device the program chooses (``torch.Generator(device=device)``): a
#: generator on the Neuron device was reported unavailable, so the placements of the file (where
#: the device it is given is chosen, often at module level beside a function that seeds) move only
#: with the edit that gives it the CPU there
GENERATOR = "devices beside a random generator made on their device"
#: a Hugging Face ``Trainer`` of a transformers without a Neuron device (before 5.0): it moves the
#: model to ``TrainingArguments.device``, the CPU on Trainium, which the Neuron placements of the
#: program would then meet
TRAINER_ON_CPU = "devices beside a Trainer whose transformers has no Neuron device"
PROGRAM_PINS = frozenset({PROCESS_SET_UP, DATA_CHOICE, WRAPPED_MODEL, REQUIRED_CUDA, DEFAULT_TYPE, WORKER_POOL,
                          GLOO_GROUP, GENERATOR, TRAINER_ON_CPU})
#: the pins that hold only the device edits of the block they are in: an assert that CUDA is
#: available in one branch (``if engine == "ddp": assert torch.cuda.is_available()``) stops
#: Neuron in that branch, not in the rest of the function
BRANCH_ASSERT = "devices past an assert in a branch that CUDA is available"
BLOCK_PINS = frozenset({BRANCH_ASSERT})
#: the pins that hold the device edits of the class of the method they are in: a legacy CUDA tensor
#: type (``isinstance(x, torch.cuda.FloatTensor)``, ``torch.cuda.LongTensor(...)``) makes or expects
#: CUDA tensors that meet what the class's other methods place (its model, its batches)
LEGACY_TYPES = "devices beside legacy CUDA tensor types"
CLASS_PINS = frozenset({LEGACY_TYPES})


#: the edit group of the device edits of a file another program of the run pins (Options.program_pin)
SHARED_WITH_PINNED = "devices of modules shared with programs whose placements stay"
#: the edit group of the device edits of a file that hands its device choice to a function of
#: another module that makes a random generator on it (Options.generator_partner)
GENERATOR_ELSEWHERE = "devices handed to a random generator made in another module"


class Elsewhere(NamedTuple):
    """An edit group that holds every device edit of a file because of code outside it."""

    group: str
    why: str
    #: True: the edits wait (not applied); False: they are made with ``--unsafe-fixes`` only, like
    #: the unsafe edit they need in another file
    held: bool = True


def _pinned_elsewhere(options: Options) -> Elsewhere | None:
    """The group that holds every device edit of the file because of code outside it, and why:
    another cell of the notebook, another program of the run that shares its modules (the edits
    wait), or a random generator another module makes on the file's device (they are unsafe)."""
    if options.notebook_pins is not None:
        return Elsewhere(options.notebook_pins,
                         "it waits for the loading in another cell of the notebook, which is not fixed here")
    if options.program_pin is not None:
        return Elsewhere(SHARED_WITH_PINNED, options.program_pin)
    if options.generator_partner is not None:
        return Elsewhere(GENERATOR_ELSEWHERE, options.generator_partner, held=False)
    return None


def _pins_hold_devices(located: Located[R], parents: Parents, device: str,
                       elsewhere: Elsewhere | None = None) -> tuple[Located[R], dict[str, str]]:
    """A report that pins a placement to CUDA with no edit to move it (``Report.pins``: a model
    placed on GPUs by its loader, a legacy CUDA tensor type) and the device edits of its function
    (of the whole file, where it is at module level: the module's functions and later cells use
    it) that write the target's ``device``, outright or host-aware (a placement, an autocast's
    device, a compile backend, a process-group backend, a trainer's Neuron precision; not a runtime
    call made host-neutral), as
    one edit group named by the pin, settled by :func:`_settle_groups`: the edits wait for it. A pin
    in :data:`PROGRAM_PINS` holds the whole file, and a fixable pin (an assert a fix widens) takes
    its edits with it. Made alone, they put tensors on Neuron beside what stays on CUDA (or on the
    CPU, where a GPU planner finds no GPU), and moved outright they take the CUDA box's tensors off
    the model they meet. ``elsewhere``: the group (and why) of a pin outside the file, which holds
    every device edit of this one (:func:`_pinned_elsewhere`). An edit already in a
    group keeps it, and that group is returned, with why, to be held back whole."""
    pins = [r for r, _ in located if r.pins is not None]  # a fixable one: the edits are made with it
    if not pins and elsewhere is None:
        return located, {}
    names: dict[int, str] = {id(None): elsewhere.group} if elsewhere is not None else {}  # id(None): module level
    pin_scopes = {id(r): None if r.pins in PROGRAM_PINS else _block_of(r.node, parents) if r.pins in BLOCK_PINS
                  else _one_way_of_placing(r, located, parents, device) or (
                      _class_of_method(r.node, parents) if r.pins in CLASS_PINS else _held_scope(r.node, parents))
                  for r in pins}
    for r in pins:
        scope = pin_scopes[id(r)]
        function = _scope_of(r.node, parents) if isinstance(scope, cst.BaseSuite) else scope
        held_as = names.setdefault(id(scope), f"{r.pins} in {function.name.value}()" if isinstance(function, cst.FunctionDef)
                                else f"{r.pins} in class {function.name.value}" if isinstance(function, cst.ClassDef)
                                else r.pins)
        if isinstance(scope, cst.ClassDef):
            names.update((id(sub), held_as) for sub in _subclasses(scope, parents))
    pinning = {r.rule for r in pins}  # their own edits migrate the other values: the way forward, not held
    # a placement: a device edit, or a device value a runtime check chooses by host (`x.to("neuron") if <Neuron>
    # else x.cuda() if torch.cuda.is_available() else x`), which is never a pin's way forward
    edits = [(r, name) for r, _ in located if r.fixable and _places(r, device) and not _builds_own_model(r.node, parents)
             and (r.rule.section in ("review", "precision", "compile", "distributed", "hf")
                  or r.rule.section == "device" and r.rule not in pinning)
             and (name := _pin_around(r.node, names, parents)) is not None]
    if not edits:
        return located, {}
    groups = {id(r): name for r, name in edits if r.group is None}
    groups.update((id(r), names[id(pin_scopes[id(r)])]) for r in pins if r.group is None)
    # a group an edit is in already: a fixable pin takes it whole (one decision with the pin), where
    # no other pin group claims it too; else it waits for the pin
    fixed = {names[id(pin_scopes[id(r)])] for r in pins if r.fixable}
    claims: dict[str, dict[str, None]] = {}  # group -> the pin groups of its edits, in order (a set's is not stable)
    for r, name in edits:
        if r.group is not None:
            claims.setdefault(r.group, {})[name] = None
    taken = {group: next(iter(by)) for group, by in claims.items() if len(by) == 1 and by.keys() <= fixed}
    held = {group: f"one of its edits waits with edit group `{list(by)[-1]}`" for group, by in claims.items()
            if group not in taken}
    if elsewhere is not None and elsewhere.held:
        held[elsewhere.group] = elsewhere.why
    return [(dataclasses.replace(r, group=groups.get(id(r)) or taken[r.group]) if id(r) in groups or r.group in taken
             else r, f) for r, f in located], held


def _one_way_of_placing(pin: Any, located: Located[R], parents: Parents, device: str) -> cst.BaseSuite | None:
    """The branch of an ``if`` chain that holds ``pin``, where another branch places the model
    itself, with an edit or on a device an edit chose (``if num_gpus > 1:`` a loader spreads it over
    the GPUs, ``else:`` ``model = ....half().cuda()``, or ``model.to(device=device)`` with a device
    option whose default an edit moves): the program chooses between the loader's placement and its
    own, so the pin holds its branch only, and the edits elsewhere serve the other way. None where
    an edit outside that branch moves its value outright: the CUDA box's tensors would leave the
    loader's model in the pin's way."""
    branch = _block_of(pin.node, parents)
    head = _chain_of(parents.get(id(branch)), parents)
    if not isinstance(branch, cst.BaseSuite) or head is None or _scope_of(head, parents) is not _scope_of(pin.node, parents):
        return None
    placing = [r for r, _ in located if r.fixable and r.pins is None and _places(r, device)]
    pinned = [r.node for r, _ in located if r.pins is not None]
    own_ways = [body for body in _branch_bodies(head) if body is not branch
                and (any(_inside(r.node, body, parents) for r in placing) or placing and _moves_itself(body))
                and not any(_inside(node, body, parents) for node in pinned)]
    outside = [r for r in placing if not _inside(r.node, branch, parents)]
    if not own_ways or any(_moves_outright(r, device) for r in outside):
        return None
    return branch


def _moves_itself(body: cst.BaseSuite) -> bool:
    """``body`` moves a value onto a device it reads by a name that says so (``model =
    model.to(device=device)``, ``.to(args.device)``), not a literal nor a dtype: the device it
    reads is what an edit elsewhere chose."""
    return any(isinstance(n, cst.Call) and isinstance(n.func, cst.Attribute) and n.func.attr.value == "to"
               and any(a.keyword is not None and a.keyword.value == "device"
                       or "device" in (dotted_name(a.value) or "").rpartition(".")[2].lower() for a in n.args)
               for n in iter_syntax(body))


def _branch_bodies(head: cst.If) -> list[cst.BaseSuite]:
    """The bodies of the branches of the ``if``/``elif``/``else`` chain ``head`` starts."""
    links = list(chain_links(head))
    tail = links[-1].orelse
    return [*(link.body for link in links), *((tail.body,) if isinstance(tail, cst.Else) else ())]


def _copies_guard(report: Any, parents: Parents) -> bool:
    """``report`` fixes a whole statement around the guard it names (``Report.guard``): its Neuron
    copy of the statement drops that guard's test, which stays CUDA's in the original."""
    guard = getattr(report, "guard", None)
    return guard is not None and guard is not report.node and _inside(guard, report.node, parents)


def _pin_around(node: cst.CSTNode, names: dict[int, str], parents: Parents) -> str | None:
    """The pin group (``names``: by the id of the function or block it is in, ``id(None)`` for the
    module level) of the innermost scope around ``node`` that has one: a function nested in the
    one that loads the model (a closure that uses it) waits with it."""
    return next((names[id(a)] for a in ancestors(node, parents) if id(a) in names), names.get(id(None)))


def _held_scope(node: cst.CSTNode, parents: Parents) -> cst.CSTNode | None:
    """What a pin at ``node`` holds: the function around it; the class of that method where the
    pinned value is stored on the instance (``self.model = AutoModelForCausalLM.from_pretrained(...,
    device_map="auto")`` in ``__init__``), which the class's other methods then use; the whole file
    (None) where the function hands the value it stored to a function of the file (``model =
    ...from_pretrained(...)``, then ``evaluate(model, data)``), which places what meets it."""
    scope = _scope_of(node, parents)
    if not isinstance(scope, cst.FunctionDef):
        return scope
    assign = next((a for a in ancestors(node, parents) if isinstance(a, (cst.Assign, cst.BaseSuite))), None)
    if assign is None or _in_branch(assign, scope, parents):
        return scope  # one way of loading among others (`if autogptq: self.model = ...from_quantized(...)`)
    targets = [t.target for t in assign.targets] if isinstance(assign, cst.Assign) else []
    if any(isinstance(t, cst.Attribute) and isinstance(t.value, cst.Name) and t.value.value == "self" for t in targets):
        return _class_of_method(node, parents)
    stored = {t.value for t in targets if isinstance(t, cst.Name)}
    return None if stored and _hands_to_own_function(scope, stored, parents) else scope


def _class_of_method(node: cst.CSTNode, parents: Parents) -> cst.CSTNode | None:
    """The class whose method holds ``node``, else the function around it (None at module level)."""
    scope = _scope_of(node, parents)
    owner = next((a for a in ancestors(scope, parents) if isinstance(a, (cst.ClassDef, cst.FunctionDef))), None) \
        if scope is not None else None
    return owner if isinstance(owner, cst.ClassDef) else scope


def _subclasses(cls: cst.ClassDef, parents: Parents) -> list[cst.ClassDef]:
    """The classes of ``cls``'s module that name it as a base: they share its methods and state."""
    return [stmt for stmt in _module_of(cls, parents).body if isinstance(stmt, cst.ClassDef)
            and any(dotted_name(base.value) == cls.name.value for base in stmt.bases)]


def _in_branch(node: cst.CSTNode, scope: cst.FunctionDef, parents: Parents) -> bool:
    """``node`` runs only on some paths through ``scope``: under an ``if``, a loop or a ``try``."""
    return any(isinstance(a, (cst.If, cst.Else, cst.For, cst.While, cst.Try, cst.ExceptHandler))
               for a in itertools.takewhile(lambda a: a is not scope, ancestors(node, parents)))


def _hands_to_own_function(scope: cst.FunctionDef, names: set[str], parents: Parents) -> bool:
    """``scope`` calls a function its module defines at the top level with one of ``names`` as an
    argument (``evaluate(model, loader)``)."""
    defined = {stmt.name.value for stmt in _module_of(scope, parents).body if isinstance(stmt, cst.FunctionDef)}
    return any(isinstance(call, cst.Call) and isinstance(call.func, cst.Name) and call.func.value in defined
               and any(isinstance(a.value, cst.Name) and a.value.value in names for a in call.args)
               for call in iter_syntax(scope.body))


def _block_of(node: cst.CSTNode, parents: Parents) -> cst.CSTNode | None:
    """The indented block around ``node``."""
    return next((a for a in ancestors(node, parents) if isinstance(a, cst.IndentedBlock)), None)


def _places(report: Any, device: str) -> bool:
    """``report``'s fix places on the target's ``device`` or on Neuron, or on whichever
    accelerator the host has (``torch.accelerator.current_accelerator()``, the accelerator
    target's device)."""
    replacement = report.replacement
    if not isinstance(replacement, cst.CSTNode):
        return False
    # where a checkpoint loads (`map_location="cpu" if <Neuron> else None`) places nothing: what
    # it loads goes where `load_state_dict` or a `.to(...)` puts it, on whatever device the program reaches
    loads = {id(n) for arg in iter_syntax(replacement) if isinstance(arg, cst.Arg) and arg.keyword is not None
             and arg.keyword.value == "map_location" for n in iter_syntax(arg.value)}
    return any(id(n) not in loads and (
        (isinstance(n, cst.SimpleString) and n.evaluated_value in (device, "neuron"))
        or (isinstance(n, cst.Attribute) and n.attr.value == "current_accelerator")) for n in iter_syntax(replacement))


def _builds_own_model(node: cst.CSTNode, parents: Parents) -> bool:
    """``node`` is the ``device=`` of an object a library builds with its own model and places its
    own inputs for (``Reranker("name", device="cuda")``, ``SentenceTransformer.from_pretrained(...,
    device=...)``): a class, or a loader, outside torch. It meets no other model. A loader that
    quantizes it (``load_in_8bit=True``) builds it for the quantizer's kernels, which a pin holds."""
    arg = parents.get(id(node))
    if not (isinstance(arg, cst.Arg) and arg.keyword is not None and arg.keyword.value == "device"):
        return False
    call = parents.get(id(arg))
    if not isinstance(call, cst.Call):
        return False
    callee = (dotted_name(call.func) or "").split(".")
    quantized = any(a.keyword is not None and a.keyword.value in _QUANTIZING and not _is_off(a.value) for a in call.args)
    return callee[0] != "torch" and not quantized and (
        callee[-1][:1].isupper() or callee[-1] in ("from_pretrained", "pipeline"))


#: the arguments of a loader that quantize the model it builds (bitsandbytes, GPTQ, AWQ: CUDA kernels),
#: whose device is then the quantizer's
_QUANTIZING = frozenset({"load_in_8bit", "load_in_4bit", "quantization_config"})


def _is_off(value: cst.BaseExpression) -> bool:
    """``False``, ``None``, or a config that switches every quantization off
    (``BitsAndBytesConfig(load_in_4bit=False)``)."""
    if isinstance(value, cst.Call):
        loads = [a for a in value.args if a.keyword is not None and a.keyword.value.startswith("load_in_")]
        return bool(loads) and all(_is_off(a.value) for a in loads)
    return is_false_or_none(value)


def top_level_pin(located: Located[R], parents: Parents) -> str | None:
    """The group of a placement pinned at the module level of the source (``Report.pins`` outside
    any function): a notebook's other cells wait for it too."""
    return next((r.pins for r, _ in located if r.pins is not None and not r.fixable
                 and _scope_of(r.node, parents) is None), None)


def _writes_device(report: Any, device: str) -> bool:
    """``report``'s fix writes the target's ``device`` (``"neuron"``; the accelerator target's
    ``torch.accelerator.current_accelerator()``) as a value somewhere: a placement, a backend (the
    ``"neuron"`` an inline Neuron test compares with is no value)."""
    replacement = report.replacement
    if not isinstance(replacement, cst.CSTNode):
        return False
    tested = {id(n) for c in iter_syntax(replacement) if isinstance(c, cst.Comparison) for n in iter_syntax(c)}
    return any(id(n) not in tested and (
        (isinstance(n, cst.SimpleString) and n.evaluated_value == device)
        or (device == "accelerator" and isinstance(n, cst.Attribute) and n.attr.value == "current_accelerator"))
        for n in iter_syntax(replacement))


def _moves_outright(report: Any, device: str) -> bool:
    """``report``'s fix writes the target's ``device`` (``"neuron"``, ``"cpu"``) with no choice
    left for CUDA: no conditional expression in what it writes (a host-aware edit, ``"neuron" if
    <Neuron is here> else "cuda"``, keeps the CUDA box's device, so the string left beside it
    still matches there; a list of accepted devices that gains ``"neuron"`` keeps CUDA's entry)."""
    return _writes_device(report, device) and not isinstance(report.replacement, (cst.List, cst.Tuple, cst.Set)) \
        and not any(isinstance(n, cst.IfExp) for n in iter_syntax(report.replacement))


def _places_on_cuda(node: cst.CSTNode) -> bool:
    """``node`` places tensors on CUDA: a CUDA device string, ``torch.device(...)`` or ``.cuda(...)``."""
    if isinstance(node, cst.Call):
        return dotted_name(node.func) == "torch.device" or (
            isinstance(node.func, cst.Attribute) and node.func.attr.value == "cuda")
    return _names_cuda_device(node)


def _names_cuda_device(node: cst.CSTNode) -> bool:
    """``node`` is a CUDA device string (``"cuda"``, ``"cuda:0"``, ``f"cuda:{rank}"``)."""
    if isinstance(node, cst.SimpleString):
        value = node.evaluated_value
        return isinstance(value, str) and value.split(":")[0] == "cuda"
    if isinstance(node, cst.FormattedString) and node.parts:
        head = node.parts[0]
        return isinstance(head, cst.FormattedStringText) and head.value.split(":")[0] == "cuda"
    return False


def _same_tests_grouped(located: Located[R], parents: Parents) -> tuple[Located[R], set[str]]:
    """The edits to ``if`` statements and conditional expressions of one function (or the methods
    of one class) that test the same condition, as one edit group each (settled by :func:`_settle_groups`): code that checks
    ``torch.cuda.is_available()`` twice pairs its branches (a log format with a memory field built
    under the first, filled under the second); rewriting only one pairs a Neuron branch with a CUDA
    one, which fails on both hosts. Returns the findings and the names of the groups made (an edit
    already in a group of its own keeps it)."""
    guard_of = [_guard_of(r.node, parents) for r, _ in located]
    guards = {id(g): g for g in guard_of if g is not None}
    if len(guards) < 2:
        return located, set()
    names: dict[int, str] = {}
    for family in _families(list(guards.values()), parents):
        scope = _scope_of(family[0], parents)
        if any(_scope_of(guard, parents) is not scope for guard in family):
            scope = _method_owner(scope, parents)
        where = f"{scope.name.value}()" if isinstance(scope, cst.FunctionDef) else \
            f"class {scope.name.value}" if isinstance(scope, cst.ClassDef) else "module level"
        test = " ".join(cst.Module([]).code_for_node(family[0].test).split())
        name = f"if {test if len(test) <= 40 else test[:37] + '...'} in {where}"
        names.update((id(g), name) for g in family)
    out: Located[R] = []
    for (r, f), guard in zip(located, guard_of, strict=True):
        if guard is not None and id(guard) in names and r.group is None:
            r = dataclasses.replace(r, group=names[id(guard)])
        out.append((r, f))
    return out, set(names.values())


def _families(guards: list[cst.If | cst.IfExp], parents: Parents) -> list[list[cst.If | cst.IfExp]]:
    """``guards`` in groups of two or more that test equal conditions in one function (or at
    module level), or in two methods of one class where their branches share a field (a hook's
    ``log()`` prints ``stats["peak"]``, which its ``collect()`` fills under the same check), or one
    the negation of the other (``if not torch.cuda.is_available(): <warn>`` beside ``if
    torch.cuda.is_available(): <build>``: the two sides of one decision)."""
    families: list[list[cst.If | cst.IfExp]] = []
    for guard in guards:
        for family in families:
            if without_not(family[0].test)[0].deep_equals(without_not(guard.test)[0]) and any(
                    _paired(other, guard, parents) for other in family):
                family.append(guard)
                break
        else:
            families.append([guard])
    return [family for family in families if len(family) > 1]


def _paired(one: cst.If | cst.IfExp, other: cst.If | cst.IfExp, parents: Parents) -> bool:
    """Two tests of one condition decide together: in one function (or at module level), or in
    methods of one class whose branches name a field in common."""
    scope = _scope_of(one, parents)
    if scope is _scope_of(other, parents):
        return True
    owner = _method_owner(scope, parents)
    return owner is not None and owner is _method_owner(_scope_of(other, parents), parents) \
        and bool(_fields(one) & _fields(other))


def _method_owner(scope: cst.CSTNode | None, parents: Parents) -> cst.ClassDef | None:
    block = parents.get(id(scope)) if scope is not None else None
    owner = parents.get(id(block)) if isinstance(block, cst.IndentedBlock) else None
    return owner if isinstance(owner, cst.ClassDef) else None


def _fields(guard: cst.If | cst.IfExp) -> set[str]:
    """The string keys subscripted and the ``self`` attributes named in ``guard``'s branches."""
    found: set[str] = set()
    for node in iter_syntax(guard.body):
        if isinstance(node, cst.SubscriptElement) and isinstance(node.slice, cst.Index) \
                and isinstance(node.slice.value, cst.SimpleString):
            found.add(node.slice.value.evaluated_value if isinstance(node.slice.value.evaluated_value, str) else "")
        elif isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name) and node.value.value == "self":
            found.add("self." + node.attr.value)
    found.discard("")
    return found


def _guarded_arm(guard: cst.If | cst.IfExp) -> cst.CSTNode | None:
    """The code that runs where the condition of ``guard`` holds: the body (an ``if`` body, a
    conditional expression's first arm), or for a test ``not <X>`` the ``else`` (None when there is
    none, or when it is an ``elif``, which tests a condition of its own)."""
    if not without_not(guard.test)[1]:
        return guard.body
    if isinstance(guard, cst.IfExp):
        return guard.orelse
    return guard.orelse if isinstance(guard.orelse, cst.Else) else None


def _function_of(node: cst.CSTNode, parents: Parents) -> cst.FunctionDef | None:
    """The function definition around ``node`` (a lambda is an expression of its own scope's), or
    None at module level."""
    return next((a for a in ancestors(node, parents) if isinstance(a, cst.FunctionDef)), None)


def _module_of(node: cst.CSTNode, parents: Parents) -> cst.Module:
    return next(a for a in ancestors(node, parents) if isinstance(a, cst.Module))


def _scope_of(node: cst.CSTNode, parents: Parents) -> cst.CSTNode | None:
    """The function definition around ``node``, or None at module level."""
    return next((a for a in ancestors(node, parents) if isinstance(a, (cst.FunctionDef, cst.Lambda))), None)


def _guard_of(node: cst.CSTNode, parents: Parents) -> cst.If | cst.IfExp | None:
    """The ``if`` or conditional expression whose test holds ``node``, if any."""
    child = node
    while (parent := parents.get(id(child))) is not None:
        if isinstance(parent, cst.If):
            return parent if parent.test is child else None
        if isinstance(parent, cst.IfExp) and parent.test is child:
            return parent
        if isinstance(parent, (cst.BaseSuite, cst.BaseStatement)):
            return None
        child = parent
    return None


def _inside(node: cst.CSTNode, block: cst.CSTNode, parents: Parents) -> bool:
    """``node`` is ``block`` or lies within it (a conditional expression's body is one node)."""
    return node is block or any(a is block for a in ancestors(node, parents))


# -- step 9: guarded code ----------------------------------------------------------------------
def _bodies_follow_guards(located: Located[R], proposed: Sequence[cst.CSTNode], module: cst.Module,
                          parents: Parents) -> Located[R]:
    """An edit in the code a test guards, where a rule proposed to edit the test (``proposed``: the
    nodes of the fixes proposed before any step), is at most as safe as the weakest edit of that
    test that is made, and not made at all when none is: ``torch.cuda.synchronize if device_type
    == "cuda" else (lambda: None)`` must not become ``torch.accelerator.synchronize if device_type
    == "cuda" else ...`` while the widened test is held back (or suppressed, or left to
    ``--unsafe-fixes``, or its rule not run). An edit names such a guard itself (``guard``: the
    CUDA side of a guard a rule widens, ``x != "cuda"``'s ``else`` included); otherwise the
    innermost test it sits under (``if`` body, first arm) with an edit proposed counts. And the
    widened test itself (an edit in the test naming its guard) is made only with an edit of the
    code it guards: ``torch.cuda.synchronize if device_type in ("cuda", "neuron") else ...``
    calls CUDA on Neuron. A flag stored from a test a rule reports (``cuda =
    torch.cuda.is_available()``, then ``if cuda: model.cuda()``) is that test for the code it guards
    (:func:`_flag_guards`). Edit groups of edits held back here are held back whole."""
    named = [(r, getattr(r, "guard", None)) for r, _ in located]
    tested = {id(g): g for g in (_guard_of(n, parents) for n in proposed) if g is not None}
    tested |= {id(g): g for _, g in named if g is not None}
    flags = _flag_guards(located, module, parents)
    tested |= {id(g): g for g, _ in flags.values()}
    if not tested:
        return located
    made: dict[int, Safety] = {}  # per guard: the weakest edit of its test that is made
    for r, _ in located:
        if not r.fixable:
            continue
        guard = _guard_of(r.node, parents)
        tests = [guard] if guard is not None else []
        tests += [g for g, stored in flags.values() if _inside(r.node, stored, parents)]
        for test in tests:
            made[id(test)] = max(made.get(id(test), Safety.SAFE), r.safety, key=_WEAKNESS.index)
    guarded = {id(g) for r, g in named if g is not None and r.fixable and not _inside(r.node, g.test, parents)}
    out: Located[R] = []
    held: set[str] = set()
    for pair, (r, named_guard) in zip(located, named, strict=True):
        if _copies_guard(r, parents):
            out.append(pair)  # its Neuron copy drops the test (step 8)
            continue
        guard = (named_guard or _innermost_guarded(r.node, tested, parents)) if r.fixable else None
        widening = guard is not None and _inside(r.node, guard.test, parents)
        if guard is not None and (id(guard) not in guarded if widening else id(guard) not in made):
            pair = _changed(pair, hold=True, note=("guard", (
                "not applied: no edit of the code it guards is made, which would then run on Neuron as it is"
                if widening else "not applied: the test guarding it stays as it is, so Neuron never gets here; "
                "an edit here would only risk the host it was written for")))
            held |= {r.group} if r.group is not None else set()
        elif guard is not None and not widening and _WEAKNESS.index(made[id(guard)]) > _WEAKNESS.index(r.safety):
            pair = _changed(pair, safety=made[id(guard)], note=("guard", f"{made[id(guard)]}, like the edit of its test"))
        out.append(pair)
    return _settle_groups(out, dict.fromkeys(held, ""), only=held) if held else out


def _flag_guards(located: Located[R], module: cst.Module, parents: Parents) -> dict[int, tuple[cst.If | cst.IfExp, cst.CSTNode]]:
    """The tests ``if <flag>:`` (or ``... if <flag> else ...``) of a flag stored, once in its
    function (or once in the file, at module level), from a value a rule reports on (``cuda =
    torch.cuda.is_available()``): by the id of each such test, the test and the stored value. What
    the flag lets run, the value decides: kept for CUDA, it guards a branch Neuron never takes. An
    attribute the file assigns once (``args.cuda = ... torch.cuda.is_available()``) is such a flag
    wherever the file tests it."""
    stored: dict[tuple[int, str], tuple[cst.CSTNode, cst.CSTNode]] = {}
    attributes: dict[str, cst.CSTNode] = {}  # an attribute stored from such a value (``args.cuda = ...``)
    for r, _ in located:
        assign = _stored_in(r.node, parents)
        target = assign.targets[0].target if assign is not None else None
        if isinstance(target, cst.Name):
            scope = _scope_of(assign, parents) or module  # type: ignore[arg-type]
            stored[(id(scope), target.value)] = (scope, assign.value)  # type: ignore[union-attr]
        elif target is not None and (dotted := dotted_name(target)) is not None:
            attributes[dotted] = assign.value  # type: ignore[union-attr]
    if not stored and not attributes:
        return {}
    names = {name for _, name in stored}
    tests: list[tuple[cst.If | cst.IfExp, cst.BaseExpression]] = []
    for node in iter_syntax(module):
        if isinstance(node, (cst.If, cst.IfExp)):
            flag = without_not(node.test)[0]  # ``if not <flag>:`` too: its guarded arm is the ``else``
            if isinstance(flag, cst.Name) and flag.value in names \
                    or isinstance(flag, cst.Attribute) and dotted_name(flag) in attributes:
                tests.append((node, flag))
    tested = {flag.value for _, flag in tests if isinstance(flag, cst.Name)}
    scopes: dict[int, tuple[cst.CSTNode, set[str]]] = {}
    for (key, name), (scope, _) in stored.items():
        if name in tested:
            scopes.setdefault(key, (scope, set()))[1].add(name)
    once = {(key, name) for key, (scope, here) in scopes.items() for name in here if stored_once(scope, name)}
    assigned = [dotted_name(t.target) for node in iter_syntax(module) if isinstance(node, cst.Assign) and attributes
                for t in node.targets]  # an attribute is one flag where the file assigns it once
    guards: dict[int, tuple[cst.If | cst.IfExp, cst.CSTNode]] = {}
    for node, flag in tests:
        if isinstance(flag, cst.Attribute):
            dotted = dotted_name(flag) or ""
            if assigned.count(dotted) == 1:
                guards[id(node)] = (node, attributes[dotted])
        elif isinstance(flag, cst.Name):
            # the binding the test reads: of a function it sits in, else of the module
            functions = tuple(a for a in reversed(list(ancestors(node, parents))) if isinstance(a, cst.FunctionDef))
            binding = (id(binding_scope(flag.value, functions, module)), flag.value)
            if binding in once:
                guards[id(node)] = (node, stored[binding][1])
    return guards


def _stored_in(node: cst.CSTNode, parents: Parents) -> cst.Assign | None:
    """The statement ``<name> = <value>`` (or ``<object>.<attribute> = <value>``) whose value holds
    ``node``, if any."""
    child = node
    while (parent := parents.get(id(child))) is not None:
        if isinstance(parent, cst.Assign):
            single = len(parent.targets) == 1 and isinstance(parent.targets[0].target, (cst.Name, cst.Attribute))
            return parent if single and parent.value is child else None
        if isinstance(parent, (cst.BaseSuite, cst.BaseStatement, cst.Lambda, cst.FunctionDef)):
            return None
        child = parent
    return None


def _innermost_guarded(node: cst.CSTNode, guards: dict[int, cst.If | cst.IfExp], parents: Parents) -> cst.If | cst.IfExp | None:
    """The innermost of ``guards`` whose guarded code (:func:`_guarded_code`) holds ``node``."""
    child = node
    while (parent := parents.get(id(child))) is not None:
        if id(parent) in guards and child is _guarded_arm(guards[id(parent)]):
            return guards[id(parent)]
        statements = getattr(parent, "body", None)
        if isinstance(parent, (cst.IndentedBlock, cst.Module)) and isinstance(statements, (list, tuple)):
            before = statements[:next((i for i, s in enumerate(statements) if s is child), 0)]
            for statement in reversed(before):
                if id(statement) in guards and any(part is child for part in _guarded_code(statement, parents)):
                    return guards[id(statement)]
        child = parent
    return None


def _guarded_code(guard: cst.If | cst.IfExp, parents: Parents) -> list[cst.CSTNode]:
    """What the test of ``guard`` lets run: its guarded arm (:func:`_guarded_arm`) and the code
    after it that runs only where the test holds (:func:`_code_after`)."""
    arm = _guarded_arm(guard)
    return ([arm] if arm is not None else []) + _code_after(guard, parents)


def _code_after(guard: cst.If | cst.IfExp, parents: Parents) -> list[cst.CSTNode]:
    """For ``if not <X>: <leave>`` (``return``, ``raise``..., no ``else``), the statements after it
    in its block, which run only where ``<X>`` holds, as an ``if <X>:`` body would; and so for an
    ``if``/``elif`` whose chain closes with an ``else`` that leaves."""
    if not isinstance(guard, cst.If):
        return []
    leaves_unless = guard.orelse is None and ends_early(guard.body) and without_not(guard.test)[1]
    if leaves_unless or else_ends_early(guard):
        head = chain_head(guard, parents)
        statements = getattr(parents.get(id(head)), "body", None)
        if isinstance(statements, (list, tuple)):
            index = next((i for i, s in enumerate(statements) if s is head), len(statements))
            return list(statements[index + 1:])
    return []
