"""The mixed-precision family (NRN201-NRN205): the qualified names of the CUDA and the
device-generic AMP APIs, the fallback branch of a ``try`` that uses the generic API, and the base
class of the family's rules."""

from __future__ import annotations

import functools
from typing import ClassVar, NamedTuple

import libcst as cst

from neuronize.context import FileContext
from neuronize.transform import ImportRequest, Transform
from neuronize.transforms import _host, _target
from neuronize.transforms._literals import string_value
from neuronize.transforms._names import local_names, mentions, qualified_expr

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
    device, _ = _target.device(ctx, cuda, parens=True)
    return enabled.deep_replace(cuda, device)  # type: ignore[return-value]


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
    ``"cuda"`` (a harmless no-op there) where the target's device is absent. A file that hard-codes
    CUDA gets the target's device."""
    followed = followed_device(ctx, enabled)
    if followed is not None:
        _, imports = qualified_expr(ctx, "torch.device")
        return AmpDevice(followed, imports, "; it follows the device the code chose (the file also "
                         "runs without an accelerator)", True)
    if _target.target(ctx) != _target.CPU and _host.has_cpu_path(ctx):
        expr, imports = _host.host_aware(ctx, original)
        return AmpDevice(expr, imports, _target.say(ctx, "; {kind} only where that device is present: this "
                                                    "file also runs without it, where the CUDA value is "
                                                    'harmless and `"neuron"` would raise'), False)
    expr, imports = _target.device(ctx, original)
    return AmpDevice(expr, imports, "", False)


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

