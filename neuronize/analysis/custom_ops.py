"""Operators a compiled extension registers, called as ``torch.ops.<namespace>.<op>``.

A module that calls ``torch.ops.gsplat_sensors.project(...)`` hands its tensors to kernels built
for CUDA (and perhaps the CPU): the namespace has no Neuron kernel, so a device moved there ends in
a dispatch error where the module's own check said "requires CUDA". Such a module is GPU-kernel
code. Namespaces of torch and its domain libraries are not, and neither is one the project defines
in Python (``torch.library.custom_op("proj::op", ...)``, ``Library("proj", "DEF")``), whose
implementation is the project's own Python: those are found across the run's files before any is
analysed.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

#: namespaces of torch itself and of its domain libraries: operators with kernels for every device
#: torch supports, or none that a project builds
PORTABLE_NAMESPACES = frozenset({
    "aten", "prims", "prim", "quantized", "_quantized", "quantized_decomposed", "profiler", "c10d",
    "c10d_functional", "_c10d_functional", "_c10d_functional_autograd", "higher_order", "mkldnn", "onednn",
    "mkl", "sparse", "torchvision", "torchaudio", "torchtext", "xla", "neuron", "inductor", "_inductor_test",
    "_caffe2",
})

_CALLED = re.compile(rb"\btorch\.ops\.([A-Za-z_]\w*)\.")
#: a namespace named where Python defines an operator: ``"proj::op"``, ``Library("proj", ...)``
_DEFINED = re.compile(rb"""['"]([A-Za-z_]\w*)::\w+|\bLibrary\(\s*['"]([A-Za-z_]\w*)['"]""")
_DEFINES = re.compile(rb"\btorch\.library\b|\bcustom_op\b|\btriton_op\b|\bLibrary\(")


def defined_namespaces(sources: Iterable[bytes]) -> frozenset[str]:
    """The operator namespaces ``sources`` define in Python."""
    found: set[str] = set()
    for source in sources:
        if b"::" in source or b"Library(" in source:
            if _DEFINES.search(source):
                found.update((m.group(1) or m.group(2)).decode() for m in _DEFINED.finditer(source))
    return frozenset(found)


def compiled_namespace(source: bytes, defined: frozenset[str] = frozenset()) -> str | None:
    """The first namespace of operators ``source`` calls that a compiled extension registers: not
    torch's, nor one the project (``defined``) or the file itself defines in Python; None if none."""
    if b"torch.ops." not in source:
        return None
    own = defined | defined_namespaces([source])
    return next((name for m in _CALLED.finditer(source)
                 if (name := m.group(1).decode()) not in PORTABLE_NAMESPACES and name not in own), None)
