"""NRN633: CUDA values in training configs (``device: cuda``, ``accelerator: gpu``, ``precision: 16-mixed``, ``backend: nccl``)."""

from __future__ import annotations

import re

from neuronize.transforms._helpers.setup_files import CONFIG_KINDS, DISTRIBUTED_URL, TORCH_INDEX_URL

from neuronize.line_rule import LineRule, Span, TextDocument
from neuronize.sources.configs import Entry, json_entries, yaml_entries
from neuronize.sources.kinds import SourceKind
from neuronize.sources.lines import Edit
from neuronize.transform import Evidence, Example, Safety

_DEVICE_KEYS = frozenset({"device", "device_type", "train_device", "eval_device"})
_CUDA_DEVICE = re.compile(r"^cuda(?::\d+)?$")
_BACKEND_KEYS = frozenset({"backend", "dist_backend", "distributed_backend", "process_group_backend"})
_FP16_PRECISION = frozenset({"16", "16-mixed", "fp16", "16-true"})
#: the Lightning accelerators that ask for CUDA GPUs
_GPU_ACCELERATORS = frozenset({"gpu", "cuda"})


def plan(entry: Entry, number: bool = False, gpu_accelerator: bool = False,
         cuda_hosts: bool = False) -> tuple[str | None, str] | None:
    """(replacement or None to report, message) for one config value, or None if it is fine;
    ``number``: the value is written as a number (no quotes); ``gpu_accelerator``: the config asks
    Lightning for GPUs (``accelerator: gpu``), which stays, so its processes run on CUDA;
    ``cuda_hosts``: the project's code checks for a host, so the config serves CUDA hosts too."""
    key, value = entry.key, entry.value
    if key in _DEVICE_KEYS and _CUDA_DEVICE.match(value):
        return "neuron", f"`{key}: {value}` -> `neuron` (the code that reads it then places work on Trainium)"
    if key == "process_group_backend" and value == "nccl" and gpu_accelerator:  # Lightning's own strategy
        return None, (f"`{key}: nccl` stays with the config's GPU accelerator, which runs its processes on CUDA "
                      "(a `neuron` backend there would fail every CUDA run and give Neuron nothing): move both "
                      "together by hand")
    if key in _BACKEND_KEYS and value == "nccl":
        return "neuron", f"`{key}: nccl` -> `neuron`: the TorchNeuron process-group backend"
    if key == "precision" and value in _FP16_PRECISION and number:
        return None, (f"`precision: {value}` is a number, as a typed config (`precision: int`) and Lightning "
                      "before 2.0 read it, where `bf16-mixed` is a string of Lightning 2.x: Neuron trains in "
                      "bf16; set it by hand in the form the reader takes (`bf16-mixed`, `bf16` before 2.0)")
    if key == "precision" and value in _FP16_PRECISION and cuda_hosts:
        return None, (f"`precision: {value}` stays: the project also runs on CUDA hosts (its code checks for one), "
                      "which read this config too, and bf16 changes their numbers (pre-Ampere GPUs emulate it, "
                      "slowly); Neuron trains in bf16: give the Trainium run `precision: bf16-mixed` (a config of "
                      "its own, or an override)")
    if key == "precision" and value in _FP16_PRECISION:
        new = "bf16-true" if value == "16-true" else "bf16-mixed"
        return new, f"`precision: {value}` -> `{new}`: Neuron trains in bf16, which needs no loss scaling"
    if key == "accelerator" and value in _GPU_ACCELERATORS:
        return None, (f"`accelerator: {value}` asks for GPUs; a Lightning accelerator for Trainium is not "
                      "documented: run the model on the `neuron` device (or `accelerator: auto` with a "
                      "Neuron-aware release)")
    return None


class ConfigCudaValue(LineRule):
    """Finds CUDA values in YAML/JSON training configs: `device: cuda`, `backend: nccl`, `precision: 16-mixed`, `accelerator: gpu`.

    What it does:
        In Lightning, Hydra, OmegaConf and similar configs, rewrites `device: cuda` / `cuda:N` to
        `neuron`, `backend: nccl` to `neuron`, and fp16 `precision` values to `bf16-mixed`; reports
        `accelerator: gpu`, a precision written as the number `16` (a typed config or Lightning
        before 2.0 reads a number there, where `bf16-mixed` is a string), and any fp16 precision in
        a project whose code checks for a host: its CUDA hosts read the same value, and a config
        cannot choose by host. A strategy's
        `process_group_backend: nccl` in a config whose `accelerator: gpu` stays is reported too:
        Lightning runs those processes on CUDA. Only the
        value's characters change; quotes and comments stay.

    Why on TorchNeuron:
        A config value feeds the same calls the Python rules migrate: `torch.device(cfg.device)`,
        `init_process_group(backend=cfg.backend)`, autocast. TorchNeuron's device is `neuron`, its
        process-group backend is `neuron`, and its examples train in bf16.

    Example:
        device: cuda
        backend: nccl

    Use instead:
        device: neuron
        backend: neuron

    Fix safety:
        Unsafe: the code that reads the value is not seen here (it may compare it with
        `"cuda"`), and a CUDA host running the same config then needs its own.

    Evidence:
        DOC for the device name and backend (TorchNeuron overview and distributed guide); INF for
        bf16 precision and for the reading of config values.
    """

    id = "NRN633"
    name = "config-cuda-value"
    kinds = CONFIG_KINDS
    safety = Safety.UNSAFE
    evidence = Evidence.INF
    section = "setup"
    effort = "low"
    tokens = (b"cuda", b"nccl", b"16", b"gpu")
    references = (TORCH_INDEX_URL, DISTRIBUTED_URL)
    examples = (Example("device: cuda\nbackend: nccl\n", "device: neuron\nbackend: neuron\n"),)

    def check(self, doc: TextDocument) -> None:
        entries = list(json_entries(doc.lines) if doc.kind is SourceKind.JSON_CONFIG else yaml_entries(doc.lines))
        gpu = any(e.key == "accelerator" and e.value in _GPU_ACCELERATORS for e in entries)
        for entry in entries:
            text = doc.lines[entry.line].text
            number = entry.value.isdigit() and not (entry.start > 0 and text[entry.start - 1] in "\"'")
            planned = plan(entry, number, gpu, self.kctx.options.project_checks_host)
            if planned is None:
                continue
            new, message = planned
            span = Span(entry.line, entry.start, entry.end)
            if new is None:
                self.flag(span, message)
            else:
                self.propose(span, [Edit(entry.line, entry.start, entry.end, new)], message)
