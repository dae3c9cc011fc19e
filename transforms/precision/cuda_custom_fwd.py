"""NRN203: ``torch.cuda.amp.custom_fwd`` / ``custom_bwd`` -> ``torch.amp.custom_fwd(device_type="neuron")``."""

from __future__ import annotations

import libcst as cst

from neuronize.transforms._helpers import per_target
from neuronize.transform import Evidence, Example, ImportRequest, Safety
from neuronize.transforms._helpers.amp import AmpRule, CUDA_CUSTOM, CUSTOM, custom_device
from neuronize.transforms._helpers.calls import insert_args, keyword, new_keyword, replace_value
from neuronize.transforms._helpers.imports import cuda_import_removals
from neuronize.transforms._helpers.literals import make_string, string_value
from neuronize.transforms._helpers.names import is_reference, last_name, qualified_expr

NAMES = ("custom_fwd", "custom_bwd")
#: the neuron target's device check, as the examples show it
_NEURON = ('hasattr(torch, "accelerator") and torch.accelerator.is_available() '
           'and torch.accelerator.current_accelerator().type == "neuron"')


MESSAGE = ("`{fn}` for CUDA autocast -> `torch.amp.{fn}(device_type={device})`, so the autograd function "
           "follows {kind} autocast")


class CudaCustomFwd(AmpRule):
    """Finds autograd functions whose forward/backward are tied to CUDA autocast.

    What it does:
        Rewrites the decorators `@torch.cuda.amp.custom_fwd`, `@torch.cuda.amp.custom_fwd(cast_inputs=...)`
        and `@torch.cuda.amp.custom_bwd` (any spelling: `from torch.cuda.amp import custom_fwd`,
        `amp.custom_fwd` after `from torch.cuda import amp`), and their use as plain functions,
        to `torch.amp.custom_fwd(device_type="neuron", ...)` / `torch.amp.custom_bwd(device_type="neuron")`,
        keeping `cast_inputs=`, and `torch.amp.custom_fwd(device_type="cuda")` likewise. The
        device is host-aware in every file, `"neuron" if <Neuron is present> else "cuda"`: an
        autograd function runs on whatever device its inputs are on, and
        `custom_fwd(device_type="neuron")` raises at every call on a host without torch-neuronx,
        while the CUDA value worked there. The `torch.cuda.amp` import is dropped once nothing
        uses it. A `torch.cuda.amp.custom_fwd` passed on as a value is reported.

    Why on TorchNeuron:
        `custom_fwd` records the autocast state of one device type when the forward runs and
        restores it in the backward; `cast_inputs=` casts the inputs and turns autocast off
        inside the forward. The CUDA variants look at CUDA autocast only, so under Neuron
        autocast they neither cast nor disable anything.

    Example:
        class ScaledGelu(torch.autograd.Function):
            @staticmethod
            @torch.cuda.amp.custom_fwd(cast_inputs=torch.float32)
            def forward(ctx, x): ...

            @staticmethod
            @torch.cuda.amp.custom_bwd
            def backward(ctx, grad): ...

    Use instead:
        class ScaledGelu(torch.autograd.Function):
            @staticmethod
            @torch.amp.custom_fwd(device_type="neuron" if NEURON else "cuda", cast_inputs=torch.float32)
            def forward(ctx, x): ...

            @staticmethod
            @torch.amp.custom_bwd(device_type="neuron" if NEURON else "cuda")
            def backward(ctx, grad): ...

        where `NEURON` stands for `hasattr(torch, "accelerator") and torch.accelerator.is_available() and
        torch.accelerator.current_accelerator().type == "neuron"`, written out.

    Fix safety:
        Unsafe: that `torch.amp.custom_fwd(device_type="neuron")` and
        `torch.is_autocast_enabled("neuron")` work is seen only in torch-neuronx tests, not in
        the documentation.

    Evidence:
        SRC: torch-neuronx autocast tests.
    """

    id = "NRN203"
    needs = (("torch", (2, 4)),)  # torch.amp.custom_fwd(device_type=...)
    name = "cuda-custom-fwd"
    safety = Safety.UNSAFE
    evidence = Evidence.SRC
    section = "precision"
    references = ("https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/index.html",)
    tokens = (b"custom_fwd", b"custom_bwd")
    targets = per_target.ALL
    examples = (
        Example(
            "import torch\n\n@torch.cuda.amp.custom_bwd\ndef backward(ctx, g):\n    return g\n",
            f'import torch\n\n@torch.amp.custom_bwd(device_type="neuron" if {_NEURON} else "cuda")\n'
            "def backward(ctx, g):\n    return g\n",
        ),
        Example(
            "import torch\n\n@torch.amp.custom_fwd(device_type='cuda')\ndef forward(ctx, x):\n    return x\n",
            "import torch\n\n@torch.amp.custom_fwd(device_type='neuron' if "
            + _NEURON.replace('"', "'") + " else 'cuda')\n"
            "def forward(ctx, x):\n    return x\n",
        ),
    )

    QUALIFIED = frozenset(CUSTOM)
    CUDA_QUALIFIED = frozenset(CUDA_CUSTOM)
    BARE = frozenset(NAMES)

    def _message(self, qualified: str) -> str:
        fn = CUDA_CUSTOM.get(qualified, qualified).rsplit(".", 1)[-1]
        return per_target.say(self.ctx, MESSAGE, fn=fn)

    def _device_keyword(self) -> tuple[cst.Arg, tuple[ImportRequest, ...], str]:
        device, imports, note, _ = custom_device(self.ctx, make_string("cuda"))
        return new_keyword("device_type", device), imports, note

    # -- bare decorators: @torch.cuda.amp.custom_fwd ---------------------------------------------
    def visit_Decorator(self, node: cst.Decorator) -> None:
        expr = node.decorator
        name = last_name(expr)
        if name is None or name not in self.callable_names:
            return
        qualified = self.ctx.qualify(expr)
        if qualified not in CUDA_CUSTOM:
            return
        func, imports = qualified_expr(self.ctx, CUDA_CUSTOM[qualified])
        device, more, note = self._device_keyword()
        new = cst.Call(func=func, args=[device])
        self.fix(expr, new, self._message(qualified) + note, imports=(*imports, *more, *cuda_import_removals(self.ctx, expr)))

    # -- calls: @custom_fwd(cast_inputs=...), custom_fwd(fn), torch.amp.custom_fwd(device_type="cuda")
    def visit_Call(self, node: cst.Call) -> None:
        name = last_name(node.func)
        if name is None or name not in self.callable_names:
            return
        qualified = self.ctx.qualify(node.func)
        if qualified is None:
            return
        device = keyword(node, "device_type")
        if qualified in CUSTOM or (qualified in CUDA_CUSTOM and device is not None):
            # (the second case: `torch.amp.custom_fwd` behind a fallback import of the CUDA one)
            if device is not None and string_value(device.value) == "cuda":
                value, imports, note, _ = custom_device(self.ctx, device.value)
                self.fix(node, replace_value(node, device, value), self._message(qualified) + note, imports=imports)
            return
        if qualified not in CUDA_CUSTOM:
            return
        if any(a.star == "**" for a in node.args):
            self.report(node, f"`{name}(**kwargs)` for CUDA autocast: add `device_type=\"neuron\"` and use "
                              f"`{CUDA_CUSTOM[qualified]}` by hand")
            return
        func, imports = qualified_expr(self.ctx, CUDA_CUSTOM[qualified])
        # device_type is keyword-only: it goes after the positional argument (the function), if any.
        at = sum(1 for a in node.args if a.keyword is None)
        device, more, note = self._device_keyword()
        new = insert_args(node.with_changes(func=func), at, [device])
        self.fix(node, new, self._message(qualified) + note,
                 imports=(*imports, *more, *cuda_import_removals(self.ctx, node.func)))

    # -- references that are not calls or decorators ------------------------------------------
    def visit_Attribute(self, node: cst.Attribute) -> None:
        if node.attr.value in NAMES:
            self._reference(node)

    def visit_Name(self, node: cst.Name) -> None:
        if node.value in self.cuda_locals:
            self._reference(node)

    def _reference(self, node: cst.CSTNode) -> None:
        qualified = self.ctx.qualify(node)
        if qualified in CUDA_CUSTOM and is_reference(self.ctx, node):
            self.report(node, f"`{qualified}` is used as a value here: replace it by hand with "
                              f'`functools.partial({CUDA_CUSTOM[qualified]}, device_type="neuron")`')
