"""Engines that implement their work once per vendor: a fact about the run's paths, found before
any file is analysed.

A serving engine that runs on several vendors' accelerators keeps one implementation per vendor
side by side (``backends/cuda/`` beside ``backends/dlinfer/``, ``kernels/cuda/`` beside
``kernels/ascend/``) and picks one by a device name at run time. The code around those folders
(its layers, engine, executors, model loaders) builds on whichever is picked: its ``"cuda"`` is the
key of CUDA's implementation, and moving it to ``"neuron"`` reaches a lookup that has no Neuron
entry. Such an engine gains Neuron by a backend of its own beside the others, which no rewrite of
its lines can write; its files are reported, not edited. An engine that already has a Neuron
implementation is none of this.
"""

from __future__ import annotations

from collections.abc import Iterable
from itertools import pairwise
from pathlib import PurePath, PurePosixPath

#: names of other vendors' implementations (folders or modules) beside CUDA's
_VENDORS = frozenset({"ascend", "npu", "dlinfer", "rocm", "hip", "xpu", "camb", "maca", "musa", "mlu", "hpu",
                      "habana", "gaudi", "tpu"})


def vendor_engines(paths: Iterable[PurePath]) -> dict[PurePath, str]:
    """The folders among ``paths``' ancestors that hold an engine implemented per vendor (the
    parent of a folder whose entries name CUDA and another vendor, and not Neuron), each with the
    entries that show it."""
    entries: dict[PurePath, set[str]] = {}
    for path in paths:
        for child, folder in pairwise([path, *path.parents]):
            entries.setdefault(folder, set()).add(PurePosixPath(child.name).stem.lower())
    engines: dict[PurePath, str] = {}
    for folder, names in entries.items():
        vendors = sorted(names & _VENDORS)
        if "cuda" in names and vendors and "neuron" not in names:
            shown = ", ".join(f"`{folder.name}/{name}`" for name in ["cuda", *vendors])
            engines[folder.parent if folder.parent != folder else folder] = f"it implements its work per vendor: {shown}"
    return engines


def engine_of(path: PurePath, engines: dict[PurePath, str]) -> str | None:
    """Why ``path`` is part of one of ``engines`` (the innermost), or None."""
    return next((engines[folder] for folder in path.parents if folder in engines), None)
