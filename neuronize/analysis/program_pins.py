"""Programs whose placements stay on CUDA or the CPU on every host, and the modules they share: a
fact about the run, found before any file is analysed.

A script that wraps its model in ``DataParallel`` on every host, or makes its data with a legacy
CUDA tensor type (``torch.cuda.FloatTensor if cuda else torch.FloatTensor``), keeps its device
choice: on Neuron the one would scatter over CUDA's collectives, the other makes CPU tensors (the
file's own findings say so). A module it imports that repeats the choice
(``device = torch.device("cuda" if torch.cuda.is_available() else "cpu")`` at its top) must keep it
too, or on Trainium the tensors the module makes meet a model on the CPU; so must the other
programs that share those modules. The files joined to such a script by the project's imports, in
either direction, are one program for this purpose: their device edits wait with it. A large
project (more files than :data:`LIMIT` so joined) is left to its files' own findings: there the
join says little about which modules meet which model.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence
from pathlib import Path, PurePath

from neuronize.analysis.kernel_imports import ImportGraph

#: the most files one pinned program and the modules it shares may hold
LIMIT = 40
_LEGACY_CHOICE = re.compile(rb"torch\.cuda\.[A-Z]\w*Tensor\s+if\b[^\n]*\belse\s+torch\.[A-Z]\w*Tensor|"
                            rb"torch\.[A-Z]\w*Tensor\s+if\b[^\n]*\belse\s+torch\.cuda\.[A-Z]\w*Tensor")


def program_pins(files: Sequence[tuple[Path, PurePath, bytes]], graph: ImportGraph) -> dict[Path, str]:
    """For each Python file joined by imports to a script whose placements stay (see the module):
    why its device edits wait."""
    pinned = {path: f"`{relative.as_posix()}`, which {why}," for path, relative, source in files
              if (why := _pin(source)) is not None}
    if not pinned:
        return {}
    neighbours: dict[Path, set[Path]] = {}
    for path, module in graph.links():
        if module != path:
            neighbours.setdefault(path, set()).add(module)
            neighbours.setdefault(module, set()).add(path)
    found: dict[Path, str] = {}
    for start, why in pinned.items():
        if start in found:
            continue
        joined, pending = {start}, [start]
        while pending and len(joined) <= LIMIT:
            for other in neighbours.get(pending.pop(), ()):
                if other not in joined:
                    joined.add(other)
                    pending.append(other)
        if len(joined) <= LIMIT:
            found.update((path, why) for path in joined)
    return found


def _pin(source: bytes) -> str | None:
    if b"Tensor" in source and _LEGACY_CHOICE.search(source):
        return "makes its data with a legacy CUDA tensor type, on the CPU wherever CUDA is missing"
    if b"DataParallel(" in source and _wraps_always(source):
        return "wraps its model in `DataParallel` on every host"
    return None


def _wraps_always(source: bytes) -> bool:
    """``source`` calls ``DataParallel(...)`` (not ``DistributedDataParallel``) outside any ``if``."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return False
    pending: list[tuple[ast.AST, bool]] = [(tree, False)]
    while pending:
        node, conditional = pending.pop()
        if isinstance(node, ast.Call) and not conditional:
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
            if name == "DataParallel":
                return True
        under = conditional or isinstance(node, (ast.If, ast.IfExp))
        pending.extend((child, under) for child in ast.iter_child_nodes(node))
    return False
