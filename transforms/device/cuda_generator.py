"""NRN106: ``torch.Generator(device="cuda")`` -> ``torch.Generator(device="cpu")``."""

from __future__ import annotations

import libcst as cst

from neuronize.decision.policy import GENERATOR
from neuronize.transforms._helpers import per_target
from neuronize.transform import Evidence, Example, Safety, Transform
from neuronize.transforms._helpers.calls import argument
from neuronize.transforms._helpers.literals import cuda_literal, make_string, string_value
from neuronize.transforms._helpers.messages import short

ADVICE = ("draw random tensors on the CPU with this generator and move them with `.to(\"neuron\")`")


def _mentions_cuda(expr: cst.BaseExpression) -> bool:
    """A CUDA literal, or a conditional expression whose branches are CUDA or CPU literals."""
    if cuda_literal(expr) is not None:
        return True
    if isinstance(expr, cst.IfExp):
        branches = (expr.body, expr.orelse)
        return (any(_mentions_cuda(b) for b in branches)
                and all(_mentions_cuda(b) or string_value(b) == "cpu" for b in branches))
    return False


class CudaGenerator(Transform):
    """Finds random-number generators created on a CUDA device (`torch.Generator(device="cuda")`).

    What it does:
        Rewrites the device of `torch.Generator(device="cuda")`, `torch.Generator("cuda:0")` and
        `torch.Generator(device="cuda" if torch.cuda.is_available() else "cpu")` to `"cpu"`.
        A generator whose device is a variable (`torch.Generator(device=device)`) gets the CPU on
        Neuron only: `torch.Generator(device="cpu" if on_neuron() else device)`, every other host
        keeping its device. The device edits of the file are made only with it: made alone, they
        would hand the generator the Neuron device (a script often chooses its device at module
        level and seeds a generator in a function). So are those of a module that hands its device
        choice to such a function of another module (`generator = set_seeds(seed, device=self.device)`):
        they are unsafe, like this edit.

    Why on TorchNeuron:
        A generator on the Neuron device was reported unavailable, and random ops such as
        `torch.randn(..., device="neuron")` fell back to the CPU and its random stream. Drawing
        random numbers on the CPU with a CPU generator and moving the result keeps seeded runs
        reproducible (Hugging Face diffusers does this for Neuron).

    Example:
        g = torch.Generator(device="cuda").manual_seed(0)
        noise = torch.randn(shape, generator=g, device="cuda")

    Use instead:
        g = torch.Generator(device="cpu").manual_seed(0)
        noise = torch.randn(shape, generator=g).to("neuron")

    Fix safety:
        Unsafe: a random op on another device that receives this generator
        (`torch.randn(..., generator=g, device="neuron")`) needs a generator on that device;
        create those tensors on the CPU and move them. The random numbers differ from the CUDA
        stream, so seeded results change.

    Evidence:
        SRC/3P: RNG tests of the pre-release torch-neuronx drop (xfail note), a third-party
        migration report and diffusers PR #13289.
    """

    id = "NRN106"
    name = "cuda-generator"
    safety = Safety.UNSAFE
    evidence = Evidence.SRC
    section = "device"
    references = (
        "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/index.html",
        "https://github.com/huggingface/diffusers/pull/13289",
    )
    tokens = (b"cuda", b"Generator")
    #: the same edit on every `--target` (it names no device)
    targets = per_target.ALL
    examples = (
        Example('import torch\ng = torch.Generator(device="cuda").manual_seed(0)\n',
                'import torch\ng = torch.Generator(device="cpu").manual_seed(0)\n'),
        Example("import torch\ng = torch.Generator(device=device)\n",
                'import torch\ng = torch.Generator(device="cpu" if hasattr(torch, "accelerator") and '
                'torch.accelerator.is_available() and torch.accelerator.current_accelerator().type == "neuron" '
                'else device)\n'),
    )

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        name = func.attr.value if isinstance(func, cst.Attribute) else getattr(func, "value", None)
        if name != "Generator" or self.ctx.qualify(func) != "torch.Generator":
            return
        arg = argument(node, "device", 0)
        if arg is None:
            return
        value = arg.value
        if _mentions_cuda(value):
            new = make_string("cpu", value if isinstance(value, cst.SimpleString) else None)
            new = new.with_changes(lpar=getattr(value, "lpar", ()), rpar=getattr(value, "rpar", ()))
            self.fix(value, new,
                     f"`torch.Generator(device={short(value)})` -> `device=\"cpu\"`: "
                     f"a Neuron-device generator was reported unavailable; {ADVICE}",
                     evidence=Evidence.THIRD_PARTY)
            return
        literal = string_value(value)
        if literal is not None or isinstance(value, (cst.FormattedString, cst.Integer)):
            return  # "cpu", "neuron", "mps"...: not CUDA
        if isinstance(value, (cst.Call, cst.Name, cst.Attribute)):
            # the device edits beside it wait for this one: made alone, they hand it the Neuron device
            test, imports = per_target.neuron_present(self.ctx)
            per_host = cst.IfExp(test=test, body=make_string("cpu"), orelse=value)
            self.fix(value, per_host, f"`torch.Generator(device={short(value)})` gets the CPU on Neuron: a "
                     f"Neuron-device generator was reported unavailable; {ADVICE}",
                     evidence=Evidence.THIRD_PARTY, imports=imports, pins=GENERATOR)
