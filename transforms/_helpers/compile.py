"""``torch.compile`` call sites: which calls compile, under which local names, and the plan for
one call (NRN301): which settings go, which are reported, what the backend becomes."""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import pairwise

import libcst as cst

from neuronize.analysis.context import FileContext
from neuronize.transform import Evidence
from neuronize.transforms._helpers import hosts, per_target
from neuronize.transforms._helpers.calls import double_star_arg, drop_elements, keyword, with_keyword
from neuronize.transforms._helpers.device_choice import has_is_available, says_only_neuron
from neuronize.writing.device_name import chooses_neuron
from neuronize.transforms._helpers.literals import make_string, string_value
from neuronize.transforms._helpers.messages import short
from neuronize.transforms._helpers.names import last_name
from neuronize.types import Target

#: keyword arguments of ``torch.compile`` (all keyword-only after the model)
COMPILE_KEYWORDS = frozenset({"fullgraph", "dynamic", "backend", "mode", "options", "disable"})


def compile_kind(ctx: FileContext, call: cst.Call) -> str | None:
    """``"torch"`` for ``torch.compile(...)`` in any spelling, ``"module"`` for what looks like
    ``nn.Module.compile(...)`` (``model.compile(backend=...)``), else None.

    ``X.compile(...)`` counts only in a file that imports torch, when ``X`` is not an imported
    module (``re.compile``) and every argument is a ``torch.compile`` keyword (Keras'
    ``model.compile(optimizer=..., loss=...)`` is not).
    """
    func = call.func
    if isinstance(func, cst.Name):
        return "torch" if ctx.qualify(func) == "torch.compile" else None
    if not isinstance(func, cst.Attribute) or func.attr.value != "compile":
        return None
    qualified = ctx.qualify(func)
    if qualified == "torch.compile":
        return "torch"
    if qualified is not None or not ctx.names.imports_module("torch"):
        return None
    if isinstance(func.value, (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString)):
        return None
    for arg in call.args:
        if arg.star == "**":
            continue
        if arg.keyword is None or arg.keyword.value not in COMPILE_KEYWORDS:
            return None
    return "module"


def dynamic_group(call: cst.Call) -> str | None:
    """The edit group of a compile call that asks for ``dynamic=True`` (its backend, NRN301, and
    its ``dynamic=``, NRN302): a Neuron backend beside a kept ``dynamic=True`` compiles nothing on
    Neuron, so the two are applied together or not at all."""
    arg = keyword(call, "dynamic")
    if arg is None or not (isinstance(arg.value, cst.Name) and arg.value.value == "True"):
        return None
    return f"dynamic compile {short(call, 40)}"


def call_name(func: cst.BaseExpression, aliases: frozenset[str] = frozenset()) -> str:
    """The last name of a call's function; ``"compile"`` for an alias of ``torch.compile``
    (``aliases``: ``local_names(ctx, ["torch.compile"])``)."""
    if isinstance(func, cst.Name) and func.value in aliases:
        return "compile"
    return last_name(func) or ""


# -- the plan for one torch.compile call (NRN301) ----------------------------------------------
STATIC_REASON = "static shapes: Neuron compiles one graph per input shape and rejects `dynamic=True`"


#: what a missing backend means under each target (the default backend, Inductor, emits CUDA/Triton kernels...)
ON_CUDA = {
    per_target.NEURON: "",
    per_target.ACCELERATOR: " on CUDA and does not compile for Neuron",
    per_target.CPU: " on CUDA and does not compile for Neuron",
}
#: backends whose code runs only on NVIDIA GPUs (or only under Inductor): replaced
REPLACED_BACKENDS = frozenset({"inductor", "cudagraphs"})
#: device-agnostic debugging backends: left, with a note
DEBUG_BACKENDS = frozenset({"eager", "aot_eager", "aot_eager_decomp_partition", "aot_eager_default_partitioner"})
#: `mode=` values that only mean something to Inductor on CUDA
CUDA_MODES = frozenset({"reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs"})
#: `options=` keys the Neuron backend reads (fallback_execution: DOC; model_name: 3P)
NEURON_OPTIONS = frozenset({"fallback_execution", "model_name"})
#: why a host-aware call keeps its CUDA `mode=` (the message's clause)
MODE_KEPT = "Neuron ignores it with a warning and compiles with the default mode; CUDA keeps it"


def host_aware_backend(expr: cst.BaseExpression) -> bool:
    """``expr`` is a compile backend that already chooses Neuron on a Neuron host and another
    backend elsewhere: the accelerator target's (:func:`chooses_neuron`), or ``"neuron" if
    <Neuron test> else <the original backend>`` (:func:`hosts.host_compile_backend`)."""
    return chooses_neuron(expr) or (isinstance(expr, cst.IfExp) and string_value(expr.body) == "neuron"
                                    and says_only_neuron(expr.test))


def cuda_chosen_backend(ctx: FileContext, expr: cst.BaseExpression) -> bool:
    """``"inductor" if torch.cuda.is_available() else "aot_eager"``: a backend the program chooses
    by asking for CUDA, which gains a Neuron arm in front (:func:`hosts.host_compile_backend`)."""
    return isinstance(expr, cst.IfExp) and not host_aware_backend(expr) and has_is_available(ctx, expr.test)


#: the ``torch.compile`` settings NRN301 migrates as a whole (a CUDA check in them is its business)
COMPILE_SETTINGS = frozenset({"backend", "mode", "options"})


def in_compile_setting(ctx: FileContext) -> bool:
    """The node being visited is in a :data:`COMPILE_SETTINGS` keyword of a compile call."""
    for arg, call in pairwise(ctx.ancestors()):
        if isinstance(arg, cst.Arg) and isinstance(call, cst.Call) and arg.keyword is not None:
            return arg.keyword.value in COMPILE_SETTINGS and compile_kind(ctx, call) is not None
    return False


def host_aware_test(ctx: FileContext, call: cst.Call) -> per_target.Built | None:
    """The Neuron test of ``call``'s host-aware backend (``"neuron" if <test> else <another
    backend>``), with its imports: the test written in the call, or the one NRN301 writes
    (:func:`hosts.host_compile_backend`, for the call being visited) where the call has no backend
    or one NRN301 replaces. None where the call compiles with one backend on every host."""
    arg = keyword(call, "backend")
    if arg is not None and isinstance(arg.value, cst.IfExp) and host_aware_backend(arg.value):
        return arg.value.test, ()
    if (arg is None and double_star_arg(call) is not None) or (
            arg is not None and string_value(arg.value) not in REPLACED_BACKENDS):
        return None
    chosen = hosts.host_compile_backend(ctx, arg.value if arg is not None else None)
    if chosen is None or not isinstance(chosen[0], cst.IfExp):
        return None
    return chosen[0].test, chosen[1]


@dataclass
class CompilePlan:
    """What to do with one ``torch.compile(...)`` call: findings to report, and the edited call
    with the list of its edits (None when nothing changes)."""

    reports: list[tuple[cst.CSTNode, str, Evidence | None]] = field(default_factory=list)
    new: cst.Call | None = None
    #: the edits, then what a host-aware call keeps for the other hosts (one clause each)
    edits: list[str] = field(default_factory=list)
    dropped_comments: int = 0

    def report(self, node: cst.CSTNode, message: str, evidence: Evidence | None = None) -> None:
        self.reports.append((node, message, evidence))


def plan_compile(node: cst.Call, what: str, target: Target, backend: cst.BaseExpression | None,
                 evidence: Evidence | None = None) -> CompilePlan:
    """The plan for ``node``, a ``torch.compile`` call (``what`` names it in messages) under
    ``target``, whose backend expression is ``backend`` (None: keep PyTorch's default).

    A host-aware ``backend`` (``"neuron" if <test> else ...``) keeps what the other hosts'
    backend reads: CUDA modes stay (Neuron ignores them with a warning), Inductor ``options=``
    are passed only where Neuron is absent (``None if <test> else {...}``, the same ``<test>``),
    and no ``dynamic=False`` is added (omitting it is what the Neuron docs allow besides False).

    Pure: reads the call, returns values. ``evidence`` overrides the reports' evidence mark."""
    plan = CompilePlan()
    backend_arg = keyword(node, "backend")
    stars = double_star_arg(node)
    host_test = backend.test if isinstance(backend, cst.IfExp) else None  # keeps the other hosts
    edits: list[str] = []
    kept: list[str] = []  # what a host-aware call keeps for the other hosts: said, not edited
    remove: list[cst.Arg] = []
    dropped_comments = 0
    backend_known = True  # the backend is (or becomes) a literal we understand
    runtime_backend = False  # the backend is chosen at run time: the call is reported, not edited
    backend_new = backend  # None: keep the default
    if backend_arg is None:
        if stars is not None:
            plan.report(node, f"{what} takes its settings from `{short(stars, 50)}`: make sure they "
                        'say `backend="neuron"` and no CUDA `mode=` or Inductor `options=`',
                        evidence=evidence)
            return plan
        if backend_new is not None:
            edits.append(per_target.fill(target, "{compile_backend} added (the default backend, Inductor, "
                                     "emits CUDA/Triton kernels{on_cuda})", on_cuda=ON_CUDA[target]))
    else:
        value = string_value(backend_arg.value)
        if value == "neuron":
            return plan
        if value is None and host_aware_backend(backend_arg.value):
            return plan  # chosen from the detected device already (host-aware, `--target accelerator`)
        if value is None and host_test is not None and backend.orelse.deep_equals(  # type: ignore[union-attr]
                backend_arg.value.with_changes(lpar=(), rpar=())):
            edits.append("a Neuron arm in front of the backend the program chooses at run time "
                         "(`\"neuron\" if <the accelerator is Neuron> else <the original choice>`)")
        elif value is None:
            also = [k for k in ("mode", "options") if keyword(node, k) is not None]
            tail = " with no CUDA `mode=` or Inductor `options=`" if also else ""
            if host_test is not None:  # the other hosts keep their mode, Neuron ignores it
                tail = " with no Inductor `options=`" if "options" in also else ""
            plan.report(backend_arg.value, f"{what} picks its backend at run time "
                        f"(`backend={short(backend_arg.value, 50)}`): make sure it is `\"neuron\"` on Trainium{tail}")
            backend_known = False
            runtime_backend = True
        elif value in DEBUG_BACKENDS:
            plan.report(backend_arg.value, f'{what} uses the debugging backend `"{value}"` (runs on any '
                        'device, without compiling for Neuron): switch to `backend="neuron"` when done')
            return plan
        elif value not in REPLACED_BACKENDS:
            plan.report(backend_arg.value, f'{what} uses the backend `"{value}"`, which is not '
                        'available on Trainium: use `backend="neuron"`')
            return plan
        elif backend_new is None:
            if value == "cudagraphs":
                remove.append(backend_arg)
                edits.append('`backend="cudagraphs"` removed (CUDA graphs); the default backend, '
                             "Inductor, compiles for the CPU")
            backend_known = False  # `backend="inductor"` is the CPU's backend: kept
        else:
            edits.append(per_target.fill(target, '`backend="{value}"` -> {compile_backend}', value=value))

    mode_arg = keyword(node, "mode")
    if mode_arg is not None:
        mode = string_value(mode_arg.value)
        if mode in CUDA_MODES and host_test is not None:
            kept.append(f'`mode="{mode}"` kept ({MODE_KEPT})')
        elif mode in CUDA_MODES:
            remove.append(mode_arg)
            edits.append(f'`mode="{mode}"` removed (CUDA graphs / Triton autotuning; Neuron honours '
                         "only the default mode)")
        elif mode is None and backend_known and host_test is None and not (
                isinstance(mode_arg.value, cst.Name) and mode_arg.value.value == "None"):
            plan.report(mode_arg.value, f"{what} picks `mode={short(mode_arg.value, 50)}` at run time: Neuron "
                        "honours only the default mode; CUDA modes are ignored with a warning")

    options_arg = keyword(node, "options")
    new_options: cst.BaseExpression | None = None
    if options_arg is not None and backend_known:
        value_node = options_arg.value
        if isinstance(value_node, cst.Dict):
            keys: list[str | None] = []
            for element in value_node.elements:
                keys.append(string_value(element.key) if isinstance(element, cst.DictElement) else None)
            dropped = [k for k in keys if k not in NEURON_OPTIONS]
            listing = ", ".join(f"`{k}`" for k in dropped)
            if None in keys:
                plan.report(value_node, f"{what}: `options=` has keys computed at run time: keep only "
                            "`fallback_execution` (Neuron does not read Inductor options)" + (
                                " on Neuron, and the Inductor keys for the other hosts' backend"
                                if host_test is not None else ""))
            elif host_test is not None and dropped and len(dropped) < len(keys):
                plan.report(value_node, f"{what}: `options=` mixes Neuron keys with Inductor ones ({listing}), "
                            "which the other hosts' backend reads: give Neuron its keys and the other hosts "
                            "theirs by hand (`options=<Neuron's> if <Neuron test> else <the others'>`)")
            elif host_test is not None and dropped:
                new_options = cst.IfExp(test=host_test, body=cst.Name("None"), orelse=value_node)
                edits.append(f"Inductor `options=` ({listing}) passed only where Neuron is absent "
                             "(`None`, the default, on Neuron)")
            elif host_test is None:
                kept_keys = [e for e, k in zip(value_node.elements, keys, strict=False) if k in NEURON_OPTIONS]
                if not kept_keys:
                    remove.append(options_arg)
                    edits.append(f"Inductor `options=` removed ({listing or 'empty'})")
                elif dropped:
                    gone = [e for e in value_node.elements if not any(e is k for k in kept_keys)]
                    elements, lost, closing = drop_elements(value_node.elements, gone,
                                                            value_node.rbrace.whitespace_before)
                    dropped_comments += lost
                    new_options = value_node.with_changes(
                        elements=elements, rbrace=value_node.rbrace.with_changes(whitespace_before=closing))
                    edits.append(f"Inductor options {listing} removed from `options=`")
        elif not (isinstance(value_node, cst.Name) and value_node.value == "None"):
            plan.report(value_node, f"{what}: `options={short(value_node, 50)}` is built elsewhere: Neuron "
                        "reads only `fallback_execution`; " + (
                            "the other hosts' backend reads the Inductor keys: pass those only where "
                            "Neuron is absent" if host_test is not None else "drop the Inductor keys"))

    add_static = not runtime_backend and host_test is None and keyword(node, "dynamic") is None
    if add_static:
        edits.append(f"`dynamic=False` added ({STATIC_REASON})")
    if not edits:
        return plan
    new = node
    if remove:
        args, lost, _ = drop_elements(node.args, remove)
        dropped_comments += lost
        new = node.with_changes(args=args)
    if new_options is not None:
        new = new.with_changes(args=[
            a.with_changes(value=new_options) if a.keyword is not None and a.keyword.value == "options" else a
            for a in new.args
        ])
    if backend_known and backend_new is not None:
        like = backend_arg.value if backend_arg is not None else None
        if isinstance(backend_new, cst.SimpleString):
            backend_new = make_string("neuron", like)
        new = with_keyword(new, "backend", backend_new)
    if add_static:
        new = with_keyword(new, "dynamic", cst.Name("False"))
    plan.new, plan.edits, plan.dropped_comments = new, edits + kept, dropped_comments
    return plan


# -- the plan for one torch._dynamo.optimize call (NRN301) ----------------------------------------
@dataclass
class OptimizePlan:
    """What to do with one ``torch._dynamo.optimize(...)`` call: reports, and at most one fix
    ``(node, replacement, message)``."""

    reports: list[tuple[cst.CSTNode, str, Evidence | None]] = field(default_factory=list)
    fix: tuple[cst.CSTNode, cst.CSTNode, str] | None = None

    def report(self, node: cst.CSTNode, message: str) -> None:
        self.reports.append((node, message, None))

    def set_fix(self, node: cst.CSTNode, replacement: cst.CSTNode, message: str) -> None:
        self.fix = (node, replacement, message)


def plan_optimize(node: cst.Call, target: Target, backend: cst.BaseExpression | None) -> OptimizePlan:
    """The plan for ``torch._dynamo.optimize(...)`` under ``target`` (``backend``: the target's
    compile backend, None to keep the default)."""
    plan = OptimizePlan()
    arg = keyword(node, "backend")
    if arg is None and node.args and node.args[0].keyword is None and not node.args[0].star:
        arg = node.args[0]
    note = "`torch._dynamo.optimize` is deprecated: prefer `torch.compile(..., backend=\"neuron\")`"
    if target != per_target.NEURON:
        return _optimize_portable(plan, node, arg, target, backend)
    if arg is None:
        if double_star_arg(node) is not None:
            plan.report(node, f"`torch._dynamo.optimize(...)`: make sure the backend is `\"neuron\"`; {note}")
            return plan
        plan.set_fix(node, with_keyword(node, "backend", make_string("neuron")),
                     f'`torch._dynamo.optimize(...)`: `backend="neuron"` added (the default is Inductor); {note}')
        return plan
    value = string_value(arg.value)
    if value == "neuron":
        return plan
    if value in REPLACED_BACKENDS:
        plan.set_fix(arg.value, make_string("neuron", arg.value).with_changes(
            lpar=getattr(arg.value, "lpar", ()), rpar=getattr(arg.value, "rpar", ())),
            f'`torch._dynamo.optimize("{value}")` -> `"neuron"`; {note}')
    else:
        plan.report(arg.value, f"`torch._dynamo.optimize({short(arg.value, 50)})`: use the `\"neuron\"` "
                    f"backend on Trainium; {note}")
    return plan


def _optimize_portable(plan: OptimizePlan, node: cst.Call, arg: cst.Arg | None, target: Target,
                       backend: cst.BaseExpression | None) -> OptimizePlan:
    """``--target cpu``: Inductor is the CPU's backend (kept). ``accelerator``: the backend
    chosen from the detected device."""
    note = "`torch._dynamo.optimize` is deprecated: prefer `torch.compile`"
    value = string_value(arg.value) if arg is not None else None
    if arg is not None and value is None and chooses_neuron(arg.value):
        return plan
    if backend is None or (arg is not None and value not in REPLACED_BACKENDS):
        if value == "cudagraphs" or (arg is not None and value is None):
            plan.report(arg.value if arg is not None else node,
                        f"`torch._dynamo.optimize({short(arg.value, 50) if arg is not None else ''})`: make sure "
                        f"the backend compiles for the CPU (Inductor); {note}")
        return plan
    expr = backend
    if arg is None:
        if double_star_arg(node) is not None:
            return plan
        plan.set_fix(node, with_keyword(node, "backend", expr),
                     per_target.fill(target, "`torch._dynamo.optimize(...)`: {compile_backend}; {note}", note=note))
    else:
        plan.set_fix(arg.value, expr.with_changes(lpar=getattr(arg.value, "lpar", ()),
                                                  rpar=getattr(arg.value, "rpar", ())),
                     per_target.fill(target, '`torch._dynamo.optimize("{value}")` -> {compile_backend}; {note}',
                                  value=value, note=note))
    return plan
