"""Simulated hosts: this process's CPU build of PyTorch dressed up as the machine a test suite
must keep running on. Used by `neuronize verify` and by the differential test.

``cpu``
    Nothing is patched: a CI runner or a laptop without an accelerator (the real machine).
``cuda``
    The NVIDIA box the code was written for, as far as its Python code can tell: the
    ``audit --pretend-cuda`` stand-ins (``torch.cuda.is_available()`` is true, one device, Ampere
    capability, ``torch.accelerator`` reports ``cuda``); placements on CUDA (random generators
    too), CUDA autocast, NCCL and Inductor compiles go to the CPU, and every runtime call is
    recorded. No tensor is ever allocated on a GPU.
``neuron``
    A Trainium host as far as choosing and using a device goes. ``"privateuseone"`` is renamed
    ``"neuron"`` (``torch.device("neuron")``, ``torch.autocast("neuron")``,
    ``torch.amp.GradScaler("neuron")`` are accepted), a stand-in ``torch.neuron`` module is
    registered (seeding, RNG state, timing events and streams on the host clock, recorded), ``torch.accelerator`` reports one ``neuron`` device, ``torch.compile`` accepts
    ``backend="neuron"`` (the graph runs eagerly), ``init_process_group("neuron")`` makes a gloo
    group, and ``import torch_neuronx`` succeeds (an empty stand-in). Placements on ``"neuron"``
    go to the CPU and are recorded, so the program's logic runs end to end; CUDA is absent, as on
    Trainium, and what the program still asks of CUDA is recorded.
``mps``
    A laptop whose accelerator is neither Neuron nor CUDA (a Mac): ``torch.backends.mps`` is
    available and ``torch.accelerator`` reports one ``mps`` device; placements on ``"mps"`` (random
    generators too) go to the CPU and are recorded. CUDA is absent.

The patched functions answer for the host only when the program calls them: PyTorch's own modules
(Dynamo, the optimizers, DDP) query the same functions and would otherwise reach C++ code with no
such device behind it. This module runs inside the simulated process and uses only the standard
library and torch.
"""

from __future__ import annotations

import contextlib
import os
import sys
import types
from typing import Any
from collections.abc import Callable

from .hooks import after_import
from .pretend import Event, Stream

HOSTS = ("cpu", "cuda", "neuron", "mps")
#: the host a project's tests can read (set in every simulated process)
HOST_VAR = "NEURONIZE_HOST"
#: what each simulated host cannot show (printed with every result, never implied)
LIMITS = {
    "cpu": "the real machine: nothing is simulated",
    "cuda": "CUDA code paths run on the CPU: no CUDA kernels, numerics of the GPU, memory limits, "
            "streams or CUDA graphs; Inductor compiles are skipped (the model runs eagerly)",
    "neuron": "Neuron code paths run on the CPU: no Neuron compiler (graphs are not compiled), "
              "kernels, numerics (bf16 on the device), memory limits or collectives between "
              "NeuronCores; torch_neuronx is an empty stand-in",
    "mps": "MPS code paths run on the CPU: no Metal kernels, numerics or memory limits",
}


def _recorder(calls: list[str], name: str, result: Any = None) -> Callable[..., Any]:
    def record(*args: Any, **kwargs: Any) -> Any:
        calls.append(name)
        return result

    return record


def accelerator_answers(torch: Any, device_type: str, calls: list[str]) -> dict[str, Callable[..., Any]]:
    """What ``torch.accelerator.*`` answers on a host with one ``device_type`` device."""
    device = torch.device(device_type)
    return {
        "is_available": lambda *a, **k: True,
        "current_accelerator": lambda *a, **k: device,
        "device_count": lambda *a, **k: 1,
        "current_device_index": lambda *a, **k: 0,
        "synchronize": _recorder(calls, "accelerator.synchronize"),
        "set_device_index": _recorder(calls, "accelerator.set_device_index"),
        "empty_cache": _recorder(calls, "accelerator.empty_cache"),
    }


def _neuron_module(torch: Any, calls: list[str]) -> types.ModuleType:
    """What ``torch.neuron`` answers on a one-core host (the functions torch-neuronx defines)."""
    neuron = types.ModuleType("torch.neuron")
    # torch.autocast("neuron") asks the device module which dtypes it may cast to
    neuron.get_amp_supported_dtype = lambda: [torch.float16, torch.bfloat16]  # type: ignore[attr-defined]
    neuron.calls = calls  # type: ignore[attr-defined]
    neuron.is_available = lambda: True  # type: ignore[attr-defined]
    neuron.device_count = lambda: 1  # type: ignore[attr-defined]
    neuron.current_device = lambda: 0  # type: ignore[attr-defined]
    neuron.is_bf16_supported = lambda: True  # type: ignore[attr-defined]
    neuron.initial_seed = lambda: 0  # type: ignore[attr-defined]
    for name in ("synchronize", "set_device", "manual_seed", "manual_seed_all", "seed", "empty_cache",
                 "set_rng_state"):
        setattr(neuron, name, _recorder(calls, f"neuron.{name}"))
    # the Philox state TorchNeuron's generator has (16 bytes)
    neuron.get_rng_state = _recorder(calls, "neuron.get_rng_state", torch.zeros(16, dtype=torch.uint8))  # type: ignore[attr-defined]
    # timing events and streams: the --pretend-cuda stand-ins (host clock, work always done)
    neuron.Event = _recorded_class(Event, calls, "neuron.Event")  # type: ignore[attr-defined]
    neuron.Stream = _recorded_class(Stream, calls, "neuron.Stream")  # type: ignore[attr-defined]
    for name in ("current_stream", "default_stream"):
        setattr(neuron, name, _recorder(calls, f"neuron.{name}", Stream()))

    @contextlib.contextmanager
    def device(index: Any) -> Any:
        calls.append("neuron.device")
        yield

    @contextlib.contextmanager
    def stream(side: Any) -> Any:
        calls.append("neuron.stream")
        yield side

    neuron.device = device  # type: ignore[attr-defined]
    neuron.stream = stream  # type: ignore[attr-defined]
    return neuron


def _recorded_class(cls: type, calls: list[str], name: str) -> type:
    """``cls`` whose instances record ``name`` when the program creates one."""

    class Recorded(cls):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            calls.append(name)
            super().__init__(*args, **kwargs)

    Recorded.__name__ = Recorded.__qualname__ = cls.__name__
    return Recorded


def _neuron_process_group(torch: Any) -> None:
    """``init_process_group("neuron")``: a gloo group (one process, or ranks on this machine)."""
    dist = torch.distributed
    if not dist.is_available():
        return

    def gloo(store: Any, rank: int, size: int, timeout: Any) -> Any:
        return dist.ProcessGroupGloo(store, rank, size, timeout)

    dist.Backend.register_backend("neuron", gloo, devices=["cpu", "neuron"])


def _simulate_neuron(torch: Any, calls: list[str]) -> None:
    torch.utils.rename_privateuse1_backend("neuron")
    torch._register_device_module("neuron", _neuron_module(torch, calls))
    # torch.compile(backend="neuron") runs the graph eagerly; Dynamo is imported when the program
    # first needs it, not by every run. torch.compile passes a non-default `mode=` and any
    # `options=` on to the backend, which the Neuron backend takes (it ignores a CUDA mode with a
    # warning): a host-aware compile keeps its CUDA mode for the other hosts
    after_import("torch._dynamo", lambda dynamo: dynamo.register_backend(
        lambda gm, example_inputs, **settings: gm.forward, name="neuron"))
    _neuron_process_group(torch)
    stand_in = types.ModuleType("torch_neuronx", "A stand-in of torch-neuronx (neuronize's simulated host).")
    stand_in.__version__ = "0+simulated"  # type: ignore[attr-defined]
    sys.modules.setdefault("torch_neuronx", stand_in)


def _simulate_mps(torch: Any, calls: list[str], for_program: Callable[..., Any]) -> None:
    mps = torch.backends.mps
    for name in ("is_available", "is_built"):
        setattr(mps, name, for_program(f"torch.backends.mps.{name}", getattr(mps, name), lambda *a, **k: True))


def simulate(torch: Any, host: str, for_program: Callable[..., Any]) -> list[str]:
    """Make this process's PyTorch look like ``host`` (once per process: it cannot be undone);
    the host's device calls are appended to the list returned. ``for_program(name, real, fake)``
    is a function answering ``fake`` to the program and ``real`` to PyTorch itself. The ``cuda`` host's
    stand-ins are installed by the caller (observe.install with pretend)."""
    calls: list[str] = []
    os.environ[HOST_VAR] = host
    if host == "neuron":
        _simulate_neuron(torch, calls)
    elif host == "mps":
        _simulate_mps(torch, calls, for_program)
    return calls
