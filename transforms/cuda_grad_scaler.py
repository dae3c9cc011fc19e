"""NRN202: ``torch.cuda.amp.GradScaler()`` / ``torch.amp.GradScaler("cuda")`` -> a Neuron scaler, flagged."""

from __future__ import annotations

import libcst as cst

from neuronize.transform import Evidence, Example, Safety
from neuronize.transforms._amp import AmpRule, CUDA_GRAD_SCALER, GRAD_SCALER, in_fallback_branch
from neuronize.transforms._calls import argument, insert_args, keyword, replace_value
from neuronize.transforms._imports import cuda_import_removals
from neuronize.transforms._literals import string_value
from neuronize.transforms._names import is_reference, last_name, qualified_expr
from neuronize.transforms import _target

WHY = ("no Neuron GradScaler is documented and bf16 autocast needs no loss scaling: prefer "
       "dropping the scaler and its `scale`/`step`/`update` calls; move fp16 training to bf16 by hand")
#: ``--target cpu`` / ``accelerator``: the scaler exists on every device; the advice stays
WHY_PORTABLE = ("the device-generic scaler on the target device; bf16 autocast needs no loss scaling: "
                "prefer dropping the scaler on Neuron, where no GradScaler is documented")


class CudaGradScaler(AmpRule):
    """Finds loss scalers created for a CUDA device.

    What it does:
        Rewrites `torch.cuda.amp.GradScaler(...)` (also `amp.GradScaler()` after
        `from torch.cuda import amp`, or `GradScaler()` after `from torch.cuda.amp import GradScaler`)
        to `torch.amp.GradScaler("neuron", ...)`, keeping every argument (the device-generic
        class takes the same arguments after the device), and `torch.amp.GradScaler("cuda")`,
        `torch.amp.GradScaler(device="cuda")` and `torch.amp.GradScaler()` (whose device defaults
        to `"cuda"`) to `"neuron"`. Each finding says that the scaler is better dropped.
        `scaler.scale(...)`, `scaler.step(...)` and `scaler.update()` are left as they are.
        A `torch.cuda.amp.GradScaler` used as a value (`isinstance(s, torch.cuda.amp.GradScaler)`,
        a base class) is reported, and so is one in the `except` branch of a `try` that builds a
        `torch.amp.GradScaler` (a fallback for old PyTorch: the `try` branch is what runs).

    Why on TorchNeuron:
        Loss scaling exists for float16, whose narrow exponent range underflows small gradients.
        Neuron code runs bfloat16 (see NRN201), which has float32's range and needs no scaler.
        No Neuron GradScaler is documented, so a scaler left in place is an unverified path.

    Example:
        scaler = torch.cuda.amp.GradScaler(enabled=args.amp)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()

    Use instead:
        # with bf16 autocast: no scaler
        loss.backward()
        optimizer.step()
        # or, keeping the structure for review:
        scaler = torch.amp.GradScaler("neuron", enabled=args.amp)

    Fix safety:
        Unsafe: the fix keeps the code running on the `"neuron"` device, but whether a GradScaler
        works there is unknown, and the better migration (drop the scaler, run bf16) changes
        the training loop, which only a person should do.

    Evidence:
        INF: no Neuron GradScaler documented; bf16 needs no loss scaling is standard PyTorch
        practice.
    """

    id = "NRN202"
    name = "cuda-grad-scaler"
    safety = Safety.UNSAFE
    evidence = Evidence.INF
    section = "precision"
    references = ("https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/index.html",)
    tokens = (b"GradScaler",)
    targets = _target.ALL
    examples = (
        Example(
            "import torch\nscaler = torch.cuda.amp.GradScaler(enabled=use_amp)\n",
            'import torch\nscaler = torch.amp.GradScaler("neuron", enabled=use_amp)\n',
        ),
        Example(
            "from torch.amp import GradScaler\nscaler = GradScaler('cuda', init_scale=1024)\n",
            "from torch.amp import GradScaler\nscaler = GradScaler('neuron', init_scale=1024)\n",
        ),
        Example("import torch\nscaler = torch.cuda.amp.GradScaler()\n", None, unsafe_fixes=False),
    )

    QUALIFIED = GRAD_SCALER
    CUDA_QUALIFIED = CUDA_GRAD_SCALER
    BARE = frozenset({"GradScaler"})

    def visit_Call(self, node: cst.Call) -> None:
        name = last_name(node.func)
        if name is None or name not in self.callable_names:
            return
        qualified = self.ctx.qualify(node.func)
        if qualified in GRAD_SCALER or (qualified in CUDA_GRAD_SCALER and keyword(node, "device") is not None):
            # (the second case: `torch.amp.GradScaler` behind a fallback import of the CUDA one)
            self._device_call(node)
        elif qualified in CUDA_GRAD_SCALER:
            if in_fallback_branch(self.ctx, GRAD_SCALER):
                self.report(node, "`torch.cuda.amp.GradScaler` as the fallback for PyTorch without "
                                  "`torch.amp.GradScaler`: left as is; migrate (or drop) the scaler of the `try` branch")
                return
            func, imports = qualified_expr(self.ctx, "torch.amp.GradScaler")
            device, more = _target.device(self.ctx)
            new = insert_args(node.with_changes(func=func), 0, [cst.Arg(value=device)])
            self._fix(node, new, "`torch.cuda.amp.GradScaler` -> `torch.amp.GradScaler({device})`: {why}",
                      imports=(*imports, *more, *cuda_import_removals(self.ctx, node.func)))

    def _device_call(self, node: cst.Call) -> None:
        device = argument(node, "device", 0)
        if device is None:
            if any(a.star for a in node.args):
                return  # the device may be in *args / **kwargs
            device, imports = _target.device(self.ctx)
            new = insert_args(node, 0, [cst.Arg(value=device)])
            self._fix(node, new, '`GradScaler()` (device `"cuda"` by default) -> `GradScaler({device})`: {why}',
                      imports=imports)
            return
        if string_value(device.value) != "cuda":
            return
        value, imports = _target.device(self.ctx, device.value)
        self._fix(node, replace_value(node, device, value), '`GradScaler("cuda")` -> `GradScaler({device})`: {why}',
                  imports=imports)

    def _fix(self, node: cst.Call, new: cst.Call, template: str, imports: tuple = ()) -> None:
        why = WHY if _target.target(self.ctx) == _target.NEURON else WHY_PORTABLE
        self.fix(node, new, _target.say(self.ctx, template, why=why), imports=imports)

    # -- references that are not calls ----------------------------------------------------------
    def visit_Attribute(self, node: cst.Attribute) -> None:
        if node.attr.value == "GradScaler":
            self._reference(node)

    def visit_Name(self, node: cst.Name) -> None:
        if node.value in self.cuda_locals:
            self._reference(node)

    def _reference(self, node: cst.CSTNode) -> None:
        if self.ctx.qualify(node) in CUDA_GRAD_SCALER and is_reference(self.ctx, node):
            self.report(node, "`torch.cuda.amp.GradScaler` is used as a value here: use `torch.amp.GradScaler` "
                              "(the class NRN202's fix creates), or drop the scaler with bf16")
