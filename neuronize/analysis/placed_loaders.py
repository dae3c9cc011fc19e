"""The project's functions that return a model their loader places on GPUs: a fact about the run,
found before any file is analysed.

``def load_model(name): return AutoModelForCausalLM.from_pretrained(name, device_map="auto")``
places the model with accelerate's planner (or on named GPUs); a script elsewhere that calls it and
moves its batches (``batch.to("cuda")``) meets that model where the planner put it, on the CPU of a
host without CUDA GPUs. The call is then a placement pinned like the loading itself (NRN503), and
the device edits beside it wait for it. Only files that name ``device_map`` are parsed (with
:mod:`ast`: read-only, and fast); their module-level functions that return a value are read.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from pathlib import PurePath

from neuronize.analysis.project_functions import module_name

#: accelerate's placement plans (``device_map="auto"``...): they place a model on the GPUs they find
PLANNERS = ("auto", "balanced", "balanced_low_0", "sequential")


def placed_loaders(files: Iterable[tuple[PurePath, bytes]]) -> frozenset[str]:
    """The dotted names (``pkg.loading.load_model``, from the files' common folder) of the
    module-level functions of ``files`` (a path relative to that folder, the bytes) that pass a
    GPU placement as ``device_map`` (a plan, a CUDA device, a GPU index; as a keyword or a keyword
    dict's entry) and return a value."""
    found: set[str] = set()
    for relative, source in files:
        if b"device_map" not in source:
            continue
        try:
            tree = ast.parse(source)
        except (SyntaxError, ValueError):
            continue  # the file's own analysis says why
        module = module_name(relative)
        found.update(f"{module}.{function.name}" for function in tree.body
                     if isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)) and _places_on_gpus(function))
    return frozenset(found)


def _places_on_gpus(function: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    returns = places = False
    for node in ast.walk(function):
        if isinstance(node, ast.Return) and node.value is not None:
            returns = True
        elif isinstance(node, ast.keyword) and node.arg == "device_map":
            places = places or _on_gpus(node.value)
        elif isinstance(node, ast.Assign) and any(_is_entry(t) for t in node.targets):
            places = places or _on_gpus(node.value)
    return returns and places


def _is_entry(target: ast.expr) -> bool:
    """``kwargs["device_map"]``."""
    return isinstance(target, ast.Subscript) and isinstance(target.slice, ast.Constant) \
        and target.slice.value == "device_map"


def _on_gpus(value: ast.expr) -> bool:
    """A plan (``"auto"``), a CUDA device (``"cuda:0"``), a GPU index (``0``), a map onto one, or a
    choice with one in an arm."""
    if isinstance(value, ast.Constant):
        text = value.value
        if isinstance(text, str):
            return text in PLANNERS or text == "cuda" or text.startswith("cuda:")
        return isinstance(text, int) and not isinstance(text, bool)
    if isinstance(value, ast.Dict):
        return any(v is not None and _on_gpus(v) for v in value.values)
    if isinstance(value, ast.IfExp):
        return _on_gpus(value.body) or _on_gpus(value.orelse)
    return False
