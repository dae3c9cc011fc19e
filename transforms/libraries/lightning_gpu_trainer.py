"""NRN505: Lightning ``Trainer`` / ``Fabric`` on GPUs: what is and is not established on Trainium."""

from __future__ import annotations

import libcst as cst

from neuronize.analysis.context import FileContext
from neuronize.transform import Evidence, Example, Safety, Transform
from neuronize.transforms._helpers.calls import keyword
from neuronize.transforms._helpers.cuda_guard import GPU_WORD_PINS
from neuronize.transforms._helpers.device_model import pins_outside_cuda_code
from neuronize.transforms._helpers.literals import string_value
from neuronize.transforms._helpers.messages import short
from neuronize.transforms._helpers.names import last_name

#: Lightning's packages, whose `Trainer` and `Fabric` are meant (`lightning.Trainer`, `pytorch_lightning.Trainer`,
#: `lightning.Fabric`, `lightning_fabric.Fabric`)
LIGHTNING = ("lightning.", "pytorch_lightning.", "lightning.pytorch.", "lightning_fabric.")
#: the accelerators Lightning picks itself: a GPU where there is one, else the CPU (never Neuron)
CHOSEN = ("auto",)
GPU_ACCELERATORS = ("gpu", "cuda")
#: fp16 precisions, which Lightning scales with a CUDA GradScaler
FP16 = ("16", "16-mixed", "16-true")


_NO_NEURON = ("Lightning has no Neuron accelerator (`accelerator=\"neuron\"` is rejected) and a Lightning run on "
              "TorchNeuron is not documented; established: the model's PyTorch code runs on `\"neuron\"`, "
              "`torch.distributed` takes `backend=\"neuron\"`, Trainium trains in bf16")
_FOR_TRAINIUM = ("for Trainium move the loop to plain PyTorch, or try a custom `Accelerator` for `neuron` with "
                 "`DDPStrategy(process_group_backend=\"neuron\")` and `precision=\"bf16-mixed\"` (unverified)")

#: Lightning's classes that pick the device (``LightningLite``: Fabric's name before Lightning 2.0)
KINDS = ("Trainer", "Fabric", "LightningLite")


def _lightning_kind(ctx: FileContext, func: cst.BaseExpression) -> str | None:
    """Which of Lightning's :data:`KINDS` ``func`` builds: the class itself, or a class of the
    file built on it (``class Lite(LightningLite)``, then ``Lite(accelerator="gpu")``)."""
    kind = last_name(func)
    if kind in KINDS and (ctx.qualify(func) or "").startswith(LIGHTNING):
        return kind
    return _subclasses(ctx).get(func.value) if isinstance(func, cst.Name) else None


def _subclasses(ctx: FileContext) -> dict[str, str]:
    """The classes the file defines at its top level on one of Lightning's :data:`KINDS`: name -> kind."""
    key = ("lightning-subclasses", 0)
    if key not in ctx.memo:
        ctx.memo[key] = {stmt.name.value: kind for stmt in ctx.module.body if isinstance(stmt, cst.ClassDef)
                         for base in stmt.bases if (kind := last_name(base.value)) in KINDS
                         and (ctx.qualify(base.value) or "").startswith(LIGHTNING)}
    return ctx.memo[key]


def _shown(arg: cst.Arg) -> str:
    return f"{arg.keyword.value if arg.keyword else ''}={short(arg.value, 30, tight=True)}"


def _gpu_arguments(call: cst.Call) -> list[str]:
    """The arguments of a Trainer or Fabric call that ask for GPUs, as shown to the user."""
    shown = []
    accelerator = keyword(call, "accelerator")
    if accelerator is not None and (string_value(accelerator.value) or "").lower() in GPU_ACCELERATORS:
        shown.append(_shown(accelerator))
    for name in ("gpus", "auto_select_gpus"):
        arg = keyword(call, name)
        if arg is not None and not (isinstance(arg.value, cst.Name) and arg.value.value in ("None", "False")):
            shown.append(_shown(arg))
    return shown


class LightningGpuTrainer(Transform):
    """Finds Lightning `Trainer(...)` and `Fabric(...)` calls that ask for GPUs (`accelerator="gpu"`, `gpus=`), and says what is established on Trainium.

    What it does:
        Reports `Trainer(...)` of `lightning` / `pytorch_lightning` and `Fabric(...)` of
        `lightning` / `lightning_fabric` (or `LightningLite`, its name before Lightning 2.0, and
        a class of the file built on one of them: `class Lite(LightningLite)`, then
        `Lite(accelerator="gpu")`) with `accelerator="gpu"` or `"cuda"`, or the older
        `gpus=` / `auto_select_gpus=` arguments. The finding names the other GPU-sized arguments
        of the same call (`devices=` counts, `strategy="ddp"`, fp16 `precision=`) and separates
        what is established from what is not. A call that lets Lightning choose
        (`accelerator="auto"`, or none given) is reported too: Lightning picks a GPU where there
        is one, and on Trainium the CPU, so the program's device choice is Lightning's. A call
        that asks for GPUs holds the device edits of its function (or file, at the top level):
        the Trainer places that model on a GPU, so a `.cuda()` beside it must not move alone. So
        does `Trainer.from_argparse_args(args)`, which takes `--accelerator` and `--gpus` from the
        command line (Lightning before 2.0).

    Why on TorchNeuron:
        Established: the model's PyTorch code runs on the `"neuron"` device, `torch.distributed`
        takes the `"neuron"` backend, and Trainium trains in bf16. Lightning's accelerator
        registry has no Neuron entry, so `accelerator="neuron"` is rejected by Lightning; no AWS
        or Lightning page documents a Lightning run on TorchNeuron. `devices=` counts processes
        per node, which on Trainium would be logical NeuronCores, and `strategy="ddp"` picks NCCL
        for CUDA devices.

    Example:
        trainer = L.Trainer(accelerator="gpu", devices=8, strategy="ddp", precision="16-mixed")

    Use instead:
        Keep this Trainer for GPU hosts. For Trainium, either move the loop to plain PyTorch on
        `"neuron"` (the documented path), or try a custom `Accelerator` instance for the `neuron`
        device with `DDPStrategy(process_group_backend="neuron")` and `precision="bf16-mixed"`
        (unverified).

    Fix safety:
        Report only: there is no Lightning value to write that Lightning accepts and that is
        known to run on Trainium.

    Evidence:
        DOC: the `neuron` device and process group (TorchNeuron documentation). 3P: Lightning's
        accelerator names (its source and documentation). INF: a custom accelerator would work.
    """

    id = "NRN505"
    name = "lightning-gpu-trainer"
    safety = Safety.REPORT_ONLY
    evidence = Evidence.INF
    section = "hf"
    effort = "high"
    references = (
        "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/index.html",
        "https://lightning.ai/docs/pytorch/stable/extensions/accelerator.html",
    )
    tokens = (b"Trainer", b"Fabric", b"LightningLite")
    examples = (
        Example("import lightning as L\ntrainer = L.Trainer(accelerator='gpu', devices=4)\n", None),
        Example("from pytorch_lightning import Trainer\nt = Trainer(gpus=2)\n", None),
        Example("from pytorch_lightning import Trainer\nt = Trainer.from_argparse_args(args)\n", None),
    )

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value == "from_argparse_args":
            kind = _lightning_kind(self.ctx, func.value)
            if kind is not None:
                self.report(node, f"Lightning `{kind}.from_argparse_args(...)` takes its accelerator and `--gpus` "
                            f"from the command line: {_NO_NEURON}. Keep this {kind} for GPUs; {_FOR_TRAINIUM}",
                            pins=pins_outside_cuda_code(self.ctx, GPU_WORD_PINS))
            return
        kind = _lightning_kind(self.ctx, func)
        if kind is None:
            return
        asks = _gpu_arguments(node)
        accelerator = keyword(node, "accelerator")
        if not asks:
            chosen = string_value(accelerator.value) if accelerator is not None else "auto"
            given = any(arg.star or arg.keyword is None for arg in node.args)  # `Fabric(**cfg)`: the config's
            if chosen in CHOSEN and not given:  # Lightning picks a GPU where there is one: on Trainium the CPU
                self.report(accelerator or node, f"Lightning `{kind}(accelerator=\"{chosen}\")` chooses the device "
                            "itself and has no Neuron accelerator: on Trainium it runs on the CPU; for Trainium move "
                            "the loop to plain PyTorch on `\"neuron\"`, or try a custom `Accelerator` for `neuron` "
                            "(unverified)")
            return
        sized = [_shown(arg) for arg in node.args if arg.keyword is not None and (
            arg.keyword.value in ("devices", "num_nodes", "strategy") or (
                arg.keyword.value == "precision" and (string_value(arg.value) or short(arg.value)) in FP16))]
        also = f" with `{', '.join(sized)}`" if sized else ""
        self.report(accelerator or keyword(node, "gpus") or node,
                    f"Lightning `{kind}({', '.join(asks)})`{also}: {_NO_NEURON}. Keep this {kind} for GPUs; "
                    f"{_FOR_TRAINIUM}", pins=pins_outside_cuda_code(self.ctx, GPU_WORD_PINS))
