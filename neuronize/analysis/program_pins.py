"""Programs whose placements stay on CUDA or the CPU on every host, and the modules they share: a
fact about the run, found before any file is analysed.

A script that wraps its model in ``DataParallel`` on every host, or makes its data with a legacy
CUDA tensor type (``torch.cuda.FloatTensor if cuda else torch.FloatTensor``), keeps its device
choice: on Neuron the one would scatter over CUDA's collectives, the other makes CPU tensors (the
file's own findings say so). So does a model whose ``forward`` calls a helper of the project that
makes a legacy CUDA tensor type outside any ``if`` (a mask helper's ``torch.arange(0, n,
out=torch.cuda.LongTensor(n))``): on Neuron every forward pass stops there. A module such a file
imports that repeats the choice
(``device = torch.device("cuda" if torch.cuda.is_available() else "cpu")`` at its top) must keep it
too, or on Trainium the tensors the module makes meet a model on the CPU; so must the other
programs that share those modules. The files joined to such a script by imports of a module that
holds that choice (the script itself, a module that binds a device at its top, the helper that
makes the legacy type), in either direction, are one program for this purpose: their device edits
wait with it. A module that binds no device of its own (a dataset, a model builder) joins nothing:
the tensors its functions make go where their callers say. A large
project (more files than :data:`LIMIT` so joined) is left to its files' own findings: there the
join says little about which modules meet which model.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Sequence
from pathlib import Path, PurePath

from neuronize.analysis.kernel_imports import ImportGraph

#: the most files one pinned program and the modules it shares may hold
LIMIT = 40
_LEGACY_CHOICE = re.compile(rb"torch\.cuda\.[A-Z]\w*Tensor\s+if\b[^\n]*\belse\s+torch\.[A-Z]\w*Tensor|"
                            rb"torch\.[A-Z]\w*Tensor\s+if\b[^\n]*\belse\s+torch\.cuda\.[A-Z]\w*Tensor")
_LEGACY_NAME = re.compile(r"[A-Z]\w*Tensor")
#: a name bound to a device at a module's top (``device = torch.device("cuda" if ... else "cpu")``,
#: ``DEVICE = "cuda:0"``): the module's tensors go where its own choice says
_BINDS_DEVICE = re.compile(rb"^[A-Za-z_][\w.]*[ \t]*(?::[^=\n]*)?=(?!=)[^\n]*(?:torch\.device\(|['\"]cuda\b|"
                           rb"cuda\.is_available\(\))", re.MULTILINE)


def program_pins(files: Sequence[tuple[Path, PurePath, bytes]], graph: ImportGraph) -> dict[Path, str]:
    """For each Python file joined by imports to a script whose placements stay (see the module):
    why its device edits wait, a clause of the report."""
    calling, helpers = _forward_calls_legacy_helper(files, graph)
    pinned = {path: f"`{relative.as_posix()}`, which {why}," for path, relative, source in files
              if (why := _pin(source)) is not None} | calling
    if not pinned:
        return {}
    holding = {*pinned, *helpers, *(path for path, _, source in files if _BINDS_DEVICE.search(source))}
    neighbours: dict[Path, set[Path]] = {}
    for path, module in graph.links():
        if module != path and module in holding:
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
            found.update((path, f"it waits for {why} a program that shares modules with this file: moved alone, "
                                 "these tensors would meet its model on another device") for path in joined)
    return found


def _pin(source: bytes) -> str | None:
    if b"Tensor" in source and _LEGACY_CHOICE.search(source):
        return "makes its data with a legacy CUDA tensor type, on the CPU wherever CUDA is missing"
    if b"DataParallel(" in source and (tree := _parsed(source)) is not None and _always(tree, _data_parallel):
        return "wraps its model in `DataParallel` on every host"
    return None


def _forward_calls_legacy_helper(files: Sequence[tuple[Path, PurePath, bytes]],
                                 graph: ImportGraph) -> tuple[dict[Path, str], set[Path]]:
    """Each file whose ``forward`` calls a function it imports from another module of the project
    that makes a legacy CUDA tensor type outside any ``if``, with why it pins its program; and the
    modules of the helpers those files call."""
    helpers: dict[tuple[Path, str], tuple[PurePath, str]] = {}  # (module, function) -> (its path shown, the type)
    for path, relative, source in files:
        if b"torch.cuda." in source and b"Tensor" in source and (tree := _parsed(source)) is not None:
            helpers.update(((path, f.name), (relative, made)) for f in tree.body
                           if isinstance(f, ast.FunctionDef) and (made := _always(f, _legacy_type)) is not None)
    found: dict[Path, str] = {}
    called: set[Path] = set()
    for path, relative, source in files if helpers else ():
        imported = {}  # the helpers the file imports by name: function -> (its module shown, the type)
        modules = {}  # the same helpers: function -> its module
        for name in graph.top.get(path, ()) if b"def forward" in source else ():
            module, _, function = name.rpartition(".")
            defined = graph.module_for(module, path) if module else None
            if defined is not None and (defined, function) in helpers:
                imported[function], modules[function] = helpers[(defined, function)], defined
        tree = _parsed(source) if imported else None  # parsed once, for every helper it imports
        calls = next((f for f in imported if tree is not None and _forward_calls(tree, f)), None)
        if calls is not None:
            shown, made = imported[calls]
            found[path] = (f"`{relative.as_posix()}`, whose `forward` calls `{calls}` of `{shown.as_posix()}`, "
                           f"which makes tensors with `{made}` on every call,")
            called.add(modules[calls])
    return found, called


def _forward_calls(tree: ast.AST, function: str) -> bool:
    """A ``forward`` method of ``tree`` calls ``function`` (by its name) outside any ``if``."""
    return any(isinstance(f, ast.FunctionDef) and f.name == "forward" and _always(
        f, lambda call: function if isinstance(call.func, ast.Name) and call.func.id == function else None)
        for f in ast.walk(tree))


def _parsed(source: bytes) -> ast.Module | None:
    try:
        return ast.parse(source)
    except (SyntaxError, ValueError):
        return None


def _always(tree: ast.AST, match: Callable[[ast.Call], str | None]) -> str | None:
    """What ``match`` says of the first call in ``tree`` outside any ``if`` (or conditional
    expression) it says something of."""
    pending: list[tuple[ast.AST, bool]] = [(tree, False)]
    while pending:
        node, conditional = pending.pop()
        if isinstance(node, ast.Call) and not conditional and (found := match(node)) is not None:
            return found
        under = conditional or isinstance(node, (ast.If, ast.IfExp))
        pending.extend((child, under) for child in ast.iter_child_nodes(node))
    return None


def _data_parallel(call: ast.Call) -> str | None:
    """``DataParallel(...)`` (not ``DistributedDataParallel``)."""
    func = call.func
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
    return name if name == "DataParallel" else None


def _legacy_type(call: ast.Call) -> str | None:
    """A legacy CUDA tensor type made (``torch.cuda.LongTensor(n)``) or cast to
    (``x.type(torch.cuda.FloatTensor)``); not a check (``isinstance(x, torch.cuda.FloatTensor)``)."""
    made = [call.func] if not (isinstance(call.func, ast.Attribute) and call.func.attr == "type") else call.args[:1]
    return next((named for node in made if (named := legacy_cuda_type(node)) is not None), None)


def legacy_cuda_type(node: ast.AST) -> str | None:
    """``node`` names a legacy CUDA tensor type (``torch.cuda.FloatTensor``): that name, else None."""
    if (isinstance(node, ast.Attribute) and _LEGACY_NAME.fullmatch(node.attr) and isinstance(node.value, ast.Attribute)
            and node.value.attr == "cuda" and isinstance(node.value.value, ast.Name) and node.value.value.id == "torch"):
        return f"torch.cuda.{node.attr}"
    return None
