"""NRN205: ``model.half()`` / ``x.half()`` -> ``.to(torch.bfloat16)``."""

from __future__ import annotations

import libcst as cst

from neuronize.transforms import _target
from neuronize.transform import Evidence, Example, Safety, Transform
from neuronize.transforms._names import qualified_expr


class HalfPrecisionModel(Transform):
    """Finds `.half()` casts of modules and tensors to float16.

    What it does:
        Rewrites `model.half()` and `tensor.half()` (a method call without arguments) to
        `.to(torch.bfloat16)`, in the file's spelling of `torch` (`T.bfloat16` after
        `import torch as T`). `torch.Tensor.half(x)`, calls with arguments and references to
        `.half` that are not called are left alone. An explicit `dtype=torch.float16` in
        autocast is NRN201's business.

    Why on TorchNeuron:
        Every Neuron example runs reduced precision in bfloat16; float16 is not the documented
        path on Trainium (and its narrow range is why CUDA code needs loss scaling).

    Example:
        model = build_model().half().eval()
        images = images.half()

    Use instead:
        model = build_model().to(torch.bfloat16).eval()
        images = images.to(torch.bfloat16)

    Fix safety:
        Unsafe: bfloat16 has fewer mantissa bits than float16, so outputs change, and every
        tensor that meets the model (inputs cast with `.half()` elsewhere, `torch.float16`
        buffers, fp16 checkpoints, a `GradScaler`) must follow; review the whole precision path.

    Evidence:
        INF: Neuron examples are bf16; third-party examples.
    """

    id = "NRN205"
    name = "half-precision-model"
    safety = Safety.UNSAFE
    evidence = Evidence.INF
    section = "precision"
    references = ("https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/index.html",)
    tokens = (b".half(",)
    #: the same edit on every `--target` (it names no device)
    targets = _target.ALL
    examples = (
        Example("import torch\nmodel = Net().half()\n", "import torch\nmodel = Net().to(torch.bfloat16)\n"),
        Example("import torch as T\nx = x.half()\n", "import torch as T\nx = x.to(T.bfloat16)\n"),
        Example("model = Net().half()\n", "model = Net().half()\n", unsafe_fixes=False),
    )

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if not (isinstance(func, cst.Attribute) and func.attr.value == "half") or node.args:
            return
        if self.ctx.qualify(func) is not None:
            return  # `torch.Tensor.half(...)`, a module function, not a method call
        bf16, imports = qualified_expr(self.ctx, "torch.bfloat16")
        new = node.with_changes(func=func.with_changes(attr=cst.Name("to")), args=[cst.Arg(value=bf16)])
        self.fix(node, new, "`.half()` -> `.to(torch.bfloat16)`: bf16 is the Neuron reduced-precision type; "
                            "make inputs, buffers and checkpoints that were float16 follow", imports=imports)
