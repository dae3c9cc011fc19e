"""NRN631: Accelerate configs for GPUs (``distributed_type: MULTI_GPU``, ``mixed_precision: fp16``, ``gpu_ids``)."""

from __future__ import annotations

from neuronize.transforms._helpers.setup_files import CONFIG_KINDS, CORES_PER_INSTANCE, DIST_TUTORIAL_URL, TORCH_INDEX_URL

from neuronize.line_rule import LineRule, Span, TextDocument
from neuronize.sources.configs import json_entries, yaml_entries
from neuronize.sources.kinds import SourceKind
from neuronize.transform import Evidence, Example, Safety


class AccelerateGpuConfig(LineRule):
    """Finds Accelerate config settings made for GPUs: `distributed_type: MULTI_GPU`, `mixed_precision: fp16`, `gpu_ids`.

    What it does:
        Reports `mixed_precision: fp16`, `distributed_type: MULTI_GPU` and `gpu_ids` in an
        Accelerate config (YAML or JSON), with the Neuron way to run the job. The config stays as
        it is: the GPU launches it was written for read it too, and a value cannot choose by host.

    Why on TorchNeuron:
        Neuron's examples train in bf16, and bf16 needs no loss scaling; fp16 with a gradient
        scaler is not documented for TorchNeuron. A distributed TorchNeuron job is launched
        with `torchrun` with one process per logical NeuronCore and the `"neuron"` backend; GPU
        ids select nothing on Trainium.

    Example:
        mixed_precision: fp16

    Use instead:
        A config of the Trainium run's own (`mixed_precision: bf16`), or
        `accelerate launch --mixed_precision bf16`.

    Fix safety:
        Report-only: bf16 in the shared config changes the numerics of the GPU runs, and GPUs
        older than Ampere have no bf16.

    Evidence:
        INF: bf16 is the precision of every Neuron example; no Neuron page documents fp16
        training with a scaler. Not established here: whether Accelerate has a Neuron
        `distributed_type`.
    """

    id = "NRN631"
    name = "accelerate-gpu-config"
    kinds = CONFIG_KINDS
    safety = Safety.REPORT_ONLY
    evidence = Evidence.INF
    section = "setup"
    effort = "low"
    tokens = (b"MULTI_GPU", b"fp16", b"gpu_ids")
    references = (TORCH_INDEX_URL, DIST_TUTORIAL_URL)
    examples = (Example("distributed_type: MULTI_GPU\nmixed_precision: fp16\n"),)

    def check(self, doc: TextDocument) -> None:
        entries = list(json_entries(doc.lines) if doc.kind is SourceKind.JSON_CONFIG else yaml_entries(doc.lines))
        top = [e for e in entries if len(e.path) == 1]
        if not {"distributed_type", "compute_environment"} & {e.key for e in top}:
            return  # not an Accelerate config
        for entry in top:
            span = Span(entry.line, entry.start, entry.end)
            if entry.key == "mixed_precision" and entry.value == "fp16":
                self.flag(span, "Accelerate `mixed_precision: fp16` stays: the GPU launches this config serves "
                          "read it too, and bf16 changes their numbers (GPUs older than Ampere have no bf16); "
                          "Neuron trains in bf16, which needs no loss scaling: give the Trainium run "
                          "`mixed_precision: bf16` (a config of its own, or `accelerate launch --mixed_precision bf16`)")
            elif entry.key == "distributed_type" and entry.value == "MULTI_GPU":
                self.flag(span, f"`distributed_type: MULTI_GPU` launches one process per GPU; on Trainium launch "
                          f"with `torchrun`, {CORES_PER_INSTANCE}, and the `\"neuron\"` process-group backend")
            elif entry.key == "gpu_ids":
                self.flag(span, "`gpu_ids` selects GPUs, which Trainium does not have; NeuronCores are chosen "
                          "per process by the `\"neuron\"` process group (or `NEURON_RT_VISIBLE_CORES`)")
