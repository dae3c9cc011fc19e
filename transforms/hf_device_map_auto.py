"""NRN503: Hugging Face / accelerate ``device_map`` and ``max_memory`` planning for GPUs."""

from __future__ import annotations

import libcst as cst

from neuronize.transform import Evidence, Example, Safety, Transform
from neuronize.transforms._calls import keyword
from neuronize.transforms._literals import string_value

_PLANNERS = ("auto", "balanced", "balanced_low_0", "sequential")
_LOADERS = (
    "transformers.pipeline",
    "accelerate.infer_auto_device_map",
    "accelerate.load_checkpoint_and_dispatch",
    "accelerate.dispatch_model",
    "accelerate.utils.get_balanced_memory",
)


def _gpu_map(node: cst.BaseExpression) -> bool:
    """``"cuda"``, ``"cuda:0"``, ``0`` or a dict literal (``{"": 0}``, per-layer GPU indices)."""
    value = string_value(node)
    if value is not None:
        return value == "cuda" or value.startswith("cuda:")
    return isinstance(node, (cst.Integer, cst.Dict))


class HfDeviceMapAuto(Transform):
    """Finds Hugging Face models placed with accelerate's GPU memory planner.

    What it does:
        Reports `device_map="auto"` (and `"balanced"`, `"sequential"`...) in `from_pretrained(...)`,
        `pipeline(...)` and accelerate's dispatch helpers, `device_map` values naming GPUs
        (`"cuda"`, `0`, `{"": 0}`, per-layer dicts), and `max_memory=` budgets. Report only.

    Why on TorchNeuron:
        Whether accelerate's planner sees NeuronCore memory is unverified (no Neuron memory probe
        was found), so the model may silently stay on the CPU. NeuronCores on one chip share HBM,
        so per-GPU budgets and GPU indices do not carry over.

    Example:
        model = AutoModelForCausalLM.from_pretrained(name, device_map="auto")

    Use instead:
        model = AutoModelForCausalLM.from_pretrained(name, torch_dtype=torch.bfloat16)
        model = model.to("neuron")
        # several NeuronCores: a tensor-parallel plan (`tp_plan`) under torchrun

    Fix safety:
        Report only: the replacement depends on the model size and the number of NeuronCores.

    Evidence:
        INF: no automatic placement over NeuronCores is documented. DOC-old: cores on a chip share
        HBM.
    """

    id = "NRN503"
    name = "hf-device-map-auto"
    safety = Safety.REPORT_ONLY
    evidence = Evidence.INF
    section = "hf"
    effort = "medium"
    references = (
        "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/tutorials/tutorial-hf-inference-torch-compile.html",
        "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/frameworks/torch/pytorch-native-overview.html",
    )
    tokens = (b"device_map", b"max_memory")
    examples = (
        Example("from transformers import AutoModel\nm = AutoModel.from_pretrained('x', device_map='auto')\n"),
        Example("import transformers\np = transformers.pipeline('text-generation', device_map={'': 0})\n"),
    )

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value == "from_pretrained":
            where = "`from_pretrained`"
        else:
            qualified = self.ctx.qualify(func)
            if qualified not in _LOADERS:
                return
            where = f"`{qualified.rsplit('.', 1)[-1]}`"  # type: ignore[union-attr]
        device_map = keyword(node, "device_map")
        if device_map is not None:
            value = string_value(device_map.value)
            if value in _PLANNERS:
                self.report(device_map, f'`device_map="{value}"` in {where}: whether accelerate sees NeuronCore '
                            "memory is unverified; load on CPU with `torch_dtype=torch.bfloat16`, then "
                            '`.to("neuron")`; across several NeuronCores use a tensor-parallel plan (`tp_plan`) '
                            "under torchrun")
            elif _gpu_map(device_map.value):
                self.report(device_map, f"`device_map` in {where} names GPUs: load on CPU, then "
                            '`.to("neuron")` (each process owns one NeuronCore)', evidence=Evidence.DOC_OLD)
        max_memory = keyword(node, "max_memory")
        if max_memory is not None and not (isinstance(max_memory.value, cst.Name)
                                           and max_memory.value.value == "None"):
            self.report(max_memory, f"`max_memory=` in {where} budgets GPU memory; NeuronCores on a chip share "
                        "HBM, so plan placement by NeuronCore instead", evidence=Evidence.DOC_OLD)
