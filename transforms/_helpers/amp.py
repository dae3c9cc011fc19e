"""The mixed-precision family (NRN201-NRN205): the qualified names of the CUDA and the
device-generic AMP APIs, the fallback branch of a ``try`` that uses the generic API, and the base
class of the family's rules."""

from __future__ import annotations

import re

import functools
from typing import ClassVar, NamedTuple

import libcst as cst

from neuronize.analysis.context import FileContext
from neuronize.analysis.syntax import binding_counts
from neuronize.analysis.walk import iter_syntax
from neuronize.transform import ImportRequest, Transform
from neuronize.transforms._helpers import hosts, per_target
from neuronize.transforms._helpers.calls import argument, has_star, index_of, insert_args, new_keyword, replace_value
from neuronize.transforms._helpers.literals import is_false, string_value
from neuronize.transforms._helpers.names import local_names, mentions, qualified_expr
from neuronize.transforms._helpers.nodes import in_place
from neuronize.transforms._helpers.value_flow import enclosing_scope

#: ``torch.autocast(device_type, dtype=None, enabled=True, cache_enabled=None)``
AUTOCAST = frozenset({"torch.autocast", "torch.amp.autocast", "torch.amp.autocast_mode.autocast"})

#: ``torch.cuda.amp.autocast(enabled=True, dtype=torch.float16, cache_enabled=True)``
CUDA_AUTOCAST = frozenset({"torch.cuda.amp.autocast", "torch.cuda.amp.autocast_mode.autocast"})

CUDA_AUTOCAST_PARAMS = ("enabled", "dtype", "cache_enabled")


#: ``torch.amp.GradScaler(device="cuda", init_scale, growth_factor, backoff_factor, growth_interval, enabled)``
GRAD_SCALER = frozenset({"torch.amp.GradScaler", "torch.amp.grad_scaler.GradScaler", "torch.GradScaler"})

#: ``torch.cuda.amp.GradScaler(init_scale, growth_factor, backoff_factor, growth_interval, enabled)``
CUDA_GRAD_SCALER = frozenset({"torch.cuda.amp.GradScaler", "torch.cuda.amp.grad_scaler.GradScaler"})


#: ``torch.cuda.amp.custom_fwd(fwd=None, *, cast_inputs=None)`` -> its device-generic twin
CUDA_CUSTOM = {
    "torch.cuda.amp.custom_fwd": "torch.amp.custom_fwd",
    "torch.cuda.amp.custom_bwd": "torch.amp.custom_bwd",
    "torch.cuda.amp.autocast_mode.custom_fwd": "torch.amp.custom_fwd",
    "torch.cuda.amp.autocast_mode.custom_bwd": "torch.amp.custom_bwd",
}

#: ``torch.amp.custom_fwd(fwd=None, *, device_type, cast_inputs=None)``
CUSTOM = frozenset({
    "torch.amp.custom_fwd", "torch.amp.custom_bwd",
    "torch.amp.autocast_mode.custom_fwd", "torch.amp.autocast_mode.custom_bwd",
})


FLOAT16 = frozenset({"torch.float16", "torch.half"})

BF16_WHY = ("without `dtype=` Neuron autocast follows the CUDA default, float16; bf16 is the "
            "Neuron-preferred type (no GradScaler needed) but changes numerics")
CPU_BF16_WHY = "(CUDA's default fp16 is not the CPU autocast default)"
FP16_NOTE = ("; it keeps its float16 `dtype=`, which is not the documented Neuron path: "
             "prefer `torch.bfloat16`")
#: state functions whose device defaults to CUDA when none is given: name -> arguments of the CUDA form
DEFAULTS_TO_CUDA = {"torch.is_autocast_enabled": 0, "torch.set_autocast_enabled": 1}


def cuda_state_default(ctx: FileContext, call: cst.Call) -> str | None:
    """The autocast state function ``call`` calls without a device, so about CUDA's autocast
    (``torch.is_autocast_enabled()``), as its qualified name; else None."""
    qualified = ctx.qualify(call.func)
    if qualified in DEFAULTS_TO_CUDA and len(call.args) == DEFAULTS_TO_CUDA[qualified] \
            and all(arg.keyword is None for arg in call.args):
        return qualified
    return None


DEFAULT_NOTE = "; the dtype stays the Neuron default (the unsafe fix sets `dtype=torch.bfloat16`)"
NULL_CONTEXT_NOTE = ("; the dtype stays the default: the callee may be `nullcontext`, which takes no `dtype=` "
                     "(for bf16, pass it where the name is bound)")
#: a loss scaler in the file (``torch.cuda.amp.GradScaler()``, ``fp16_scaler``, ``loss_scaler(...)``):
#: the training scales its fp16 loss, and a CUDA scaler turns itself off elsewhere
_SCALER = re.compile(rb"GradScaler|NativeScaler|\b(?:\w+_)?scaler\b", re.IGNORECASE)
SCALED_NOTE = ("; no safe form: this file scales its fp16 loss with a CUDA scaler, which turns itself off on "
               "Neuron, so Neuron's default dtype (float16) would train unscaled")
BRANCH_NOTE = " where the device is {kind} (elsewhere the default dtype stays: float16 on CUDA)"


def in_fallback_branch(ctx: FileContext, generic: frozenset[str]) -> bool:
    """The node being visited sits in an ``except`` branch whose ``try`` uses one of ``generic``.

    ``try: s = torch.amp.GradScaler(device) / except AttributeError: s = torch.cuda.amp.GradScaler()``
    keeps old PyTorch working; the CUDA call there is the fallback, the ``try`` branch is what runs.
    """
    ancestors = list(ctx.ancestors())
    for i, anc in enumerate(ancestors):
        if isinstance(anc, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            return False
        if isinstance(anc, cst.ExceptHandler) and i + 1 < len(ancestors):
            owner = ancestors[i + 1]
            if isinstance(owner, (cst.Try, cst.TryStar)) and mentions(ctx, owner.body, generic):
                return True
    return False


def followed_device(ctx: FileContext, enabled: cst.BaseExpression | None) -> cst.BaseExpression | None:
    """The device an ``enabled=`` test names: ``device`` in ``enabled=device == "cuda"`` (as
    ``torch.device(device).type``, since it may be a string), ``x.device.type`` as it is."""
    found = _cuda_test(enabled)
    if found is None:
        return None
    left = found[0]
    if isinstance(left, cst.Attribute) and left.attr.value == "type":
        return left.with_changes(lpar=(), rpar=())
    if not isinstance(left, (cst.Name, cst.Attribute)):
        return None
    func, _ = qualified_expr(ctx, "torch.device")
    return cst.Attribute(value=cst.Call(func=func, args=[cst.Arg(left.with_changes(lpar=(), rpar=()))]),
                         attr=cst.Name("type"))


def _cuda_test(enabled: cst.BaseExpression | None) -> tuple[cst.BaseExpression, cst.SimpleString] | None:
    """``(X, the "cuda" literal)`` for ``X == "cuda"`` / ``"cuda" == X``, else None."""
    if not isinstance(enabled, cst.Comparison) or len(enabled.comparisons) != 1:
        return None
    target = enabled.comparisons[0]
    if not isinstance(target.operator, cst.Equal):
        return None
    left, right = enabled.left, target.comparator
    if string_value(left) == "cuda":
        left, right = right, left
    if string_value(right) != "cuda" or string_value(left) is not None or not isinstance(right, cst.SimpleString):
        return None
    return left, right


def followed_enabled(ctx: FileContext, enabled: cst.BaseExpression) -> cst.BaseExpression | None:
    """``enabled=device == "cuda"`` made to test for the target's device (``device == "neuron"``),
    which the code's device choice now names (None: not such a test)."""
    found = _cuda_test(enabled)
    if found is None:
        return None
    cuda = found[1]
    device, _ = per_target.device(ctx, cuda, parens=True)
    return enabled.deep_replace(cuda, device)


class AmpFix(NamedTuple):
    """One fix an autocast call gets: the new call, its message and imports; ``bf16``: it sets
    ``dtype=torch.bfloat16`` (unsafe: it changes numerics, and rests on source, not documentation)."""

    call: cst.BaseExpression
    message: str
    imports: tuple[ImportRequest, ...]
    bf16: bool


class AmpDevice(NamedTuple):
    """The ``device_type`` an autocast / ``custom_fwd`` gets."""

    expr: cst.BaseExpression
    imports: tuple[ImportRequest, ...]
    note: str  # for the message ("" for the target's plain device)
    follows: bool  # taken from the device ``enabled=`` tests


def amp_device(ctx: FileContext, original: cst.BaseExpression, enabled: cst.BaseExpression | None) -> AmpDevice:
    """The ``device_type`` a CUDA autocast / ``custom_fwd`` gets.

    A file with a CPU path (see :mod:`._host`) must keep running there, but
    ``torch.autocast("neuron")`` raises on a host without torch-neuronx even when disabled (and
    runs at import as a decorator). So: the device ``enabled=`` names, when it names one (the
    autocast then follows the device the code chose, everywhere); else, in a file with a CPU
    path, the host-aware value, which keeps
    ``"cuda"`` (a harmless no-op there) where the target's device is absent; the host-aware value
    too where the file keeps its CUDA hosts (:func:`device_model.keeps_cuda_hosts`: its placements keep
    CUDA there, and the autocast region must agree with them). A file that hard-codes CUDA gets
    the target's device."""
    from neuronize.transforms._helpers.device_model import keeps_cuda_hosts  # it builds on this module

    followed = followed_device(ctx, enabled)
    if followed is not None:
        _, imports = qualified_expr(ctx, "torch.device")
        return AmpDevice(followed, imports, "; it follows the device the code chose (the file also "
                         "runs without an accelerator)", True)
    if per_target.target(ctx) != per_target.CPU and hosts.has_cpu_path(ctx):
        expr, imports = hosts.host_aware(ctx, original)
        return AmpDevice(expr, imports, per_target.say(ctx, "; {kind} only where that device is present: this "
                                                    "file also runs without it, where the CUDA value is "
                                                    'harmless and `"neuron"` would raise'), False)
    if keeps_cuda_hosts(ctx):
        expr, imports = hosts.host_aware(ctx, original)
        return AmpDevice(expr, imports, per_target.say(ctx, "; {kind} only where that device is present: CUDA "
                                                    "hosts keep CUDA, as the file's device placements do"), False)
    expr, imports = per_target.device(ctx, original)
    return AmpDevice(expr, imports, "", False)


#: a program that sets CUDA autocast's default dtype itself (its regions then run in that one)
_SETS_AUTOCAST_DTYPE = re.compile(rb"\bset_autocast_(?:gpu_)?dtype\b")


def bf16_dtype(ctx: FileContext, device: AmpDevice) -> per_target.Built:
    """The ``dtype=`` the bf16 fix writes: ``torch.bfloat16``; where the device is host-aware
    (``"neuron" if <Neuron> else "cuda"``), ``torch.bfloat16 if <Neuron> else torch.float16``, so
    that only the target's device runs bf16 and the CUDA branch keeps CUDA autocast's default,
    spelled out: ``dtype=None`` raises on torch 1.10 and 1.11. ``None`` (each device's default)
    on the accelerator target, whose other devices may be MPS or XPU (and whose
    ``torch.accelerator`` is newer than that), and in a program that sets CUDA's default itself
    (``torch.set_autocast_gpu_dtype``)."""
    bf16, imports = qualified_expr(ctx, "torch.bfloat16")
    if device.follows or not isinstance(device.expr, cst.IfExp):
        return bf16, imports
    # CUDA is an accelerator too: on that target it keeps its default, as do MPS and XPU (bf16)
    elsewhere: cst.BaseExpression
    more: tuple[ImportRequest, ...]
    if per_target.target(ctx) == per_target.ACCELERATOR or _SETS_AUTOCAST_DTYPE.search(ctx.source):
        elsewhere, more = cst.Name("None"), ()
    else:
        elsewhere, more = qualified_expr(ctx, "torch.float16")
    value, most = per_target.neuron_only(ctx, bf16, elsewhere)
    return value, (*imports, *more, *most)


def plan_autocast(ctx: FileContext, call: cst.Call, head: str, dtype_taken: bool = True) -> list[AmpFix]:
    """The fixes of ``call``, a ``torch.autocast`` call whose ``device_type`` (keyword or first
    argument) is ``"cuda"``: the device (:func:`amp_device`), ``enabled=`` following it, and where
    no dtype is given and the region is not disabled, an unsafe fix that also sets bf16
    (:func:`bf16_dtype`), next to the safe one on the neuron target; not where the callee may be
    ``nullcontext`` (``dtype_taken`` false), which takes no ``dtype=``. ``head`` names the change
    in the message (a :func:`per_target.say` template)."""
    device = argument(call, "device_type", 0)
    assert device is not None
    dtype, enabled = argument(call, "dtype", 1), argument(call, "enabled", 2)
    amp = amp_device(ctx, device.value, enabled.value if enabled is not None else None)
    new = replace_value(call, device, amp.expr)
    head, tail = per_target.say(ctx, head), amp.note
    followed = followed_enabled(ctx, enabled.value) if enabled is not None and amp.follows else None
    if followed is not None:
        new = replace_value(new, argument(new, "enabled", 2), followed)  # type: ignore[arg-type]
        tail += per_target.say(ctx, ", and `enabled=` tests for {device}")
    if dtype is not None or (enabled is not None and is_false(enabled.value)) or has_star(call):
        note = FP16_NOTE if dtype is not None and mentions(ctx, dtype.value, FLOAT16) else ""
        return [AmpFix(new, head + tail + note, amp.imports, False)]
    if not dtype_taken:
        return [AmpFix(new, head + tail + NULL_CONTEXT_NOTE, amp.imports, False)]
    value, imports = bf16_dtype(ctx, amp)
    full = insert_args(new, index_of(call, device) + 1, [new_keyword("dtype", value)])
    branch = per_target.fill(per_target.NEURON, BRANCH_NOTE) if isinstance(value, cst.IfExp) else ""  # bf16: Neuron only
    neuron = per_target.target(ctx) == per_target.NEURON
    why = f": {BF16_WHY}" if neuron else f" {CPU_BF16_WHY}"
    scaled = neuron and _SCALER.search(ctx.source) is not None
    fixes = [AmpFix(full, f"{head} with `dtype=torch.bfloat16`{branch}{tail}{why}{SCALED_NOTE if scaled else ''}",
                    (*imports, *amp.imports), True)]
    if neuron and not scaled:
        fixes.append(AmpFix(new, head + tail + DEFAULT_NOTE, amp.imports, False))
    return fixes


def cuda_call_kept(ctx: FileContext, original: cst.Call, fix: AmpFix) -> AmpFix:
    """``fix`` of ``original``, a ``torch.cuda.amp.autocast`` call, in a project that may run on a
    torch before 2.6 (``Options.old_torch``: it declares no newer floor): Neuron's region as
    ``torch.autocast("neuron", ...)`` where the accelerator is Neuron, else ``original`` as it was,
    since ``torch.autocast`` is new in torch 1.10. ``fix`` as it is where its device is not
    host-aware, and for a decorator (a conditional expression there needs Python 3.9)."""
    device = argument(fix.call, "device_type", 0) if isinstance(fix.call, cst.Call) else None
    if (per_target.target(ctx) != per_target.NEURON or not ctx.options.old_torch or device is None
            or not isinstance(device.value, cst.IfExp) or isinstance(ctx.parent, cst.Decorator)):
        return fix
    neuron = replace_value(fix.call, device, device.value.body)  # type: ignore[arg-type]
    dtype = argument(neuron, "dtype", 1)
    if dtype is not None and isinstance(dtype.value, cst.IfExp):
        neuron = replace_value(neuron, dtype, dtype.value.body)
    # a `with` item gets parentheses: its lines then split as an assignment's do
    choice = in_place(cst.IfExp(test=device.value.test, body=neuron, orelse=original), original, ctx.parent)
    return fix._replace(call=choice, message=f"{fix.message}; CUDA keeps its `torch.cuda.amp.autocast` call, "
                        "which every torch the project admits has (`torch.autocast` is new in 1.10)")


def run_time_bf16(ctx: FileContext, call: cst.Call) -> AmpFix | None:
    """The unsafe fix of ``call``, a ``torch.autocast`` on a device the program chose at run time
    (``torch.autocast(device.type, enabled=amp)``) with no ``dtype=``: ``dtype=torch.bfloat16 if
    <the host is Neuron's> else None``. There the device is Neuron's, or the CPU's, whose default
    is bf16 already; on CUDA and MPS the default stays. None where a dtype is given, the region is
    disabled, or the target is the CPU."""
    device = argument(call, "device_type", 0)
    dtype, enabled = argument(call, "dtype", 1), argument(call, "enabled", 2)
    target = per_target.target(ctx)
    if device is None or dtype is not None or has_star(call) or target == per_target.CPU \
            or (enabled is not None and is_false(enabled.value)):
        return None
    bf16, imports = qualified_expr(ctx, "torch.bfloat16")
    value, more = per_target.neuron_only(ctx, bf16, cst.Name("None"))
    new = insert_args(call, index_of(call, device) + 1, [new_keyword("dtype", value)])
    scaled = SCALED_NOTE if _SCALER.search(ctx.source) is not None else ""
    return AmpFix(new, "autocast on a device chosen at run time, with no `dtype=`: `dtype=torch.bfloat16` on a "
                  f"Neuron host (the CPU's default already), the default elsewhere: {BF16_WHY}{scaled}",
                  (*imports, *more), True)


def custom_device(ctx: FileContext, original: cst.BaseExpression) -> AmpDevice:
    """The ``device_type`` a CUDA ``custom_fwd`` / ``custom_bwd`` gets: host-aware in every file
    (``--target cpu``: ``"cpu"``). An autograd function runs on whatever device its inputs are on;
    ``custom_fwd(device_type="cuda")`` works on every host, while ``"neuron"`` raises at each call
    where torch-neuronx is absent, so even a file that hard-codes CUDA keeps the CUDA value there."""
    if per_target.target(ctx) == per_target.CPU:
        expr, imports = per_target.device(ctx, original)
        return AmpDevice(expr, imports, "", False)
    expr, imports = hosts.host_aware(ctx, original)
    return AmpDevice(expr, imports, per_target.say(ctx, "; {kind} only where that device is present: the function "
                                                "runs on its inputs' device, where the CUDA value is harmless "
                                                'and `"neuron"` raises at each call'), False)


class AmpRule(Transform):
    """Base of the mixed-precision rules: the file's local spellings of the family's callables,
    worked out once per file, so most nodes are turned away by a set lookup."""

    abstract = True
    #: every qualified name the rule handles, the CUDA-only ones among them, and bare names
    #: (``autocast`` after a star import) it looks at too
    QUALIFIED: ClassVar[frozenset[str]] = frozenset()
    CUDA_QUALIFIED: ClassVar[frozenset[str]] = frozenset()
    BARE: ClassVar[frozenset[str]] = frozenset()

    @functools.cached_property
    def callable_names(self) -> frozenset[str]:
        return local_names(self.ctx, self.QUALIFIED | self.CUDA_QUALIFIED) | self.BARE

    @functools.cached_property
    def cuda_locals(self) -> frozenset[str]:
        return local_names(self.ctx, self.CUDA_QUALIFIED)


def local_autocast(ctx: FileContext, func: cst.BaseExpression) -> bool:
    """``func`` is a name bound once to ``torch.autocast`` (:func:`autocast_alias`)."""
    return autocast_alias(ctx, func) is not None


def autocast_alias(ctx: FileContext, func: cst.BaseExpression) -> str | None:
    """``"autocast"`` where ``func`` is a name bound once, to ``torch.autocast``, in the innermost
    scope that binds it (its function, else the module: ``precision_scope = autocast``);
    ``"either"`` where that value chooses between it and ``contextlib.nullcontext`` (``autocast if
    opt.precision == "autocast" else nullcontext``), which takes the device as the unused value it
    enters with, and no other argument. Its calls are the constructor's own, which NRN201 moves
    (and NRN204 leaves to it). Read from the scopes' code, whatever order the walk meets it in."""
    if not isinstance(func, cst.Name):
        return None
    for scope in dict.fromkeys((enclosing_scope(ctx), ctx.module)):
        bound, aliases = _autocast_aliases(ctx, scope)
        if func.value in bound:
            return aliases.get(func.value)
    return None


def _autocast_aliases(ctx: FileContext, scope: cst.CSTNode) -> tuple[frozenset[str], dict[str, str]]:
    """The names ``scope`` assigns, and those of them bound once there to ``torch.autocast``, with
    the kind of alias each is (:func:`autocast_alias`)."""
    key = ("autocast aliases", id(scope))
    if key not in ctx.memo:
        assigned = [(t.target.value, n.value) for n in iter_syntax(scope) if isinstance(n, cst.Assign)
                    for t in n.targets if isinstance(t.target, cst.Name)]
        counts = binding_counts(scope, {name for name, _ in assigned})
        kinds = {name: _alias_kind(ctx, value) for name, value in assigned if counts[name] == 1}
        ctx.memo[key] = (frozenset(counts), {name: kind for name, kind in kinds.items() if kind is not None})
    return ctx.memo[key]


def _alias_kind(ctx: FileContext, value: cst.BaseExpression) -> str | None:
    """``"autocast"`` for ``torch.autocast``, ``"either"`` for a choice between it and
    ``contextlib.nullcontext``."""
    if isinstance(value, (cst.Name, cst.Attribute)):
        return "autocast" if ctx.qualify(value) in AUTOCAST else None
    if not isinstance(value, cst.IfExp):
        return None
    arms = {_alias_kind(ctx, arm) or ("null" if _is_null_context(ctx, arm) else None) for arm in (value.body, value.orelse)}
    if arms == {"autocast"}:
        return "autocast"
    return "either" if arms in ({"autocast", "null"}, {"either", "null"}) else None


def _is_null_context(ctx: FileContext, value: cst.BaseExpression) -> bool:
    return isinstance(value, (cst.Name, cst.Attribute)) and ctx.qualify(value) == "contextlib.nullcontext"
