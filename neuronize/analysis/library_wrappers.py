"""The project's functions that hand a parameter to a CUDA-only library: a fact about the run,
found before any file is analysed.

``def init_group(rank, device): return PyNcclCommunicator(group, device=device)`` takes a CUDA
device for the library; a caller elsewhere (``init_group(0, torch.device("cuda:0"))``) looks like
any placement, and moving its device to Neuron hands NCCL a Neuron device. The callers' argument
is the library's, as if the call were the library's own (:mod:`neuronize.analysis.roles`). Only
files that import a CUDA-only package are parsed (with :mod:`ast`: read-only, and fast); their
module-level functions are read.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Iterator

from neuronize.analysis.cuda_packages import CUDA_ONLY_PACKAGES
from neuronize.analysis.project_functions import calls, parameters

#: submodules of packages that also run elsewhere whose code runs on CUDA only (NCCL's communicator)
CUDA_ONLY_MODULES = ("vllm.distributed.device_communicators.pynccl",)
_LIBRARIES = (*sorted(CUDA_ONLY_PACKAGES), *CUDA_ONLY_MODULES)


def _import_line(libraries: tuple[str, ...]) -> re.Pattern[bytes]:
    """A line that imports one of ``libraries`` (at any indentation)."""
    return re.compile(rb"^[ \t]*(?:from|import)[ \t]+(?:" + b"|".join(re.escape(m.encode()) for m in libraries)
                      + rb")\b", re.MULTILINE)


#: a wrapper: its name, its parameters in order, the ones it hands to a CUDA-only library
Wrapper = tuple[str, tuple[str, ...], tuple[str, ...]]


def library_wrappers(sources: Iterable[bytes], extensions: tuple[str, ...] = ()) -> tuple[Wrapper, ...]:
    """The module-level functions of ``sources`` that pass one of their parameters, as it is,
    to a call into a CUDA-only library (a package of :data:`CUDA_ONLY_PACKAGES`, a module of
    :data:`CUDA_ONLY_MODULES`, or a CUDA extension the project declares, ``extensions``, imported
    in the module or in the function)."""
    found: list[Wrapper] = []
    imports_one = _import_line((*_LIBRARIES, *extensions))
    for source in sources:
        if imports_one.search(source) is None:
            continue
        try:
            tree = ast.parse(source)
        except (SyntaxError, ValueError):
            continue  # the file's own analysis says why
        module_locals = dict(_library_locals(tree.body, extensions))
        for function in tree.body:
            if isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
                wrapper = _wrapper(function, {**module_locals, **dict(_library_locals(ast.walk(function), extensions))})
                if wrapper is not None:
                    found.append(wrapper)
    return tuple(sorted(set(found)))


def _library_locals(nodes: Iterable[ast.AST], extensions: tuple[str, ...] = ()) -> Iterator[tuple[str, str]]:
    """(local name, module) for each import of a CUDA-only library (or of one of ``extensions``)
    among ``nodes``, and in the blocks of a ``try:`` or an ``if`` among them (``if not
    torch.xpu.is_available(): import FusedOps``)."""
    modules = (*CUDA_ONLY_MODULES, *extensions)
    for node in nodes:
        if isinstance(node, (ast.Try, ast.If)):
            yield from _library_locals([*node.body, *node.orelse], extensions)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if _is_library(alias.name, modules):
                    yield (alias.asname or alias.name.split(".")[0]), alias.name
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for alias in node.names:
                if _is_library(f"{node.module}.{alias.name}", modules):
                    yield alias.asname or alias.name, f"{node.module}.{alias.name}"


def _is_library(module: str, modules: tuple[str, ...]) -> bool:
    return module.split(".")[0] in CUDA_ONLY_PACKAGES or any(
        module == m or module.startswith(f"{m}.") for m in modules)


def _wrapper(function: ast.FunctionDef | ast.AsyncFunctionDef, libraries: dict[str, str]) -> Wrapper | None:
    params = parameters(function)
    fed: set[str] = set()
    for node in calls(function):
        head = node.func
        while isinstance(head, ast.Attribute):
            head = head.value
        if isinstance(head, ast.Name) and head.id in libraries:
            values = [*node.args, *(k.value for k in node.keywords)]
            fed.update(v.id for v in values if isinstance(v, ast.Name) and v.id in params)
    return (function.name, params, tuple(sorted(fed))) if fed else None
