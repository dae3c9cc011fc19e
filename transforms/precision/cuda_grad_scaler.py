"""NRN202: ``torch.cuda.amp.GradScaler()`` / ``torch.amp.GradScaler("cuda")``: reported (no Neuron scaler; bf16 needs none)."""

from __future__ import annotations

import libcst as cst

from neuronize.transform import Evidence, Example, Safety
from neuronize.transforms._helpers.device_model import KeepsCudaBranches
from neuronize.transforms._helpers.amp import AmpRule, CUDA_GRAD_SCALER, GRAD_SCALER, in_fallback_branch
from neuronize.transforms._helpers.calls import argument, keyword
from neuronize.transforms._helpers.literals import string_value
from neuronize.transforms._helpers.names import is_reference, last_name
from neuronize.transforms._helpers import per_target

WHY = ("no Neuron GradScaler is documented and bf16 autocast needs no loss scaling: drop the scaler "
       "and its `scale`/`step`/`update` calls when moving to bf16. Left as is: where CUDA is absent it "
       "disables itself and passes values through, as before")


class CudaGradScaler(KeepsCudaBranches, AmpRule):
    """Finds loss scalers created for a CUDA device.

    What it does:
        Reports `torch.cuda.amp.GradScaler(...)` (also `amp.GradScaler()` after
        `from torch.cuda import amp`, or `GradScaler()` after `from torch.cuda.amp import GradScaler`),
        `torch.amp.GradScaler("cuda")`, `torch.amp.GradScaler(device="cuda")` and
        `torch.amp.GradScaler()` (whose device defaults to `"cuda"`), and leaves them as they are
        on every target: a scaler has no documented Neuron counterpart, bf16 needs none, and a
        scaler moved to another device would start scaling where the CUDA one passed values
        through. A `torch.cuda.amp.GradScaler` used as a value
        (`isinstance(s, torch.cuda.amp.GradScaler)`, a base class) is reported, and so is one in
        the `except` branch of a `try` that builds a `torch.amp.GradScaler` (a fallback for old
        PyTorch: the `try` branch is what runs).

    Why on TorchNeuron:
        Loss scaling exists for float16, whose narrow exponent range underflows small gradients.
        Neuron code runs bfloat16 (see NRN201), which has float32's range and needs no scaler.
        No Neuron GradScaler is documented, so `GradScaler("neuron")` would be an unverified path;
        a CUDA scaler left in place disables itself where CUDA is absent and passes values through.

    Example:
        scaler = torch.cuda.amp.GradScaler(enabled=args.amp)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()

    Use instead:
        # with bf16 autocast: no scaler
        loss.backward()
        optimizer.step()

    Fix safety:
        Report only: dropping the scaler changes the training loop, which only a person should do.

    Evidence:
        INF: no Neuron GradScaler documented; bf16 needs no loss scaling is standard PyTorch
        practice.
    """

    id = "NRN202"
    name = "cuda-grad-scaler"
    safety = Safety.REPORT_ONLY
    evidence = Evidence.INF
    section = "precision"
    references = ("https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/index.html",)
    tokens = (b"GradScaler",)
    targets = per_target.ALL
    examples = (
        Example("import torch\nscaler = torch.cuda.amp.GradScaler(enabled=use_amp)\n", None),
        Example("from torch.amp import GradScaler\nscaler = GradScaler('cuda', init_scale=1024)\n", None),
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
            device = argument(node, "device", 0)
            if device is None and any(a.star for a in node.args):
                return  # the device may be in *args / **kwargs
            if device is not None and string_value(device.value) != "cuda":
                return
            self.report(node, f"`GradScaler` for CUDA: {WHY}")
        elif qualified in CUDA_GRAD_SCALER:
            if in_fallback_branch(self.ctx, GRAD_SCALER):
                self.report(node, "`torch.cuda.amp.GradScaler` as the fallback for PyTorch without "
                                  "`torch.amp.GradScaler`: left as is; migrate (or drop) the scaler of the `try` branch")
                return
            self.report(node, f"`torch.cuda.amp.GradScaler`: {WHY}")

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
                              "with the device it runs on, or drop the scaler with bf16")
