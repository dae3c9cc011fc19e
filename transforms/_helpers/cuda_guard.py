"""Guarded code (the ``torch.cuda`` runtime family, NRN110 and NRN104): is the code an availability
check guards device selection / device-agnostic code (rewrite), or a CUDA-only path (flash-attn,
bitsandbytes, cuDNN, DataParallel, fp16...) that must stay off on Neuron (report)?"""

from __future__ import annotations

import re
from dataclasses import dataclass
from collections.abc import Iterable, Sequence

import libcst as cst

from neuronize.analysis.context import FileContext, dotted_name
from neuronize.analysis.syntax import chain_head, else_ends_early, ends_early, imported_names
from neuronize.analysis.walk import iter_syntax, visit
from neuronize.transforms._helpers.cuda_runtime import PREFIX, SUBMODULES, owned
from neuronize.transforms._helpers.cuda_settings import SETTING_PREFIXES
from neuronize.transforms._helpers.hf import device_map_kind, entry_key
from neuronize.transforms._helpers.literals import cuda_member, gpu_word, string_value
from neuronize.transforms._helpers.messages import short
from neuronize.transforms._helpers.names import last_name
from neuronize.transforms._helpers.nodes import (
    assigned_names, following_statements, is_read, iter_conditions, target_names,
)
from neuronize.analysis.cuda_packages import CUDA_ONLY_PACKAGES

# -- what guarded code does ----------------------------------------------------------------
#: Qualified-name prefixes that mean a CUDA-only path.
CUDA_ONLY_PREFIXES = (
    "torch.backends.cudnn", "torch.backends.cuda", "torch.cuda.nvtx",
    "torch.cuda.graph", "torch.cuda.CUDAGraph", "torch.cuda.make_graphed_callables",
    "torch.cuda.get_device_capability", "torch.cuda.mem_get_info", "torch.cuda.utilization",
    "torch.utils.cpp_extension", "torch.float16", "torch.half", "torch.nn.DataParallel",
    "torch.nn.parallel.DataParallel",
    # the CUDA (ROCm) toolkit's version: a fact about the GPU build (`None` on Neuron), printed or compared
    "torch.version.cuda", "torch.version.hip",
)
#: Last components of a dotted name that mean a CUDA-only path whatever the import.
CUDA_ONLY_NAMES = frozenset({
    "DataParallel", "GradScaler", "CUDAGraph", "BitsAndBytesConfig", "get_device_capability",
    "half", "float16", "cudnn",
})
#: ``torch.cuda`` memory statistics read as values: NRN113 migrates them only as statements of
#: their own (under a Neuron guard), so a value read in guarded code stays CUDA, and so does its guard
MEMORY_QUERIES = frozenset({
    "memory_allocated", "max_memory_allocated", "memory_reserved", "max_memory_reserved",
    "memory_cached", "max_memory_cached", "memory_stats", "memory_summary",
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
    # text handling: a device string parsed or reported (`device.strip().split(",")`)
    "strip", "lstrip", "rstrip", "split", "join",
})

#: the transparent calls that are device work: code making one is explained by it
DEVICE_CALLS = frozenset({
    "to", "cuda", "cpu", "device", "manual_seed", "manual_seed_all", "seed", "Generator", "set_device",
    "synchronize", "empty_cache", "current_device", "get_device",
})
#: the questions a guard asks (its own test among them): no device work
_QUESTIONS = frozenset({"is_available", "device_count"})
#: the transparent calls that update an object's state (a dict's, or a meter's of the project)
_MUTATIONS = frozenset({"update"})

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


#: the edit group of the placements beside a framework's CUDA device kept for CUDA (policy step 7)
GPU_WORD_PINS = "devices beside a framework's CUDA GPU device"
#: the edit group of the placements beside a choice of the program's own label for CUDA, kept
CUDA_LABEL_PINS = "devices beside the program's CUDA label"


@dataclass
class Verdict:
    marker: str | None = None  # what makes the guarded code CUDA-only (first one found)
    opaque: str | None = None  # a call whose effect cannot be judged here (first one found)
    #: the marker chooses a framework's CUDA device (``"gpu"``): the placements beside it wait for it
    pins: str | None = None
    #: the code names torch (beyond asking whether a device is there) or calls a device method
    #: (``.to``, ``.cuda``, ``synchronize``...)
    touches: bool = False
    #: the first state update through an object (``meter.update(...)``)
    mutation: str | None = None


class _GuardScan(cst.CSTVisitor):
    """Looks for CUDA-only markers and opaque calls in guarded code."""

    def __init__(self, ctx: FileContext, verdict: Verdict, reads_harmless: bool = False, gpu_words: bool = True) -> None:
        super().__init__()
        self.ctx = ctx
        self.v = verdict
        self.owned = owned()
        self.reads_harmless = reads_harmless
        self.gpu_words = gpu_words and not _dispatches_on_gpu_word(ctx)

    def _mark(self, what: str) -> None:
        if self.v.marker is None:
            self.v.marker = what

    def _check_name(self, node: cst.CSTNode) -> None:
        raw = dotted_name(node)
        if raw is None:
            return
        flagged = flag_marker(self.ctx, node)
        if flagged is not None:
            self._mark(flagged)
        qualified = self.ctx.qualify(node) or raw
        head = qualified.split(".")[0]
        last = qualified.rsplit(".", 1)[-1]
        self.v.touches |= head == "torch" and last not in _QUESTIONS
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
            if fn not in self.owned and fn not in SUBMODULES and fn != "amp":  # see BACKEND_SETTING_CALLS
                self._mark(f"`{qualified}`")
            elif fn in MEMORY_QUERIES and not self.reads_harmless:
                self._mark(f"`{qualified}()` read as a value, which stays CUDA")

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
                visit(target, self)
        if value is not None:
            visit(value, self)
        return False

    def visit_Assign(self, node: cst.Assign) -> bool:
        for target in node.targets:
            self._mark_placement(entry_key(target.target), node.value)
        self._mark_cuda_label(node.value)
        return self._visit_assignment([t.target for t in node.targets], node.value)

    def _mark_cuda_label(self, value: cst.BaseExpression) -> None:
        """A member of the program's own device enum or class for CUDA (``device = Device.cuda``):
        set on Neuron, it sends Neuron down every path the program keeps for that label. The
        placements beside the kept choice wait for it: Neuron keeps the program's own device."""
        if cuda_member(value, self.ctx.qualify(value) or ""):
            if self.v.marker is None:
                self.v.pins = CUDA_LABEL_PINS
            self._mark(f"`{short(value, 40)}`, the program's label for CUDA")

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
        elif node.keyword is not None:
            self._mark_placement(node.keyword.value, node.value)

    def _mark_placement(self, key: str | None, value: cst.BaseExpression) -> None:
        """A model placed on CUDA GPUs by its loader: accelerate's planner (``device_map="auto"``)
        or GPU indices, or per-GPU memory budgets (``max_memory``), given as a keyword or stored
        in a keyword dict (``kwargs["device_map"] = "sequential"``). On Neuron the planner finds
        no GPU and the model lands on the CPU."""
        if key == "max_memory" or key == "device_map" and device_map_kind(value) in ("planner", "gpu"):
            self._mark(f"`{key}=` placing the model on CUDA GPUs")

    def visit_SimpleString(self, node: cst.SimpleString) -> None:
        value = string_value(node)
        if value is None:
            return
        # ("nccl" is not a marker: NRN401 migrates it, and needs the check to see Neuron)
        if "flash_attention" in value or "flash_attn" in value or _names_gpu_build(value):
            self._mark(f"`{value!r}`")
        elif _GPU_INDEX_KEY.fullmatch(value):
            self._mark(f"`{value!r}`, the GPU index a framework hands in")
        elif self.gpu_words and gpu_word(value):
            if self.v.marker is None:
                self.v.pins = GPU_WORD_PINS
            self._mark(f"`{value!r}`, a framework's name for a CUDA GPU")

    def visit_Return(self, node: cst.Return) -> None:
        """``return some_function``, ``return "chunked"``: what the caller does with it cannot be
        judged here."""
        value = node.value
        chosen = _named_choice(value) if value is not None else None
        if chosen is not None and self.v.opaque is None:
            self.v.opaque = f'returns `"{chosen}"`'
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
            self.v.touches |= last in DEVICE_CALLS
            if last in _MUTATIONS and isinstance(node.func, cst.Attribute) and self.v.mutation is None:
                self.v.mutation = f"`{short(node.func, 40)}(...)`"
            return None
        qualified = self.ctx.qualify(node.func) or ""
        if qualified in BACKEND_SETTING_CALLS:
            for arg in node.args:  # a flag setter, like an assignment (see _visit_assignment)
                visit(arg, self)
            return False
        if qualified.startswith(PREFIX):
            return None  # judged by _check_name (owned: migrated by this family; others: markers)
        if self.v.opaque is None:
            self.v.opaque = f"`{short(node.func, 40)}(...)`"
        return None


#: the key of a GPU index a serving framework hands the code (TorchServe's
#: ``context.system_properties.get("gpu_id")``): set for a CUDA GPU only, so a Neuron host let into
#: the code it guards builds ``"neuron:None"``
_GPU_INDEX_KEY = re.compile(r"gpu_?(?:id|ids|index)", re.IGNORECASE)


#: text naming a GPU build of a package (``onnxruntime-gpu``, ``paddlepaddle-gpu>=2``, or the bare
#: suffix a CUDA check appends: ``"onnxruntime" + ("-gpu" if cuda else "")``) or a CUDA execution
#: provider (``CUDAExecutionProvider``, ``TensorrtExecutionProvider``): chosen by a CUDA check, it is
#: what the check is for
_GPU_BUILD = re.compile(r"^[A-Za-z0-9_.\-]*-gpu\b|^(CUDA|Tensorrt)ExecutionProvider$")


#: a comparison with the word "gpu" (``args.device == "gpu"``, ``"gpu" != kind``)
_GPU_WORD_TEST = re.compile(rb"""[=!]=\s*[rRuU]?(['"])gpu\1|(['"])gpu\2\s*[=!]=""", re.IGNORECASE)


def _dispatches_on_gpu_word(ctx: FileContext) -> bool:
    """The file tests a value for ``"gpu"`` itself (``if args.device == "gpu": model.cuda()``): the
    word is its own flag for the accelerator, whose CUDA code the migration gives Neuron host-aware;
    only a word handed to a framework that tests it (``Trainer(device="gpu")``) is CUDA's path."""
    key = ("dispatches-on-gpu-word", 0)
    if key not in ctx.memo:
        ctx.memo[key] = _GPU_WORD_TEST.search(ctx.source) is not None
    return ctx.memo[key]


def _names_gpu_build(text: str) -> bool:
    """A GPU build or execution provider (above), or a dotted path into a CUDA-only package
    (``"apex.optimizers.FusedAdam"``, ``"bitsandbytes."``: a class imported by name)."""
    text = text.strip()
    return _GPU_BUILD.match(text) is not None or "." in text and text.split(".")[0] in CUDA_ONLY_PACKAGES


#: names a check may choose that mean the same on Neuron: hosts, precisions, process-group and
#: compile backends, and an empty choice
_PLAIN_CHOICES = frozenset({
    "", "cpu", "cuda", "gpu", "mps", "xpu", "neuron", "auto", "bf16", "bfloat16", "fp16", "float16", "half", "fp32",
    "float32", "float", "16", "32", "16-mixed", "bf16-mixed", "32-true", "nccl", "gloo", "inductor", "eager",
})


def _named_choice(node: cst.CSTNode) -> str | None:
    """The name ``node`` is, where it is a string that may name an implementation (not one of
    :data:`_PLAIN_CHOICES`)."""
    chosen = string_value(node) if isinstance(node, (cst.SimpleString, cst.ConcatenatedString)) else None
    if chosen is None or chosen.lower() in _PLAIN_CHOICES or _NAME.fullmatch(chosen) is None:
        return None  # a label or a message (`"no accelerator"`) names nothing that runs
    return chosen


_NAME = re.compile(r"[A-Za-z_][\w.\-]*")


def import_flags(ctx: FileContext) -> dict[str, str]:
    """The module-level flags that say whether a CUDA-only package imported (``try: from apex
    import amp`` ``has_apex = True`` ``except ImportError: has_apex = False``), each with that
    package: code a CUDA check and such a flag decide together is that package's path."""
    key = ("import flags", id(ctx.module))
    if key not in ctx.memo:
        flags: dict[str, str] = {}
        for stmt in ctx.module.body:
            if not isinstance(stmt, cst.Try) or not stmt.handlers:
                continue
            package = next((top for node in iter_syntax(stmt.body) if isinstance(node, (cst.Import, cst.ImportFrom))
                            for imported in imported_names(node)
                            if (top := imported.module.split(".")[0]) in CUDA_ONLY_PACKAGES), None)
            if package is None:
                continue
            unset = set.intersection(*(_set_to(handler.body, False) for handler in stmt.handlers))
            flags.update(dict.fromkeys(_set_to(stmt.body, True) & unset, package))
        ctx.memo[key] = flags
    return ctx.memo[key]


def flag_marker(ctx: FileContext, node: cst.CSTNode) -> str | None:
    """The first of :func:`import_flags` ``node`` reads, as a CUDA-only marker of a guard."""
    flags = import_flags(ctx)
    name = next((found for sub in iter_syntax(node) if (found := dotted_name(sub)) in flags), None) if flags else None
    return None if name is None else f"`{name}`, true where `{flags[name]}` imports"


def _set_to(block: cst.BaseSuite, value: bool) -> set[str]:
    """The names ``block`` assigns the constant ``value`` (``True`` or ``False``) at its own level."""
    lines = block.body if isinstance(block, cst.IndentedBlock) else [block]
    return {name for line in lines if isinstance(line, (cst.SimpleStatementLine, cst.SimpleStatementSuite))
            for small in line.body if isinstance(small, cst.Assign)
            and isinstance(small.value, cst.Name) and small.value.value == str(value)
            for name in assigned_names(small) if "." not in name}


def scan(ctx: FileContext, nodes: Iterable[cst.CSTNode | None], *, rest_of_program: bool = False,
         gpu_words: bool = True) -> Verdict:
    """What ``nodes``, the code a check decides, hold. ``rest_of_program``: the code is everything
    after an ``assert`` the program starts with, where a memory statistic read for a log line
    (0 without CUDA) is no reason to keep the whole program off Neuron. ``gpu_words``: a
    framework's ``"gpu"`` counts as a CUDA-only path (not where it only labels a host)."""
    verdict = Verdict()
    visitor = _GuardScan(ctx, verdict, reads_harmless=rest_of_program, gpu_words=gpu_words)
    for node in nodes:
        if node is not None:
            visit(node, visitor)
            arms = (node.body, node.orelse) if isinstance(node, cst.IfExp) else (node,)
            chosen = next((name for arm in arms if (name := _named_choice(arm)) is not None), None)
            if chosen is not None and verdict.opaque is None:
                # a name chosen by CUDA's presence (`"chunked" if torch.cuda.is_available() else None`):
                # what it names may be CUDA's own implementation
                verdict.opaque = f'chooses `"{chosen}"`'
    if verdict.opaque is None and not verdict.touches:
        # nothing in it needs CUDA that we can see, yet it is guarded: the need is in what the
        # object it updates does (a memory meter reading CUDA statistics)
        verdict.opaque = verdict.mutation
    return verdict


def guarded_code(ctx: FileContext, stmt: cst.If | cst.While) -> list[cst.CSTNode]:
    """The test, both branches and, when the body or the ``else`` closing its ``elif`` chain ends
    the block early (``raise``, ``return``, ``sys.exit``), the statements after the chain, which
    the check also guards."""
    nodes: list[cst.CSTNode] = [stmt.test, stmt.body]
    if stmt.orelse is not None:
        nodes.append(stmt.orelse)
    if isinstance(stmt, cst.If) and (ends_early(stmt.body) or else_ends_early(stmt)):
        nodes.extend(following_statements(ctx, chain_head(stmt, ctx.parents)))
    return nodes


def flag_uses(ctx: FileContext, names: Sequence[str], assign: cst.CSTNode) -> list[cst.CSTNode]:
    """The code each use of a flag (a dotted name) decides: the if / conditional expression it is
    tested in, or the call it is passed to, or its statement. The assignment itself is skipped."""
    scope: cst.CSTNode = ctx.module
    for anc in ctx.ancestors():
        if isinstance(anc, (cst.FunctionDef, cst.Lambda)):
            scope = anc
            break
    finder = _FlagUseFinder(ctx, set(names), assign)
    visit(scope, finder)
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
            if is_read(node, self.stack[-2] if len(self.stack) > 1 else None):
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


#: constants a guard sets a switch to (``fp16 = False``, ``cache = None``)
_SWITCH_VALUES = frozenset({"True", "False", "None"})


def switched_flags(guard: cst.If) -> list[str]:
    """The dotted names the branches of ``guard`` set to a constant (``if not torch.cuda.is_available():
    load_trt, fp16 = False, False``): switches the program ties to CUDA. What they switch is decided
    where they are read (:func:`flag_uses`), like a flag the check is stored in."""
    names: list[str] = []
    branch: cst.CSTNode | None = guard
    while isinstance(branch, (cst.If, cst.Else)):
        for small in iter_syntax(branch.body):
            if isinstance(small, cst.Assign) and _is_switch(small.value):
                names += [n for t in small.targets for n in target_names(t.target)]
        branch = branch.orelse if isinstance(branch, cst.If) else None
    return names


def _is_switch(value: cst.BaseExpression) -> bool:
    if isinstance(value, cst.Tuple):
        return bool(value.elements) and all(_is_switch(e.value) for e in value.elements)
    return isinstance(value, cst.Name) and value.value in _SWITCH_VALUES


def guarded_after(ctx: FileContext, small: cst.CSTNode) -> list[cst.CSTNode]:
    """The statements after the statement line holding ``small`` (an ``assert``), and the test of
    the ``if`` whose body holds it (the branch the assert validates: ``if name.startswith("apex."):
    assert torch.cuda.is_available()``)."""
    found: list[cst.CSTNode] = []
    child: cst.CSTNode = small
    for anc in ctx.ancestors():
        if isinstance(anc, cst.SimpleStatementLine) and not found:
            found = list(following_statements(ctx, anc))
        if isinstance(anc, cst.If) and child is anc.body:
            return [*found, anc.test]
        if isinstance(anc, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            break
        child = anc
    return found


def calls_anywhere(ctx: FileContext, names: frozenset[str]) -> bool:
    """True when the module calls a function whose dotted name ends with one of ``names``."""
    if not any(name.encode() in ctx.source for name in names):
        return False  # no such name in the file's bytes: no need to walk the tree
    return any(isinstance(node, cst.Call) and last_name(node.func) in names
               for node in iter_syntax(ctx.module))




# -- guards that follow their migrated body: `if device.type == "cuda": torch.cuda.synchronize()` --
#: ``torch.cuda`` calls the runtime rules migrate on the neuron target (NRN111-NRN113), which
#: only mean something where the device is there; ``synchronize`` is a safe edit (NRN111)
FOLLOWING_CALLS = frozenset({
    "synchronize", "empty_cache", "manual_seed", "manual_seed_all", "seed",
    "reset_peak_memory_stats", "reset_accumulated_memory_stats", "reset_max_memory_allocated",
})
SAFE_FOLLOWING_CALLS = frozenset({"synchronize"})


def _following_function(ctx: FileContext, func: cst.BaseExpression) -> str | None:
    """The :data:`FOLLOWING_CALLS` function ``func`` names (``torch.cuda.synchronize``,
    ``torch.cuda.memory.empty_cache``, ``synchronize`` after ``from torch.cuda import ...``)."""
    qualified = ctx.qualify(func) or ""
    if not qualified.startswith(PREFIX):
        return None
    parts = qualified[len(PREFIX):].split(".")
    fn = parts[-1] if len(parts) == 2 and parts[0] in SUBMODULES else parts[0]
    return fn if len(parts) <= 2 and fn in FOLLOWING_CALLS else None


def migrated_body_calls(ctx: FileContext, block: cst.BaseSuite) -> list[str] | None:
    """The ``torch.cuda`` functions of ``block`` when every statement of it is one of
    :data:`FOLLOWING_CALLS` called as a statement of its own; None otherwise."""
    lines = block.body if isinstance(block, cst.IndentedBlock) else [block]
    found: list[str] = []
    for line in lines:
        smalls = getattr(line, "body", None)
        if not isinstance(line, (cst.SimpleStatementLine, cst.SimpleStatementSuite)) or not smalls:
            return None
        for small in smalls:
            if not (isinstance(small, cst.Expr) and isinstance(small.value, cst.Call)):
                return None
            fn = _following_function(ctx, small.value.func)
            if fn is None:
                return None
            found.append(fn)
    return found or None


def migrated_arm_call(ctx: FileContext, arm: cst.BaseExpression) -> list[str] | None:
    """The arm of a conditional expression as :func:`migrated_body_calls` sees a block: the
    :data:`FOLLOWING_CALLS` function it calls or names (``torch.cuda.synchronize()``, or the
    function itself: ``sync = torch.cuda.synchronize if ... else ...``); None otherwise."""
    fn = _following_function(ctx, arm.func if isinstance(arm, cst.Call) else arm)
    return [fn] if fn is not None else None


def neuron_guarded(ctx: FileContext, node: cst.CSTNode, *, only: bool = False) -> bool:
    """The node being visited sits in the body of an ``if`` that the migration turns into "CUDA or
    Neuron is here": a test holding ``torch.cuda.is_available()`` (not negated; NRN110 writes
    ``<Neuron is here> or torch.cuda.is_available()``), or a ``"cuda"`` comparison guarding a
    migrated body (NRN103 makes it cover both). With ``only``: an ``if`` that says "Neuron is
    here" and nothing else (the test the migration writes), where a Neuron-only call may go."""
    from neuronize.transforms._helpers.device_choice import asks_if_neuron, available_polarities, only_on_neuron
    from neuronize.transforms._helpers.device_model import covered_side

    child = node
    for anc in ctx.ancestors():
        if isinstance(anc, cst.If) and anc.body is child:
            if only_on_neuron(anc.test):  # `if on_neuron():`, `elif device.type == "neuron":`
                return True
            if not only and (asks_if_neuron(anc.test) or available_polarities(ctx, anc.test) == {False}):
                return True
            if not only and covered_side(ctx, anc) is child:
                return True
        if not only and isinstance(anc, cst.IfExp) and covered_side(ctx, anc) is child:
            return True  # `torch.cuda.empty_cache() if device == "cuda" else None`: NRN103 widens it
        if isinstance(anc, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            return False
        child = anc
    return False


# -- checks of a device already named CUDA: `is_cuda = device.type == "cuda" and torch.cuda.is_available()` --
def named_cuda_device(ctx: FileContext, node: cst.CSTNode) -> str | None:
    """The comparison naming CUDA that the availability check ``node`` only completes, when that
    comparison stays CUDA (NRN103 keeps it): the check is ``and``-ed with it into a flag
    (``is_cuda = device.type == "cuda" and torch.cuda.is_available()``), or sits in the body of an
    ``if`` testing it that is no device selection (``if device_type == "cuda": assert
    torch.cuda.is_available()``). On Neuron the comparison is False whatever the check says:
    the check rewritten alone changes nothing there, and only turns the CUDA path off."""
    from neuronize.transforms._helpers.device_choice import rewrite_cuda_comparison, selection_if

    def compared(test: cst.BaseExpression) -> str | None:
        atoms = [a for a in iter_conditions(test) if rewrite_cuda_comparison(a) is not None]
        return short(atoms[0]) if atoms else None

    ancestors = list(ctx.ancestors())
    position = next((i for i, a in enumerate(ancestors) if a is node), -1)
    outer = ancestors[position + 1:]
    child, chain, step = node, None, 0
    while step < len(outer) and isinstance(outer[step], (cst.BooleanOperation, cst.UnaryOperation,
                                                         cst.Comparison, cst.ComparisonTarget)):
        child = outer[step]
        chain = child if isinstance(child, cst.BooleanOperation) else chain
        step += 1
    assign = outer[step] if step < len(outer) else None
    if isinstance(chain, cst.BooleanOperation) and isinstance(assign, (cst.Assign, cst.AnnAssign)) \
            and assign.value is child and (found := compared(chain)) is not None:
        return found
    child = node
    for anc in outer:
        if isinstance(anc, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            return None
        if isinstance(anc, cst.If) and child is anc.body and not selection_if(anc) \
                and (found := compared(anc.test)) is not None:
            return found
        child = anc
    return None


def memory_read_nearby(ctx: FileContext) -> str | None:
    """The first ``torch.cuda`` memory statistic (:data:`MEMORY_QUERIES`) that the function being
    visited reads as a value: it stays CUDA (NRN113 reports it), so a device's total memory asked
    of Neuron next to it would be set against CUDA's usage (zero on Neuron)."""
    function = next((a for a in ctx.ancestors() if isinstance(a, cst.FunctionDef)), None)
    if function is None:
        return None
    for node in iter_syntax(function.body):
        if isinstance(node, cst.Call):
            qualified = ctx.qualify(node.func) or ""
            parts = qualified[len(PREFIX):].split(".") if qualified.startswith(PREFIX) else []
            fn = parts[-1] if len(parts) == 2 and parts[0] in SUBMODULES else parts[0] if len(parts) == 1 else None
            if fn in MEMORY_QUERIES:
                return qualified
    return None
