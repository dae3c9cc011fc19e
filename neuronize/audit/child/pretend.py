"""What `--pretend-cuda` answers in place of the CUDA runtime, so the program's CUDA paths run on
the CPU: one device that is always ready, with nothing to synchronise, free or seed."""

from __future__ import annotations

import contextlib
import time
from types import SimpleNamespace
from typing import Any
from collections.abc import Callable

GIB = 2**30


class PretendCudaError(RuntimeError):
    """A CUDA feature the CPU cannot stand in for (kernels, graphs); names the program's line."""

    __module__ = "neuronize.audit"  # how tracebacks name it (the module is loaded privately)


class Event:
    """A CUDA event on the host clock: ``elapsed_time`` still measures something."""

    def __init__(self, enable_timing: bool = False, blocking: bool = False, interprocess: bool = False) -> None:
        self._at: float | None = None

    def record(self, stream: Any = None) -> None:
        self._at = time.perf_counter()

    def wait(self, stream: Any = None) -> None:
        pass

    def query(self) -> bool:
        return True

    def synchronize(self) -> None:
        pass

    def elapsed_time(self, end: Event) -> float:
        return ((end._at or 0.0) - (self._at or 0.0)) * 1000.0


class Stream:
    """A CUDA stream whose work is always done (the CPU runs everything in order)."""

    def __init__(self, device: Any = None, priority: int = 0, **kwargs: Any) -> None:
        self.device = device

    def __enter__(self) -> Stream:
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def wait_stream(self, stream: Any) -> None:
        pass

    def wait_event(self, event: Any) -> None:
        pass

    def record_event(self, event: Event | None = None) -> Event:
        event = event or Event()
        event.record()
        return event

    def synchronize(self) -> None:
        pass

    def query(self) -> bool:
        return True


def _properties(torch: Any) -> SimpleNamespace:
    return SimpleNamespace(name="pretend-cuda (the CPU)", total_memory=16 * GIB, major=8, minor=0,
                           multi_processor_count=1, is_integrated=False, is_multi_gpu_board=False)


def answers(torch: Any) -> dict[str, Callable[..., Any]]:
    """``torch.cuda`` function name -> what it does under --pretend-cuda."""
    nothing = lambda *a, **k: None  # noqa: E731
    zero = lambda *a, **k: 0  # noqa: E731
    return {
        "is_available": lambda *a, **k: True,
        "is_initialized": lambda *a, **k: True,
        "is_bf16_supported": lambda *a, **k: True,
        "device_count": lambda *a, **k: 1,
        "current_device": zero,
        "get_device_name": lambda *a, **k: "pretend-cuda (the CPU)",
        "get_device_capability": lambda *a, **k: (8, 0),
        "get_device_properties": lambda *a, **k: _properties(torch),
        "get_arch_list": lambda *a, **k: [],
        "init": nothing, "set_device": nothing, "synchronize": nothing, "empty_cache": nothing,
        "ipc_collect": nothing, "reset_peak_memory_stats": nothing,
        "reset_max_memory_allocated": nothing, "reset_max_memory_cached": nothing,
        "reset_accumulated_memory_stats": nothing, "set_per_process_memory_fraction": nothing,
        "memory_allocated": zero, "max_memory_allocated": zero, "memory_reserved": zero,
        "max_memory_reserved": zero, "memory_cached": zero, "max_memory_cached": zero,
        "mem_get_info": lambda *a, **k: (16 * GIB, 16 * GIB),
        "memory_stats": lambda *a, **k: {},
        "memory_summary": lambda *a, **k: "",
        "manual_seed": nothing, "manual_seed_all": nothing, "seed": nothing, "seed_all": nothing,
        "initial_seed": lambda *a, **k: torch.initial_seed(),
        "get_rng_state": lambda *a, **k: torch.get_rng_state(),
        "get_rng_state_all": lambda *a, **k: [torch.get_rng_state()],
        "set_rng_state": nothing, "set_rng_state_all": nothing,
        "current_stream": lambda *a, **k: Stream(),
        "default_stream": lambda *a, **k: Stream(),
        "set_stream": nothing,
        "stream": lambda *a, **k: contextlib.nullcontext(),
        "device": lambda *a, **k: contextlib.nullcontext(),
        "device_of": lambda *a, **k: contextlib.nullcontext(),
    }


#: names under torch.cuda whose meaning the CPU cannot provide, and why
CANNOT_EMULATE = {
    "graph": "CUDA graphs capture GPU kernels",
    "CUDAGraph": "CUDA graphs capture GPU kernels",
    "make_graphed_callables": "CUDA graphs capture GPU kernels",
    "graph_pool_handle": "CUDA graphs capture GPU kernels",
}

#: classes under torch.cuda replaced by stand-ins
CLASSES: dict[str, type] = {"Stream": Stream, "ExternalStream": Stream, "Event": Event}

NVTX = {"range_push": lambda *a, **k: 0, "range_pop": lambda *a, **k: 0,
        "mark": lambda *a, **k: None, "range": lambda *a, **k: contextlib.nullcontext()}
