"""The mixed-precision family (NRN201-NRN205): the qualified names of the CUDA and the
device-generic AMP APIs, the fallback branch of a ``try`` that uses the generic API, and the base
class of the family's rules."""

from __future__ import annotations

import functools
from typing import ClassVar

import libcst as cst

from neuronize.context import FileContext
from neuronize.transform import Transform
from neuronize.transforms._names import local_names, mentions

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

