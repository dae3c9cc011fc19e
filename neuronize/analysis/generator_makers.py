"""The project's functions that make a random generator on the device they are given, and the files
that hand them their device choice from another module: a fact about the run, found before any file
is analysed.

``def set_seeds(seed, device=None): ... return torch.Generator(device).manual_seed(seed)`` makes its
generator on whatever device its caller chose. A generator on the Neuron device was reported
unavailable, so NRN106 gives that one the CPU on Neuron, an unsafe fix. A module that calls it with
its own device choice (``generator = set_seeds(seed, device=self.device)``) may move that choice to
Neuron only together with the generator's edit: in a run of safe fixes alone, Trainium would reach
``torch.Generator("neuron")`` where the original took its CPU fallback. So the caller's device edits
are unsafe, like the edit they need in the other module. Within one file, NRN106's own edit group
holds them (:data:`neuronize.decision.policy.GENERATOR`). Only files that make a generator, or name a
function found so far, are parsed (with :mod:`ast`: read-only, and fast).
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from pathlib import Path, PurePath

from neuronize.analysis.project_functions import (
    argument, calls, dotted, found_functions, module_name, named_by, params_in, parameters, parsed)

#: a maker: its dotted name from the files' common folder, its parameters in order, the ones that
#: reach the generator's device, and its file as shown
Maker = tuple[str, tuple[str, ...], tuple[str, ...], str]


def generator_partners(files: Iterable[tuple[Path, PurePath, bytes]]) -> dict[Path, str]:
    """Each Python file (path, path below the files' common folder, bytes) that hands a device other
    than another host's literal (``"cpu"``) to a function of another module that makes a random
    generator on it: why its device edits are as safe as that generator's edit, a clause of the
    report."""
    listed = list(files)
    makers = generator_makers((relative, source) for _, relative, source in listed)
    if not makers:
        return {}
    words = {name.rsplit(".", 1)[-1].encode() for name in makers}
    found: dict[Path, str] = {}
    for path, relative, source in listed:
        if not any(w in source for w in words):
            continue
        module = module_name(relative)
        entry = parsed(source, module)
        if entry is None:
            continue  # the file's own analysis says why
        tree, imported = entry
        for call in (node for node in ast.walk(tree) if isinstance(node, ast.Call)):
            maker = _maker_called(call, module, imported, makers)
            if maker is not None:
                name, _, _, shown = maker
                found[path] = (f"`{name.rsplit('.', 1)[-1]}` of `{shown}` makes a random generator on the device "
                               "this file gives it, which NRN106 there gives the CPU on Neuron")
                break
    return found


def generator_makers(files: Iterable[tuple[PurePath, bytes]]) -> dict[str, Maker]:
    """The module-level functions of ``files`` (a path below the files' common folder, the bytes)
    that hand one of their parameters, as it is or through ``str()`` / ``torch.device()``, to the
    device of ``torch.Generator``, or to that parameter of a function found so far."""
    listed = list(files)
    shown = {module_name(relative): relative.as_posix() for relative, _ in listed}

    def decide(function: ast.FunctionDef | ast.AsyncFunctionDef, module: str, imported: dict[str, str],
               found: dict[str, Maker]) -> Maker | None:
        params = parameters(function)
        fed: set[str] = set()
        for call in calls(function):
            called = dotted(call.func, imported)
            if called == "torch.Generator":
                fed |= params_in(argument(call, "device", 0), params)
            elif called is not None and (maker := named_by(called, found.values())) is not None:
                fed |= {p for handed in maker[2] for p in params_in(argument(call, handed, maker[1].index(handed)), params)}
        return (f"{module}.{function.name}", params, tuple(sorted(fed)), shown[module]) if fed else None

    return found_functions(listed, (b"Generator",), decide)


def _maker_called(call: ast.Call, module: str, imported: dict[str, str], makers: dict[str, Maker]) -> Maker | None:
    """The maker of another module ``call`` hands a device to (not a literal of another host)."""
    if isinstance(call.func, ast.Name) and call.func.id not in imported:
        return None  # a function of the module itself: NRN106's edit group in the file holds it
    called = dotted(call.func, imported)
    maker = None if called is None else named_by(called, makers.values())
    if maker is None or maker[0].rsplit(".", 1)[0] == module:
        return None
    for handed in maker[2]:
        value = argument(call, handed, maker[1].index(handed))
        if value is not None and not (isinstance(value, ast.Constant) and (
                value.value is None or isinstance(value.value, str) and "cuda" not in value.value)):
            return maker
    return None
