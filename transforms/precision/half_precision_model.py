"""NRN205: ``model.half()`` / ``x.half()`` -> ``.to(torch.bfloat16)``."""

from __future__ import annotations

import libcst as cst

from neuronize.analysis.float16_sources import FORMAT_WORDS, is_format_file, makes_float16
from neuronize.transforms._helpers.device_model import KeepsCudaBranches
from neuronize.transforms._helpers import per_target
from neuronize.transform import Evidence, Example, Safety, Transform
from neuronize.transforms._helpers.names import qualified_expr


class HalfPrecisionModel(KeepsCudaBranches, Transform):
    """Finds `.half()` casts of modules and tensors to float16.

    What it does:
        Rewrites `model.half()` and `tensor.half()` (a method call without arguments) to
        `.to(torch.bfloat16)`, in the file's spelling of `torch` (`T.bfloat16` after
        `import torch as T`), only where the edit is whole: where nothing else in the file, nor in
        any other Python file of the project, still produces float16 (`torch.float16`,
        `torch.half`, `.half(...)` with arguments, `fp16` settings: a model loaded in float16 in
        one module meets the inputs another casts), and never in exports and converters whose
        float16 output is the point (files or functions named export/convert/onnx, functions about
        fp16/half, functions that save what they convert). Those are reported.
        `torch.Tensor.half(x)`, calls with arguments and references to `.half` that are not called
        are left alone. An explicit `dtype=torch.float16` in autocast is NRN201's business.

    Why on TorchNeuron:
        Every Neuron example runs reduced precision in bfloat16; float16 is not the documented
        path on Trainium (and its narrow range is why CUDA code needs loss scaling).

    Example:
        model = build_model().half().eval()
        images = images.half()

    Use instead:
        model = build_model().to(torch.bfloat16 if on_neuron() else torch.float16).eval()
        images = images.to(torch.bfloat16 if on_neuron() else torch.float16)

        The cast is bf16 only where the accelerator is Neuron: the CUDA box the code was written
        for, and the CPU, keep float16, as before. `--target cpu` (a local check of the migration)
        casts to bf16 everywhere.

    Fix safety:
        Unsafe: bfloat16 has fewer mantissa bits than float16, so outputs change, and every
        tensor that meets the model (inputs cast with `.half()` elsewhere, `torch.float16`
        buffers, fp16 checkpoints, a `GradScaler`) must follow; review the whole precision path.
        A cast inside a block kept for CUDA is reported, not changed: it runs only on CUDA.

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
    targets = per_target.ALL
    examples = (
        Example("import torch\nmodel = Net().half()\n",
                "import torch\nmodel = Net().to(torch.bfloat16 if hasattr(torch, \"accelerator\") and "
                "torch.accelerator.is_available() and torch.accelerator.current_accelerator().type == \"neuron\" "
                "else torch.float16)\n"),
        Example("import torch as T\nx = x.half()\n", "import torch as T\nx = x.to(T.bfloat16)\n",
                target=per_target.CPU),
        Example("model = Net().half()\n", "model = Net().half()\n", unsafe_fixes=False),
    )

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if not (isinstance(func, cst.Attribute) and func.attr.value == "half") or node.args:
            return
        if self.ctx.qualify(func) is not None:
            return  # `torch.Tensor.half(...)`, a module function, not a method call
        reason = self._kept_reason()
        if reason is not None:
            self.report(node, f"`.half()` left as float16: {reason}; a bf16 edit must be whole (every "
                        "tensor meeting this one follows) or absent")
            return
        bf16, imports = qualified_expr(self.ctx, "torch.bfloat16")
        fp16, more = qualified_expr(self.ctx, "torch.float16")
        dtype, most = per_target.neuron_only(self.ctx, bf16, fp16)  # CPU and CUDA keep float16, as before
        imports = (*imports, *more, *most)
        shown, where = ("torch.bfloat16 if <Neuron> else torch.float16", " on Neuron (float16 elsewhere, as before)") \
            if dtype is not bf16 else ("torch.bfloat16", "")
        new = node.with_changes(func=func.with_changes(attr=cst.Name("to")), args=[cst.Arg(value=dtype)])
        self.fix(node, new, f"`.half()` -> `.to({shown})`: bf16 is the Neuron reduced-precision type{where}; "
                            "make inputs, buffers and checkpoints that were float16 follow", imports=imports)

    def _kept_reason(self) -> str | None:
        """Why this `.half()` must stay float16, if it must: float16 produced elsewhere in the
        file or in another of the project (it would meet a bf16 tensor), or an export/converter whose
        output format is the point."""
        if is_format_file(self.ctx.path):
            return "this file exports or converts, and the float16 output format is the point"
        for anc in self.ctx.ancestors():
            if isinstance(anc, cst.FunctionDef):
                name = anc.name.value.lower()
                if any(word in name for word in (*FORMAT_WORDS, "fp16", "half")):
                    return f"`{anc.name.value}` is about float16 (export, conversion or an fp16 path)"
                code = self.ctx.module.code_for_node(anc)
                if any(call in code for call in SAVES):
                    return f"`{anc.name.value}` saves or exports what it converts (the dtype is the format)"
                break
        if makes_float16(self.ctx.source.decode("utf-8", "replace")):
            return ("the file still produces float16 elsewhere (`torch.float16`, `torch.half`, `fp16` "
                    "settings), which would meet a bf16 tensor")
        if self.ctx.options.float16_elsewhere is not None:
            return (f"{self.ctx.options.float16_elsewhere} still produces float16 (`torch.float16`, `torch.half`, "
                    "`fp16` settings), which would meet a bf16 tensor")
        return None


#: calls that write a converted model or state dict out
SAVES = ("torch.save", "save_pretrained", "save_file", "torch.onnx", "jit.save")
