"""The project's functions that hand a device to a library that rejects ``"neuron"``: a fact about
the run, found before any file is analysed.

safetensors reads a device from a string it parses itself (``cpu``, ``cuda``, ``mps`` and a few
other names) and raises ``device neuron is invalid`` for any other; CTranslate2 takes ``cpu``,
``cuda`` or ``auto``; Lightning's ``Fabric`` and ``Trainer`` take an accelerator name (``cpu``,
``cuda``, ``gpu``, ``mps``, ``tpu``, ``auto``); the mmcv 1.x inference APIs of MMPose and
MMSegmentation place the model on the device they are given but move each batch there only on
CUDA. ``def load_model(path, device="cuda"): return load_file(path, device=str(device))`` is
such a consumer, and so is a function that hands its device on to one
(``load_model(path, device=device)``), in any module: a script that calls it with its device
choice would raise on Trainium if that choice became ``"neuron"``, so the choice stays (a
consumer that blocks it, as the issue's standard says). So is a function that asserts CUDA, and
counts CUDA devices, in a branch it takes for any device but the CPU (YOLOv5's ``select_device``:
``elif device: assert torch.cuda.is_available() and torch.cuda.device_count() >= ...``). So is a
function or class that asserts its device is one of the hosts it lists, CUDA among them, and maps
them to legacy CUDA tensor types (a ``default_tensor_type(dtype, device)`` context manager: ``assert
device in ["cpu", "cuda"]`` beside ``torch.cuda.BFloat16Tensor``): its list gains no Neuron entry
while that type stays. Only files that name one of the libraries, such an assert, a legacy CUDA
tensor type or a function found so far are parsed (with :mod:`ast`: read-only, and fast).
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from pathlib import PurePath

from neuronize.analysis.program_pins import legacy_cuda_type
from neuronize.analysis.project_functions import argument, calls, dotted, found_functions, named_by, params_in, parameters

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
    # OpenMMLab's mmcv 1.x inference APIs place the model on the device, then move each batch with
    # mmcv's `scatter` only where the model is on CUDA: on any other device the batch stays on the CPU
    "mmpose.apis.init_pose_model": ("device", 2),
    "mmpose.apis.inference.init_pose_model": ("device", 2),
    "mmseg.apis.init_segmentor": ("device", 2),
    "mmseg.apis.inference.init_segmentor": ("device", 2),
}
#: the top-level packages of :data:`LIBRARY_SINKS`, as named in a file's bytes
LIBRARIES = (b"safetensors", b"ctranslate2", b"faster_whisper", b"lightning", b"mmpose", b"mmseg")
#: the bytes a function that asserts CUDA for its device must hold (its count of CUDA devices, which
#: a migrated assert keeps beside Neuron's)
_CUDA_ASSERT = b"torch.cuda.device_count()"
#: what an assert that rejects any device but CUDA's asks: CUDA, and a count of CUDA devices
_CUDA_COUNTED = frozenset({"torch.cuda.is_available", "torch.cuda.device_count"})
#: the bytes of the legacy CUDA tensor types a function (or class) that validates its device may name
_LEGACY_TYPES = tuple(b"cuda.%sTensor" % kind for kind in (b"Float", b"Half", b"BFloat16", b"Double", b"Long", b"Int",
                                                            b"Byte", b"Bool"))
_PARSES = 'rejects "neuron" (it parses the device itself)'
_MMCV_SCATTER = ("cannot serve \"neuron\": its inference functions move each batch to the model's device only on "
                 "CUDA (mmcv's `scatter`), so a Neuron model would get CPU batches; keep CUDA or the CPU there, or "
                 "port the inference step by hand")
#: why each library cannot take "neuron", and what to do there (by top-level package)
_REJECTIONS = {"lightning": f'{_PARSES}; give it an accelerator it knows there (it has none for Neuron: "cpu", or '
                            "place the model yourself)",
               "pytorch_lightning": f"{_PARSES}; give it an accelerator it knows there (it has none for Neuron)",
               "mmpose": _MMCV_SCATTER, "mmseg": _MMCV_SCATTER}
_LOAD_ON_CPU = f'{_PARSES}; load on "cpu" there and move the result with `.to(device)`'


def rejection(library_call: str) -> str:
    """Why ``library_call`` (a :data:`LIBRARY_SINKS` key) cannot take ``"neuron"``, and what a report
    advises there."""
    return _REJECTIONS.get(library_call.split(".")[0], _LOAD_ON_CPU)


#: a consumer: its dotted name from the files' common folder, its parameters in order, the ones it
#: hands to a library that rejects ``"neuron"``
Sink = tuple[str, tuple[str, ...], tuple[str, ...]]


def device_sinks(files: Iterable[tuple[PurePath, bytes]]) -> tuple[Sink, ...]:
    """The module-level functions of ``files`` (a path relative to the files' common folder, the
    bytes) that hand one of their parameters, as it is or through ``str()`` / ``torch.device()``,
    to the device of a :data:`LIBRARY_SINKS` call, or to that parameter of a function found so far
    (until nothing more is found)."""
    found = found_functions(files, (*LIBRARIES, _CUDA_ASSERT, *_LEGACY_TYPES), lambda function, module, imported, found: (
        None if (sink := _sink(function, imported, found)) is None else (f"{module}.{function.name}", *sink)),
        classes=True)
    return tuple(sorted(found.values()))


def sink_of(qualified: str, sinks: Iterable[Sink]) -> Sink | None:
    """The consumer ``qualified`` (a call's name as imported) names, from any folder above it."""
    return named_by(qualified, sinks)


def _sink(function: ast.FunctionDef | ast.AsyncFunctionDef, imported: dict[str, str],
          found: dict[str, Sink]) -> tuple[tuple[str, ...], tuple[str, ...]] | None:
    params = parameters(function)
    fed = _asserted(function, imported, params) | _validated(function, params)
    for node in calls(function):
        called = dotted(node.func, imported)
        if called is None:
            continue
        if called in LIBRARY_SINKS:
            keyword, position = LIBRARY_SINKS[called]
            value = argument(node, keyword, position)
            fed.update(params_in(value, params))
            continue
        consumer = sink_of(called, found.values())
        if consumer is not None:
            for name in consumer[2]:
                value = argument(node, name, consumer[1].index(name))
                fed.update(params_in(value, params))
    return (params, tuple(sorted(fed))) if fed else None


def _asserted(function: ast.FunctionDef | ast.AsyncFunctionDef, imported: dict[str, str],
              params: tuple[str, ...]) -> set[str]:
    """The parameters ``function`` tests in an ``if`` taken for any device but the CPU (``elif
    device:``, ``if device != "cpu":``) whose body asserts that CUDA is available and counts CUDA
    devices for the one asked (``torch.cuda.device_count() >= len(device)``): ``"neuron"`` fails
    that assert, however its check is widened (no CUDA device is there to count)."""
    return {param for node in ast.walk(function) if isinstance(node, ast.If)
            and (param := _any_device_but_cpu(node.test, params)) is not None
            and any(isinstance(inner, ast.Assert) and _CUDA_COUNTED <= {
                dotted(call.func, imported) for call in ast.walk(inner.test) if isinstance(call, ast.Call)}
                for statement in node.body for inner in ast.walk(statement))}



def _validated(function: ast.FunctionDef | ast.AsyncFunctionDef, params: tuple[str, ...]) -> set[str]:
    """The parameters ``function`` (or a class, :func:`as_called`) asserts to be one of the hosts a
    literal list names, CUDA among them and Neuron not (``assert device is None or device in
    ["cpu", "cuda"]``), where it also names a legacy CUDA tensor type (``torch.cuda.FloatTensor``,
    the type it sets for that device): the list gains no Neuron entry while that type stays (NRN105
    holds its device edits), so ``"neuron"`` fails the assert."""
    if not any(legacy_cuda_type(node) for node in ast.walk(function)):
        return set()
    return {compare.left.id for node in ast.walk(function) if isinstance(node, ast.Assert)
            for compare in ast.walk(node.test) if isinstance(compare, ast.Compare) and len(compare.ops) == 1
            and isinstance(compare.ops[0], ast.In) and isinstance(compare.left, ast.Name) and compare.left.id in params
            and _hosts_without_neuron(compare.comparators[0])}


def _hosts_without_neuron(listed: ast.expr) -> bool:
    """``listed`` is a literal list of device names with CUDA among them and Neuron not."""
    if not isinstance(listed, (ast.List, ast.Tuple, ast.Set)):
        return False
    names = [e.value for e in listed.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
    hosts = {name.split(":")[0] for name in names}
    return len(names) == len(listed.elts) and "cuda" in hosts and "neuron" not in hosts


def _any_device_but_cpu(test: ast.expr, params: tuple[str, ...]) -> str | None:
    """The parameter ``test`` holds for whatever device it names but the CPU (``device``, ``device
    != "cpu"``, ``device not in ("cpu", "")``), else None."""
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], (ast.NotEq, ast.NotIn)):
        others = [n.value for n in ast.walk(test.comparators[0]) if isinstance(n, ast.Constant)]
        if not all(isinstance(v, str) and "cuda" not in v and "neuron" not in v for v in others):
            return None
        test = test.left
    return test.id if isinstance(test, ast.Name) and test.id in params else None
