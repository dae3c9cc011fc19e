"""NRN504: PyTorch/XLA-era torch-neuronx code (``torch_xla``, optimum-neuron) -> native."""

from __future__ import annotations

import libcst as cst

from neuronize.analysis.context import FileContext
from neuronize.transform import Evidence, Example, ImportRequest, Safety, Transform
from neuronize.transforms._helpers.calls import argument
from neuronize.transforms._helpers.distributed import request_torch_neuronx
from neuronize.transforms._helpers.literals import string_like, string_value
from neuronize.transforms._helpers.messages import short
from neuronize.transforms._helpers.names import qualified_expr, target_name
from neuronize.transforms._helpers.xla import (XLA_DEVICE, XLA_HINTS, XLA_STEP, XLA_SYNC, import_removals, imports_xla,
                                       optimizer_step, xla_backend_plan)


#: a file's XLA-era code moves as one: a native device beside torch_xla calls (or an `"xla"` backend) runs
#: on no host
GROUP = "xla-era code"


class XlaEraCode(Transform):
    """Finds PyTorch/XLA-era torch-neuronx code, which the native TorchNeuron backend replaces.

    What it does:
        Rewrites `xm.xla_device()` / `torch_xla.device()` and `torch.device("xla")` to
        `torch.device("neuron")`; deletes `xm.mark_step()` / `torch_xla.sync()` statements;
        rewrites `xm.optimizer_step(opt)` to `opt.step()`; and turns the `"xla"` process-group
        backend into `"neuron"` (dropping `init_method="xla://"` and inserting
        `import torch_neuronx  # noqa: F401`), as well as a backend kept in a name
        (`dist_backend = "xla"`). Imports of `torch_xla` left unused by these fixes
        are removed. Other `torch_xla` calls are reported with their native counterpart, as are
        imports from `optimum.neuron` (`NeuronTrainer`, `NeuronTrainingArguments`...).

        A file that imports `torch_xla` with no tie to torch-neuronx (no `torch_neuronx`,
        `neuronx_distributed`, `libneuronxla` or `optimum.neuron` import, no `NEURON_*`
        variable) and guards it as libraries serving TPUs do (`is_torch_xla_available()`,
        `XLA_AVAILABLE`, `is_torch_tpu_available()`, or names TPUs: `use_tpu`) is another
        accelerator's code: it is left alone, with at most one finding on its first top-level
        `torch_xla` import.

    Why on TorchNeuron:
        PyTorch 2.9 was the last XLA-based torch-neuronx, and Neuron 2.30 dropped PyTorch/XLA for
        training. The native backend is eager (no lazy tensors to cut into graphs), uses the
        `neuron` device and process-group backend, and runs transformers, accelerate and PEFT
        without a Neuron-specific layer. The docs warn against mixing the two APIs.

    Example:
        import torch_xla.core.xla_model as xm
        device = xm.xla_device()
        xm.optimizer_step(optimizer)
        xm.mark_step()

    Use instead:
        import torch
        device = torch.device("neuron")
        optimizer.step()

    Fix safety:
        Safe for the device. Unsafe elsewhere: deleting `mark_step` assumes eager execution, and
        `xm.optimizer_step` also all-reduced gradients across replicas, which only DDP/FSDP
        (or an explicit `all_reduce`) does natively. A file's XLA-era edits form one edit group,
        applied together at the weakest safety among them, or not at all where one of its
        `torch_xla` calls has no fix: a native device beside PyTorch/XLA calls runs on no host.

    Evidence:
        DOC: the setup troubleshooting page (XLA-era syntax on the native backend) and the
        TorchNeuron resources page (optimum-neuron). 3P/INF: `mark_step`, `optimizer_step`, the
        `"xla"` backend.
    """

    id = "NRN504"
    name = "xla-era-code"
    safety = Safety.UNSAFE
    evidence = Evidence.INF
    section = "hf"
    references = (
        "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/setup/troubleshooting.html",
        "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/reference/torchneuron-resources.html",
    )
    tokens = (b"xla", b"optimum")
    examples = (
        Example(
            "import torch_xla.core.xla_model as xm\n\n\ndef setup():\n    return xm.xla_device()\n",
            "import torch\n\n\ndef setup():\n    return torch.device(\"neuron\")\n",
        ),
        Example(
            "import torch\nimport torch_xla.core.xla_model as xm\n\n\n"
            "def step(opt):\n    xm.optimizer_step(opt)\n    xm.mark_step()\n",
            "import torch\n\n\ndef step(opt):\n    opt.step()\n",
        ),
        Example("from optimum.neuron import NeuronTrainer\n"),
    )

    def __init__(self, ctx: FileContext) -> None:
        super().__init__(ctx)
        self._backend_fixes: list[tuple[cst.Call, cst.Call, str]] = []
        self._reported_xla = False
        #: why the file's torch_xla code is TPU code (no tie to torch-neuronx): then it is left alone
        self._tpu = ctx.roles.tpu

    def visit_Call(self, node: cst.Call) -> None:
        if self._tpu:
            return
        qualified = self.ctx.qualify(node.func)
        if not qualified:
            return
        if qualified.startswith("torch_xla"):
            self._reported_xla = True
            self._xla_call(node, qualified)
        elif qualified == "torch.device":
            arg = argument(node, "type", 0)
            value = string_value(arg.value) if arg is not None else None
            if arg is not None and value is not None and (value == "xla" or value.startswith("xla:")):
                self._reported_xla = True
                self.fix(arg.value, string_like(arg.value, "neuron"),
                         f'`torch.device("{value}")` -> `"neuron"`: the native device', safety=Safety.SAFE,
                         evidence=Evidence.DOC, group=GROUP)
        else:
            plan = xla_backend_plan(self.ctx, node)
            if plan is not None:
                self._reported_xla = True
                self._backend_fixes.append((node, *plan))

    def visit_Assign(self, node: cst.Assign) -> None:
        """``dist_backend = "xla"``: a process-group backend kept in a name (a device class's
        attribute, a setting) becomes the native one, with the file's other XLA-era code."""
        name = target_name(node.targets[0].target) if len(node.targets) == 1 else None
        if self._tpu or name is None or "backend" not in name.lower() or string_value(node.value) != "xla":
            return
        self._reported_xla = True
        self.fix(node.value, string_like(node.value, "neuron"), f'`{name} = "xla"` -> `"neuron"`: the native '
                 "process-group backend", group=GROUP)

    def _xla_call(self, node: cst.Call, qualified: str) -> None:
        removals = import_removals(self.ctx, node.func)
        parent = self.ctx.parent
        if qualified in XLA_DEVICE:
            expr, imports = qualified_expr(self.ctx, "torch.device")
            replacement = cst.Call(func=expr, args=[cst.Arg(cst.SimpleString('"neuron"'))],
                                   lpar=node.lpar, rpar=node.rpar)
            indexed = bool(node.args)
            self.fix(node, replacement,
                     f'`{short(node.func, None)}()` -> `torch.device("neuron")`: the native device'
                     + ("; the index is dropped (one NeuronCore per process)" if indexed else ""),
                     safety=Safety.UNSAFE if indexed else Safety.SAFE,
                     evidence=Evidence.INF if indexed else Evidence.DOC, imports=(*imports, *removals), group=GROUP)
        elif qualified in XLA_SYNC:
            if isinstance(parent, cst.Expr):
                self.remove(parent, f"deletes `{short(node.func, None)}()`: the native backend runs "
                            "eagerly, with no lazy graph to cut", evidence=Evidence.THIRD_PARTY, imports=removals,
                            group=GROUP)
            else:
                self.report(node, "`mark_step()` has no native counterpart (eager execution): remove it", group=GROUP)
        elif qualified == XLA_STEP:
            step = optimizer_step(node) if isinstance(parent, cst.Expr) else None
            if step is not None:
                self.fix(node, step, "`xm.optimizer_step(opt)` -> `opt.step()`: XLA's version also all-reduced "
                         "gradients across replicas; natively that is DDP/FSDP's job, so check the model is wrapped",
                         imports=removals, group=GROUP)
            else:
                self.report(node, "`xm.optimizer_step(...)`: call `optimizer.step()` and let DDP/FSDP reduce "
                            "the gradients", group=GROUP)
        else:
            last = qualified.rsplit(".", 1)[-1]
            hint = XLA_HINTS.get(last)
            instead = f"use {hint}" if hint else "rewrite it with native PyTorch (`torch.distributed`, `torchrun`)"
            self.report(node, f"`{qualified}` is PyTorch/XLA API, which native TorchNeuron does not use: {instead}",
                        evidence=Evidence.DOC, group=GROUP)

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        if node.relative or node.module is None:
            return
        module = cst.Module([]).code_for_node(node.module)
        if module == "optimum.neuron" or module.startswith("optimum.neuron."):
            self.report(node, "optimum-neuron is XLA-era code: on TorchNeuron use transformers' `Trainer` / "
                        "`TrainingArguments` (and accelerate) directly, launched with torchrun",
                        evidence=Evidence.DOC)

    def leave_Module(self, original_node: cst.Module) -> None:
        if self._backend_fixes:
            request_torch_neuronx(self, Safety.UNSAFE)
        for node, new, message in self._backend_fixes:
            self.fix(node, new, message, imports=(ImportRequest("torch_xla.distributed.xla_backend", remove=True),),
                     group=GROUP)
        if self._reported_xla:
            return
        for stmt in original_node.body:
            if isinstance(stmt, cst.SimpleStatementLine):
                for small in stmt.body:
                    if not imports_xla(small):
                        continue
                    if self._tpu:  # once per file: the file is another accelerator's code
                        self.report(small, f"left alone: this file {self._tpu}, so it looks like TPU code; "
                                    "on Trainium the native `neuron` device replaces PyTorch/XLA",
                                    evidence=Evidence.INF)
                        return
                    self.report(small, "imports PyTorch/XLA, which native TorchNeuron does not use; do not "
                                "mix the two APIs in one workload", evidence=Evidence.DOC)
