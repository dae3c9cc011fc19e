"""NRN204: CUDA autocast reached another way: through an alias, or by its state queries."""

from __future__ import annotations

import libcst as cst

from neuronize.analysis.context import FileContext, dotted_name
from neuronize.transform import Evidence, Example, Safety, Transform
from neuronize.transforms._helpers.amp import AUTOCAST, CUDA_AUTOCAST, cuda_state_default, local_autocast
from neuronize.transforms._helpers.calls import argument
from neuronize.transforms._helpers.literals import string_value

#: the autocast state API of the CUDA device by name (deprecated aliases) -> the device-type form
GPU_STATE = {
    "torch.get_autocast_gpu_dtype": '`torch.get_autocast_dtype("neuron")`',
    "torch.set_autocast_gpu_dtype": '`torch.set_autocast_dtype("neuron", dtype)`',
    "torch.cuda.amp.common.amp_definitely_not_available": "a check of the device you run on",
}


def cuda_device_of(call: cst.Call, qualified: str) -> bool:
    """Whether a call of an autocast constructor (``qualified``) runs it on CUDA."""
    if qualified in CUDA_AUTOCAST:
        return True
    arg = argument(call, "device_type", 0)
    value = string_value(arg.value) if arg is not None else None
    return value is not None and value.split(":")[0] == "cuda"


class AutocastState(Transform):
    """Finds CUDA autocast used through an alias, and queries of the CUDA autocast state.

    What it does:
        Reports a call of an autocast constructor bound to another name in the same file
        (`self.amp = torch.cuda.amp.autocast` then `self.amp()`; `scope = torch.autocast` then
        `with scope(device):`) when it runs on CUDA, and the CUDA autocast state API:
        `torch.get_autocast_gpu_dtype()`, `torch.set_autocast_gpu_dtype(...)`,
        `torch.is_autocast_enabled()` and `torch.set_autocast_enabled(flag)` without a device
        (both mean CUDA), and `torch.cuda.amp.common.amp_definitely_not_available()`.
        Direct `torch.autocast("cuda")` calls, and those of a local name bound to `torch.autocast`
        (`scope("cuda")`), are NRN201's; this rule never reports one.

    Why on TorchNeuron:
        The alias runs CUDA autocast, which on a host without CUDA turns itself off with a warning:
        the model silently trains in float32. The state queries read the CUDA autocast state, so
        inside a Neuron autocast region they answer "disabled" and the default CUDA dtype.

    Example:
        self.amp = torch.cuda.amp.autocast
        with self.amp(dtype=torch.bfloat16):
            y = model(x)
        if torch.is_autocast_enabled():
            dtype = torch.get_autocast_gpu_dtype()

    Use instead:
        with torch.autocast("neuron", dtype=torch.bfloat16):
            y = model(x)
        if torch.is_autocast_enabled("neuron"):
            dtype = torch.get_autocast_dtype("neuron")

    Fix safety:
        Report only: `torch.is_autocast_enabled("neuron")` raises on a host without torch-neuronx,
        so the device to ask about must follow the device the code runs on (often a variable the
        rule cannot see).

    Evidence:
        DOC: `torch.autocast(device_type="neuron")`; the device-type forms of the state API are
        PyTorch's own (`torch.get_autocast_dtype(device_type)`). INF: which device a call means.
    """

    id = "NRN204"
    name = "autocast-state"
    safety = Safety.REPORT_ONLY
    evidence = Evidence.DOC
    section = "precision"
    effort = "low"
    references = (
        "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/frameworks/torch/pytorch-native-overview.html",
        "https://pytorch.org/docs/stable/amp.html",
    )
    tokens = (b"autocast",)
    examples = (
        Example("import torch\nscope = torch.cuda.amp.autocast\nwith scope():\n    y = f(x)\n", None),
        Example("import torch\ndtype = torch.get_autocast_gpu_dtype()\n", None),
    )

    def __init__(self, ctx: FileContext) -> None:
        super().__init__(ctx)
        self._aliases: dict[str, str] = {}  # dotted name -> the autocast constructor it is bound to

    def visit_Assign(self, node: cst.Assign) -> None:
        qualified = self.ctx.qualify(node.value) if isinstance(node.value, (cst.Name, cst.Attribute)) else None
        if qualified not in AUTOCAST and qualified not in CUDA_AUTOCAST:
            return
        for target in node.targets:
            name = dotted_name(target.target)
            if name is not None:
                self._aliases[name] = qualified

    def visit_Call(self, node: cst.Call) -> None:
        name = dotted_name(node.func) if isinstance(node.func, (cst.Name, cst.Attribute)) else None
        if name is not None and name in self._aliases:
            target = self._aliases[name]
            device = argument(node, "device_type", 0)
            if target in AUTOCAST and local_autocast(self.ctx, node.func) \
                    and device is not None and string_value(device.value) == "cuda":
                return  # `scope = torch.autocast`, `scope("cuda")`: NRN201 moves it as it moves the call itself
            if cuda_device_of(node, target):
                self.report(node, f"`{name}` is `{target}`: this call runs CUDA autocast, which turns itself off "
                            "(with a warning) where CUDA is missing; use `torch.autocast(\"neuron\", "
                            "dtype=torch.bfloat16)` on Neuron")
            return
        qualified = self.ctx.qualify(node.func)
        if qualified in GPU_STATE:
            shown = f"{qualified}({'...' if node.args else ''})"
            self.report(node, f"`{shown}` is the CUDA autocast state; on Neuron use {GPU_STATE[qualified]}")
        elif cuda_state_default(self.ctx, node) is not None:
            self.report(node, f"`{qualified}({'flag' if node.args else ''})` without a device means CUDA; on "
                        f"Neuron pass the device type: `{qualified}(\"neuron\"{', flag' if node.args else ''})`")
