"""Per-file host facts: does this code have a path for a host without CUDA (a CPU fallback)?

Where it does, an edit that writes a Neuron-only value (``torch.autocast("neuron")``,
``backend="neuron"``, ``custom_fwd(device_type="neuron")``) breaks the fallback: those raise on a
host without torch-neuronx, while their CUDA originals were harmless there (CUDA autocast turns
itself off; Inductor compiles for the CPU). Such a file gets a host-aware value instead
(:func:`host_aware`), which keeps the original wherever the target's device is absent. A file
that hard-codes CUDA (no fallback) had no such host to keep: there the plain Neuron value is right.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

import libcst as cst

from neuronize.analysis.context import FileContext
from neuronize.transforms._helpers import per_target
from neuronize.transforms._helpers.calls import is_cuda_available_call
from neuronize.transforms._helpers.device_choice import selection_if, selection_ifexp
from neuronize.transforms._helpers.literals import cuda_literal, make_string
from neuronize.transforms._helpers.names import qualified_expr
from neuronize.analysis.syntax import is_main_test
from neuronize.analysis.walk import visit

#: the edit group of a file's device defaults and the comparisons that choose a fallback from them
#: (``default="cuda"`` and ``if device == "cuda" and not torch.cuda.is_available(): device = "cpu"``):
#: a default changed to ``"neuron"`` whose fallback test still says ``"cuda"`` never falls back, so a
#: host that used to fall back to the CPU breaks; the two move together, at the weaker safety
DEVICE_CHOICE = "device-choice"
#: device strings that name a host without CUDA
NON_CUDA_DEVICES = frozenset({"cpu", "mps", "xpu", "meta"})
#: names of parameters and attributes that carry a device chosen elsewhere (so not hard-coded)
DEVICE_NAMES = frozenset({"device", "device_type", "dev", "device_name"})

def _once(ctx: FileContext, question: str, answer: Callable[[FileContext], bool],
          about: cst.CSTNode | None = None) -> bool:
    """``answer(ctx)``, computed once per file (or once per node ``about``, a scope): kept in the
    file's context, as rules hold no state of their own."""
    key = (question, id(ctx.module if about is None else about))
    if key not in ctx.memo:
        ctx.memo[key] = answer(ctx)
    return ctx.memo[key]


class _Finder(cst.CSTVisitor):
    def __init__(self, ctx: FileContext) -> None:
        self.ctx = ctx
        self.found = False

    def on_visit(self, node: cst.CSTNode) -> bool:
        if self.found:
            return False
        if is_cuda_available_call(self.ctx, node):
            self.found = True
        elif isinstance(node, cst.SimpleString):
            value = node.evaluated_value
            self.found = isinstance(value, str) and value.split(":")[0] in NON_CUDA_DEVICES
        elif isinstance(node, cst.Param):
            self.found = node.name.value in DEVICE_NAMES
        elif isinstance(node, cst.Attribute):
            # `args.device`, `self.device`, `x.device`: a device that follows inputs or options
            self.found = node.attr.value in DEVICE_NAMES and self.ctx.qualify(node) is None
        return not self.found


def has_cpu_path(ctx: FileContext) -> bool:
    """The file has a path for a host without CUDA: it names no CUDA at all, or only where that
    runs without it (AMP, backend flags, seeds), or it has a ``torch.cuda.is_available()`` check,
    a ``"cpu"``/``"mps"`` device string, or a device taken from a parameter, an option or a tensor
    (``device`` parameters, ``args.device``, ``self.device``, ``x.device``)."""
    if b"cuda" not in ctx.source.lower():
        return True  # names no CUDA at all: it ran wherever PyTorch runs
    return _once(ctx, "cpu-path", _finds_cpu_path)


def _finds_cpu_path(ctx: FileContext) -> bool:
    finder = _Finder(ctx)
    visit(ctx.module, finder)
    if finder.found:
        return True
    hard = _HardCudaFinder(ctx)
    visit(ctx.module, hard)
    return not hard.found  # names CUDA only where that runs without it: it ran wherever PyTorch runs


#: CUDA spellings that run on a host without CUDA: the AMP family turns itself off there (a
#: loss computed under `torch.cuda.amp.autocast(enabled=False)` runs on the CPU), backend flags
#: and seeds only set state; a file naming CUDA only through these still ran everywhere
_HARMLESS_PREFIXES = ("torch.cuda.amp.", "torch.amp.", "torch.backends.cuda.")
_HARMLESS = frozenset({"torch.cuda.amp", "torch.autocast", "torch.GradScaler", "torch.cuda.manual_seed",
                       "torch.cuda.manual_seed_all"})


def _harmless(name: str) -> bool:
    return name in _HARMLESS or name.startswith(_HARMLESS_PREFIXES)


class _HardCudaFinder(cst.CSTVisitor):
    """Finds CUDA that fails without it: a ``torch.cuda`` call outside :data:`_HARMLESS`, a
    ``.cuda()`` move, a CUDA device string that is no argument of a harmless call."""

    def __init__(self, ctx: FileContext) -> None:
        self.ctx = ctx
        self.found = False

    def on_visit(self, node: cst.CSTNode) -> bool:
        if self.found or isinstance(node, (cst.Import, cst.ImportFrom)):
            return False
        if isinstance(node, cst.Call):
            name = self.ctx.qualify(node.func)
            if name is None or not _harmless(name):
                return True
            for arg in node.args:  # its "cuda" arguments are harmless too, not what they compute
                if cuda_literal(arg.value) is None:
                    visit(arg.value, self)
            return False
        if isinstance(node, (cst.Name, cst.Attribute)):
            name = self.ctx.qualify(node)
            if name is not None and (name == "torch.cuda" or name.startswith("torch.cuda.")):
                self.found = not _harmless(name)
                return False
            if isinstance(node, cst.Attribute) and node.attr.value == "cuda" and name is None:
                self.found = True  # `x.cuda()`
                return False
        elif cuda_literal(node) is not None:
            self.found = True
            return False
        return True


class _ChoiceFinder(cst.CSTVisitor):
    def __init__(self, ctx: FileContext) -> None:
        self.ctx = ctx
        self.found = False

    def on_visit(self, node: cst.CSTNode) -> bool:
        if isinstance(node, cst.If) and selection_if(node):
            self.found = True
        elif isinstance(node, cst.IfExp) and selection_ifexp(self.ctx, node):
            self.found = True
        return not self.found


#: what a comparison of a device with a `"cuda"` literal needs in the bytes (`d == "cuda"`,
#: `"cuda:0" != d`, `"cuda" in d`, `d.startswith("cuda")`): a file without it has no such choice,
#: and is not walked for one
_CUDA_COMPARED = re.compile(
    rb"""(?:==|!=|startswith\()\s*\(*\s*[rRuUbBfF]{0,2}['"]cuda"""
    rb"""|[rRuUbBfF]{0,2}['"]cuda[^'"\n]*['"]\s*\)*\s*(?:==|!=|in\b|not\s+in\b)""")


def _finds_device_choice(ctx: FileContext) -> bool:
    if not _CUDA_COMPARED.search(ctx.source):
        return False
    finder = _ChoiceFinder(ctx)
    visit(ctx.module, finder)
    return finder.found


#: what shows that a file sets up CUDA processes: its device placement moves with that set-up
_PROCESS_SET_UP = (b"init_process_group", b"set_device")


def placement_group(ctx: FileContext) -> str | None:
    """The process-group edit group (:data:`_distributed.PROCESS_GROUP`) for a device placement in
    a file that creates a process group or pins its CUDA device (``init_process_group("nccl")``,
    ``torch.cuda.set_device``), else None: tensors put on ``"neuron"`` next to a kept ``"nccl"``
    group or ``torch.cuda.set_device`` run nowhere, so a safe-only run must not apply them alone.
    In a file that keeps its CUDA hosts, that group is its device default's
    (:func:`device_model.process_group_edits`)."""
    if not any(token in ctx.source for token in _PROCESS_SET_UP):
        return None
    from neuronize.transforms._helpers.device_model import process_group_edits

    return process_group_edits(ctx)


#: the device-generic and CUDA ``custom_fwd`` / ``custom_bwd``
_CUSTOM_AMP = ("torch.amp.custom_fwd", "torch.amp.custom_bwd", "torch.cuda.amp.custom_fwd", "torch.cuda.amp.custom_bwd")


def uses_custom_amp(ctx: FileContext) -> bool:
    """The file imports ``custom_fwd`` / ``custom_bwd``: a ``device_type`` it sets is their AMP
    device type, which must stay host-aware (see :func:`host_aware`)."""
    return b"custom_" in ctx.source and any(m in ctx.names.modules for m in _CUSTOM_AMP)


def device_choice_group(ctx: FileContext) -> str | None:
    """:data:`DEVICE_CHOICE` for a device default in a file that chooses a device by comparing one
    with ``"cuda"`` (``if device == "cuda" and not torch.cuda.is_available(): ...``, the choices
    NRN103 rewrites), else None: where nothing tests it, a default moves alone."""
    return DEVICE_CHOICE if _once(ctx, "device-choice", _finds_device_choice) else None


#: the edit group (one per scope) of a hard-coded device move and the runtime calls that ask about
#: or restore the device the code then runs on: a safe-only run that moved the tensors to "neuron"
#: while `torch.cuda.get_device_name(0)` or a checkpoint's `torch.cuda.set_rng_state(...)` stays
#: would leave a pair that runs nowhere; they move together, at the weaker safety
SAME_DEVICE = "same-device"
#: the runtime calls about the device the code runs on (its name and properties, its bf16 support,
#: its random-number generator's state)
SAME_DEVICE_CALLS = frozenset({
    "torch.cuda.get_device_name", "torch.cuda.get_device_properties", "torch.cuda.is_bf16_supported",
    "torch.cuda.get_rng_state", "torch.cuda.set_rng_state",
})
_SAME_DEVICE_TOKENS = (b"get_device_name", b"get_device_properties", b"is_bf16_supported", b"_rng_state")


def _device_scope(ctx: FileContext) -> cst.Module | cst.FunctionDef:
    """The function the node being visited runs in, else the module."""
    for anc in ctx.ancestors():
        if isinstance(anc, cst.FunctionDef):
            return anc
    return ctx.module


class _SameDeviceFinder(cst.CSTVisitor):
    """Does a scope (its own statements, not those of the functions and classes it defines) move
    something to a hard-coded CUDA device and call one of :data:`SAME_DEVICE_CALLS`?"""

    def __init__(self, ctx: FileContext, scope: cst.CSTNode) -> None:
        self.ctx = ctx
        self.scope = scope
        self.moves = self.asks = self.rng = False

    def on_visit(self, node: cst.CSTNode) -> bool:
        if node is not self.scope and isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            return False
        if isinstance(node, (cst.Comparison, cst.SubscriptElement)):
            return False  # a device compared, or a key looked up, is not a device moved
        if isinstance(node, cst.DictElement):
            visit(node.value, self)  # `{"cuda": ...}`: a key
            return False
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value == "cuda":
            self.moves = True  # `.cuda()`
        elif isinstance(node, cst.SimpleString):
            value = node.evaluated_value
            self.moves |= isinstance(value, str) and value.split(":")[0] == "cuda"
        elif isinstance(node, cst.FormattedString):
            head = node.parts[0] if node.parts else None
            self.moves |= isinstance(head, cst.FormattedStringText) and head.value.split(":")[0] == "cuda"
        elif isinstance(node, (cst.Attribute, cst.Name)):
            rng = is_rng_state(self.ctx, node)
            self.rng |= rng
            self.asks |= rng or self.ctx.qualify(node) in SAME_DEVICE_CALLS
        return not (self.moves and self.asks and self.rng)


def _same_device(ctx: FileContext, scope: cst.Module | cst.FunctionDef) -> tuple[bool, bool, bool]:
    """Whether ``scope`` moves something to a hard-coded CUDA device, asks about that device, and
    saves or restores its RNG state (:class:`_SameDeviceFinder`, once per scope)."""
    keys = [(f"{SAME_DEVICE} {what}", id(scope)) for what in ("moves", "asks", "rng")]
    if keys[0] not in ctx.memo:
        finder = _SameDeviceFinder(ctx, scope)
        visit(scope, finder)
        ctx.memo.update(zip(keys, (finder.moves, finder.asks, finder.rng), strict=True))
    moves, asks, rng = (ctx.memo[key] for key in keys)
    return moves, asks, rng


def same_device_group(ctx: FileContext) -> str | None:
    """The edit group of a device move or a same-device runtime call (:data:`SAME_DEVICE_CALLS`)
    being visited, when its scope (function, else module) holds both: :data:`SAME_DEVICE` and the
    scope's name, or the file's process-group group (:func:`placement_group`), which its device
    placement already belongs to, or the file's RNG state group where the scope saves or restores
    that state (:func:`rng_state_group`). None elsewhere: a move or a call alone in its scope is free."""
    if not any(token in ctx.source for token in _SAME_DEVICE_TOKENS):
        return None
    scope = _device_scope(ctx)
    moves, asks, rng = _same_device(ctx, scope)
    if not (moves and asks):
        return None
    if rng:
        return rng_state_group(ctx)
    name = f"{scope.name.value}()" if isinstance(scope, cst.FunctionDef) else "<module>"
    return placement_group(ctx) or f"{SAME_DEVICE} {name}"


#: the edit group of a file's CUDA RNG state calls: a checkpoint's save and its load (in one
#: function or two) are made host-aware together or all left with a finding; one side alone saves
#: one device's generator and restores it into another's, or raises on the host the other side serves
RNG_STATE_GROUP = "rng-state"
#: the ``torch.cuda`` functions that save or restore the state of the device's generator
RNG_STATE_FUNCTIONS = frozenset({"get_rng_state", "set_rng_state", "get_rng_state_all", "set_rng_state_all"})


def is_rng_state(ctx: FileContext, node: cst.CSTNode) -> bool:
    """``node`` names one of :data:`RNG_STATE_FUNCTIONS` (``torch.cuda.random.*`` included)."""
    name = ctx.qualify(node) or ""
    return name.startswith("torch.cuda.") and name.rsplit(".", 1)[-1] in RNG_STATE_FUNCTIONS


#: ``torch.manual_seed(s)`` seeds every device's generator, Neuron's included
_TORCH_SEED = frozenset({"torch.manual_seed", "torch.random.manual_seed"})
#: the CUDA seeding calls it makes redundant on a host without CUDA, where they do nothing
_CUDA_SEEDING = frozenset(f"torch.cuda.{module}{fn}" for module in ("", "random.") for fn in ("manual_seed", "manual_seed_all"))


def seeded_by_torch(ctx: FileContext, call: cst.Call, ancestors: Iterable[cst.CSTNode]) -> bool:
    """``call`` is ``torch.cuda.manual_seed(s)`` (or ``manual_seed_all``) with ``torch.manual_seed(s)``
    of the same arguments in one of the blocks ``ancestors`` (innermost first) lists, up to its
    function: the Neuron generator is seeded already, so Neuron needs nothing added for it."""
    if ctx.qualify(call.func) not in _CUDA_SEEDING:
        return False
    wanted = [ctx.module.code_for_node(a.value) for a in call.args]
    for anc in ancestors:
        body = anc.body if isinstance(anc, (cst.Module, cst.IndentedBlock)) else ()
        for line in body:
            if isinstance(line, cst.SimpleStatementLine) and any(
                    isinstance(s, cst.Expr) and isinstance(s.value, cst.Call) and ctx.qualify(s.value.func) in _TORCH_SEED
                    and [ctx.module.code_for_node(a.value) for a in s.value.args] == wanted for s in line.body):
                return True
        if isinstance(anc, (cst.FunctionDef, cst.Lambda, cst.ClassDef)):
            return False
    return False


class _RngScopes(cst.CSTVisitor):
    """The scopes (innermost function, else the module) that save or restore the CUDA RNG state."""

    def __init__(self, ctx: FileContext) -> None:
        self.ctx = ctx
        self.open: list[cst.Module | cst.FunctionDef] = [ctx.module]
        self.found: dict[int, cst.Module | cst.FunctionDef] = {}

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.open.append(node)

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self.open.pop()

    def visit_Attribute(self, node: cst.Attribute) -> None:
        self._name(node)

    def visit_Name(self, node: cst.Name) -> None:
        self._name(node)

    def _name(self, node: cst.Attribute | cst.Name) -> None:
        if is_rng_state(self.ctx, node):
            self.found[id(self.open[-1])] = self.open[-1]


def rng_state_group(ctx: FileContext) -> str:
    """The edit group of the file's CUDA RNG state calls: :data:`RNG_STATE_GROUP`, or the file's
    process-group group where a scope that saves or restores the state also moves something to a
    hard-coded CUDA device in a file that sets up processes (the move belongs to that group, and
    moves with the state: see :func:`same_device_group`)."""
    placement = placement_group(ctx)
    if placement is None:
        return RNG_STATE_GROUP

    def moves_beside_state(ctx: FileContext) -> bool:
        scopes = _RngScopes(ctx)
        visit(ctx.module, scopes)
        return any(_same_device(ctx, scope)[0] for scope in scopes.found.values())

    return placement if _once(ctx, RNG_STATE_GROUP, moves_beside_state) else RNG_STATE_GROUP


def host_aware(ctx: FileContext, original: cst.BaseExpression) -> per_target.Built:
    """``"neuron" if <Neuron is here> else <original>`` (``--target accelerator``: the current
    accelerator's type if there is one, else ``original``): the target's device where it exists,
    the original value (harmless there, as it was before) everywhere else. ``--target cpu``:
    the target's device, as before (it names a device every host has)."""
    target = per_target.target(ctx)
    if target == per_target.CPU:
        return per_target.device(ctx, original)
    kept = original.with_changes(lpar=(), rpar=()) if hasattr(original, "lpar") else original
    if target == per_target.NEURON:
        test, imports = per_target.available(ctx)
        chosen: cst.BaseExpression = make_string(per_target.NEURON, kept if isinstance(kept, cst.SimpleString) else None)
    else:
        torch, imports = qualified_expr(ctx, "torch")
        test = cst.parse_expression(f"{ctx.module.code_for_node(torch)}.accelerator.is_available()")
        chosen = cst.parse_expression(f"{ctx.module.code_for_node(torch)}.accelerator.current_accelerator().type")
    return cst.IfExp(test=test, body=chosen, orelse=kept), imports


def at_import_time(ctx: FileContext) -> bool:
    """The node being visited runs when its module is imported: a module- or class-level
    statement, a decorator or a default value of a function defined there (not a function body
    or a lambda)."""
    child: cst.CSTNode | None = ctx.stack[-1] if ctx.stack else None
    for anc in ctx.ancestors():
        if isinstance(anc, cst.Lambda):
            return False
        if isinstance(anc, cst.FunctionDef) and child is anc.body:
            return False
        if isinstance(anc, cst.If) and child is anc.body and is_main_test(anc.test):
            return False  # runs when the file is a script, not when it is imported
        child = anc
    return True


def host_compile_backend(ctx: FileContext, original: cst.BaseExpression | None) -> per_target.Built | None:
    """The ``backend=`` a ``torch.compile`` gets: :func:`per_target.compile_backend`, except that on
    the neuron target, ``"neuron" if <Neuron is here> else <original backend,
    or "inductor">``: ``torch.compile`` looks the backend up when it builds the wrapper, and
    ``"neuron"`` raises without torch-neuronx."""
    chosen = per_target.compile_backend(ctx)
    if per_target.target(ctx) != per_target.NEURON:
        return chosen  # accelerator: chosen from the detected device already; cpu: Inductor
    test, imports = per_target.available(ctx)
    kept = original.with_changes(lpar=(), rpar=()) if original is not None else make_string("inductor")
    neuron = make_string(per_target.NEURON, kept if isinstance(kept, cst.SimpleString) else None)
    return cst.IfExp(test=test, body=neuron, orelse=kept), imports
