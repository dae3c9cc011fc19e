"""Helpers shared by the ``torch.cuda`` runtime API rules (NRN110-NRN119).

Every rule of the family looks at the same thing: a *reference* to a ``torch.cuda`` function,
called or not, in any spelling the file's imports allow (``torch.cuda.synchronize``,
``T.cuda.synchronize``, ``cuda.synchronize`` after ``from torch import cuda``, ``synchronize``
after ``from torch.cuda import synchronize``, ``torch.cuda.memory.memory_allocated``).
:func:`match` turns the node being visited into a :class:`CudaRef` or None.

The context helpers answer the question the reference's F19 asks: is the code guarded by an
availability check device selection / device-agnostic code (rewrite), or a CUDA-only path
(flash-attn, bitsandbytes, cudnn, DataParallel, fp16...) that must stay off on Neuron (report)?
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import ClassVar, Iterable, Sequence

import libcst as cst

from neuronize.context import FileContext, dotted_name
from neuronize.walk import iter_syntax
from neuronize.transform import Evidence, ImportRequest, Safety, Transform
from neuronize.transforms import _target
from neuronize.transforms._cuda_settings import SETTING_PREFIXES
from neuronize.transforms._imports import removal_of
from neuronize.transforms._literals import string_value
from neuronize.transforms._messages import short
from neuronize.transforms._names import last_name, qualified_expr
from neuronize.transforms._nodes import following_statements
from neuronize.transforms._packages import CUDA_ONLY_PACKAGES

PREFIX = "torch.cuda."
#: ``torch.cuda.<submodule>.<fn>`` is the same function as ``torch.cuda.<fn>``.
SUBMODULES = frozenset({"memory", "random", "streams"})

#: Every ``torch.cuda`` name a rule of this family handles (NRN119 reports the others).
OWNED = frozenset({
    # NRN110
    "is_available", "device_count", "current_device",
    # NRN111
    "synchronize",
    # NRN112
    "manual_seed", "manual_seed_all", "seed", "seed_all", "initial_seed",
    "get_rng_state", "set_rng_state", "get_rng_state_all", "set_rng_state_all",
    # NRN113
    "memory_allocated", "max_memory_allocated", "memory_reserved", "max_memory_reserved",
    "memory_cached", "max_memory_cached", "memory_stats", "memory_summary",
    "reset_peak_memory_stats", "reset_accumulated_memory_stats", "reset_max_memory_allocated",
    "reset_max_memory_cached", "empty_cache", "mem_get_info", "OutOfMemoryError",
    "set_per_process_memory_fraction",
    # NRN114
    "Stream", "Event", "stream", "current_stream", "default_stream",
    # NRN115
    "get_device_name", "get_device_properties", "is_bf16_supported", "get_device_capability",
    # NRN116
    "set_device", "device",
})

#: ``torch.cuda`` names other families own (mixed precision, nvtx, CUDA graphs, legacy tensor
#: types, custom kernels, sparse types): this family says nothing about them.
OTHERS = frozenset({
    "amp", "nvtx", "CUDAGraph", "graph", "graphs", "make_graphed_callables",
    "is_current_stream_capturing", "graph_pool_handle", "jiterator", "sparse",
    *SUBMODULES,
})


@dataclass(frozen=True)
class CudaRef:
    """A reference to ``torch.cuda.<fn>`` found in the file."""

    node: cst.BaseExpression  # the Name / Attribute naming the function
    fn: str  # "synchronize"
    extra: tuple[str, ...]  # attributes after the function (``torch.cuda.Event.elapsed_time``)
    call: cst.Call | None  # the call, when ``node`` is its function
    head: str  # the local name the reference starts with (``torch``, ``T``, ``cuda``...)

    @property
    def outer(self) -> cst.BaseExpression:
        """The call if the function is called, else the reference itself."""
        return self.call if self.call is not None else self.node


def is_legacy_tensor_type(fn: str) -> bool:
    return fn.endswith("Tensor") and fn[:1].isupper()


def match(ctx: FileContext, node: cst.CSTNode) -> CudaRef | None:
    """The ``torch.cuda`` reference ``node`` is (visit Name and Attribute nodes with this)."""
    parent = ctx.parent
    if isinstance(parent, cst.Attribute) and (parent.value is node or parent.attr is node):
        return None  # a prefix of a longer dotted name, or the attribute part of one
    if isinstance(node, cst.Name):
        if isinstance(parent, (cst.ImportAlias, cst.ImportFrom, cst.AsName, cst.Param, cst.FunctionDef,
                               cst.ClassDef, cst.NameItem, cst.AssignTarget)):
            return None
        if isinstance(parent, cst.Arg) and parent.keyword is node:
            return None
    elif isinstance(node, cst.Attribute):
        if isinstance(parent, (cst.ImportFrom, cst.ImportAlias, cst.AsName, cst.AssignTarget)):
            return None
    else:
        return None
    qualified = ctx.qualify(node)
    if qualified is None or not qualified.startswith(PREFIX):
        return None
    parts = qualified[len(PREFIX):].split(".")
    if len(parts) > 1 and parts[0] in SUBMODULES:
        parts = parts[1:]
    dotted = dotted_name(node) or ""
    call = parent if isinstance(parent, cst.Call) and parent.func is node else None
    return CudaRef(node, parts[0], tuple(parts[1:]), call, dotted.split(".")[0])


# -- building replacements -----------------------------------------------------------------
def replacement_for(ctx: FileContext, ref: CudaRef, qualified: str
                    ) -> tuple[cst.BaseExpression, tuple[ImportRequest, ...]]:
    """``qualified`` spelled as this file spells its package, keeping the reference's parentheses,
    plus the imports to add and the now-unused ``torch.cuda`` import to drop (if any)."""
    expr, imports = qualified_expr(ctx, qualified)
    node = ref.node
    expr = expr.with_changes(lpar=node.lpar, rpar=node.rpar)
    return expr, imports + unused_import(ctx, ref)


def unused_import(ctx: FileContext, ref: CudaRef) -> tuple[ImportRequest, ...]:
    """A removal request for the import that bound the reference's head name, when that import
    came from ``torch.cuda`` (``from torch import cuda``, ``from torch.cuda import synchronize``,
    ``import torch.cuda as tc``). The engine removes it only if nothing uses it any more."""
    full = ctx.qualify(cst.Name(ref.head))
    if full is None or not (full == "torch.cuda" or full.startswith(PREFIX)):
        return ()
    removal = removal_of(ctx, ref.head, qualified=full)
    return () if removal is None else (removal,)


# -- where a reference sits ----------------------------------------------------------------
def cuda_keyed_entry(ctx: FileContext, ref: CudaRef) -> bool:
    """True for the value of a ``{"cuda": ...}`` entry or a ``cuda=...`` keyword: a per-backend
    dispatch table, where the right edit is to add a ``"neuron"`` entry, not to replace this one."""
    target: cst.CSTNode = ref.outer
    for anc in ctx.ancestors():
        if anc is target:
            continue
        if isinstance(anc, cst.DictElement) and anc.value is target:
            key = string_value(anc.key)
            return key is not None and key.lower() == "cuda"
        if isinstance(anc, cst.Arg) and anc.value is target and anc.keyword is not None:
            return anc.keyword.value == "cuda"
        return False
    return False


def enclosing_small_statement(ctx: FileContext, ref: CudaRef) -> cst.BaseSmallStatement | None:
    """The ``Expr`` statement when the call is a statement of its own (``torch.cuda.f(...)``)."""
    if ref.call is None:
        return None
    seen_call = False
    for anc in ctx.ancestors():
        if anc is ref.call:
            seen_call = True
            continue
        if seen_call and isinstance(anc, cst.Expr) and anc.value is ref.call:
            return anc
        return None
    return None


class Context(enum.Enum):
    IF = "if"  # the test of an if / while statement
    IFEXP = "ifexp"  # the test of a conditional expression
    FLAG = "flag"  # assigned to a name (a flag or a count used elsewhere)
    SKIP = "skip"  # a test skip marker
    ASSERT = "assert"
    OTHER = "other"


_PASS_THROUGH = (cst.UnaryOperation, cst.BooleanOperation, cst.Comparison, cst.ComparisonTarget,
                 cst.BinaryOperation, cst.Arg, cst.Call)
SKIP_CALLS = frozenset({"skipif", "skipIf", "skipUnless", "skip", "skipTest", "SkipTest", "xfail"})


def classify(ctx: FileContext, ref: CudaRef) -> tuple[Context, cst.CSTNode | None]:
    """Where the value of the reference goes: an if test, a conditional expression, a flag..."""
    child: cst.CSTNode = ref.outer
    for anc in ctx.ancestors():
        if anc is ref.call:
            continue
        if isinstance(anc, cst.Call) and last_name(anc.func) in SKIP_CALLS:
            return Context.SKIP, anc
        if isinstance(anc, _PASS_THROUGH):
            child = anc
            continue
        if isinstance(anc, (cst.If, cst.While)) and anc.test is child:
            if isinstance(anc, cst.If) and _is_skip_body(anc):
                return Context.SKIP, anc
            return Context.IF, anc
        if isinstance(anc, cst.IfExp) and anc.test is child:
            return Context.IFEXP, anc
        if isinstance(anc, (cst.Assign, cst.AnnAssign)) and anc.value is child:
            return Context.FLAG, anc
        if isinstance(anc, cst.Assert) and anc.test is child:
            return Context.ASSERT, anc
        return Context.OTHER, anc
    return Context.OTHER, None


def _is_skip_body(node: cst.If) -> bool:
    body = node.body
    if not isinstance(body, (cst.IndentedBlock, cst.SimpleStatementSuite)):
        return False
    stmts = body.body
    for stmt in stmts:
        smalls = stmt.body if isinstance(stmt, cst.SimpleStatementLine) else [stmt]
        for small in smalls:
            if isinstance(small, cst.Expr) and isinstance(small.value, cst.Call):
                if last_name(small.value.func) in SKIP_CALLS:
                    return True
            if isinstance(small, cst.Raise) and small.exc is not None:
                exc = small.exc.func if isinstance(small.exc, cst.Call) else small.exc
                if last_name(exc) in SKIP_CALLS:
                    return True
    return False


# -- what guarded code does ----------------------------------------------------------------
#: Qualified-name prefixes that mean a CUDA-only path.
CUDA_ONLY_PREFIXES = (
    "torch.backends.cudnn", "torch.backends.cuda", "torch.cuda.nvtx",
    "torch.cuda.graph", "torch.cuda.CUDAGraph", "torch.cuda.make_graphed_callables",
    "torch.cuda.get_device_capability", "torch.cuda.mem_get_info", "torch.cuda.utilization",
    "torch.utils.cpp_extension", "torch.float16", "torch.half", "torch.nn.DataParallel",
    "torch.nn.parallel.DataParallel",
)
#: Last components of a dotted name that mean a CUDA-only path whatever the import.
CUDA_ONLY_NAMES = frozenset({
    "DataParallel", "GradScaler", "CUDAGraph", "BitsAndBytesConfig", "get_device_capability",
    "half", "float16", "cudnn",
})
CUDA_ONLY_SUBSTRINGS = ("flash_attn", "flash_attention", "xformers", "bitsandbytes", "triton", "cudnn")
CUDA_ONLY_KEYWORDS = frozenset({"load_in_8bit", "load_in_4bit", "use_flash_attention_2"})
#: Calls that keep code device-selection-only or device-agnostic (last dotted component).
TRANSPARENT_CALLS = frozenset({
    "to", "cuda", "cpu", "device", "print", "info", "warning", "warn", "debug", "error", "format",
    "get", "getenv", "int", "str", "float", "bool", "len", "range", "min", "max", "isinstance",
    "manual_seed", "manual_seed_all", "seed", "Generator", "set_device", "synchronize",
    "empty_cache", "device_count", "current_device", "get_device", "is_available", "append", "update",
    "RuntimeError", "ValueError", "SystemExit", "exit",
})

#: Calls setting flags that NRN350/NRN352 delete (like assignments under ``SETTING_PREFIXES``):
#: setting them does not make guarded code CUDA-only (reading them does).
BACKEND_SETTING_CALLS = frozenset({
    "torch.backends.cuda.enable_flash_sdp", "torch.backends.cuda.enable_mem_efficient_sdp",
    "torch.backends.cuda.enable_math_sdp", "torch.backends.cuda.enable_cudnn_sdp",
    "torch.backends.cuda.preferred_linalg_library", "torch.backends.cuda.preferred_blas_library",
    # flag-setting contexts, unwrapped by NRN350/NRN352
    "torch.backends.cudnn.flags", "torch.backends.cuda.sdp_kernel",
})
# A check kept for a marker that a fix of the same run then migrates away would be migrated by
# the next run. So `torch.cuda.amp` is no marker: NRN201/NRN203 migrate autocast and custom_fwd
# (`GradScaler` is a marker by name).


@dataclass
class Verdict:
    marker: str | None = None  # what makes the guarded code CUDA-only (first one found)
    opaque: str | None = None  # a call whose effect cannot be judged here (first one found)


class _GuardScan(cst.CSTVisitor):
    """Looks for CUDA-only markers and opaque calls in guarded code."""

    def __init__(self, ctx: FileContext, verdict: Verdict) -> None:
        super().__init__()
        self.ctx = ctx
        self.v = verdict

    def _mark(self, what: str) -> None:
        if self.v.marker is None:
            self.v.marker = what

    def _check_name(self, node: cst.CSTNode) -> None:
        raw = dotted_name(node)
        if raw is None:
            return
        qualified = self.ctx.qualify(node) or raw
        head = qualified.split(".")[0]
        last = qualified.rsplit(".", 1)[-1]
        if head in CUDA_ONLY_PACKAGES:
            self._mark(f"`{head}`")
        elif qualified.startswith(CUDA_ONLY_PREFIXES):
            self._mark(f"`{qualified}`")
        elif last in CUDA_ONLY_NAMES:
            self._mark(f"`{raw}`")
        elif any(s in raw for s in CUDA_ONLY_SUBSTRINGS):
            self._mark(f"`{raw}`")
        elif qualified.startswith(PREFIX):
            fn = qualified[len(PREFIX):].split(".")[0]
            if fn not in OWNED and fn not in SUBMODULES and fn != "amp":  # see BACKEND_SETTING_CALLS
                self._mark(f"`{qualified}`")

    def _is_backend_setting(self, node: cst.CSTNode) -> bool:
        return (self.ctx.qualify(node) or "").startswith(SETTING_PREFIXES)

    def _visit_assignment(self, targets: Sequence[cst.CSTNode], value: cst.CSTNode | None) -> bool:
        """Setting a cuDNN / CUDA-backend flag is not a CUDA-only path: the flag is a plain
        attribute on a Neuron host, and NRN350/NRN351 delete the assignment (a check kept for it
        would be migrated by the next run). The assigned value is still looked at."""
        if not any(self._is_backend_setting(t) for t in targets):
            return True
        for target in targets:
            if not self._is_backend_setting(target):
                target.visit(self)
        if value is not None:
            value.visit(self)
        return False

    def visit_Assign(self, node: cst.Assign) -> bool:
        return self._visit_assignment([t.target for t in node.targets], node.value)

    def visit_AugAssign(self, node: cst.AugAssign) -> bool:
        return self._visit_assignment([node.target], node.value)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> bool:
        return self._visit_assignment([node.target], node.value)

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        if dotted_name(node) is None:
            return True  # `f(x).attr`: look inside
        self._check_name(node)
        return False  # the whole dotted chain was checked

    def visit_Name(self, node: cst.Name) -> None:
        self._check_name(node)

    def visit_Import(self, node: cst.Import) -> bool:
        for alias in node.names:
            name = dotted_name(alias.name) or ""
            if name.split(".")[0] in CUDA_ONLY_PACKAGES or name.startswith(CUDA_ONLY_PREFIXES):
                self._mark(f"`import {name}`")
        if self.v.opaque is None:
            self.v.opaque = "an import"
        return False

    def visit_ImportFrom(self, node: cst.ImportFrom) -> bool:
        name = dotted_name(node.module) if node.module is not None else None
        if name and (name.split(".")[0] in CUDA_ONLY_PACKAGES or name.startswith(CUDA_ONLY_PREFIXES)):
            self._mark(f"`from {name} import ...`")
        if self.v.opaque is None:
            self.v.opaque = "an import"
        return False

    def visit_Arg(self, node: cst.Arg) -> None:
        if node.keyword is not None and node.keyword.value in CUDA_ONLY_KEYWORDS:
            self._mark(f"`{node.keyword.value}=`")

    def visit_SimpleString(self, node: cst.SimpleString) -> None:
        value = string_value(node)
        if value is None:
            return
        # ("nccl" is not a marker: NRN401 migrates it, and needs the check to see Neuron)
        if "flash_attention" in value or "flash_attn" in value:
            self._mark(f"`{value!r}`")

    def visit_Return(self, node: cst.Return) -> None:
        """``return some_function``: what the caller does with it cannot be judged here."""
        value = node.value
        if self.v.opaque is not None or not isinstance(value, (cst.Name, cst.Attribute)):
            return
        if isinstance(value, cst.Name) and value.value in ("None", "True", "False"):
            return
        if (self.ctx.qualify(value) or "").startswith("torch."):
            return
        self.v.opaque = f"returns `{dotted_name(value)}`"

    def visit_Call(self, node: cst.Call) -> bool | None:
        last = last_name(node.func)
        if last in TRANSPARENT_CALLS:
            return None
        qualified = self.ctx.qualify(node.func) or ""
        if qualified in BACKEND_SETTING_CALLS:
            for arg in node.args:  # a flag setter, like an assignment (see _visit_assignment)
                arg.visit(self)
            return False
        if qualified.startswith(PREFIX):
            return  # judged by _check_name (owned: migrated by this family; others: markers)
        if self.v.opaque is None:
            self.v.opaque = f"`{short(node.func, 40)}(...)`"


def scan(ctx: FileContext, nodes: Iterable[cst.CSTNode | None]) -> Verdict:
    verdict = Verdict()
    visitor = _GuardScan(ctx, verdict)
    for node in nodes:
        if node is not None:
            node.visit(visitor)
    return verdict


def guarded_code(ctx: FileContext, stmt: cst.If | cst.While) -> list[cst.CSTNode]:
    """The test, both branches and, when the body ends the block early (``raise``, ``return``,
    ``sys.exit``), the statements after the ``if`` that the check also guards."""
    nodes: list[cst.CSTNode] = [stmt.test, stmt.body]
    if stmt.orelse is not None:
        nodes.append(stmt.orelse)
    if isinstance(stmt, cst.If) and _ends_early(stmt.body):
        nodes.extend(following_statements(ctx, stmt))
    return nodes


def _ends_early(body: cst.BaseSuite) -> bool:
    stmts = body.body
    if not stmts:
        return False
    last = stmts[-1]
    if isinstance(body, cst.SimpleStatementSuite):
        smalls: Sequence[cst.CSTNode] = [last]
    elif isinstance(last, cst.SimpleStatementLine):
        smalls = last.body
    else:
        return False
    for small in smalls:
        if isinstance(small, (cst.Raise, cst.Return, cst.Continue, cst.Break)):
            return True
        if isinstance(small, cst.Expr) and isinstance(small.value, cst.Call):
            if last_name(small.value.func) in ("exit", "quit", "_exit"):
                return True
    return False


def flag_uses(ctx: FileContext, names: Sequence[str], assign: cst.CSTNode) -> list[cst.CSTNode]:
    """The code each use of a flag (a dotted name) decides: the if / conditional expression it is
    tested in, or the call it is passed to, or its statement. The assignment itself is skipped."""
    scope: cst.CSTNode = ctx.module
    for anc in ctx.ancestors():
        if isinstance(anc, (cst.FunctionDef, cst.Lambda)):
            scope = anc
            break
    finder = _FlagUseFinder(ctx, set(names), assign)
    scope.visit(finder)
    return finder.regions


class _FlagUseFinder(cst.CSTVisitor):
    def __init__(self, ctx: FileContext, names: set[str], assign: cst.CSTNode) -> None:
        super().__init__()
        self.ctx = ctx
        self.names = names
        self.assign = assign
        self.stack: list[cst.CSTNode] = []
        self.regions: list[cst.CSTNode] = []

    def on_visit(self, node: cst.CSTNode) -> bool:
        if node is self.assign:
            return False
        if self.stack and isinstance(node, (cst.FunctionDef, cst.Lambda)) and self._rebinds(node):
            return False  # a function whose parameter has the flag's name: another variable
        self.stack.append(node)
        if isinstance(node, (cst.Name, cst.Attribute)) and dotted_name(node) in self.names:
            parent = self.stack[-2] if len(self.stack) > 1 else None
            if not isinstance(parent, (cst.AssignTarget, cst.Param)) and not (
                    isinstance(parent, cst.Attribute) and parent.attr is node) and not (
                    isinstance(parent, cst.Arg) and parent.keyword is node):
                self.regions.append(self._region())
            self.stack.pop()
            return False
        return True

    def _rebinds(self, node: cst.FunctionDef | cst.Lambda) -> bool:
        params = node.params
        every = [*params.posonly_params, *params.params, *params.kwonly_params]
        for extra in (params.star_arg, params.star_kwarg):
            if isinstance(extra, cst.Param):
                every.append(extra)
        return any(p.name.value in self.names for p in every)

    def on_leave(self, original_node: cst.CSTNode) -> None:
        if self.stack and self.stack[-1] is original_node:
            self.stack.pop()

    def _region(self) -> cst.CSTNode:
        child = self.stack[-1]
        for anc in reversed(self.stack[:-1]):
            if isinstance(anc, (cst.If, cst.While)) and anc.test is child:
                return anc
            if isinstance(anc, cst.IfExp) and anc.test is child:
                return anc
            if isinstance(anc, cst.Call):
                return anc
            if isinstance(anc, (cst.BaseSmallStatement, cst.BaseCompoundStatement)):
                return anc
            child = anc
        return child


def guarded_after(ctx: FileContext, small: cst.CSTNode) -> list[cst.CSTNode]:
    """The statements after the statement line holding ``small`` (an ``assert``)."""
    for anc in ctx.ancestors():
        if isinstance(anc, cst.SimpleStatementLine):
            return following_statements(ctx, anc)
    return []


def calls_anywhere(ctx: FileContext, names: frozenset[str]) -> bool:
    """True when the module calls a function whose dotted name ends with one of ``names``."""
    if not any(name.encode() in ctx.source for name in names):
        return False  # no such name in the file's bytes: no need to walk the tree
    return any(isinstance(node, cst.Call) and last_name(node.func) in names
               for node in iter_syntax(ctx.module))


# -- the base class of the family's rules --------------------------------------------------
class _CudaApiRule(Transform):
    """Dispatches every reference to one of ``FUNCTIONS`` (called or not) to :meth:`on_ref`."""

    abstract = True
    FUNCTIONS: ClassVar[frozenset[str]] = frozenset()

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if node.attr.value not in self.FUNCTIONS:
            return
        self._dispatch(node)

    def visit_Name(self, node: cst.Name) -> None:
        qualified = self.ctx.qualify(node)
        if qualified is None or not qualified.startswith(PREFIX):
            return
        self._dispatch(node)

    def _dispatch(self, node: cst.CSTNode) -> None:
        ref = match(self.ctx, node)
        if ref is None or ref.extra or ref.fn not in self.FUNCTIONS:
            return
        if _target.in_cuda_only_block(self.ctx):
            return  # `if torch.cuda.is_available(): <CUDA-only code>` runs anywhere already
        if cuda_keyed_entry(self.ctx, ref):
            target = self.target_for(ref)
            hint = f" (`{target}`)" if target else ""
            self.report(ref.outer, f"per-backend table entry for `torch.cuda.{ref.fn}`: keep it and "
                                   f"add a `\"neuron\"` entry{hint} beside it")
            return
        self.on_ref(ref)

    def target_for(self, ref: CudaRef) -> str | None:
        """The TorchNeuron name that replaces ``ref``, for messages (None if there is none)."""
        return None

    def on_ref(self, ref: CudaRef) -> None:
        raise NotImplementedError

    # -- helpers for subclasses --
    def portable(self, ref: CudaRef, message: str, *, keep_on_cuda: bool = True) -> None:
        """``--target cpu`` / ``accelerator`` for a CUDA-only call with no portable equivalent: a
        statement of its own is deleted (cpu, or ``keep_on_cuda=False``) or kept for CUDA
        inside ``if torch.cuda.is_available():`` (accelerator); any other use is reported."""
        statement = enclosing_small_statement(self.ctx, ref)
        line = self.ctx.statement_to_remove(statement) if statement is not None else None
        if statement is None:
            self.report(ref.outer, f"{spelled(ref)}: {message}; no automatic `--target "
                                   f"{_target.target(self.ctx)}` fix for this use: migrate by hand")
        elif _target.target(self.ctx) == _target.CPU or not keep_on_cuda:
            self.remove(statement, f"{spelled(ref)} deleted: {message}")
        elif isinstance(line, cst.SimpleStatementLine):
            new, imports = _target.guarded(self.ctx, line)
            self.fix(line, new, f"{spelled(ref)} kept for CUDA under `if torch.cuda.is_available():`: "
                     f"{message}", imports=imports)
        else:
            self.report(ref.outer, f"{spelled(ref)}: {message}; guard it with "
                                   "`if torch.cuda.is_available():` by hand")

    def rewrite(self, ref: CudaRef, qualified: str, message: str, *, safety: Safety | None = None,
                evidence: Evidence | None = None, imports: tuple[ImportRequest, ...] = ()) -> None:
        """Replace the function reference by ``qualified`` (arguments untouched)."""
        expr, needed = replacement_for(self.ctx, ref, qualified)
        self.fix(ref.node, expr, message, safety=safety, evidence=evidence, imports=needed + imports)


def spelled(ref: CudaRef) -> str:
    """``torch.cuda.synchronize()`` or ``torch.cuda.synchronize`` for a message."""
    return f"`torch.cuda.{ref.fn}()`" if ref.call is not None else f"`torch.cuda.{ref.fn}`"
