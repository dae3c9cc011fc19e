"""NRN504: PyTorch/XLA-era torch-neuronx code (``torch_xla``, optimum-neuron) -> native."""

from __future__ import annotations

import libcst as cst

from neuronize.transform import Evidence, Example, ImportRequest, Safety, Transform
from neuronize.transforms._calls import argument, keyword, without_args
from neuronize.transforms._distributed import dist_function, request_torch_neuronx
from neuronize.transforms._literals import string_like, string_value
from neuronize.transforms._names import qualified_expr

_DEVICE = ("torch_xla.core.xla_model.xla_device", "torch_xla.device")
_SYNC = ("torch_xla.core.xla_model.mark_step", "torch_xla.sync")
_STEP = "torch_xla.core.xla_model.optimizer_step"
_HINTS = {
    "get_ordinal": "`dist.get_rank()`",
    "get_local_ordinal": '`int(os.environ["LOCAL_RANK"])`',
    "xrt_world_size": "`dist.get_world_size()`",
    "world_size": "`dist.get_world_size()`",
    "global_ordinal": "`dist.get_rank()`",
    "local_ordinal": '`int(os.environ["LOCAL_RANK"])`',
    "is_master_ordinal": "`dist.get_rank() == 0`",
    "master_print": "a `print` on rank 0",
    "save": "`torch.save` on rank 0",
    "rendezvous": "`dist.barrier()`",
    "all_reduce": "`dist.all_reduce`",
    "all_gather": "`dist.all_gather_into_tensor`",
    "reduce_scatter": "`dist.reduce_scatter_tensor`",
    "spawn": "`torchrun --nproc_per_node=<NeuronCores>`",
    "MpDeviceLoader": "the plain `DataLoader` (move batches with `.to(\"neuron\")`)",
    "ParallelLoader": "the plain `DataLoader` (move batches with `.to(\"neuron\")`)",
}


def _code(node: cst.CSTNode) -> str:
    return cst.Module([]).code_for_node(node)


class XlaEraCode(Transform):
    """Finds PyTorch/XLA-era torch-neuronx code, which the native TorchNeuron backend replaces.

    What it does:
        Rewrites `xm.xla_device()` / `torch_xla.device()` and `torch.device("xla")` to
        `torch.device("neuron")`; deletes `xm.mark_step()` / `torch_xla.sync()` statements;
        rewrites `xm.optimizer_step(opt)` to `opt.step()`; and turns the `"xla"` process-group
        backend into `"neuron"` (dropping `init_method="xla://"` and inserting
        `import torch_neuronx  # noqa: F401`). Imports of `torch_xla` left unused by these fixes
        are removed. Other `torch_xla` calls are reported with their native counterpart, as are
        imports from `optimum.neuron` (`NeuronTrainer`, `NeuronTrainingArguments`...).

        A file that imports `torch_xla` with no tie to torch-neuronx (no `torch_neuronx`,
        `neuronx_distributed`, `libneuronxla` or `optimum.neuron` import, no `NEURON_*`
        variable) and guards it as libraries serving TPUs do (`is_torch_xla_available()`,
        `XLA_AVAILABLE`, or names TPUs) is another accelerator's code: it is left alone, with
        at most one finding on its first top-level `torch_xla` import.

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
        (or an explicit `all_reduce`) does natively.

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
            "import torch_xla.core.xla_model as xm\ndevice = xm.xla_device()\n",
            "import torch\n\ndevice = torch.device(\"neuron\")\n",
        ),
        Example(
            "import torch\nimport torch_xla.core.xla_model as xm\n\n\n"
            "def step(opt):\n    xm.optimizer_step(opt)\n    xm.mark_step()\n",
            "import torch\n\n\ndef step(opt):\n    opt.step()\n",
        ),
        Example("from optimum.neuron import NeuronTrainer\n"),
    )

    def __init__(self, ctx) -> None:  # type: ignore[no-untyped-def]
        super().__init__(ctx)
        self._backend_fixes: list[tuple[cst.Call, cst.Call, str]] = []
        self._reported_xla = False
        #: why the file's torch_xla code is TPU code (no tie to torch-neuronx): then it is left alone
        self._tpu = ctx.roles.tpu

    # -- imports of the XLA-era module this call came through ---------------------------------
    def _removals(self, func: cst.BaseExpression) -> tuple[ImportRequest, ...]:
        head = func
        while isinstance(head, cst.Attribute):
            head = head.value
        if not isinstance(head, cst.Name):
            return ()
        full = self.ctx.qualify(head)
        if not full or not full.startswith("torch_xla"):
            return ()
        if full == head.value:
            return (ImportRequest(full, remove=True),)
        module, _, obj = full.rpartition(".")
        return (
            ImportRequest(full, asname=head.value, remove=True),
            ImportRequest(module, obj=obj, asname=None if obj == head.value else head.value, remove=True),
        )

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
                         evidence=Evidence.DOC)
        elif dist_function(qualified) in ("init_process_group", "new_group"):
            name = dist_function(qualified)
            arg = argument(node, "backend", 0 if name == "init_process_group" else 2)
            if arg is None or string_value(arg.value) != "xla":
                return
            self._reported_xla = True
            new = node.with_changes(args=[
                a.with_changes(value=string_like(a.value, "neuron")) if a is arg else a for a in node.args])
            init = keyword(new, "init_method")
            dropped = ""
            if init is not None and (string_value(init.value) or "").startswith("xla://"):
                new = without_args(new, init)
                dropped = ' and drops `init_method="xla://"` (env:// is the default)'
            self._backend_fixes.append((node, new, f'backend `"xla"` -> `"neuron"`{dropped}: the native '
                                        "process-group backend"))

    def _xla_call(self, node: cst.Call, qualified: str) -> None:
        removals = self._removals(node.func)
        parent = self.ctx.parent
        if qualified in _DEVICE:
            expr, imports = qualified_expr(self.ctx, "torch.device")
            replacement = cst.Call(func=expr, args=[cst.Arg(cst.SimpleString('"neuron"'))],
                                   lpar=node.lpar, rpar=node.rpar)
            indexed = bool(node.args)
            self.fix(node, replacement,
                     f'`{_code(node.func)}()` -> `torch.device("neuron")`: the native device'
                     + ("; the index is dropped (one NeuronCore per process)" if indexed else ""),
                     safety=Safety.UNSAFE if indexed else Safety.SAFE,
                     evidence=Evidence.INF if indexed else Evidence.DOC, imports=(*imports, *removals))
        elif qualified in _SYNC:
            if isinstance(parent, cst.Expr):
                self.remove(parent, f"deletes `{_code(node.func)}()`: the native backend runs "
                            "eagerly, with no lazy graph to cut", evidence=Evidence.THIRD_PARTY, imports=removals)
            else:
                self.report(node, "`mark_step()` has no native counterpart (eager execution): remove it")
        elif qualified == _STEP:
            positional = [a for a in node.args if a.keyword is None]
            others = [a for a in node.args if a.keyword is not None and a.keyword.value != "barrier"]
            opt = argument(node, "optimizer", 0)
            if isinstance(parent, cst.Expr) and opt is not None and not others and len(node.args) - (
                    1 if keyword(node, "barrier") else 0) == 1 and not any(a.star for a in node.args):
                del positional
                step = cst.Call(func=cst.Attribute(value=opt.value, attr=cst.Name("step")))
                self.fix(node, step, "`xm.optimizer_step(opt)` -> `opt.step()`: XLA's version also all-reduced "
                         "gradients across replicas; natively that is DDP/FSDP's job, so check the model is wrapped",
                         imports=removals)
            else:
                self.report(node, "`xm.optimizer_step(...)`: call `optimizer.step()` and let DDP/FSDP reduce "
                            "the gradients")
        else:
            last = qualified.rsplit(".", 1)[-1]
            hint = _HINTS.get(last)
            instead = f"use {hint}" if hint else "rewrite it with native PyTorch (`torch.distributed`, `torchrun`)"
            self.report(node, f"`{qualified}` is PyTorch/XLA API, which native TorchNeuron does not use: {instead}",
                        evidence=Evidence.DOC)

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
            self.fix(node, new, message, imports=(ImportRequest("torch_xla.distributed.xla_backend", remove=True),))
        if self._reported_xla:
            return
        for stmt in original_node.body:
            if isinstance(stmt, cst.SimpleStatementLine):
                for small in stmt.body:
                    if not self._imports_xla(small):
                        continue
                    if self._tpu:  # once per file: the file is another accelerator's code
                        self.report(small, f"left alone: this file {self._tpu}, so it looks like TPU code; "
                                    "on Trainium the native `neuron` device replaces PyTorch/XLA",
                                    evidence=Evidence.INF)
                        return
                    self.report(small, "imports PyTorch/XLA, which native TorchNeuron does not use; do not "
                                "mix the two APIs in one workload", evidence=Evidence.DOC)

    @staticmethod
    def _imports_xla(small: cst.BaseSmallStatement) -> bool:
        if isinstance(small, cst.Import):
            return any(cst.Module([]).code_for_node(a.name).split(".")[0] == "torch_xla" for a in small.names)
        if isinstance(small, cst.ImportFrom) and small.module is not None and not small.relative:
            return cst.Module([]).code_for_node(small.module).split(".")[0] == "torch_xla"
        return False
