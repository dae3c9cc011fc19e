"""The project's functions that hand a device to a library that rejects ``"neuron"``: a fact about
the run, found before any file is analysed.

safetensors reads a device from a string it parses itself (``cpu``, ``cuda``, ``mps`` and a few
other names) and raises ``device neuron is invalid`` for any other; CTranslate2 takes ``cpu``,
``cuda`` or ``auto``; Lightning's ``Fabric`` and ``Trainer`` take an accelerator name (``cpu``,
``cuda``, ``gpu``, ``mps``, ``tpu``, ``auto``). ``def load_model(path, device="cuda"): return load_file(path,
device=str(device))`` is such a consumer, and so is a function that hands its device on to one
(``load_model(path, device=device)``), in any module: a script that calls it with its device
choice would raise on Trainium if that choice became ``"neuron"``, so the choice stays (a
consumer that blocks it, as the issue's standard says). Only files that name one of the
libraries, or a function found so far, are parsed (with :mod:`ast`: read-only, and fast).
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from pathlib import PurePath

from neuronize.analysis.project_functions import calls, dotted, found_functions, names, parameters

#: the library calls that take a device they parse themselves, and the keyword (and position) of it
LIBRARY_SINKS: dict[str, tuple[str, int]] = {
    "safetensors.torch.load_file": ("device", 1),
    "safetensors.safe_open": ("device", 2),
    "safetensors.torch.safe_open": ("device", 2),
    "ctranslate2.Generator": ("device", 1),
    "ctranslate2.Translator": ("device", 1),
    "ctranslate2.Encoder": ("device", 1),
    "ctranslate2.models.Whisper": ("device", 1),
    # faster-whisper hands its device to CTranslate2 (cpu, cuda, auto)
    "faster_whisper.WhisperModel": ("device", 1),
    "faster_whisper.transcribe.WhisperModel": ("device", 1),
    # Lightning's accelerator names (cpu, cuda, gpu, mps, tpu, auto): no "neuron"
    "lightning.Fabric": ("accelerator", 0),
    "lightning.fabric.Fabric": ("accelerator", 0),
    "lightning.Trainer": ("accelerator", 99),  # keyword-only
    "lightning.pytorch.Trainer": ("accelerator", 99),
    "pytorch_lightning.Trainer": ("accelerator", 99),
}
#: the top-level packages of :data:`LIBRARY_SINKS`, as named in a file's bytes
LIBRARIES = (b"safetensors", b"ctranslate2", b"faster_whisper", b"lightning")
#: what to do where each library parses the device (by top-level package)
_ADVICE = {"lightning": 'give it an accelerator it knows there (it has none for Neuron: "cpu", or place the model '
                        "yourself)", "pytorch_lightning": "give it an accelerator it knows there (it has none for Neuron)"}
_LOAD_ON_CPU = 'load on "cpu" there and move the result with `.to(device)`'


def advice(library_call: str) -> str:
    """What a report advises where ``library_call`` (a :data:`LIBRARY_SINKS` key) gets the device."""
    return _ADVICE.get(library_call.split(".")[0], _LOAD_ON_CPU)
#: calls that pass a device on unchanged in meaning (``str(device)``, ``torch.device(device)``)
_PASS_THROUGH = frozenset({"str", "device"})

#: a consumer: its dotted name from the files' common folder, its parameters in order, the ones it
#: hands to a library that rejects ``"neuron"``
Sink = tuple[str, tuple[str, ...], tuple[str, ...]]


def device_sinks(files: Iterable[tuple[PurePath, bytes]]) -> tuple[Sink, ...]:
    """The module-level functions of ``files`` (a path relative to the files' common folder, the
    bytes) that hand one of their parameters, as it is or through ``str()`` / ``torch.device()``,
    to the device of a :data:`LIBRARY_SINKS` call, or to that parameter of a function found so far
    (until nothing more is found)."""
    found = found_functions(files, LIBRARIES, lambda function, module, imported, found: (
        None if (sink := _sink(function, imported, found)) is None else (f"{module}.{function.name}", *sink)))
    return tuple(sorted(found.values()))


def sink_of(qualified: str, sinks: Iterable[Sink]) -> Sink | None:
    """The consumer ``qualified`` (a call's name as imported) names, from any folder above it."""
    return next((s for s in sinks if names(s[0], qualified)), None)


def _sink(function: ast.FunctionDef | ast.AsyncFunctionDef, imported: dict[str, str],
          found: dict[str, Sink]) -> tuple[tuple[str, ...], tuple[str, ...]] | None:
    params = parameters(function)
    fed: set[str] = set()
    for node in calls(function):
        called = dotted(node.func, imported)
        if called is None:
            continue
        if called in LIBRARY_SINKS:
            keyword, position = LIBRARY_SINKS[called]
            value = _argument(node, keyword, position)
            fed.update(_params_in(value, params))
            continue
        consumer = sink_of(called, found.values())
        if consumer is not None:
            for name in consumer[2]:
                value = _argument(node, name, consumer[1].index(name))
                fed.update(_params_in(value, params))
    return (params, tuple(sorted(fed))) if fed else None


def _argument(call: ast.Call, keyword: str, position: int) -> ast.expr | None:
    for given in call.keywords:
        if given.arg == keyword:
            return given.value
    return call.args[position] if position < len(call.args) and not any(
        isinstance(a, ast.Starred) for a in call.args[:position + 1]) else None


def _params_in(value: ast.expr | None, params: tuple[str, ...]) -> set[str]:
    """The parameter ``value`` is, as it is or through ``str()`` / ``torch.device()``."""
    while isinstance(value, ast.Call) and len(value.args) == 1 and (
            isinstance(value.func, ast.Name) and value.func.id in _PASS_THROUGH
            or isinstance(value.func, ast.Attribute) and value.func.attr in _PASS_THROUGH):
        value = value.args[0]
    return {value.id} if isinstance(value, ast.Name) and value.id in params else set()
