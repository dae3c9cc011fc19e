"""Module-level flags a project stores from a CUDA capability probe: a fact about the run, found
before any file is analysed.

``_SUPPORTS_FLASH = torch.cuda.is_available() and torch.cuda.get_device_capability() >= (8, 0)``
is False on every host without CUDA, Trainium included, and stays so (the probe asks about the
CUDA device). The module that defines it sees the probe; a module that imports the flag and
branches on it (``if _SUPPORTS_FLASH: ... device="cuda"``) sees only a name, and that branch is
CUDA's: editing it changes nothing on Neuron and only risks CUDA. Only assignments at the start
of a line (column 0) count, with the lines that continue them; they are found with regular
expressions, no parse.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

#: ``NAME = <expression>`` at column 0 (an annotation allowed), with its continuation lines
#: (indented, or closing a bracket)
_ASSIGNED = re.compile(rb"^([A-Za-z_]\w*)[ \t]*(?::[^=\n]*)?=(?!=)([^\n]*(?:\n[ \t)\]}][^\n]*)*)", re.MULTILINE)
_AVAILABLE = re.compile(rb"\bcuda\.is_available\(\)")
#: what asks about the CUDA device itself: true only on some NVIDIA GPUs
_PROBE = re.compile(rb"\b(?:get_device_capability|is_bf16_supported|get_device_properties)\(")


def probe_flags(sources: Iterable[bytes]) -> frozenset[str]:
    """The names bound at module level to an expression that checks CUDA availability and probes
    the CUDA device, in any of ``sources``."""
    found: set[str] = set()
    for source in sources:
        if _PROBE.search(source) is None:
            continue
        for match in _ASSIGNED.finditer(source):
            value = match.group(2)
            if _AVAILABLE.search(value) and _PROBE.search(value):
                found.add(match.group(1).decode())
    return frozenset(found)


def stores(source: bytes, name: str) -> bool:
    """``source`` binds ``name`` at module level (the module that stores a flag asks its probe itself)."""
    return any(match.group(1) == name.encode() for match in _ASSIGNED.finditer(source))
