"""NRN633: CUDA values in training configs (``device: cuda``, ``accelerator: gpu``, ``precision: 16-mixed``, ``backend: nccl``)."""

from __future__ import annotations

import re

from neuronize.transforms._helpers.setup_files import CONFIG_KINDS, DISTRIBUTED_URL, TORCH_INDEX_URL

from neuronize.line_rule import LineRule, Span, TextDocument
from neuronize.sources.configs import Entry, json_entries, yaml_entries
from neuronize.sources.kinds import SourceKind
from neuronize.transform import Evidence, Example, Safety

_DEVICE_KEYS = frozenset({"device", "device_type", "train_device", "eval_device"})
_CUDA_DEVICE = re.compile(r"^cuda(?::\d+)?$")
_BACKEND_KEYS = frozenset({"backend", "dist_backend", "distributed_backend", "process_group_backend"})
_FP16_PRECISION = frozenset({"16", "16-mixed", "fp16", "16-true"})
#: the Lightning accelerators that ask for CUDA GPUs
_GPU_ACCELERATORS = frozenset({"gpu", "cuda"})


#: why a config's value stays: every target keeps a host that reads it
_READ_BY_CUDA = "CUDA hosts read this config too, and a config value cannot choose by host"


def plan(entry: Entry, number: bool = False, gpu_accelerator: bool = False) -> str | None:
    """The finding for one config value, or None if it is fine; ``number``: the value is written as
    a number (no quotes); ``gpu_accelerator``: the config asks Lightning for GPUs (``accelerator:
    gpu``), which stays, so its processes run on CUDA."""
    key, value = entry.key, entry.value
    if key in _DEVICE_KEYS and _CUDA_DEVICE.match(value):
        return (f"`{key}: {value}` stays: {_READ_BY_CUDA} (a `neuron` there would fail every CUDA run); give the "
                f"Trainium run `{key}: neuron` (a config of its own, or an override), or choose the device where "
                "the code reads it")
    if key == "process_group_backend" and value == "nccl" and gpu_accelerator:  # Lightning's own strategy
        return (f"`{key}: nccl` stays with the config's GPU accelerator, which runs its processes on CUDA "
                "(a `neuron` backend there would fail every CUDA run and give Neuron nothing): move both "
                "together by hand")
    if key in _BACKEND_KEYS and value == "nccl":
        return (f"`{key}: nccl` stays: {_READ_BY_CUDA}; give the Trainium run `{key}: neuron`, the TorchNeuron "
                "process-group backend (a config of its own, or an override)")
    if key == "precision" and value in _FP16_PRECISION and number:
        return (f"`precision: {value}` is a number, as a typed config (`precision: int`) and Lightning "
                "before 2.0 read it, where `bf16-mixed` is a string of Lightning 2.x: Neuron trains in "
                "bf16; set it by hand in the form the reader takes (`bf16-mixed`, `bf16` before 2.0)")
    if key == "precision" and value in _FP16_PRECISION:
        new = "bf16-true" if value == "16-true" else "bf16-mixed"
        return (f"`precision: {value}` stays: {_READ_BY_CUDA}; bf16 would change the numbers of their runs "
                f"(pre-Ampere GPUs emulate it, slowly). Neuron trains in bf16: give the Trainium run `precision: "
                f"{new}` (a config of its own, or an override)")
    if key == "accelerator" and value in _GPU_ACCELERATORS:
        return (f"`accelerator: {value}` asks for GPUs; a Lightning accelerator for Trainium is not "
                "documented: run the model on the `neuron` device (or `accelerator: auto` with a "
                "Neuron-aware release)")
    return None


class ConfigCudaValue(LineRule):
    """Finds CUDA values in YAML/JSON training configs: `device: cuda`, `backend: nccl`, `precision: 16-mixed`, `accelerator: gpu`.

    What it does:
        In Lightning, Hydra, OmegaConf and similar configs, reports `device: cuda` / `cuda:N`,
        `backend: nccl`, fp16 `precision` values and `accelerator: gpu`, saying what the Trainium
        run needs instead. Nothing is rewritten: the config is read on every host the program
        runs on, the NVIDIA box it was written for included, and a value cannot choose by host
        (`device: neuron` fails every CUDA run; bf16 changes the numbers of a GPU run, and
        pre-Ampere GPUs emulate it slowly). A precision written as the number `16` is reported with
        the form its reader takes (a typed config or Lightning before 2.0 reads a number there,
        where `bf16-mixed` is a string).

    Why on TorchNeuron:
        A config value feeds the same calls the Python rules migrate: `torch.device(cfg.device)`,
        `init_process_group(backend=cfg.backend)`, autocast. TorchNeuron's device is `neuron`, its
        process-group backend is `neuron`, and its examples train in bf16.

    Example:
        device: cuda
        backend: nccl

    Use instead:
        A config of the Trainium run's own (or an override on its command line, as Hydra takes
        `device=neuron`), or a choice where the code reads the value:

        device = "neuron" if on_neuron() else cfg.device

    Fix safety:
        Report-only: an edit of the shared config would take the CUDA hosts off their path.

    Evidence:
        DOC for the device name and backend (TorchNeuron overview and distributed guide); INF for
        bf16 precision and for the reading of config values.
    """

    id = "NRN633"
    name = "config-cuda-value"
    kinds = CONFIG_KINDS
    safety = Safety.REPORT_ONLY
    evidence = Evidence.INF
    section = "setup"
    effort = "low"
    tokens = (b"cuda", b"nccl", b"16", b"gpu")
    references = (TORCH_INDEX_URL, DISTRIBUTED_URL)
    examples = (Example("device: cuda\nbackend: nccl\n"), Example("device: cpu\nname: cuda\n", finds=False))

    def check(self, doc: TextDocument) -> None:
        entries = list(json_entries(doc.lines) if doc.kind is SourceKind.JSON_CONFIG else yaml_entries(doc.lines))
        gpu = any(e.key == "accelerator" and e.value in _GPU_ACCELERATORS for e in entries)
        for entry in entries:
            text = doc.lines[entry.line].text
            number = entry.value.isdigit() and not (entry.start > 0 and text[entry.start - 1] in "\"'")
            message = plan(entry, number, gpu)
            if message is not None:
                self.flag(Span(entry.line, entry.start, entry.end), message)
