"""The distributed family (NRN4xx) and the XLA-era rule (NRN504): ``torch.distributed``
functions in any spelling, NCCL backend names, and ``import torch_neuronx``."""

from __future__ import annotations

import libcst as cst

from neuronize.transform import Evidence, ImportRequest, Safety, Transform
from neuronize.transforms import _target
from neuronize.transforms._imports import import_anchor, torch_neuronx_line


def dist_function(qualified: str | None) -> str | None:
    """``"init_process_group"`` for ``torch.distributed.init_process_group`` (any module path)."""
    if not qualified:
        return None
    for prefix in ("torch.distributed.distributed_c10d.", "torch.distributed."):
        if qualified.startswith(prefix):
            rest = qualified[len(prefix):]
            return rest if "." not in rest else None
    return None


def nccl_backend(value: str) -> str | None:
    """How a backend string names NCCL: ``"plain"`` (``"nccl"``, ``"cuda:nccl"``),
    ``"mixed"`` (``"cpu:gloo,cuda:nccl"``), or None when it does not."""
    text = value.strip().lower()
    if text in ("nccl", "cuda:nccl"):
        return "plain"
    if "," in text:
        pairs = [p.strip().split(":") for p in text.split(",")]
        if all(len(p) == 2 for p in pairs) and ["cuda", "nccl"] in [[a.strip(), b.strip()] for a, b in pairs]:
            return "mixed"
    return None


def request_torch_neuronx(rule: Transform, safety: Safety) -> tuple[ImportRequest, ...]:
    """Propose ``import torch_neuronx  # noqa: F401`` (reference 0.3) as a fix of its own.

    Returns the import requests a backend fix should carry instead, when the file has no
    top-level torch import to put the line after (the engine then adds a plain import).
    """
    ctx = rule.ctx
    if not _target.needs_torch_neuronx(ctx) or ctx.names.imports_module("torch_neuronx"):
        return ()  # --target cpu / accelerator: the output must run without torch_neuronx
    anchor = import_anchor(ctx.module)
    if anchor is None:
        return (ImportRequest("torch_neuronx"),)
    rule.fix(
        anchor,
        cst.FlattenSentinel([anchor, torch_neuronx_line()]),
        "adds `import torch_neuronx  # noqa: F401` after this line: the distributed guide imports it "
        "to register the `neuron` device and process-group backend",
        safety=safety,
        evidence=Evidence.DOC,
    )
    return ()

