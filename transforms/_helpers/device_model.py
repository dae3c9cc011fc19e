"""The program's device choice, as one model per file: where the device is decided (the
``"cuda" if torch.cuda.is_available() else "cpu"`` idiom, detection helpers), where a device value
is consumed (dispatches ``if device == "cpu": ... elif device == "cuda": ...``), and the additive
edits that give each of them Neuron while every host keeps its path.

The model is computed once per file, with the cheap walk (:mod:`neuronize.analysis.walk`) over the tree,
and kept in the file's context (``FileContext.memo``); rules ask it questions about the node they
visit. Each decision is one edit group (:data:`DEVICE_CHOICE`): a moved default and the Neuron
branches its consumers need are applied whole or not at all.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import libcst as cst

from neuronize.analysis.probe_flags import stores
from neuronize.analysis.roles import CUDA_WORDS
from neuronize.analysis.context import FileContext, dotted_name
from neuronize.transform import ImportRequest
from neuronize.analysis.syntax import (
    assigned_value, binding_counts, binding_scope, chain_links, ends_early, imported_names, iter_blocks, iter_statements,
    scope_statements, scoped_statements, stored_once, without_not)
from neuronize.analysis.walk import iter_syntax
from neuronize.transforms._helpers import per_target
from neuronize.transforms._helpers.calls import argument, is_cuda_available_call, keyword, with_function
from neuronize.transforms._helpers.device_choice import (
    LiteralEdit, asks_if_neuron, available_side, device_named, has_is_available, idiom_literal,
    neuron_arm, neuron_first, triton_keyword, with_choice)
from neuronize.writing.device_name import chosen_from_device
from neuronize.transforms._helpers.distributed import PROCESS_GROUP, dist_function, names_nccl, nccl_backend
from neuronize.transforms._helpers.device_variable import chosen_device
from neuronize.transforms._helpers.hosts import DEVICE_CHOICE, device_choice_group
from neuronize.transforms._helpers.literals import (
    cuda_literal, cuda_member, make_string, string_like, string_template, string_value,
)
from neuronize.transforms._helpers.messages import short
from neuronize.transforms._helpers.names import last_name, qualified_expr, target_name
from neuronize.transforms._helpers.unplaced_module import unplaced_module
from neuronize.transforms._helpers.nodes import assigned_names, iter_conditions, parenthesized, read_paths, small_statements, target_names

#: the half-precision dtypes a CUDA branch sets, which its Neuron sibling writes as bfloat16
HALF = frozenset({"float16", "half"})
#: device types a dispatch may name besides CUDA: its branches for other hosts
OTHER_DEVICES = frozenset({"cpu", "mps", "xpu", "hpu", "npu", "xla", "meta", "neuron"})


# -- the model ---------------------------------------------------------------------------------------
@dataclass
class Dispatch:
    """An ``if``/``elif`` chain over the values of one device expression (``device``,
    ``args.device``, ``x.device.type``), with a CUDA branch and at least one branch for another
    host; ``neuron`` is the Neuron branch its migration adds (None where it cannot be built, see
    ``blocked``)."""

    head: cst.If
    subject: str  # the device expression's source
    cuda: cst.If  # the link whose test names CUDA
    devices: tuple[str, ...]  # every device type (or process-group backend) the chain names
    raises: bool  # its `else` raises: an unknown device is rejected
    served: bool  # it has a Neuron branch already, or runs only on CUDA and needs none
    neuron: cst.If | None = None
    model: cst.If | None = None  # the branch the Neuron one copies: CUDA's, or MPS's
    blocked: str = ""  # why no Neuron branch can be modelled on the CUDA one
    imports: tuple[ImportRequest, ...] = ()  # what the Neuron branch needs
    drops_index: bool = False  # the Neuron branch says "neuron" where CUDA's names an index


@dataclass
class DeviceModel:
    """The device choice of one file (see the module docstring)."""

    dispatches: list[Dispatch] = field(default_factory=list)
    #: ids of the links (``if``/``elif`` nodes) that are CUDA branches kept for CUDA
    cuda_links: set[int] = field(default_factory=set)
    #: ids of the CUDA links of detections (a subset of ``cuda_links``)
    detection_links: set[int] = field(default_factory=set)
    #: ids of the detection links whose CUDA branch is their ``else`` (``if not
    #: torch.cuda.is_available(): device = "cpu" else: device = "cuda"``: :func:`_negated_detection`)
    negated_links: set[int] = field(default_factory=set)
    #: ``if torch.cuda.is_available(): device = "cuda"`` links with no Neuron branch before them
    detections: list[tuple[cst.If, list[cst.If]]] = field(default_factory=list)
    #: id of an ``if <flag>:`` -> the check the flag was stored from, once, earlier in its block
    #: (``use_cuda = args.cuda and torch.cuda.is_available()``): the check the ``if`` asks
    flag_checks: dict[int, cst.BaseExpression] = field(default_factory=dict)
    #: the conditional expressions choosing a CUDA value by such a flag (``model.cuda() if use_cuda
    #: else model``), each with the Neuron arm it gains in front (:func:`value_choice`), as the
    #: flag's ``if`` tests gain a Neuron branch (one choice), and the flag's check
    flag_arms: list[tuple[cst.IfExp, Arm, cst.BaseExpression]] = field(default_factory=list)
    #: detections whose CUDA branch places the inputs of a module the file never places, and its
    #: name (:func:`unplaced_module.unplaced_module`): kept for CUDA, with no Neuron branch
    unplaced: list[tuple[cst.If, str]] = field(default_factory=list)
    #: detections kept for CUDA because the file hands its device to a consumer that rejects
    #: ``"neuron"``, and that consumer as a report names it (:func:`rejecting_consumer`)
    refused: list[tuple[cst.If, str]] = field(default_factory=list)
    #: the flag tests (by id) whose body only calls the CUDA runtime (``torch.cuda.empty_cache()``)
    runtime_only_tests: set[int] = field(default_factory=set)
    #: id of a class of device rows without Neuron -> it with a Neuron member, and that member
    #: (:func:`member_entry`)
    tables: dict[int, tuple[cst.ClassDef, cst.Assign]] = field(default_factory=dict)


def model(ctx: FileContext) -> DeviceModel:
    """The file's :class:`DeviceModel`, built on first use and kept in the file's context."""
    key = ("device-model", id(ctx.module))
    found: object = ctx.memo.get(key)
    if not isinstance(found, DeviceModel):
        found = _build(ctx)
        ctx.memo[key] = found
    return found


def _build(ctx: FileContext) -> DeviceModel:
    built = DeviceModel()
    if b"cuda" not in ctx.source or per_target.target(ctx) == per_target.CPU:
        return built  # the CPU target moves every CUDA path to the CPU instead
    elifs: set[int] = set()
    raised_after: set[int] = set()  # chains followed by a `raise`: unknown devices are rejected
    # `if` statements live in blocks of statements: no need to walk the expressions for them
    # a flag can hold a check only where one is made: here, or in an earlier cell of a notebook,
    # which the cell inherits as an assignment
    stores_checks = b"is_available" in ctx.source or ctx.inherited is not None and any(
        assigned_value(earlier) is not None for earlier in ctx.inherited.body)
    for statements in iter_blocks(ctx.module.body):
        raised_after.update(id(s) for s, after in zip(statements, statements[1:], strict=False)
                            if isinstance(s, cst.If) and _smalls_raise(after))
    choices: list[tuple[cst.IfExp, str, cst.BaseExpression]] = []
    negated: set[int] = set()
    if stores_checks:
        built.flag_checks, choices, negated = _flag_checks(ctx)
    cuda_autocast = _under_cuda_autocast_state(ctx)
    for node in iter_statements(ctx.module.body):
        if isinstance(node, cst.ClassDef) and (entry := member_entry(ctx, node)) is not None:
            built.tables[id(node)] = entry
        if not isinstance(node, cst.If) or id(node) in elifs:
            continue
        links = list(chain_links(node))
        elifs.update(id(link) for link in links[1:])
        built.runtime_only_tests.update(id(link) for link in links
                                        if id(link) in built.flag_checks and _runtime_calls_only(ctx, link.body))
        dispatch = _dispatch(ctx, node, links, id(node) in raised_after, id(node) in cuda_autocast)
        if dispatch is not None:
            built.dispatches.append(dispatch)
            built.cuda_links.add(id(dispatch.cuda))
        for before, link in zip([None, *links], links, strict=False):
            else_is_cuda = _negated_detection(ctx, link)
            if else_is_cuda or detection_link(ctx, link, links, built.flag_checks):
                built.cuda_links.add(id(link))
                built.detection_links.add(id(link))
                if else_is_cuda:
                    built.negated_links.add(id(link))
                served = before is not None and asks_if_neuron(before.test) or _any_accelerator_first(ctx, links, link)
                if served:
                    continue  # a Neuron branch in front already
                if (refusing := rejecting_consumer(ctx)) is not None:
                    built.refused.append((link, refusing))
                    continue
                if (consumer := unplaced_module(ctx, node, link)) is not None:
                    built.unplaced.append((link, consumer))
                else:
                    built.detections.append((link, links))
    _whole_flags(ctx, built, choices, negated)
    return built


def _any_accelerator_first(ctx: FileContext, links: Sequence[cst.If], link: cst.If) -> bool:
    """A link before ``link`` in its chain asks for any accelerator (``if
    torch.accelerator.is_available(): kind = torch.accelerator.current_accelerator().type``): Neuron
    takes that branch already, so a Neuron branch in front of CUDA's would never run."""
    earlier = links[: links.index(link)]
    return any(ctx.qualify(atom.func) == "torch.accelerator.is_available"
               for before in earlier for atom in iter_conditions(before.test) if isinstance(atom, cst.Call))


def _whole_flags(ctx: FileContext, built: DeviceModel,
                 choices: Sequence[tuple[cst.IfExp, str, cst.BaseExpression]], negated: set[int]) -> None:
    """A flag's tests are one choice: where one of them cannot gain a Neuron branch (``if use_cuda:
    net = DataParallel(net.cuda())``) or arm (``net.cuda(1) if use_cuda else net``), none does, or
    Neuron would place the data and not the model; the flag's check then stays CUDA's, reported
    (NRN110). A test whose body only calls the CUDA runtime (``if has_cuda:
    torch.cuda.empty_cache()``) places nothing: it splits no program, nor does a conditional
    expression choosing no CUDA value (``pin_memory=True if use_cuda else False``) or a device
    string (NRN101 puts Neuron in front of it). Where one test places the inputs of a module never
    placed (:attr:`DeviceModel.unplaced`), the flag stays CUDA's in all its tests; so it does where
    an ``if not <flag>:`` decides the flag's side (``negated``: the checks of such flags)."""
    tests: dict[int, list[int]] = {}
    for key, check in built.flag_checks.items():
        if key not in built.runtime_only_tests:
            tests.setdefault(id(check), []).append(key)
    split = {check for check, keys in tests.items() if not all(k in built.detection_links for k in keys)} | negated
    arms = []
    for node, side, check in choices:
        arm = value_choice(ctx, node, (side, check)) if idiom_literal(ctx, getattr(node, side)) is None else None
        if arm is None:
            continue  # nothing of CUDA's chosen, or a device string (NRN101 puts Neuron in front of it)
        if arm.replacement is None or per_target.target(ctx) != per_target.NEURON:
            split.add(id(check))  # no Neuron copy of its CUDA value; on the other targets a flag hides the arm
        else:
            arms.append((node, arm, check))
    unplaced = {id(link) for link, _ in built.unplaced}
    kept = {check for check, keys in tests.items() if unplaced.intersection(keys)}  # every test stays CUDA's
    built.flag_arms = [arm for arm in arms if id(arm[2]) not in split | kept]
    kept_tests = {key for check in kept for key in tests[check]}
    built.detections = [(link, chain) for link, chain in built.detections if id(link) not in kept_tests]
    partial = {key for check in split for key in tests.get(check, ())}
    if partial:
        built.detection_links -= partial
        built.cuda_links -= partial
        built.detections = [(link, chain) for link, chain in built.detections if id(link) not in partial]


def _runtime_calls_only(ctx: FileContext, body: cst.BaseSuite) -> bool:
    """``body`` only calls the CUDA runtime (``torch.cuda.empty_cache()``, ``torch.cuda.synchronize()``)."""
    lines = body.body if isinstance(body, cst.IndentedBlock) else ()
    return bool(lines) and all(
        isinstance(line, cst.SimpleStatementLine) and all(
            isinstance(small, cst.Expr) and isinstance(small.value, cst.Call)
            and (ctx.qualify(small.value.func) or "").startswith("torch.cuda.") for small in line.body)
        for line in lines)


def keeps_cuda_hosts(ctx: FileContext) -> bool:
    """On the neuron target, every file keeps its CUDA hosts: the migrated program runs on the CUDA
    box it was written for as before, and takes Neuron where Neuron is. Code that chooses among
    hosts gains a Neuron choice; code that names CUDA outright gains it host-aware (``"neuron" if
    <Neuron is here> else "cuda"``). So every edit that removes or replaces CUDA-only code asks
    this first: CUDA settings harmless elsewhere stay, a ``torch.cuda.set_device`` is kept for
    CUDA, the process-group backend becomes host-aware. The other targets move CUDA's paths to
    the accelerator or the CPU by design."""
    return per_target.target(ctx) == per_target.NEURON


def process_group_edits(ctx: FileContext) -> str:
    """The edit group of the file's process-group migration (its backend, ``set_device``, device
    ids, the device placement next to them): :data:`PROCESS_GROUP`, or, in a file that keeps its
    CUDA hosts, the group of its device default or detection: the host-aware backend serves the
    host-aware device, so a run applies both or neither; except where the process group is created in a
    branch of its own (:func:`process_group_branches`), whose edits are their own group."""
    if process_group_branches(ctx):
        return PROCESS_GROUP  # a run in several processes is a branch of its own (see default_plan)
    if not keeps_cuda_hosts(ctx):
        return PROCESS_GROUP
    # where the file creates the group, the device its detection chooses is the one the group's
    # processes use: they move together
    creates = b"init_process_group" in ctx.source
    return default_plan(ctx).group or (choice_edit_group(ctx) if creates else None) or PROCESS_GROUP


def process_group_branches(ctx: FileContext) -> frozenset[int]:
    """The ids of the ``if`` bodies that create the file's process group (``if ddp:
    init_process_group(...)``, the run in several processes), where the file keeps its CUDA hosts:
    the device a single process detects is chosen outside them, and gains Neuron without them
    (each edit host-aware, so no host is worse for one applied alone)."""
    key = ("process-group-branches", 0)
    if key not in ctx.memo:
        found: set[int] = set()
        if b"init_process_group" in ctx.source and keeps_cuda_hosts(ctx):
            for node in iter_syntax(ctx.module):
                if isinstance(node, cst.If) and isinstance(node.body, cst.IndentedBlock) and any(
                        isinstance(small, cst.Expr) and isinstance(small.value, cst.Call)
                        and dist_function(ctx.qualify(small.value.func)) == "init_process_group"
                        for stmt in node.body.body if isinstance(stmt, cst.SimpleStatementLine) for small in stmt.body):
                    found.add(id(node.body))
        ctx.memo[key] = frozenset(found)
    return ctx.memo[key]


def in_process_group_branch(ctx: FileContext) -> bool:
    """The node being visited lies in a body :func:`process_group_branches` names."""
    branches = process_group_branches(ctx)
    return bool(branches) and any(id(anc) in branches for anc in ctx.ancestors())


def kept_for_cuda(ctx: FileContext, line: cst.SimpleStatementLine,
                  neuron: cst.SimpleStatementLine | Sequence[cst.BaseStatement] | None = None
                  ) -> tuple[cst.If, tuple[ImportRequest, ...]]:
    """``line`` kept for every host but Neuron: ``if not <Neuron is here>: <line>``, or with
    ``neuron`` (its Neuron counterpart, a line or the statements that replace it) ``if <Neuron is
    here>: <neuron> else: <line>``; comments and blank lines above stay in front."""
    test, imports = per_target.neuron_present(ctx)
    kept = cst.IndentedBlock(body=[line.with_changes(leading_lines=())])
    if neuron is None:
        return cst.If(test=cst.UnaryOperation(cst.Not(), parenthesized(test)), body=kept,
                      leading_lines=line.leading_lines), imports
    statements: list[cst.BaseStatement] = [neuron] if isinstance(neuron, cst.SimpleStatementLine) else list(neuron)
    statements[0] = statements[0].with_changes(leading_lines=())
    return cst.If(test=test, body=cst.IndentedBlock(body=statements),
                  orelse=cst.Else(body=kept), leading_lines=line.leading_lines), imports


# -- dispatches over a device value ----------------------------------------------------------------
def _compared(test: cst.BaseExpression) -> tuple[str, list[str]] | None:
    """``x == "cuda"``, ``x.type == "cpu"``, ``x in ("cuda", "mps")``, ``x.startswith("cuda")``,
    ``"cuda" in x`` (a device string holding the type), or several of them on one ``x`` joined by
    ``or``: the compared expression's source and the device types it is compared with. A setting
    of the user's joined by ``and`` (``args.use_gpu and args.gpu_type == "cuda"``) qualifies the
    comparison, which a Neuron copy keeps."""
    if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.And) and not test.lpar:
        compared = [found for side in (test.left, test.right) if (found := _compared(side)) is not None]
        qualifier = test.left if compared and _compared(test.right) is not None else test.right
        return compared[0] if len(compared) == 1 and _is_setting(qualifier) else None
    if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.Or):
        left, right = _compared(test.left), _compared(test.right)
        if left is None or right is None or left[0] != right[0]:
            return None
        return left[0], left[1] + right[1]
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
        target = test.comparisons[0]
        named = string_value(test.left)
        if isinstance(target.operator, cst.In) and named is not None:
            return _source(target.comparator), [named.split(":")[0]]
        if isinstance(target.operator, cst.Equal):
            value = string_value(target.comparator)
            if value is not None:
                return _source(test.left), [value.split(":")[0]]
        if isinstance(target.operator, cst.In) and isinstance(target.comparator, (cst.List, cst.Tuple, cst.Set)):
            values = [string_value(e.value) for e in target.comparator.elements]
            if values and all(v is not None for v in values):
                return _source(test.left), [v.split(":")[0] for v in values if v is not None]
    if (isinstance(test, cst.Call) and isinstance(test.func, cst.Attribute) and test.func.attr.value == "startswith"
            and len(test.args) == 1 and string_value(test.args[0].value) is not None):
        return _source(test.func.value), [str(string_value(test.args[0].value)).split(":")[0]]
    return None


#: the hosts of the process-group backends a dispatch over the backend names (``if backend ==
#: dist.Backend.NCCL: device = "cuda" elif backend == "gloo": device = "cpu"``)
_BACKEND_HOSTS = {"nccl": "cuda", "gloo": "cpu", "mpi": "cpu", "neuron": "neuron"}


def _backend_name(ctx: FileContext, node: cst.BaseExpression) -> str | None:
    """``"nccl"`` or ``dist.Backend.NCCL``: the backend's name, where it is one of :data:`_BACKEND_HOSTS`."""
    qualified = ctx.qualify(node) if isinstance(node, cst.Attribute) else None
    name = qualified.rpartition(".")[2].lower() if qualified is not None \
        and qualified.startswith("torch.distributed.Backend.") else string_value(node)
    return name if name in _BACKEND_HOSTS else None


def _compared_backend(ctx: FileContext, test: cst.BaseExpression) -> tuple[str, list[str]] | None:
    """``backend == dist.Backend.NCCL`` (``== "gloo"``): the compared expression's source and the
    backend's name (its host in :data:`_BACKEND_HOSTS`). On Neuron the process group's backend is
    ``"neuron"``, so a dispatch over it gains a branch of its own."""
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1 \
            and isinstance(test.comparisons[0].operator, cst.Equal) \
            and (name := _backend_name(ctx, test.comparisons[0].comparator)) is not None:
        return _source(test.left), [name]
    return None


def _is_setting(test: cst.BaseExpression) -> bool:
    """``args.use_gpu``, ``not self.no_accel``: a setting read as it is, naming no CUDA of its own."""
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        test = test.expression
    name = dotted_name(test) if isinstance(test, (cst.Name, cst.Attribute)) else None
    return name is not None and "cuda" not in name.lower()


def _source(node: cst.CSTNode) -> str:
    return cst.Module([]).code_for_node(node.with_changes(lpar=(), rpar=()) if hasattr(node, "lpar") else node)


def _smalls_raise(statement: cst.CSTNode) -> bool:
    return isinstance(statement, cst.SimpleStatementLine) and _only_raises(statement)  # type: ignore[arg-type]


def _under_cuda_autocast_state(ctx: FileContext) -> set[int]:
    """The statements in the body of an ``if torch.is_autocast_enabled():`` (no device: CUDA's
    autocast state, False under Neuron's autocast): Neuron never runs them."""
    if b"is_autocast_enabled()" not in ctx.source:
        return set()
    from neuronize.transforms._helpers.amp import cuda_state_default

    return {id(inner) for node in iter_statements(ctx.module.body)
            if isinstance(node, cst.If) and isinstance(node.test, cst.Call)
            and cuda_state_default(ctx, node.test) == "torch.is_autocast_enabled"
            for inner in iter_statements(node.body.body if isinstance(node.body, cst.IndentedBlock) else ())}


def _dispatch(ctx: FileContext, head: cst.If, links: list[cst.If], raised_after: bool,
              cuda_only: bool = False) -> Dispatch | None:
    """The dispatch ``head`` begins, if it is one (``cuda_only``: it runs only on CUDA, so it needs
    no Neuron branch and is left as it is)."""
    subject, devices, cuda = None, [], None
    for link in links:
        found = _compared(link.test) or _compared_backend(ctx, link.test)
        if found is None:
            return None
        if subject is None:
            subject = found[0]
        elif found[0] != subject:
            return None
        devices.extend(found[1])
        if [_BACKEND_HOSTS.get(d, d) for d in found[1]] == ["cuda"] and cuda is None:
            cuda = link
    if subject is None or cuda is None:
        return None
    if not any(_BACKEND_HOSTS.get(d, d) in OTHER_DEVICES for d in devices):
        return None
    tail = links[-1].orelse
    raises = (isinstance(tail, cst.Else) and _only_raises(tail.body)) or (tail is None and raised_after)
    dispatch = Dispatch(head, subject, cuda, tuple(devices), raises, "neuron" in devices or cuda_only)
    if not dispatch.served:
        _add_neuron_sibling(ctx, dispatch, links)
    return dispatch


def _only_raises(block: cst.BaseSuite) -> bool:
    smalls = small_statements(block)
    return bool(smalls) and all(isinstance(s, cst.Raise) for s in smalls)


def _add_neuron_sibling(ctx: FileContext, dispatch: Dispatch, links: Sequence[cst.If]) -> None:
    """Sets the Neuron branch of ``dispatch``, the branch it is modelled on and its imports, or why
    it cannot be built. It is modelled on the CUDA branch: its test and body with each CUDA device
    string as ``"neuron"`` and each half dtype as bfloat16. Where that copy would still run
    CUDA-only code (``torch.cuda.*``, ``.cuda()``, a CUDA-only library, a model placed on CUDA GPUs
    by its loader), it is modelled on the MPS branch when that one names no host of its own (it
    places on the dispatched device: ``device_map={"": device}``), or, in a chain whose every branch
    sets one variable to a device (:func:`_chain_choice`), on that one statement of the CUDA
    branch; otherwise there is none."""
    consumer = rejecting_consumer(ctx)
    if consumer is not None:  # what the dispatch picks reaches a library that rejects "neuron"
        dispatch.blocked = f"this file hands its device to {consumer}"
        return
    test = dispatch.cuda.test.visit(_ToNeuron(ctx))
    models: list[tuple[cst.If, cst.BaseSuite]] = [
        (link, link.body) for link in [dispatch.cuda, *(link for link in links if _names_only(link, "mps"))]]
    chosen = _chain_choice(dispatch.cuda, links)
    if chosen is not None:  # every branch sets one variable to a device: Neuron's may set it alone
        models.append((dispatch.cuda, cst.IndentedBlock(body=[cst.SimpleStatementLine(body=[chosen])])))
    for link, block in models:
        copier = _ToNeuron(ctx)
        body: cst.BaseSuite = block.visit(copier)  # type: ignore[assignment]
        why = _blocked(ctx, body)
        if not why:
            dispatch.neuron, dispatch.model = cst.If(test=test, body=body, leading_lines=()), link  # type: ignore[arg-type]
            dispatch.imports, dispatch.drops_index, dispatch.blocked = tuple(copier.imports), copier.dropped_index, ""
            return
        dispatch.blocked = dispatch.blocked or f"its CUDA branch {why}"


def _names_only(link: cst.If, device: str) -> bool:
    """``link`` tests for ``device`` alone and its body, comments included, never names it: code
    that places on the dispatched device, whichever it is."""
    found = _compared(link.test)
    return found is not None and found[1] == [device] and device not in cst.Module([]).code_for_node(link.body).lower()


def cuda_left(copy: cst.CSTNode) -> str:
    """What a Neuron copy (:class:`_ToNeuron`) still says about CUDA, which it would run on Neuron
    (``uses `torch.cuda.memory_allocated```); ``""`` when nothing."""
    for node in iter_syntax(copy):
        if isinstance(node, cst.Attribute) and node.attr.value in ("cuda", "is_cuda"):
            return f"uses `{_source(node)}`"
        if isinstance(node, cst.Name) and "cuda" in node.value.lower():
            return f"uses `{node.value}`"
        if isinstance(node, (cst.SimpleString, cst.FormattedString)) and cuda_literal(node) is None \
                and "cuda" in _source(node).lower():
            return f"names CUDA in `{_source(node)}`"
    return ""


#: ``torch.cuda`` calls a Neuron branch asks through ``torch.accelerator`` (it runs where the
#: accelerator is Neuron), the cache through ``torch.neuron`` (as NRN113 writes it);
#: ``is_available`` becomes the test "the accelerator is Neuron"
_ON_NEURON = {"torch.cuda.device_count": "torch.accelerator.device_count",
              "torch.cuda.synchronize": "torch.accelerator.synchronize",
              "torch.cuda.empty_cache": "torch.neuron.empty_cache",
              "torch.cuda.current_device": "torch.accelerator.current_device_index"}


class _ToNeuron(cst.CSTTransformer):
    """A CUDA branch's code as its Neuron sibling's: device strings, half dtypes and (given the
    file's context) the availability and device-count calls; the imports it needs in ``imports``."""

    def __init__(self, ctx: FileContext | None = None, *, drop_comments: bool = True) -> None:
        super().__init__()
        self.ctx = ctx
        self.drop_comments = drop_comments
        self.imports: list[ImportRequest] = []
        self.dropped_index = False  # a CUDA device index (`f"cuda:{rank}"`) became plain "neuron"

    def _device(self, before: cst.CSTNode, after: cst.BaseExpression, quoted: cst.CSTNode) -> cst.BaseExpression:
        """``after`` as ``"neuron"`` (in the quotes of ``quoted``) where ``before`` is a CUDA device."""
        kind = cuda_literal(before)
        if kind is None:
            return after
        self.dropped_index |= kind.drops_index
        return string_like(quoted, "neuron")

    def leave_Call(self, before: cst.Call, after: cst.Call) -> cst.BaseExpression:
        name = self.ctx.qualify(before.func) if self.ctx is not None else None
        if name == "torch.cuda.is_available" and self.ctx is not None and not before.args:
            test, imports = per_target.neuron_present(self.ctx)
            self.imports.extend(imports)
            return test.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
        if name in _ON_NEURON and self.ctx is not None:
            func, imports = qualified_expr(self.ctx, _ON_NEURON[name])
            self.imports.extend(imports)
            return with_function(after, func, _ON_NEURON[name])
        if name == "torch.get_autocast_gpu_dtype" and self.ctx is not None and not before.args:
            # the CUDA autocast dtype by its old name: the device-type form asks Neuron's
            func, imports = qualified_expr(self.ctx, "torch.get_autocast_dtype")
            self.imports.extend(imports)
            return after.with_changes(func=func, args=[cst.Arg(make_string("neuron"))])
        func = after.func
        if isinstance(func, cst.Attribute) and func.attr.value == "cuda" and _source(func.value) != "torch" \
                and all(a.keyword is not None for a in after.args):
            # `x.cuda()` / `x.cuda(non_blocking=True)`: the move to the current CUDA device; an
            # index (`x.cuda(1)`) is left for `cuda_left` to see
            to = cst.Arg(make_string("neuron"), comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
                         if after.args else cst.MaybeSentinel.DEFAULT)
            return after.with_changes(func=func.with_changes(attr=cst.Name("to")), args=[to, *after.args])
        if isinstance(func, cst.Attribute) and cuda_literal(before) is not None:  # "cuda:{}".format(rank)
            return self._device(before, after, func.value)
        return after

    def leave_SimpleString(self, before: cst.SimpleString, after: cst.SimpleString) -> cst.BaseExpression:
        value = string_value(before)
        if value is not None and nccl_backend(value) == "plain":  # the process-group backend
            return string_like(after, "neuron")
        return self._device(before, after, after)

    def leave_FormattedString(self, before: cst.FormattedString, after: cst.FormattedString) -> cst.BaseExpression:
        return self._device(before, after, after)

    def leave_BinaryOperation(self, before: cst.BinaryOperation, after: cst.BinaryOperation) -> cst.BaseExpression:
        return self._device(before, after, after.left)

    def leave_Attribute(self, before: cst.Attribute, after: cst.Attribute) -> cst.BaseExpression:
        if after.attr.value in HALF and isinstance(after.value, cst.Name) and after.value.value == "torch":
            return after.with_changes(attr=cst.Name("bfloat16"))
        if self.ctx is not None and names_nccl(self.ctx, before):  # `Backend.NEURON` exists only once
            return make_string("neuron")  # torch-neuronx registered it
        return after

    def leave_TrailingWhitespace(self, before: cst.TrailingWhitespace,
                                 after: cst.TrailingWhitespace) -> cst.TrailingWhitespace:
        # a line's comment about the GPU (`# NVIDIA GPU`) describes the CUDA branch, not its copy
        if self.drop_comments and after.comment is not None and _ABOUT_GPU.search(after.comment.value):
            return after.with_changes(whitespace=cst.SimpleWhitespace(""), comment=None)
        return after

    def on_leave(self, original_node: cst.CSTNode, updated_node: cst.CSTNode) -> Any:
        # so do the comment lines above a statement (`# fp16 saturates for the large model`), as
        # a whole: one of them says so, the others go on with it
        updated = super().on_leave(original_node, updated_node)
        lines = getattr(updated, "leading_lines", None) if self.drop_comments else None
        if isinstance(updated, cst.CSTNode) and lines and any(
                line.comment is not None and _ABOUT_GPU.search(line.comment.value) for line in lines):
            return updated.with_changes(leading_lines=[line for line in lines if line.comment is None])
        return updated


#: a comment about CUDA or the GPU, or about the half precision the copy makes bfloat16
_ABOUT_GPU = re.compile(r"cuda|nvidia|gpu|\b(?:fp16|f16|float16|half)\b", re.IGNORECASE)


def _neuron_copy(node: cst.CSTNode) -> cst.CSTNode:
    return node.visit(_ToNeuron())  # type: ignore[return-value]


def _holds_cuda_value(node: cst.CSTNode) -> bool:
    """``node`` holds a value its Neuron copy changes (a comment about the GPU is no value)."""
    copy: cst.CSTNode = node.visit(_ToNeuron(drop_comments=False))  # type: ignore[assignment]
    return not copy.deep_equals(node)


def _fetches(node: cst.IfExp, side: str) -> bool:
    """The ``side`` of ``node`` fetches a tensor back to the host (``.cpu()``) and the other side
    does not: the side for tensors on a device."""
    def fetch(branch: cst.CSTNode) -> bool:
        return any(isinstance(n, cst.Call) and isinstance(n.func, cst.Attribute) and n.func.attr.value == "cpu"
                   and not n.args for n in iter_syntax(branch))
    return fetch(getattr(node, side)) and not fetch(node.orelse if side == "body" else node.body)


def table_entry(ctx: FileContext, table: cst.Dict) -> tuple[cst.Dict, cst.BaseExpression, tuple[ImportRequest, ...]] | None:
    """A table keyed by device types (``{"cuda": torch.float16, "cpu": torch.float32}``: a
    dispatch written as data) with a Neuron entry after CUDA's, modelled on it (half precision
    as bf16), and the Neuron value; None when it is no such table, has a Neuron entry already,
    holds a process-group backend (NRN401's), or CUDA's value cannot be Neuron's."""
    elements = list(table.elements)
    keys = [string_value(e.key) if isinstance(e, cst.DictElement) else None for e in elements]
    if None in keys or "cuda" not in keys or "neuron" in keys or not any(k in OTHER_DEVICES for k in keys):
        return None
    index = keys.index("cuda")
    cuda = elements[index]
    assert isinstance(cuda, cst.DictElement)
    if _holds_nccl(cuda.value):
        return None
    copier = _ToNeuron(ctx)
    value = cuda.value.visit(copier)
    assert isinstance(value, cst.BaseExpression)  # an expression's copy is an expression
    if _blocked(ctx, value, row=True):
        return None
    entry = cuda.with_changes(key=string_like(cuda.key, "neuron"), value=value)
    if isinstance(cuda.comma, cst.Comma):
        elements[index:index + 1] = [cuda, entry]
    else:  # CUDA's entry is the last, with no comma: it takes its neighbour's (a line of its own in a tall table)
        before = elements[index - 1].comma if index else None
        comma = before if isinstance(before, cst.Comma) else cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
        elements[index:index + 1] = [cuda.with_changes(comma=comma), entry]
    return table.with_changes(elements=elements), value, tuple(copier.imports)


def registry_hosts(table: cst.List | cst.Tuple) -> list[str] | None:
    """The devices a list of records names, one each (``[DeviceSpec(name="cuda", ...),
    DeviceSpec(name="mps", ...)]``, or the name as the first argument): a registry of hosts, which a
    lookup by device searches; None where it is no such list (CUDA and another host among them) or
    lists Neuron already. A record of Neuron has its own fields (availability, counts, caches):
    written by hand, so the registry is only reported."""
    names: list[str] = []
    for element in table.elements:
        call = element.value
        if not isinstance(call, cst.Call):
            return None
        named = next((a.value for a in call.args if a.keyword is not None and a.keyword.value == "name"), None)
        if named is None and call.args and call.args[0].keyword is None:
            named = call.args[0].value
        name = string_value(named) if named is not None else None
        if name is None:
            return None
        names.append(name)
    if "cuda" not in names or "neuron" in names or not any(n in OTHER_DEVICES for n in names):
        return None
    return names


def member_entry(ctx: FileContext, table: cst.ClassDef) -> tuple[cst.ClassDef, cst.Assign] | None:
    """A class whose members are device rows (an ``Enum`` of ``CUDA = ("cuda", "GPU", "nccl")``,
    ``CPU = ("cpu", "CPU", "gloo")``..., or of plain ``cuda = "cuda"``: a table of hosts written
    as a class, whose lookup rejects a device it does not list) with a Neuron member after
    CUDA's, modelled on it as :func:`table_entry` models an entry, and the new member;
    None when it is no such table, lists Neuron already, or CUDA's row cannot be Neuron's."""
    rows: list[tuple[int, str, list[str | None]]] = []  # statement index, member name, its strings
    for index, statement in enumerate(table.body.body):
        line = statement if isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1 else None
        assign = line.body[0] if line is not None else None
        if isinstance(assign, cst.Assign) and len(assign.targets) == 1 and isinstance(assign.targets[0].target, cst.Name):
            value = assign.value
            items = [e.value for e in value.elements] if isinstance(value, cst.Tuple) else [value]
            rows.append((index, assign.targets[0].target.value, [string_value(item) for item in items]))
    column = next((i for _, _, strings in rows for i, text in enumerate(strings) if text == "cuda"), None)
    if column is None:
        return None
    devices = [strings[column] if column < len(strings) else None for _, _, strings in rows]
    named = [(member, device) for (_, member, _), device in zip(rows, devices, strict=True) if device]
    if "neuron" in devices or not any(d in OTHER_DEVICES for d in devices) or not all(
            device in member.lower() or device == "cuda" and "gpu" in member.lower() for member, device in named):
        return None  # a member named for another thing (`offload = "cpu"`): settings, not rows
    index, name, _ = rows[devices.index("cuda")]
    cuda = table.body.body[index]
    copy = cuda.visit(_ToNeuron(ctx))  # the line's comment about the GPU goes, as in a branch's copy
    assert isinstance(copy, cst.SimpleStatementLine) and isinstance(copy.body[0], cst.Assign)
    row = copy.body[0]
    member = _neuron_name(name)
    if _blocked(ctx, row.value, row=True) or member in {taken for _, taken, _ in rows}:
        return None
    row = row.with_changes(targets=[row.targets[0].with_changes(target=cst.Name(member))])
    body = list(table.body.body)
    body.insert(index + 1, copy.with_changes(leading_lines=(), body=[row]))
    return table.with_changes(body=table.body.with_changes(body=body)), row


def _neuron_name(cuda: str) -> str:
    """The Neuron member's name, spelled as CUDA's is (``CUDA`` -> ``NEURON``, ``cuda`` ->
    ``neuron``, ``Cuda`` -> ``Neuron``; ``GPU`` -> ``NEURON``)."""
    found = re.search("cuda", cuda, re.IGNORECASE)
    word = found.group() if found is not None else cuda
    neuron = "NEURON" if word.isupper() else "Neuron" if word[:1].isupper() else "neuron"
    return cuda.replace(word, neuron) if found is not None else neuron


def with_neuron_branch(dispatch: Dispatch) -> cst.If:
    """The CUDA link of ``dispatch`` followed by its Neuron sibling (``elif <subject> ==
    "neuron": ...``), the rest of the chain after it."""
    assert dispatch.neuron is not None
    sibling = dispatch.neuron.with_changes(orelse=dispatch.cuda.orelse)
    return dispatch.cuda.with_changes(orelse=sibling)


def dispatch_group(ctx: FileContext) -> str | None:
    """The edit group of a device default in a file whose dispatches or device tables get Neuron
    branches or members: the default moves only with them (see :data:`hosts.DEVICE_CHOICE`)."""
    found = model(ctx)
    return DEVICE_CHOICE if found.tables or any(d.neuron is not None for d in found.dispatches) else None


def choice_edit_group(ctx: FileContext) -> str | None:
    """:data:`DEVICE_CHOICE` where the file's device choice gains Neuron through edits (a
    detection, a dispatch, a table, a default that a fallback tests), else None: what is chosen by
    host beside it (``torch.compile``'s ``"neuron" if <Neuron is here> else "inductor"``) moves
    with it, so a Neuron backend never compiles a model the choice left on the CPU."""
    return DEVICE_CHOICE if model(ctx).detections or dispatch_group(ctx) or device_choice_group(ctx) else None


def blocking(ctx: FileContext) -> Dispatch | None:
    """A dispatch that rejects an unknown device and cannot be given a Neuron branch: a default
    moved to ``"neuron"`` would raise there, so it stays."""
    return next((d for d in model(ctx).dispatches if d.neuron is None and d.raises and not d.served), None)


def kept_for_consumer(consumer: str) -> str:
    """What a report says of a device choice kept for a consumer that rejects ``"neuron"`` (the
    call and what to do there, :func:`rejecting_consumer`)."""
    return f"kept: this file hands its device to {consumer}, then migrate the choice"


def idiom_kept(ctx: FileContext, node: cst.IfExp) -> str | None:
    """Why the device choice ``node`` (``"cuda" if torch.cuda.is_available() else "cpu"``) stays:
    the file hands its device to a library that rejects ``"neuron"`` (:func:`rejecting_consumer`),
    or the variable it is stored in is read only on the CUDA side of guards kept for CUDA (a demo
    that builds its fp16 pipeline under ``if torch.cuda.is_available():``), where a Neuron device
    would never be used, or places data there (``if torch.cuda.is_available(): image =
    image.half().to(device)``), which a Neuron model would then meet on the CPU; else None."""
    consumer = rejecting_consumer(ctx)
    if consumer is not None:
        return kept_for_consumer(consumer)
    statement = next((a for a in ctx.ancestors() if isinstance(a, (cst.BaseSmallStatement, cst.BaseStatement))), None)
    if not (isinstance(statement, cst.Assign) and len(statement.targets) == 1
            and isinstance(target := statement.targets[0].target, cst.Name)):
        return None
    scope = next((a for a in ctx.ancestors() if isinstance(a, cst.FunctionDef)), ctx.module)
    reads = read_paths(scope, target.value, statement)
    guards = [_kept_guard_around(ctx, path) for path in reads]
    kept = [g for g in guards if g is not None]
    if kept and len(kept) == len(guards):
        return (f"kept: `{target.value}` is read only under `if {short(kept[0].test, 50)}:`, which stays CUDA's; "
                "give Neuron a path there first, then migrate the choice")
    # data moved to the device only under such a guard would stay on the CPU beside a Neuron model
    placing = next((g for g, path in zip(guards, reads, strict=True) if g is not None and _places_with(path)), None)
    if placing is not None:
        return (f"kept: `{target.value}` places data only under `if {short(placing.test, 50)}:`, which stays "
                "CUDA's: with a Neuron device the rest would meet that data on the CPU; give Neuron a path there "
                "first, then migrate the choice")
    mapping = next((found for path in reads if (found := _maps_model_by(path)) is not None), None)
    if mapping is None:
        return None
    return (f"kept: `{target.value}` decides where the model loads (`device_map={short(mapping.value, 50)}`), "
            "which stays CUDA's: with a Neuron device the model would load on the CPU and meet Neuron inputs; "
            "give Neuron a placement there first, then migrate the choice")


def _maps_model_by(path: Sequence[cst.CSTNode]) -> cst.Arg | None:
    """The ``device_map=`` argument whose value chooses by comparing the read at the end of ``path``
    (its ancestors, outermost first) with CUDA (``device_map="auto" if DEVICE.type == "cuda" else
    None``): the model's placement follows the device only where it is CUDA's."""
    for anc, child, outer in zip(reversed(path[1:-1]), reversed(path[2:]), reversed(path[:-2]), strict=True):
        if isinstance(anc, cst.IfExp) and child is anc.test:
            named = _names_cuda(anc.test)
            return outer if named and isinstance(outer, cst.Arg) and outer.keyword is not None \
                and outer.keyword.value == "device_map" else None
    return None


def _places_with(path: Sequence[cst.CSTNode]) -> bool:
    """The read at the end of ``path`` (its ancestors, outermost first) is where a tensor goes:
    the argument of ``.to(...)``, or a ``device=`` keyword."""
    if len(path) < 3 or not isinstance(arg := path[-2], cst.Arg):
        return False
    call = path[-3]
    return (arg.keyword is not None and arg.keyword.value == "device") or (
        isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute) and call.func.attr.value == "to")


def _kept_guard_around(ctx: FileContext, path: Sequence[cst.CSTNode]) -> cst.If | None:
    """The innermost ``if`` of ``path`` (a node's ancestors, outermost first) whose body holds it and is
    kept for CUDA (:func:`_kept_guard`, and no detection; a body that leaves early guards more than
    itself: not asked)."""
    detections = {id(link) for link, _ in model(ctx).detections}  # they gain a Neuron branch in front
    for anc, child in zip(reversed(path[:-1]), reversed(path[1:]), strict=True):
        if isinstance(anc, cst.If) and child is anc.body and id(anc) not in detections and not ends_early(anc.body) \
                and _kept_guard(ctx, anc, anc.body):
            return anc
    return None


#: the pins of a CUDA device handed to a library that rejects ``"neuron"``: what it loads stays there
LIBRARY_DEVICE_PINS = "devices beside a device a library parses itself"
#: the pins of a CUDA device handed to the project's own code that rejects ``"neuron"``
#: (``Options.device_sinks``): what it makes stays there
PROJECT_DEVICE_PINS = "devices beside a device the project's code rejects for Neuron"


def _project_rejects(name: str) -> str:
    """Why the function (or class) ``name`` of the project cannot take ``"neuron"`` (``Options.device_sinks``)."""
    return (f"rejects \"neuron\" (`{name}` asserts CUDA for any device but the CPU, checks the device against a "
            "list of hosts without Neuron that stays, or hands it to a library that parses it itself); give it a "
            "Neuron path by hand")


def _handed(call: cst.Call, sink: tuple[str, tuple[str, ...], tuple[str, ...]]) -> list[cst.Arg | None]:
    """What ``call`` gives each parameter that the project's consumer ``sink`` hands to what rejects
    ``"neuron"`` (``Options.device_sinks``)."""
    return [argument(call, p, sink[1].index(p)) for p in sink[2]]


def kept_argument(ctx: FileContext, call: cst.Call) -> tuple[str, str | None] | None:
    """Why the device ``call`` is given stays CUDA's: Triton kernels run on it (``use_triton=True``),
    or the call is a library's that rejects ``"neuron"`` (:data:`device_sinks.LIBRARY_SINKS`), or
    a function (or class) of the project that does (``Options.device_sinks``), whose result stays
    on CUDA: then the placements beside it wait too (the pins, else None)."""
    from neuronize.analysis.device_sinks import LIBRARY_SINKS, rejection, sink_of

    kernels = triton_keyword(call)
    if kernels is not None:
        return f"kept: the call runs Triton kernels (`{kernels}=True`), which need CUDA", None
    qualified = ctx.qualify(call.func)
    if qualified in LIBRARY_SINKS:
        return f"kept: `{qualified}` {rejection(qualified)}", LIBRARY_DEVICE_PINS
    sink = sink_of(qualified, ctx.options.device_sinks) if qualified is not None else None
    if sink is not None and any(a is not None for a in _handed(call, sink)):
        return f"kept: {_project_rejects(sink[0])}", PROJECT_DEVICE_PINS
    return None


def rejecting_consumer(ctx: FileContext) -> str | None:
    """A call of the file that hands a device (other than a literal of another host) to a library
    that rejects ``"neuron"`` (:data:`device_sinks.LIBRARY_SINKS`: safetensors, CTranslate2,
    Lightning's accelerator), or to
    a project function that hands it on to one (``Options.device_sinks``): the file's device choice,
    become ``"neuron"``, would raise there, so it stays (file-wide, like :func:`blocking`). The
    call as the report names it, or None."""
    key = ("rejecting-consumer", 0)
    if key not in ctx.memo:
        ctx.memo[key] = _rejecting_consumer(ctx) or _metric_named_by_device(ctx)
    return ctx.memo[key]


#: a profiler metric named after a device kind (``cuda_time_total``, ``self_cpu_memory_usage``): torch's
#: profiler tables know the metrics of cpu, cuda, xpu and privateuse1, and look up any other name as an
#: attribute of the event, so ``"neuron_time_total"`` raises ``AttributeError`` (a bare ``f"{x}_time"``
#: is as often a log key of the program's own)
_DEVICE_METRIC = re.compile(r"^(?:self_)?\{\}_(?:time_total|memory_usage)$")


def _metric_named_by_device(ctx: FileContext) -> str | None:
    """A profiler metric the file names after its device (``sort_by=device + "_time_total"``): the
    device choice, become ``"neuron"``, would name a metric the profiler does not have."""
    if b"_time_total" not in ctx.source and b"_memory_usage" not in ctx.source:
        return None
    for node in iter_syntax(ctx.module):
        if isinstance(node, (cst.BinaryOperation, cst.FormattedString)) \
                and _DEVICE_METRIC.match(string_template(node) or ""):
            return (f"`{short(node)}`, which names a profiler metric after it (the profiler knows those of "
                    "`cpu`, `cuda`, `xpu` and `privateuse1`, none for `neuron`); name the metric by hand")
    return None


def _rejecting_consumer(ctx: FileContext) -> str | None:
    from neuronize.analysis.device_sinks import LIBRARIES, LIBRARY_SINKS, rejection, sink_of

    sinks = ctx.options.device_sinks
    words = (*LIBRARIES, *(s[0].rsplit(".", 1)[-1].encode() for s in sinks))
    if not any(w in ctx.source for w in words):
        return None
    for node in iter_syntax(ctx.module):
        if not isinstance(node, cst.Call) or (qualified := ctx.qualify(node.func)) is None:
            continue
        if qualified in LIBRARY_SINKS:
            name, position = LIBRARY_SINKS[qualified]
            handed, what = [argument(node, name, position)], f"which {rejection(qualified)}"
        elif (sink := sink_of(qualified, sinks)) is not None:
            handed, what = _handed(node, sink), f"which {_project_rejects(sink[0])}"
        else:
            continue
        if any(a is not None and string_value(a.value) not in OTHER_DEVICES for a in handed):
            return f"`{short(node)}`, {what}"
    return None


def kernel_export(ctx: FileContext) -> str | None:
    """Why the device being visited stays CUDA's because kernel code reads it: it is bound, at the
    module's top level, to a name a GPU-kernel file of the project imports from this module
    (``DEV = torch.device("cuda:0")``, read by ``from utils import DEV`` in a script built on
    CUDA kernels: ``Options.kernel_exports``). None where it is not."""
    exports = dict(ctx.options.kernel_exports)
    if not exports:
        return None
    for anc in ctx.ancestors():
        if isinstance(anc, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            return None
        if isinstance(anc, (cst.Assign, cst.AnnAssign)):
            targets = [t.target for t in anc.targets] if isinstance(anc, cst.Assign) else [anc.target]
            name = next((n for t in targets for n in target_names(t) if n in exports), None)
            if name is not None:
                return (f"kept: `{name}` is imported by `{exports[name]}`, GPU-kernel code that runs on CUDA only; "
                        "move it with that file's port")
    return None


@dataclass(frozen=True)
class DefaultPlan:
    """What becomes of a device default (``--device`` option, ``device = "cuda"`` setting,
    parameter default): its edit group, and why it stays (or None)."""

    group: str | None
    kept: str | None


def backend_key(ctx: FileContext, name: str | None) -> str | None:
    """Why a default of ``name`` stays: the project checks that name against a list of its own
    backends beside CUDA (:mod:`neuronize.analysis.backend_keys`), so it is a key of the project's
    backend table, which has no Neuron entry; None where ``name`` is no such key."""
    from neuronize.analysis.backend_keys import backend_keys

    if name is None:
        return None
    key = ("backend-keys", 0)
    if key not in ctx.memo:
        ctx.memo[key] = ctx.options.backend_keys | backend_keys([ctx.source])
    if name not in ctx.memo[key]:
        return None
    return (f"kept: `{name}` picks one of the project's own backends (it is checked against a list of them beside "
            '"cuda"), which has none for Neuron: "neuron" would fail where the backend is looked up; give the '
            "project a Neuron backend first")


def default_plan(ctx: FileContext, name: str | None = None) -> DefaultPlan:
    """For a device default of the file. It moves in one edit group with the fallbacks that test
    it (:func:`hosts.device_choice_group`) and the Neuron branches of the dispatches that consume
    it; it stays where a dispatch would reject ``"neuron"``. A default of a name that picks one of
    the project's own backends (``name``: :func:`backend_key`) stays."""
    kept_key = backend_key(ctx, name)
    if kept_key is not None:
        return DefaultPlan(None, kept_key)
    blocked = blocking(ctx)
    if blocked is not None:
        return DefaultPlan(None, f"kept: the dispatch over `{blocked.subject}` (`{short(blocked.cuda.test)}`) "
                                 f"rejects a device it does not list and cannot get a Neuron branch "
                                 f"({blocked.blocked})")
    consumer = rejecting_consumer(ctx)
    if consumer is not None:
        return DefaultPlan(None, kept_for_consumer(consumer))
    group = PROCESS_GROUP if in_process_group_branch(ctx) else device_choice_group(ctx) or dispatch_group(ctx)
    return DefaultPlan(group, None)


def aware_edit(ctx: FileContext, node: cst.BaseExpression, nested: bool, edit: LiteralEdit,
               placement: bool = False) -> LiteralEdit:
    """``edit`` (of the device ``node``) as ``"neuron" if <Neuron is here> else <node>``: a value
    that keeps every other host's. A placement (``placement``: ``.to(node)``, not a default other
    code reads) names the program's device variable instead, where it has one."""
    from neuronize.transforms._helpers.hosts import host_aware

    chosen = chosen_device(ctx, node) if placement and not nested else None
    if chosen is not None:
        return chosen
    value, imports = host_aware(ctx, node)
    if nested or getattr(node, "lpar", None):
        value = value.with_changes(lpar=getattr(node, "lpar", ()) or [cst.LeftParen()],
                                   rpar=getattr(node, "rpar", ()) or [cst.RightParen()])
    return LiteralEdit(value, imports, edit.note, edit.unsafe, f'"neuron" if <the accelerator is Neuron> else {short(node)}')


def in_dispatch_test(ctx: FileContext) -> bool:
    """The comparison being visited is (part of) the test of a dispatch link the model handles."""
    tests = {id(link.test) for d in model(ctx).dispatches for link in chain_links(d.head)}
    return bool(tests) and any(id(n) in tests for n in ctx.stack)


# -- the idiom and detection chains ----------------------------------------------------------------
def served_by_neuron_first(ctx: FileContext, node: cst.IfExp) -> bool:
    """``node`` is the original choice behind a Neuron-first choice (``"neuron" if <Neuron> else
    <node>``), as the idiom's rewrite leaves it: it keeps serving the other hosts."""
    parent = ctx.parent
    return isinstance(parent, cst.IfExp) and parent.orelse is node and neuron_first(parent)


def _flag_checks(ctx: FileContext) -> tuple[dict[int, cst.BaseExpression],
                                             list[tuple[cst.IfExp, str, cst.BaseExpression]], set[int]]:
    """The ``if <flag>:`` statements (and ``elif <flag>:`` links) whose flag an earlier statement
    of the file stored from a CUDA check (``use_cuda = args.cuda and torch.cuda.is_available()``),
    the only binding of that name in its scope, which the scope keeps to itself
    (:func:`_handed_on`): by their id, the check. Every test that reads
    that binding counts, in loops and functions too (``if use_cuda: img = img.cuda()`` in the
    training loop): the flag is one choice, and each place it decides gains the same Neuron
    branch. A function's parameter of the same name (``def mix(x, use_cuda=True)``) is another
    variable, which its callers set. An attribute the file assigns once, from such a check
    (``args.cuda = not args.no_cuda and torch.cuda.is_available()``), is a flag of the same kind
    wherever the file reads it. Second, the conditional expressions of simple statements that test
    such a flag (``model.cuda() if use_cuda else model``, or ``... if not use_cuda else ...``),
    each with the branch that runs where CUDA is and the check. Third, the ids of the checks of
    flags that an ``if not <flag>:`` decides code for where the flag holds (:func:`_decides_where_true`),
    which has no Neuron branch, and of a notebook's flags that some cell cannot give a Neuron
    branch (``Options.notebook_flags``). A flag an earlier cell stored, which the cell inherits, is
    stored at the cell's top level."""
    from neuronize.transforms._helpers.device_choice import stored_attributes

    stored: dict[tuple[int, str], cst.BaseExpression] = {}  # (id of its scope, name) -> the check
    found: dict[int, tuple[cst.CSTNode, str, cst.BaseExpression]] = {}
    choices: list[tuple[cst.IfExp, str]] = []
    attributes = stored_attributes(ctx)

    def read(test: cst.BaseExpression, functions: tuple[cst.FunctionDef, ...]
             ) -> tuple[cst.CSTNode, str, cst.BaseExpression] | None:
        if isinstance(test, cst.Name) and any(name == test.value for _, name in stored):
            scope = binding_scope(test.value, functions, ctx.module)
            check = stored.get((id(scope), test.value))
            return (scope, test.value, check) if check is not None else None
        if isinstance(test, cst.Attribute) and (values := attributes.get(dotted_name(test) or "")):
            return ctx.module, dotted_name(test) or "", values[0]
        return None

    for earlier in ctx.inherited.body if ctx.inherited is not None else ():
        # a flag an earlier cell of the notebook stored: every cell testing it is part of its choice
        bound = assigned_value(earlier)
        if bound is not None and _neuron_test(ctx, bound[1]) is not None:
            stored[(id(ctx.module), bound[0])] = bound[1]
    negated: list[cst.If] = []  # ``if not <flag>:`` links
    for statement, functions in scoped_statements(ctx.module.body):
        for node, test, side in _flag_tests(statement) if stored or attributes else ():
            if (flag := read(test, functions)) is not None:
                found[id(node)] = flag
                if isinstance(node, cst.IfExp):
                    choices.append((node, side))
                elif side == "orelse":
                    negated.append(node)
        bound = assigned_value(statement)
        if bound is not None and _neuron_test(ctx, bound[1]) is not None:
            scope = functions[-1] if functions else ctx.module
            stored[(id(scope), bound[0])] = bound[1]
    flags = {key: check for key, (scope, name, check) in found.items()
             if not _reads_itself(name, check)
             and (len(attributes.get(name, ())) == 1 and _neuron_test(ctx, check) is not None
                  if "." in name else stored_once(scope, name) and _handed_on(ctx, scope, name) is None)}
    others = {id(node) for node, _ in choices} | {id(node) for node in negated}
    # a notebook's flag that some cell cannot give a Neuron branch: none of its tests here gains one
    elsewhere = {id(check) for scope, name, check in found.values()
                 if scope is ctx.module and name in ctx.options.notebook_flags}
    return ({key: check for key, check in flags.items() if key not in others},
            [(node, side, flags[id(node)]) for node, side in choices if id(node) in flags],
            {id(flags[id(link)]) for link in negated if id(link) in flags and _decides_where_true(link)} | elsewhere)


def reads_itself(stored: cst.CSTNode) -> bool:
    """The flag ``stored`` sets (``args.cuda = args.cuda and torch.cuda.is_available()``) reads its
    own earlier value: no Neuron branch can test it (:func:`_reads_itself`), so the check itself
    takes Neuron in."""
    value = getattr(stored, "value", None)
    return value is not None and any(_reads_itself(name, value) for name in assigned_names(stored))


def _reads_itself(name: str, check: cst.BaseExpression) -> bool:
    """The flag ``name`` is stored from a check that reads its earlier value (``args.cuda =
    args.cuda and torch.cuda.is_available()``): a Neuron branch testing the check's other
    conditions would read the value stored, which is False on Trainium."""
    return any(isinstance(node, (cst.Name, cst.Attribute)) and dotted_name(node) == name for node in iter_syntax(check))


def _decides_where_true(link: cst.If) -> bool:
    """``if not <flag>:`` has code that runs where the flag holds: an ``else`` (or ``elif``), or,
    past a body that leaves the block, the statements after it. That code is CUDA's side, which
    gains no Neuron branch there."""
    return link.orelse is not None or ends_early(link.body)


#: callees a flag may be handed to without deciding anything of the program's placements: what
#: prints, logs or formats it
_SHOWS = frozenset({"print", "str", "repr", "format", "info", "debug", "warning", "warn", "error", "log", "write"})


def _handed_on(ctx: FileContext, scope: cst.CSTNode, name: str) -> str | None:
    """Where the flag ``name`` leaves its scope's tests, if it does: passed to code of the project
    (``do_detect(model, img, use_cuda)``, whose ``if use_cuda: img = img.cuda()`` the file does not
    see), returned, or stored in an attribute or a container. Its tests in the file are then not
    the whole choice: a Neuron branch in front of them would place the model while the code it is
    handed to keeps the data on the CPU. PyTorch's own APIs (``DataLoader(pin_memory=use_cuda)``)
    and printing decide no placement. Found once per scope and name: the model's flags and NRN110
    both ask."""
    key = (f"handed-on {name}", id(scope))
    if key not in ctx.memo:
        ctx.memo[key] = _handed_to(ctx, scope, name)
    return ctx.memo[key]


def _handed_to(ctx: FileContext, scope: cst.CSTNode, name: str) -> str | None:
    for node in iter_syntax(scope):
        if isinstance(node, cst.Call) and any(_is_name(arg.value, name) for arg in node.args):
            callee = ctx.qualify(node.func) or dotted_name(node.func) or ""
            if callee.split(".")[0] != "torch" and callee.rsplit(".", 1)[-1] not in _SHOWS:
                return f"in `{callee or _source(node.func)}`, which it is handed to"
        elif isinstance(node, cst.Return) and node.value is not None and _is_name(node.value, name):
            return "in the callers it is returned to"
        elif isinstance(node, cst.Assign) and _is_name(node.value, name) \
                and any(not isinstance(target.target, cst.Name) for target in node.targets):
            return f"where `{_source(node.targets[0].target)}`, which stores it, is read"
    return None


def handed_on_flag(ctx: FileContext, stored: cst.CSTNode) -> str | None:
    """Where the flag ``stored`` sets (``use_cuda = torch.cuda.is_available()``, the node being
    visited in it) is handed on from its scope to code of the project (:func:`_handed_on`), if it is."""
    scope = next((anc for anc in ctx.ancestors() if isinstance(anc, (cst.FunctionDef, cst.Lambda))), ctx.module)
    return next((where for name in assigned_names(stored) if "." not in name
                 and (where := _handed_on(ctx, scope, name)) is not None), None)


def _is_name(node: cst.CSTNode, name: str) -> bool:
    return isinstance(node, cst.Name) and node.value == name


def _flag_tests(statement: cst.CSTNode) -> Iterator[tuple[cst.If | cst.IfExp, cst.BaseExpression, str]]:
    """The tests ``statement`` makes that may read a flag, each with its ``if`` link or conditional
    expression and the branch that runs where the test holds (``"orelse"`` under ``not``). A
    conditional expression behind a Neuron arm (``x.to("neuron") if <Neuron> else <it>``) has
    its Neuron choice already."""
    if isinstance(statement, cst.If):
        for link in chain_links(statement):
            yield link, *_unnegated(link.test)
    elif isinstance(statement, cst.SimpleStatementLine):
        choices = [node for node in iter_syntax(statement) if isinstance(node, cst.IfExp)]
        served = {id(node.orelse) for node in choices if asks_if_neuron(node.test)}
        for node in choices:
            if id(node) not in served:
                yield node, *_unnegated(node.test)


def _unnegated(test: cst.BaseExpression) -> tuple[cst.BaseExpression, str]:
    """``test`` without its ``not``s (:func:`without_not`), and the branch that runs where it holds."""
    flag, negated = without_not(test)
    return flag, "orelse" if negated else "body"


def feeds_detection(ctx: FileContext, stored: cst.CSTNode) -> bool:
    """``stored`` (``use_cuda = <check>``) is the flag a detection tests (``if use_cuda: device =
    "cuda"``) or a choice of a CUDA value reads (``model.cuda() if use_cuda else model``), which
    gains a Neuron branch or arm in front: the flag stays CUDA's."""
    found = model(ctx)
    value = getattr(stored, "value", None)
    return any(check is value and key in found.detection_links for key, check in found.flag_checks.items()) \
        or any(check is value for _, _, check in found.flag_arms)


def detection_link(ctx: FileContext, node: cst.If, chain: Sequence[cst.If] = (),
                   flags: dict[int, cst.BaseExpression] | None = None) -> bool:
    """``if torch.cuda.is_available(): <device> = "cuda"`` (or ``return "cuda"``), alone or in a
    chain: a detection, which gains a Neuron branch in front (:func:`neuron_first_detection`).
    Any choice of a CUDA value under the check is one too (``backend = "nccl"``, ``model =
    model.cuda()``, ``dtype = torch.float16``): simple statements whose Neuron copy leaves nothing
    of CUDA behind (:func:`_choice_body`). The check may be one of several conditions joined by
    ``and`` (``not args.cpu and torch.cuda.is_available()``), which the Neuron branch keeps; and
    in a chain (``chain``: its links) whose every branch sets one variable to a device
    (``arg = "cuda:0"`` after CUDA's own logging, ``arg = "mps"``, ``arg = "cpu"``), the CUDA
    branch is a detection whatever else it does (:func:`_chain_choice`). The model reads the
    ``else`` of ``if not torch.cuda.is_available(): <the CPU's> else: <CUDA's>`` as one too
    (:func:`_negated_detection`)."""
    if _neuron_test(ctx, (flags or {}).get(id(node), node.test)) is None:
        return False
    return _assigns_cuda(node.body) or _choice_body(ctx, node.body) or _chain_choice(node, chain) is not None


def _negated_detection(ctx: FileContext, node: cst.If) -> bool:
    """``if not torch.cuda.is_available(): device = "cpu" else: device = "cuda"``: the CUDA branch
    is the ``else``, the check the negated test's operand."""
    test = node.test
    return (isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not) and isinstance(node.orelse, cst.Else)
            and _neuron_test(ctx, test.expression) is not None
            and (_assigns_cuda(node.orelse.body) or _choice_body(ctx, node.orelse.body) or _else_choice(node) is not None))


def _else_choice(node: cst.If) -> cst.Assign | None:
    """:func:`_block_choice` of a negated detection: the ``else`` (``device = "cuda:0"``, then CUDA's
    own set-up) chooses what the body sets to another device (``device = "cpu"``)."""
    return _block_choice(node.orelse.body, [node.body]) if isinstance(node.orelse, cst.Else) else None


def cuda_branch(ctx: FileContext, link: cst.If) -> cst.CSTNode:
    """The branch of the detection or dispatch link ``link`` that runs on CUDA: its body, or its
    ``else`` where the test is negated (:attr:`DeviceModel.negated_links`)."""
    return link.orelse if link.orelse is not None and id(link) in model(ctx).negated_links else link.body


def _neuron_test(ctx: FileContext, test: cst.BaseExpression) -> tuple[cst.BaseExpression, tuple[ImportRequest, ...]] | None:
    """The test of the Neuron branch in front of a detection asking ``test``: "the accelerator is
    Neuron", in place of ``torch.cuda.is_available()`` (or a count of CUDA devices read as one:
    ``torch.cuda.device_count() > 0``) among conditions joined by ``and``; None when ``test`` is no
    such check or another of its conditions asks CUDA."""
    from neuronize.transforms._helpers.device_choice import (
        available_polarities, only_and, replace_is_available, without_cuda_probes)

    test = _count_as_check(ctx, test)
    if not is_cuda_available_call(ctx, test) and (available_polarities(ctx, test) != {False} or not only_and(test)):
        return None
    present, imports = per_target.neuron_present(ctx)
    replaced = without_cuda_probes(ctx, replace_is_available(ctx, test, present))
    hidden: cst.CSTNode = replaced.visit(_SettingsHidden(ctx))  # type: ignore[assignment]
    return None if cuda_left(hidden) else (replaced, imports)


def _count_as_check(ctx: FileContext, test: cst.BaseExpression) -> cst.BaseExpression:
    """``test`` with each condition that some CUDA device is there (``torch.cuda.device_count()``
    as a truth value, ``> 0``, ``>= 1``, ``!= 0``), among conditions joined by ``and``, read as
    the availability check it is (``torch.cuda.is_available()``, spelled as the count was)."""
    if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.And):
        left, right = _count_as_check(ctx, test.left), _count_as_check(ctx, test.right)
        return test if left is test.left and right is test.right else test.with_changes(left=left, right=right)
    call = test.left if isinstance(test, cst.Comparison) else test
    if isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute) and _count_test(ctx, test, ()) is True:
        return cst.Call(func=call.func.with_changes(attr=cst.Name("is_available")))
    return test


class _SettingsHidden(cst.CSTTransformer):
    """A test with the user's own settings named after CUDA (``args.cuda``, ``not opt.no_cuda``,
    ``use_cuda``) hidden: they choose the accelerator, and the Neuron branch keeps them as the
    original test did (``args.cuda and <Neuron is here>``); what asks CUDA itself
    (``torch.cuda...``, ``x.is_cuda``, a ``"cuda"`` string) stays to be seen."""

    def __init__(self, ctx: FileContext) -> None:
        super().__init__()
        self.ctx = ctx
        self.attributes: set[int] = set()  # the names after a dot: parts of their attribute, not variables

    def _setting(self, node: cst.Attribute | cst.Name) -> bool:
        name = node.attr.value if isinstance(node, cst.Attribute) else node.value
        return "cuda" in name.lower() and name != "is_cuda" and not (self.ctx.qualify(node) or "").startswith("torch")

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        self.attributes.add(id(node.attr))
        return not self._setting(node)

    def leave_Attribute(self, original: cst.Attribute, updated: cst.Attribute) -> cst.BaseExpression:
        return cst.Name("setting") if self._setting(original) else updated

    def leave_Name(self, original: cst.Name, updated: cst.Name) -> cst.BaseExpression:
        return cst.Name("setting") if id(original) not in self.attributes and self._setting(original) else updated


def _chain_choice(cuda: cst.If, chain: Sequence[cst.If]) -> cst.Assign | None:
    """The assignment ``name = "<CUDA device>"`` among the statements of the CUDA branch of a
    chain whose every other branch (``else`` included, at least one) sets ``name`` to another
    device string: the one statement of that branch a Neuron branch needs (:func:`_block_choice`)."""
    others = [link.body for link in chain if link is not cuda]
    tail = chain[-1].orelse if chain else None
    others += [tail.body] if isinstance(tail, cst.Else) else []
    return _block_choice(cuda.body, others)


def _block_choice(cuda: cst.BaseSuite, others: Sequence[cst.BaseSuite]) -> cst.Assign | None:
    """The assignment ``name = "<CUDA device>"`` in the block ``cuda``, where every block of
    ``others`` (at least one) sets ``name`` to another device string. The CUDA block may pick its
    CUDA device in an ``if``/``else`` of its own (``device = f"cuda:{rank}"`` when distributed,
    else ``"cuda:0"``), each of whose branches sets ``name``."""
    chosen = _device_set(cuda, True)
    if chosen is None or not others:
        return None
    name = target_name(chosen.targets[0].target)
    sets = [_device_set(block, False) for block in others]
    return chosen if all(s is not None and target_name(s.targets[0].target) == name for s in sets) else None


def _device_set(block: cst.BaseSuite, cuda_side: bool) -> cst.Assign | None:
    """The last statement of ``block`` that sets a name to a CUDA device (``cuda_side``), or to
    another device."""
    lines = block.body if isinstance(block, cst.IndentedBlock) else []
    for line in reversed(lines):
        small = line.body[0] if isinstance(line, cst.SimpleStatementLine) and len(line.body) == 1 else None
        if isinstance(small, cst.Assign) and len(small.targets) == 1 and isinstance(small.targets[0].target, cst.Name):
            value = string_value(_device_string(small.value))
            kind = value.split(":")[0] if value is not None else None
            if (kind == "cuda" or _cuda_value(small.value)) if cuda_side else kind in OTHER_DEVICES:
                return small
        elif cuda_side and isinstance(line, cst.If) and isinstance(line.orelse, cst.Else):
            sets = [_device_set(line.body, True), _device_set(line.orelse.body, True)]
            if sets[0] is not None and sets[1] is not None \
                    and target_name(sets[0].targets[0].target) == target_name(sets[1].targets[0].target):
                return sets[-1]
    return None


#: the statements a choice's branch may hold: values set, returned, or calls made with them
_CHOICE_STATEMENTS = (cst.Assign, cst.AnnAssign, cst.AugAssign, cst.Return, cst.Expr, cst.Pass)


def _choice_body(ctx: FileContext, body: cst.BaseSuite) -> bool:
    smalls = small_statements(body)
    if not smalls or not all(isinstance(s, _CHOICE_STATEMENTS) for s in smalls) \
            or not _holds_cuda_value(body):
        return False  # no CUDA value in it: the check is extended instead (NRN110)
    copy: cst.CSTNode = body.visit(_ToNeuron(ctx))  # type: ignore[assignment]
    return not _blocked(ctx, copy)


def _blocked(ctx: FileContext, copy: cst.CSTNode, *, row: bool = False) -> str:
    """Why the Neuron copy of a CUDA branch cannot run on Neuron: CUDA left in it, or a CUDA-only
    path (``.half()``, flash-attn...); ``""`` when it can. In a ``row`` of a table of hosts a
    framework's ``"GPU"`` is the host's label, not a device to run on."""
    from neuronize.transforms._helpers.cuda_guard import scan

    marker = scan(ctx, [copy], gpu_words=not row).marker
    return cuda_left(copy) or (f"uses {marker}" if marker else "") or _branch_import(copy)


def _branch_import(copy: cst.CSTNode) -> str:
    """A module the CUDA branch imports for itself (``import dropout_layer_norm`` under ``if SYSTEM
    == "cuda":``), neither PyTorch's nor the standard library's: imported only where CUDA is, it is
    CUDA's (a compiled kernel, a vendor library), and a Neuron copy would import it on Neuron."""
    for node in iter_syntax(copy):
        if isinstance(node, cst.Import) or isinstance(node, cst.ImportFrom) and not node.relative:
            for imported in imported_names(node):
                top = imported.module.split(".")[0]
                if top != "torch" and top not in sys.stdlib_module_names:
                    return f"imports `{imported.module}`, which only CUDA's path imports"
    return ""


@dataclass(frozen=True)
class Arm:
    """The Neuron arm a choice by ``torch.cuda.is_available()`` gains (:func:`value_choice`)."""

    replacement: cst.IfExp | None  # None where none can be modelled on the CUDA value (``why``)
    imports: tuple[ImportRequest, ...] = ()
    why: str = ""


def value_choice(ctx: FileContext, node: cst.IfExp,
                 flag: tuple[str, cst.BaseExpression] | None = None) -> Arm | None:
    """``torch.float16 if torch.cuda.is_available() else torch.float32``, ``"nccl" if ... else
    "gloo"``: a conditional expression choosing a CUDA value, with a Neuron arm in front
    (``torch.bfloat16 if <Neuron> else <the original>``, see ``_device_choice.neuron_arm``), the
    CUDA value made Neuron's by :class:`_ToNeuron`. None where the CUDA side names no CUDA value
    (``4 if torch.cuda.is_available() else 0``: works on both, so the check is extended instead).
    ``flag``: for a choice by a flag (:attr:`DeviceModel.flag_arms`), its CUDA side and check; its
    CUDA side may also be one that only fetches a tensor back to the host (``out.numpy() if not
    use_cuda else out.cpu().numpy()``), which the tensors of Neuron's other branches need too."""
    side = flag[0] if flag is not None else available_side(ctx, node)
    branch = getattr(node, side) if side is not None else None
    if side is None or branch is None or not (_holds_cuda_value(branch) or flag is not None and _fetches(node, side)):
        return None
    copier = _ToNeuron(ctx)
    copy = branch.visit(copier)
    blocked = _blocked(ctx, copy)
    if blocked:
        return Arm(None, why=f"its CUDA value {blocked}")
    available, imports = per_target.available(ctx)
    check = flag[1] if flag is not None else None
    return Arm(neuron_arm(ctx, node, side, copy, available, check), (*imports, *copier.imports))


def choice_group(ctx: FileContext, node: cst.CSTNode, default: str | None) -> str | None:
    """The edit group of a choice that gains Neuron: the file's process-group edits
    (:func:`process_group_edits`) where it chooses an NCCL backend (it moves with the group's other
    edits: a `"neuron"` group next to a kept `torch.cuda.set_device` runs nowhere), else ``default``."""
    return process_group_edits(ctx) if _holds_nccl(node) else default


def _holds_nccl(node: cst.CSTNode) -> bool:
    """``node`` names an NCCL process-group backend (``"nccl"``) somewhere."""
    return any(isinstance(n, cst.SimpleString) and nccl_backend(string_value(n) or "") for n in iter_syntax(node))


def in_value_arm(ctx: FileContext) -> bool:
    """The node being visited is the CUDA value of a choice that gains a Neuron arm
    (:func:`value_choice`): it stays CUDA's."""
    child: cst.CSTNode | None = ctx.stack[-1] if ctx.stack else None
    for anc in ctx.ancestors():
        if isinstance(anc, cst.IfExp) and child is not anc.test:
            side = available_side(ctx, anc)
            if side is not None and getattr(anc, side) is child:
                arm = value_choice(ctx, anc)
                return arm is not None and arm.replacement is not None
        if isinstance(anc, (cst.BaseSmallStatement, cst.BaseCompoundStatement)):
            return False
        child = anc
    return False


class _CudaValueFinder(cst.CSTVisitor):
    """The first CUDA value (device string, ``.cuda()``, ``"nccl"``) outside the choices that give
    Neuron an arm of their own (availability choices, detections, dispatches). With ``aware``, on
    the neuron target, a move the placement rules write host-aware is no such value: a plain
    ``.cuda()`` (NRN102) and ``"cuda"`` as the device of ``.to(...)`` or of a ``device=`` (NRN101)
    become ``"neuron" if <Neuron is here> else "cuda"``."""

    def __init__(self, ctx: FileContext, aware: bool) -> None:
        super().__init__()
        self.ctx = ctx
        self.found: str | None = None
        self.served = set(model(ctx).cuda_links)
        self.aware = aware and keeps_cuda_hosts(ctx)

    def on_visit(self, node: cst.CSTNode) -> bool:
        if self.found is not None or id(node) in self.served:
            return False
        if isinstance(node, cst.IfExp) and has_is_available(self.ctx, node.test):
            return False  # the idiom (NRN101) or a value choice (NRN110) gives Neuron its arm
        if self.aware and isinstance(node, cst.Call):
            self.served |= {id(arg.value) for arg in node.args if string_value(arg.value) == "cuda" and (
                arg.keyword is None and target_name(node.func) == "to"
                or arg.keyword is not None and arg.keyword.value == "device")}
        if cuda_literal(node) is not None or (isinstance(node, cst.SimpleString)
                                              and nccl_backend(string_value(node) or "") is not None):
            self.found = _source(node)
        elif isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) \
                and node.func.attr.value == "cuda" and self.ctx.qualify(node.func) is None \
                and not (self.aware and not node.args):
            self.found = _source(node)
        return self.found is None


def unserved_cuda_value(ctx: FileContext, nodes: list[cst.CSTNode | None], *, aware: bool = False) -> str | None:
    """The first CUDA value in ``nodes`` (:class:`_CudaValueFinder`): code that, under a check
    extended to Neuron, the placement rules would move to Neuron, taking CUDA off its path."""
    finder = _CudaValueFinder(ctx, aware)
    for node in nodes:
        if node is not None and finder.found is None:
            node.visit(finder)
    return finder.found


def in_detection(ctx: FileContext) -> bool:
    """The node being visited is the test or the body of a detection's CUDA branch, which the
    model gives a Neuron branch in front of it and keeps for CUDA."""
    kept = model(ctx).detection_links
    if not kept:
        return False
    child: cst.CSTNode | None = ctx.stack[-1] if ctx.stack else None
    for anc in ctx.ancestors():
        if isinstance(anc, cst.If) and id(anc) in kept and (child is anc.test or child is cuda_branch(ctx, anc)):
            return True
        child = anc
    return False


def _assigns_cuda(body: cst.BaseSuite) -> bool:
    found = False
    for small in small_statements(body):
        if isinstance(small, cst.Return) and small.value is not None and _cuda_value(small.value):
            found = True
        elif isinstance(small, cst.Assign) and len(small.targets) == 1 and _cuda_value(small.value) \
                and device_named(target_name(small.targets[0].target)):
            found = True
        else:
            return False
    return found


def _device_string(node: cst.BaseExpression) -> cst.BaseExpression:
    """The device string of ``torch.device("mps")``; any other ``node`` as it is."""
    if isinstance(node, cst.Call) and node.args and target_name(node.func) == "device":
        return node.args[0].value
    return node


def _cuda_value(node: cst.BaseExpression) -> bool:
    return cuda_literal(_device_string(node)) is not None


def _as_neuron(value: cst.BaseExpression) -> cst.BaseExpression:
    """A CUDA device value as Neuron's, in its form: ``"neuron"``, or ``torch.device("neuron")`` for
    ``torch.device("cuda", rank)`` (a device object stays one: the program may read its ``.type``)."""
    string = _device_string(value)
    if string is value or not isinstance(value, cst.Call):
        return string_like(value, "neuron")
    return value.with_changes(args=[value.args[0].with_changes(value=string_like(string, "neuron"), comma=cst.MaybeSentinel.DEFAULT)])


def neuron_first_detection(ctx: FileContext, node: cst.If, chain: Sequence[cst.If] = ()
                           ) -> tuple[cst.If, tuple[ImportRequest, ...], bool]:
    """``if <Neuron is here>: <the CUDA body for "neuron">`` in front of ``node``, which becomes
    its ``elif`` and keeps CUDA and every other host; in a chain that sets one variable in every
    branch (:func:`_chain_choice`), the Neuron body sets it to ``"neuron"`` and nothing else.
    Also its imports, and whether the copy drops a CUDA device index (``f"cuda:{rank}"``)."""
    negated = id(node) in model(ctx).negated_links
    asked = node.test.expression if negated else model(ctx).flag_checks.get(id(node), node.test)  # type: ignore[attr-defined]
    found = _neuron_test(ctx, asked)
    assert found is not None  # a detection link (:func:`detection_link`)
    test, imports = found
    cuda = node.orelse.body if negated and isinstance(node.orelse, cst.Else) else node.body
    chosen = None if _assigns_cuda(cuda) or _choice_body(ctx, cuda) else _else_choice(node) if negated \
        else _chain_choice(node, chain)
    copier = _ToNeuron(ctx)
    if chosen is not None:
        assigned = chosen.with_changes(value=_as_neuron(chosen.value))
        body: cst.BaseSuite = cst.IndentedBlock(body=[cst.SimpleStatementLine(body=[assigned])])
    else:
        body = cuda.visit(copier)  # type: ignore[assignment]
        if isinstance(body, cst.IndentedBlock):  # the blank lines and comments closing CUDA's block stay its own
            body = body.with_changes(footer=())
    head = cst.If(test=test, body=body, orelse=node.with_changes(leading_lines=()),
                  leading_lines=node.leading_lines)
    return head, (*imports, *copier.imports), copier.dropped_index


def choice_addition(ctx: FileContext, container: cst.List | cst.Tuple) -> tuple[cst.List | cst.Tuple, str, tuple[ImportRequest, ...]] | None:
    """A list of accepted devices (``choices=``, a validation) with the migrated default next to
    ``"cuda"``: the new list, how a message shows what was added, its imports; None when there is
    nothing to add. On the accelerator target the default's own expression is added (it is
    ``"mps"`` on a Mac) unless the list already holds a device chosen from the accelerator."""
    if default_plan(ctx).kept is not None:
        return None  # the default stays: a dispatch would reject the target's device
    target = per_target.target(ctx)
    added = "cpu" if target == per_target.CPU else "neuron"
    value, imports = per_target.device(ctx) if target == per_target.ACCELERATOR else (None, ())
    if value is not None and any(isinstance(e, cst.Element) and chosen_from_device(ctx, e.value)
                                 for e in container.elements):
        return None
    new = with_choice(container, added, value)
    if new is None:
        return None
    return new, f'"{added}"' if value is None else per_target.say(ctx, "{device}"), imports


# -- guards kept for CUDA, and guards that cover both devices --------------------------------------
#: ``torch.cuda`` calls whose migration works the same on CUDA and Neuron (``torch.accelerator.*``):
#: a ``"cuda"`` guard around nothing else can cover both devices
HOST_NEUTRAL = frozenset({"synchronize", "empty_cache"})


def _names_cuda(test: cst.BaseExpression) -> bool:
    """``test`` holds only where the device is CUDA: ``x == "cuda"`` (or the process-group backend
    ``backend == "nccl"``), ``"cuda" in x``,
    ``x.startswith("cuda")``, ``x == Backend.CUDA`` (a member of the program's own device enum), a
    predicate of the project's named for CUDA (``backend_supports_cuda(backend)``), or an ``and``
    with one of them."""
    if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.And):
        return _names_cuda(test.left) or _names_cuda(test.right)
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
        target = test.comparisons[0]
        if isinstance(target.operator, (cst.Equal, cst.Is)):
            # NCCL runs only on CUDA: a branch on the process group's "nccl" backend is CUDA's
            return bool({"cuda", "nccl"} & {string_value(target.comparator), string_value(test.left)}) \
                or cuda_member(target.comparator) or cuda_member(test.left)
        if isinstance(target.operator, cst.In):
            return string_value(test.left) == "cuda"
    if isinstance(test, cst.Call) and isinstance(test.func, cst.Attribute) and test.func.attr.value == "startswith":
        return len(test.args) == 1 and string_value(test.args[0].value) == "cuda"
    if isinstance(test, cst.Call):  # the project's own predicate named for CUDA: `backend_supports_cuda(b)`
        name = dotted_name(test.func) or ""
        return not name.startswith("torch.") and _CUDA_PREDICATE.search(name.rsplit(".", 1)[-1]) is not None \
            and "available" not in name
    return False


#: a predicate's name that says CUDA (`supports_cuda`, `is_cuda_backend`), not CUDA's availability
_CUDA_PREDICATE = re.compile(r"(?:^|_)cuda(?:$|_)", re.IGNORECASE)


def cuda_side(node: cst.If | cst.IfExp) -> cst.CSTNode | None:
    """The branch of ``node`` that runs only where its device is CUDA: the body under a test that
    names CUDA (:func:`_names_cuda`), the ``else`` (or the conditional expression's second arm)
    under ``x != "cuda"`` or ``not <such a test>``; None when neither holds only on CUDA. The
    fact every kept-for-CUDA and covers-both question asks, for ``if`` and conditional
    expression alike."""
    test = node.test
    if _names_cuda(test):
        return node.body
    negated = isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not) and _names_cuda(test.expression)
    if negated or isinstance(test, cst.Comparison) and len(test.comparisons) == 1 \
            and isinstance(test.comparisons[0].operator, cst.NotEqual) \
            and "cuda" in (string_value(test.left), string_value(test.comparisons[0].comparator)):
        return node.orelse if isinstance(node.orelse, (cst.Else, cst.BaseExpression)) else None
    return None


def _stand_in(value: cst.BaseExpression) -> bool:
    """A value that does nothing: a constant, ``None``, or a ``lambda`` returning one (what a
    conditional expression offers the hosts without CUDA in place of a CUDA function)."""
    if isinstance(value, cst.Lambda):
        return _stand_in(value.body)
    if isinstance(value, cst.Name):
        return value.value in ("None", "True", "False")
    return isinstance(value, (cst.Integer, cst.Float, cst.SimpleString))


def covers_both(ctx: FileContext, node: cst.If | cst.IfExp) -> bool:
    """A guard whose CUDA side (:func:`cuda_side`) the runtime rules make host-neutral
    (:data:`HOST_NEUTRAL`), which can take Neuron too (:func:`covering`) while CUDA keeps it:
    ``if device_type == "cuda": torch.cuda.synchronize()`` (an ``if`` with no ``else``), or
    ``torch.cuda.synchronize if device_type == "cuda" else (lambda: None)`` (a conditional
    expression whose other arm only stands in: :func:`_stand_in`)."""
    key = ("covers-both", id(node))
    if key not in ctx.memo:
        ctx.memo[key] = _covers_both(ctx, node)
    return ctx.memo[key]


def _covers_both(ctx: FileContext, node: cst.If | cst.IfExp) -> bool:
    from neuronize.transforms._helpers.cuda_guard import migrated_arm_call, migrated_body_calls
    from neuronize.transforms._helpers.device_choice import has_is_available

    if has_is_available(ctx, node.test):
        return False  # `device.startswith("cuda") and torch.cuda.is_available()`: the check keeps Neuron out
    side = cuda_side(node)
    if isinstance(node, cst.If):
        if side is not node.body or node.orelse is not None:
            return False
        if places_on_tested(node):
            return True
        calls = migrated_body_calls(ctx, node.body)
    else:
        other = node.orelse if side is node.body else node.body
        if side is None or not _stand_in(other):
            return False
        calls = migrated_arm_call(ctx, side)  # type: ignore[arg-type]
    return calls is not None and set(calls) <= HOST_NEUTRAL


def places_on_tested(node: cst.If) -> bool:
    """Every statement of ``node``'s body moves a value onto the device its test compares with
    ``"cuda"`` (``if "cuda" in args.device: w = w.to(self.device)``, the same name): device-agnostic
    code that a device of any kind may take, so the guard covers Neuron too and CUDA keeps it."""
    tested = _tested_device(node.test)
    lines = node.body.body if isinstance(node.body, cst.IndentedBlock) else [node.body]
    if tested is None or not all(isinstance(line, (cst.SimpleStatementLine, cst.SimpleStatementSuite)) for line in lines):
        return False
    smalls = [small for line in lines for small in line.body]  # type: ignore[union-attr]
    return bool(smalls) and all(
        isinstance(small, cst.Assign) and isinstance(small.value, cst.Call) and isinstance(small.value.func, cst.Attribute)
        and small.value.func.attr.value == "to" and len(small.value.args) == 1
        and last_name(small.value.args[0].value) == tested for small in smalls)


def _tested_device(test: cst.BaseExpression) -> str | None:
    """The last name of the value ``test`` compares with ``"cuda"`` (``args.RUN_DEVICE`` in
    ``"cuda" in args.RUN_DEVICE``, ``device`` in ``device == "cuda"`` or ``device.type ==
    "cuda"``), for a single ``==`` or ``in`` comparison; None otherwise."""
    if not (isinstance(test, cst.Comparison) and len(test.comparisons) == 1):
        return None
    target = test.comparisons[0]
    if isinstance(target.operator, cst.In) and string_value(test.left) == "cuda":
        value: cst.BaseExpression = target.comparator
    elif isinstance(target.operator, cst.Equal) and "cuda" in (string_value(test.left), string_value(target.comparator)):
        value = target.comparator if string_value(test.left) == "cuda" else test.left
        if isinstance(value, cst.Attribute) and value.attr.value == "type":
            value = value.value
    else:
        return None
    return last_name(value) if isinstance(value, (cst.Name, cst.Attribute)) else None


def covered_side(ctx: FileContext, node: cst.If | cst.IfExp) -> cst.CSTNode | None:
    """The CUDA side of a guard that covers both devices (:func:`covers_both`), else None."""
    return cuda_side(node) if covers_both(ctx, node) else None


def covered_calls(ctx: FileContext, node: cst.If | cst.IfExp) -> str:
    """The ``torch.cuda`` calls on the CUDA side of a guard that covers both devices, for a message
    (``"`torch.cuda.synchronize()`"``; a function reference without the parentheses)."""
    from neuronize.transforms._helpers.cuda_guard import migrated_arm_call, migrated_body_calls

    side = cuda_side(node)
    if isinstance(node, cst.If):
        return ", ".join(f"`torch.cuda.{c}()`" for c in migrated_body_calls(ctx, node.body) or [])
    called = "()" if isinstance(side, cst.Call) else ""
    return ", ".join(f"`torch.cuda.{c}{called}`" for c in migrated_arm_call(ctx, side) or [])  # type: ignore[arg-type]


def widening_group(ctx: FileContext, node: cst.If | cst.IfExp) -> str:
    """The edit group of a guard that covers both devices: its test made to take Neuron too and the
    host-neutral edits of its CUDA side. Either alone is wrong: a widened test around a CUDA call
    breaks Neuron, a host-neutral call behind a test Neuron never passes changes nothing there."""
    scope = next((a for a in reversed(ctx.stack) if isinstance(a, cst.FunctionDef)), None)  # `node` is on the walk
    where = f"in {scope.name.value}()" if scope is not None else "at module level"
    return f"guard {short(node.test, 40)} {where}"  # like the decision stage's same-test groups


def widened_guard(ctx: FileContext) -> cst.If | cst.IfExp | None:
    """The guard covering both devices whose CUDA side holds the node being visited, if any."""
    child: cst.CSTNode | None = ctx.stack[-1] if ctx.stack else None
    for anc in ctx.ancestors():
        if isinstance(anc, (cst.If, cst.IfExp)) and child is not anc.test and covered_side(ctx, anc) is child:
            return anc
        if isinstance(anc, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            return None
        child = anc
    return None


def covering(test: cst.BaseExpression) -> cst.BaseExpression:
    """``test`` with each comparison with ``"cuda"`` made to hold for ``"neuron"`` too:
    ``x == "cuda"`` -> ``x in ("cuda", "neuron")``, ``x != "cuda"`` -> ``x not in (...)``,
    ``x.startswith("cuda")`` -> ``x.startswith(("cuda", "neuron"))``, ``"cuda" in x`` ->
    ``"cuda" in x or "neuron" in x`` (parenthesised as an operand)."""
    covered = _covered(test)
    if isinstance(covered, cst.BooleanOperation) and not test.lpar:
        return covered.with_changes(lpar=(), rpar=())  # a whole test needs no parentheses of its own
    return covered


def _covered(test: cst.BaseExpression) -> cst.BaseExpression:
    if isinstance(test, cst.BooleanOperation):
        return test.with_changes(left=_covered(test.left), right=_covered(test.right))
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        return test.with_changes(expression=_covered(test.expression))
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
        target = test.comparisons[0]
        left, right = test.left, target.comparator
        if isinstance(target.operator, (cst.Equal, cst.NotEqual)):
            literal, other = (right, left) if string_value(right) == "cuda" else (left, right)
            if string_value(literal) != "cuda":
                return test
            pair = cst.Tuple([cst.Element(literal.with_changes(lpar=(), rpar=())),
                              cst.Element(string_like(literal, "neuron").with_changes(lpar=(), rpar=()))])
            op = cst.In() if isinstance(target.operator, cst.Equal) else cst.NotIn()
            return cst.Comparison(left=other, comparisons=[cst.ComparisonTarget(op, pair)],
                                  lpar=test.lpar, rpar=test.rpar)
        if isinstance(target.operator, cst.In) and string_value(left) == "cuda":
            neuron = test.with_changes(left=string_like(left, "neuron"), lpar=(), rpar=())
            both = cst.BooleanOperation(left=test.with_changes(lpar=(), rpar=()), operator=cst.Or(), right=neuron)
            return both.with_changes(lpar=test.lpar or [cst.LeftParen()], rpar=test.rpar or [cst.RightParen()])
    if isinstance(test, cst.Call) and isinstance(test.func, cst.Attribute) and test.func.attr.value == "startswith" \
            and len(test.args) == 1 and string_value(test.args[0].value) == "cuda":
        literal = test.args[0].value
        pair = cst.Tuple([cst.Element(literal), cst.Element(string_like(literal, "neuron"))])
        return test.with_changes(args=[test.args[0].with_changes(value=pair)])
    return test


def _kept_guard(ctx: FileContext, node: cst.If | cst.IfExp, side: cst.CSTNode) -> bool:
    """``side`` of ``node`` is kept for CUDA: it is the CUDA side (:func:`cuda_side`) of a test
    that holds only on CUDA (``device == "cuda"``, ``device.type != "cuda"`` for the ``else``)
    and cannot cover Neuron too (:func:`covers_both`), in an ``if`` or a conditional expression
    alike; or ``node`` checks ``torch.cuda.is_available()`` around a CUDA-only path (which NRN110
    keeps), or a flag the project stored from a CUDA capability probe in another module."""
    key = ("kept-cuda-guard", id(side))
    if key not in ctx.memo:
        from neuronize.transforms._helpers.cuda_guard import guarded_code, scan
        from neuronize.transforms._helpers.device_choice import selection_if, selection_ifexp

        if cuda_side(node) is not None:
            chooses = selection_if(node) if isinstance(node, cst.If) else selection_ifexp(ctx, node)
            kept = cuda_side(node) is side and not chooses and not covers_both(ctx, node)
        elif _imported_probe_flag(ctx, node.test):
            kept = side is node.body
        elif (counted := _count_test(ctx, node.test)) is not None:
            kept = side is (node.body if counted else node.orelse)
        else:
            kept = (isinstance(node, cst.If) and side is _available_side(ctx, node)
                    and (scan(ctx, guarded_code(ctx, node)).marker is not None
                         or unserved_cuda_value(ctx, [node.body, node.orelse]) is not None))
        ctx.memo[key] = kept
    return ctx.memo[key]


def _available_side(ctx: FileContext, node: cst.If) -> cst.CSTNode | None:
    """The side of ``node`` that runs only where CUDA is available: the body of ``if
    torch.cuda.is_available():``; the ``else`` (or ``elif`` chain) of ``if not
    torch.cuda.is_available():``, alone or joined by ``or`` (``if not torch.cuda.is_available() or
    args.cpu:``), which holds wherever CUDA is missing."""
    from neuronize.transforms._helpers.device_choice import available_polarities

    polarities = available_polarities(ctx, node.test)
    if polarities == {False}:
        return node.body
    test = node.test
    negated = (isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not)
               or isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.Or))
    return node.orelse if polarities == {True} and negated else None


#: comparisons of a count with a small constant, by whether they hold where there is a GPU
_COUNT_HOLDS: dict[tuple[type[cst.BaseCompOp], int | None], bool] = {(cst.Equal, 0): False, (cst.LessThan, 1): False, (cst.LessThanEqual, 0): False,
                (cst.GreaterThan, 0): True, (cst.GreaterThanEqual, 1): True, (cst.NotEqual, 0): True}


def _count_test(ctx: FileContext, test: cst.BaseExpression,
                functions: tuple[cst.FunctionDef, ...] | None = None) -> bool | None:
    """Whether ``test`` holds where CUDA has devices, for a test of their number
    (``torch.cuda.device_count() > 0``, ``n_gpus == 0`` after ``n_gpus = torch.cuda.device_count()``,
    stored once but for resets to 0, ``not n_gpus``): True on its CUDA side is the body, False the ``else``; None
    for any other test. Neuron counts no CUDA device: that side is CUDA's only."""
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        inner = _count_test(ctx, test.expression, functions)
        return None if inner is None else not inner
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1 and _counts_cuda(ctx, test.left, functions):
        target = test.comparisons[0]
        bound = target.comparator
        value = int(bound.value) if isinstance(bound, cst.Integer) and bound.value.isdigit() else None
        return _COUNT_HOLDS.get((type(target.operator), value))
    return True if _counts_cuda(ctx, test, functions) else None


def _counts_cuda(ctx: FileContext, node: cst.BaseExpression, functions: tuple[cst.FunctionDef, ...] | None = None) -> bool:
    """``node`` is ``torch.cuda.device_count()``, or a name stored from it once in the scope it
    resolves to (``functions``: the functions around ``node``, outermost first; by default those
    around the node being visited)."""
    if isinstance(node, cst.Call):
        return not node.args and ctx.qualify(node.func) == "torch.cuda.device_count"
    if not isinstance(node, cst.Name) or b"device_count" not in ctx.source:
        return False
    if functions is None:
        functions = tuple(a for a in reversed(list(ctx.ancestors())) if isinstance(a, cst.FunctionDef))
    scope = binding_scope(node.value, functions, ctx.module)
    stored = [bound[1] for statement in scope_statements(scope)
              if (bound := assigned_value(statement)) is not None and bound[0] == node.value]
    if len(stored) != 1 or not _counts_cuda(ctx, stored[0], functions):
        return False
    zeros = sum(1 for found in iter_syntax(scope) if isinstance(found, cst.Assign) and len(found.targets) == 1
                and isinstance(found.targets[0].target, cst.Name) and found.targets[0].target.value == node.value
                and isinstance(found.value, cst.Integer) and found.value.value == "0")
    return binding_counts(scope, (node.value,), own_scope=True)[node.value] - zeros == 1  # `n = 0` agrees with it


def _imported_probe_flag(ctx: FileContext, test: cst.BaseExpression) -> bool:
    """``test`` is a flag another module of the project stored from a CUDA capability probe
    (``from .utils import _SUPPORTS_FLASH``, :mod:`neuronize.analysis.probe_flags`): False on
    Neuron, whatever this file does."""
    name = last_name(test) if isinstance(test, (cst.Name, cst.Attribute)) else None
    if name is None or name not in ctx.options.probe_flags:
        return False
    return not stores(ctx.source, name)  # the module that stores it asks the probe itself (NRN110, NRN910)


def pins_outside_cuda_code(ctx: FileContext, pins: str) -> str | None:
    """``pins`` (the edit group the device edits beside a placement kept on CUDA wait for), or
    None where the node being visited runs only on CUDA (:func:`cuda_keeping`): Neuron never
    takes that code, so nothing beside it needs to wait."""
    return pins if cuda_keeping(ctx) is None else None


def cuda_keeping(ctx: FileContext) -> str | None:
    """Whether the node being visited runs only on CUDA and stays so, and what a finding says
    about it: None where it does not; ``""`` (nothing to say) in a dispatch's or a detection's
    CUDA branch, which get a Neuron branch of their own, and past the Neuron test of a choice
    the migration made (``if <Neuron>: ... else: <the original>``, ``if not <Neuron>: <the
    original>``); the reason on the CUDA side of a guard kept for CUDA (:func:`_kept_guard`: an
    ``if`` body or ``else``, a conditional expression's arm), where Neuron has no path yet: an
    edit there changes nothing on Neuron and only risks CUDA."""
    if per_target.target(ctx) == per_target.CPU:
        return None  # the CPU target moves every CUDA path to the CPU instead
    links = model(ctx).cuda_links
    child: cst.CSTNode | None = ctx.stack[-1] if ctx.stack else None
    for anc in ctx.ancestors():
        if isinstance(anc, cst.If) and id(anc) in links and child is cuda_branch(ctx, anc):
            return ""
        if isinstance(anc, (cst.If, cst.IfExp)) and child is not anc.test and child is not None \
                and _kept_guard(ctx, anc, child):
            where = (f"under `if {short(anc.test, 50)}:`" if child is anc.body else f"in the `else:` of `if "
                     f"{short(anc.test, 50)}:`") if isinstance(anc, cst.If) else \
                f"in the CUDA arm of `... if {short(anc.test, 50)} else ...`"
            return f"it runs only {where}, which stays CUDA's; give Neuron a path of its own by hand"
        if isinstance(anc, (cst.If, cst.IfExp)) and child is anc.orelse and asks_if_neuron(anc.test):
            return ""
        if isinstance(anc, cst.If) and child is anc.body and isinstance(anc.test, cst.UnaryOperation) \
                and isinstance(anc.test.operator, cst.Not) and asks_if_neuron(anc.test.expression):
            return ""  # `if not <Neuron>: ...` (:func:`kept_for_cuda`)
        if isinstance(anc, cst.Call) and (marks := _cuda_case(ctx, anc)) is not None:
            return f"it is a test case marked for CUDA (`{marks}`); give Neuron a case with its own mark by hand"
        if isinstance(anc, cst.With) and child is anc.body and (entered := cuda_device_context(ctx, anc)):
            return f"it runs only under `with {entered}:`, which stays CUDA's; give Neuron a path of its own by hand"
        if isinstance(anc, (cst.IndentedBlock, cst.Module)) and child is not None:
            exit_guard = _exit_guard(ctx, anc, child)
            if exit_guard is not None:
                return (f"it runs only past `if {short(exit_guard.test, 50)}:`, which leaves early and stays CUDA's; "
                        "give Neuron a path of its own by hand")
        child = anc
    return None


def _cuda_case(ctx: FileContext, call: cst.Call) -> str | None:
    """The marks of ``pytest.param(..., marks=...)`` that name CUDA or GPUs (``marks=GPU_MARKS``,
    ``marks=pytest.mark.skipif(not torch.cuda.is_available(), ...)``): a test case for CUDA."""
    if ctx.qualify(call.func) != "pytest.param":
        return None
    marks = keyword(call, "marks")
    return short(marks.value, 50) if marks is not None and CUDA_WORDS.search(_source(marks.value)) else None


def cuda_device_context(ctx: FileContext, node: cst.With) -> str | None:
    """The ``torch.cuda.device(i)`` that ``node`` enters, where NRN116 keeps it (every target but
    ``cpu``: the accelerator target, and the neuron target, whose files keep their CUDA hosts): the
    block runs on CUDA's device ``i`` only, as on a host without CUDA entering it raises."""
    for item in node.items:
        call = item.item
        if isinstance(call, cst.Call) and ctx.qualify(call.func) == "torch.cuda.device" \
                and per_target.target(ctx) != per_target.CPU:
            return short(call, 50)
    return None


def _exit_guard(ctx: FileContext, block: cst.IndentedBlock | cst.Module, statement: cst.CSTNode) -> cst.If | None:
    """The statement before ``statement`` in ``block`` that leaves the block unless CUDA is available
    (``if not torch.cuda.is_available(): return``) and is kept for CUDA, as NRN110 keeps it: the code
    past it calls CUDA-only APIs, so it is CUDA's, the same as the body of ``if torch.cuda.is_available():``."""
    key = ("exit-guard", id(block))
    if key not in ctx.memo:
        from neuronize.transforms._helpers.cuda_guard import scan

        ctx.memo[key] = next(((i, s) for i, s in enumerate(block.body)
                              if isinstance(s, cst.If) and s.orelse is None and ends_early(s.body)
                              and _leaves_without_cuda(ctx, s.test) and scan(ctx, block.body[i + 1:]).marker is not None),
                             None)
    found = ctx.memo[key]
    if found is None or not any(s is statement for s in block.body[found[0] + 1:]):
        return None
    return found[1]


def _leaves_without_cuda(ctx: FileContext, test: cst.BaseExpression) -> bool:
    """``test`` holds wherever CUDA is absent: ``not torch.cuda.is_available()``, alone or
    ``or``-ed with other conditions."""
    if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.Or):
        return _leaves_without_cuda(ctx, test.left) or _leaves_without_cuda(ctx, test.right)
    return isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not) \
        and is_cuda_available_call(ctx, test.expression)


def in_device_test_arm(ctx: FileContext) -> bool:
    """The node being visited is in an arm of a conditional expression that tests a device value
    (``nullcontext() if device_type == "cpu" else <here>``). An ``if`` statement's branches are the
    dispatch's (:class:`Dispatch`), which gives them Neuron siblings of their own."""
    child: cst.CSTNode | None = ctx.stack[-1] if ctx.stack else None
    for anc in ctx.ancestors():
        if isinstance(anc, cst.IfExp) and child is not anc.test and _compared(anc.test) is not None:
            return True
        if isinstance(anc, (cst.BaseSuite, cst.BaseStatement)):
            return False
        child = anc
    return False


class KeepsCudaBranches:
    """A rule mix-in: no edit in code that runs only on CUDA and stays so (see
    :func:`cuda_keeping`); the edit is reported there instead, or dropped where Neuron has a
    branch of its own. An edit on the CUDA side of a guard that covers both devices joins the
    guard's edit group (:func:`widening_group`)."""

    ctx: FileContext

    def fix(self, node: cst.CSTNode, replacement: object, message: str, **options: object) -> None:
        keeping = cuda_keeping(self.ctx)
        if keeping is None:
            guard = widened_guard(self.ctx)
            if guard is not None:
                # the CUDA side of a guard NRN103 widens: made with the widening, or not at all
                options["guard"] = guard
                options["group"] = options.get("group") or widening_group(self.ctx, guard)
            elif options.get("group") is None and in_device_test_arm(self.ctx):
                # reached on Neuron only through the device value the file's choice migrates
                options["group"] = choice_edit_group(self.ctx)
            super().fix(node, replacement, message, **options)  # type: ignore[misc]
        elif keeping:
            self.report(node, f"{message}; not applied: {keeping}", evidence=options.get("evidence"))  # type: ignore[attr-defined]


# -- precision choices that ask CUDA for bf16 --------------------------------------------------------
#: how a choice names bf16 (a dtype name, or ``torch.bfloat16``)
BF16 = frozenset({"bfloat16", "bf16"})


def _picks_bf16(ctx: FileContext, node: cst.CSTNode) -> bool:
    return string_value(node) in BF16 or ctx.qualify(node) == "torch.bfloat16"


@dataclass(frozen=True)
class Bf16Choice:
    """A choice of bf16 that asks CUDA, and its test with Neuron in front (None where the test
    asks about Neuron already)."""

    test: cst.BaseExpression
    replacement: cst.BaseExpression | None
    imports: tuple[ImportRequest, ...] = ()
    message: str = ""


def bf16_choice(ctx: FileContext) -> Bf16Choice | None:
    """The choice of bf16 whose test holds the node being visited (``"bfloat16" if
    torch.cuda.is_available() and torch.cuda.is_bf16_supported() else "float16"``, ``if
    torch.cuda.is_bf16_supported(): dtype = torch.bfloat16``), on the neuron target: its test
    becomes ``<Neuron is here> or (<the test>)`` (Trainium computes in bf16, and every other host
    still asks the whole CUDA probe). None elsewhere."""
    if per_target.target(ctx) != per_target.NEURON:
        return None
    child: cst.CSTNode | None = ctx.stack[-1] if ctx.stack else None
    for anc in ctx.ancestors():
        if isinstance(anc, (cst.If, cst.IfExp)) and child is anc.test:
            picks = (_picks_bf16(ctx, anc.body) if isinstance(anc, cst.IfExp) else
                     any(isinstance(s, cst.Assign) and _picks_bf16(ctx, s.value) for s in small_statements(anc.body)))
            if not picks:
                return None
            if asks_if_neuron(anc.test):
                return Bf16Choice(anc.test, None)
            test, imports = per_target.neuron_present(ctx)
            return Bf16Choice(anc.test, cst.BooleanOperation(left=test, operator=cst.Or(), right=parenthesized(anc.test)),
                              imports, f"bf16 choice `{short(anc.test, 60)}` gains Neuron in front: Trainium "
                              "computes in bf16; every other host asks CUDA as before")
        if isinstance(anc, (cst.BaseStatement, cst.BaseSmallStatement, cst.Lambda)):
            return _bf16_answer(ctx)
        child = anc
    return None


#: a function that answers whether bf16 can be used (``verify_bf16_support``, ``is_bf16_ok``)
_BF16_QUESTION = re.compile(r"(?:^|_)(?:is|has|supports?|check|verify|can|use)_.*(?:bf16|bfloat16)"
                            r"|(?:bf16|bfloat16).*_(?:supported|support|available|ok)$", re.IGNORECASE)


def _bf16_answer(ctx: FileContext) -> Bf16Choice | None:
    """The answer of the function the node being visited is in, when the function asks whether
    bf16 can be used (and asks ``torch.cuda.is_bf16_supported()``) and gives one answer, a
    condition, at its end (``return cuda_ok or mps_ok``, ``cuda_ok`` stored from the CUDA probe):
    Neuron goes in front of it, as in a test."""
    function = next((anc for anc in ctx.ancestors() if isinstance(anc, (cst.FunctionDef, cst.Lambda))), None)
    if not isinstance(function, cst.FunctionDef) or not _BF16_QUESTION.search(function.name.value) or not any(
            isinstance(node, cst.Call) and ctx.qualify(node.func) == "torch.cuda.is_bf16_supported"
            for node in iter_syntax(function.body)):
        return None  # (a capability threshold answers about speed: the probe is reported as such)
    returns = [node for node in iter_syntax(function.body) if isinstance(node, cst.Return)]
    last = function.body.body[-1] if function.body.body else None
    answer = returns[0].value if len(returns) == 1 and isinstance(last, cst.SimpleStatementLine) \
        and last.body[-1] is returns[0] else None
    if not isinstance(answer, (cst.BooleanOperation, cst.Comparison, cst.Call, cst.Name, cst.Attribute)):
        return None
    if asks_if_neuron(answer):
        return Bf16Choice(answer, None)
    test, imports = per_target.neuron_present(ctx)
    alone = isinstance(answer, cst.BooleanOperation) and isinstance(answer.operator, cst.Or) or not isinstance(
        answer, cst.BooleanOperation)
    return Bf16Choice(answer, cst.BooleanOperation(left=test, operator=cst.Or(),
                                                   right=answer if alone else parenthesized(answer)),
                      imports, f"`{function.name.value}()`'s answer gains Neuron in front: Trainium computes in "
                               "bf16; every other host is asked as before")


# -- choices made by comparing with "cuda" (NRN103's selections) ----------------------------------
def is_fallback(node: cst.If | cst.IfExp) -> bool:
    """A selection that only falls back from CUDA (``if device == "cuda" and not
    torch.cuda.is_available(): device = "cpu"``): it names no CUDA device in its branches. A
    host-aware default keeps it working as it is; a Neuron value never needs it."""
    branches = (node.body, node.orelse)
    return not any(cuda_literal(n) is not None for b in branches if b is not None for n in iter_syntax(b))


def unmoved_fallback(ctx: FileContext, node: cst.If) -> str | None:
    """``if not torch.cuda.is_available(): cfg.init_device = "cpu"``: a CPU fallback (no early
    exit) for a device no CUDA value of this file sets (it comes from a config, another module):
    the fallback's target, whose CUDA value stays as it is, so a check widened for Neuron would
    send Neuron to it; None where every target it falls back gets a CUDA value the migration moves
    (``device = "cuda"``, an option's ``default="cuda"``, a parameter's default)."""
    from neuronize.transforms._helpers.device_choice import available_polarities, only_and
    from neuronize.transforms._helpers.value_flow import option_dest

    if node.orelse is not None or ends_early(node.body) or available_polarities(ctx, node.test) != {True} \
            or not only_and(node.test):
        return None
    targets = [target.target for small in small_statements(node.body) if isinstance(small, cst.Assign)
               and string_value(small.value) == "cpu" for target in small.targets]
    if not targets:
        return None
    if rejecting_consumer(ctx) is not None:
        return _source(targets[0])  # the file's CUDA values stay for that consumer: so does this fallback
    key = ("names given CUDA", id(ctx.module))
    if key not in ctx.memo:  # the names (last parts) this file gives a CUDA device
        named: set[str | None] = set()
        for found in iter_syntax(ctx.module):
            if isinstance(found, cst.Assign) and cuda_literal(found.value) is not None:
                named.update(target_name(t.target) for t in found.targets)
            elif isinstance(found, cst.Param) and found.default is not None and cuda_literal(found.default) is not None:
                named.add(found.name.value)
            elif isinstance(found, cst.Call) and last_name(found.func) == "add_argument":
                default = keyword(found, "default")
                if default is not None and cuda_literal(default.value) is not None:
                    named.add(option_dest(found))
        ctx.memo[key] = named
    return next((_source(t) for t in targets if target_name(t) not in ctx.memo[key]), None)


def in_fallback_test(ctx: FileContext) -> bool:
    """The node being visited is in the test of a fallback (:func:`is_fallback`), which stays."""
    if per_target.target(ctx) == per_target.CPU:
        return False
    from neuronize.transforms._helpers.device_choice import selection_if, selection_ifexp

    child: cst.CSTNode | None = ctx.stack[-1] if ctx.stack else None
    for anc in ctx.ancestors():
        if isinstance(anc, (cst.If, cst.IfExp)) and child is anc.test:
            chooses = selection_if(anc) if isinstance(anc, cst.If) else selection_ifexp(ctx, anc)
            return chooses and is_fallback(anc)
        child = anc
    return False


def neuron_first_choice(node: cst.If | cst.IfExp) -> cst.If | cst.IfExp | None:
    """A choice by comparison (``"cuda" if "cuda" in device else "cpu"``, ``if device == "cuda":
    device_type = "cuda" else: ...``) with a Neuron choice in front, modelled on it
    (``"neuron" if "neuron" in device else <the original>``); None where the test does not
    name CUDA positively (a Neuron copy of ``device != "cuda"`` would take CUDA's value away)."""
    if not _names_cuda(node.test):
        return None
    test, body = _neuron_copy(node.test), _neuron_copy(node.body)
    if isinstance(node, cst.IfExp):
        return cst.IfExp(test=test, body=body, orelse=node.with_changes(lpar=(), rpar=()),  # type: ignore[arg-type]
                         lpar=node.lpar, rpar=node.rpar)
    return cst.If(test=test, body=body, orelse=node.with_changes(leading_lines=()),  # type: ignore[arg-type]
                  leading_lines=node.leading_lines)


def after_neuron_choice(ctx: FileContext, node: cst.If | cst.IfExp) -> bool:
    """``node`` (being visited) already has a Neuron choice in front of it: it is the ``else`` (or
    ``elif``) of a test that names ``"neuron"``."""
    parent = ctx.parent
    if not isinstance(parent, (cst.If, cst.IfExp)) or parent.orelse is not node or type(parent) is not type(node):
        return False
    # the accelerator target names the accelerator's device where the neuron target says "neuron"
    return "current_accelerator()" in _source(parent.test) or any(
        string_value(n) == "neuron" for n in iter_syntax(parent.test))
