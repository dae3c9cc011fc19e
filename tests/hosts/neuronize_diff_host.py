"""Simulated hosts for the differential test (tests/test_differential.py).

A project's test suite is run once per host, each time in a process of its own, after
:func:`simulate` has dressed the process's CPU build of PyTorch up as that host:

``cpu``
    Nothing is patched: a CI runner or a laptop without an accelerator.
``neuron``
    A Trainium host as far as *choosing* a device goes. ``"privateuseone"`` is renamed
    ``"neuron"`` (so ``torch.device("neuron")``, ``torch.autocast("neuron")`` and
    ``torch.amp.GradScaler("neuron")`` are accepted as on a host with torch-neuronx), a stand-in
    ``torch.neuron`` module is registered with ``torch._register_device_module``, the
    ``torch.accelerator`` functions report one ``neuron`` device, and ``torch.compile`` accepts
    ``backend="neuron"`` (a pass-through backend: the graph runs eagerly on the CPU). Nothing can
    be allocated on the device (there is no allocator): tests on this host check which device the
    code picks and which device calls it makes; ``torch.neuron.calls`` records those calls.
``mps``
    A host whose accelerator is not Neuron nor CUDA (a Mac): ``torch.backends.mps.is_available()``
    is true and ``torch.accelerator`` reports one ``mps`` device. CUDA is absent and, as on the
    Neuron host, no tensor can be allocated on the device.

The patched ``torch.accelerator`` and ``torch.backends.mps`` functions answer for the host only
when called from outside PyTorch: PyTorch's own modules (Dynamo, the optimizers, DDP) query the
same functions and would otherwise reach C++ code with no such device behind it.

Not simulated: tensors, memory, streams, process groups on the device, ``torch_neuronx``, the
``"neuron"`` process-group backend, the Neuron compiler. Outcomes per test id are written as JSON
(see :class:`Recorder`). Run by hand: ``python tests/hosts/neuronize_diff_host.py HOST PROJECT``.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import types
from pathlib import Path
from typing import Callable

HOSTS = ("cpu", "neuron", "mps")
#: the host the project's tests can read (the simulated accelerator holds no tensors)
HOST_VAR = "NEURONIZE_DIFF_HOST"
#: pytest options of a run: its output is a log read only when something fails
QUIET = ["-q", "--continue-on-collection-errors", "-p", "no:cacheprovider", "-p", "no:unraisableexception", "-W", "ignore"]
#: what every run imports: loaded once by the harness's fork server, not once per run
PRELOAD = ["torch", "torch._dynamo", "torch._inductor.compile_fx", "torch.distributed", "pytest"]


def _called_from_torch() -> bool:
    """Whether the caller of the patched function (two frames up) is PyTorch itself."""
    caller = sys._getframe(2).f_globals.get("__name__", "")
    return caller == "torch" or caller.startswith("torch.")


def _for_project(real: Callable, simulated: Callable) -> Callable:
    def answer(*args, **kwargs):
        return (real if _called_from_torch() else simulated)(*args, **kwargs)

    answer.__name__ = getattr(real, "__name__", "answer")
    return answer


def _recorder(calls: list[str], name: str, result=None) -> Callable:
    def record(*args, **kwargs):
        calls.append(name)
        return result

    return record


def _report_accelerator(torch, device_type: str, calls: list[str]) -> None:
    acc = torch.accelerator
    device = torch.device(device_type)
    simulated = {
        "is_available": lambda: True,
        "current_accelerator": lambda check_available=False: device,
        "device_count": lambda: 1,
        "current_device_index": lambda: 0,
        "synchronize": _recorder(calls, "accelerator.synchronize"),
        "set_device_index": _recorder(calls, "accelerator.set_device_index"),
        "empty_cache": _recorder(calls, "accelerator.empty_cache"),
    }
    for name, fake in simulated.items():
        setattr(acc, name, _for_project(getattr(acc, name), fake))
    # without an argument, torch.get_device_module() answers for the current accelerator
    real_module = torch.get_device_module
    torch.get_device_module = _for_project(
        real_module, lambda device=None: real_module(device_type if device is None else device)
    )


def _neuron_module(torch, calls: list[str]) -> types.ModuleType:
    """What ``torch.neuron`` answers on a one-core host (the functions torch-neuronx defines)."""
    neuron = types.ModuleType("torch.neuron")
    # torch.autocast("neuron") asks the device module which dtypes it may cast to
    neuron.get_amp_supported_dtype = lambda: [torch.float16, torch.bfloat16]
    neuron.calls = calls
    neuron.is_available = lambda: True
    neuron.device_count = lambda: 1
    neuron.current_device = lambda: 0
    neuron.is_bf16_supported = lambda: True
    neuron.initial_seed = lambda: 0
    for name in ("synchronize", "set_device", "manual_seed", "manual_seed_all", "seed", "empty_cache"):
        setattr(neuron, name, _recorder(calls, f"neuron.{name}"))

    @contextlib.contextmanager
    def device(index):
        calls.append("neuron.device")
        yield

    neuron.device = device
    return neuron


def _simulate_neuron(torch) -> None:
    calls: list[str] = []
    torch.utils.rename_privateuse1_backend("neuron")
    torch._register_device_module("neuron", _neuron_module(torch, calls))
    _report_accelerator(torch, "neuron", calls)
    from torch._dynamo import register_backend

    register_backend(lambda gm, example_inputs: gm.forward, name="neuron")


def _simulate_mps(torch) -> None:
    calls: list[str] = []
    torch.backends.mps.is_available = _for_project(torch.backends.mps.is_available, lambda: True)
    torch.backends.mps.is_built = _for_project(torch.backends.mps.is_built, lambda: True)
    _report_accelerator(torch, "mps", calls)


def simulate(host: str) -> None:
    """Make this process's PyTorch look like ``host`` (once per process: it cannot be undone)."""
    import torch

    os.environ[HOST_VAR] = host
    {"cpu": lambda torch: None, "neuron": _simulate_neuron, "mps": _simulate_mps}[host](torch)


class Recorder:
    """A pytest plugin: the outcome of every test id (passed, failed, skipped; error when the
    test's module could not be collected), written to ``path`` as JSON at the end."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.outcomes: dict[str, str] = {}

    def pytest_collectreport(self, report) -> None:
        if report.failed:
            self.outcomes[report.nodeid] = "error"

    def pytest_runtest_logreport(self, report) -> None:
        if report.failed:
            self.outcomes[report.nodeid] = "failed"
        elif report.skipped and report.when != "teardown":
            self.outcomes.setdefault(report.nodeid, "skipped")
        elif report.when == "call":
            self.outcomes[report.nodeid] = "passed"

    def pytest_sessionfinish(self) -> None:
        self.path.write_text(json.dumps(self.outcomes, indent=1, sort_keys=True))


def run_tests(project: str, host: str, report: str, log: str) -> None:
    """Run ``project``'s tests on ``host`` in this (fresh) process; outcomes go to ``report``."""
    with open(log, "w") as out:
        os.dup2(out.fileno(), 1)
        os.dup2(out.fileno(), 2)
    os.chdir(project)
    sys.path.insert(0, project)
    simulate(host)
    import pytest

    # The project's suite needs none of the plugins installed next to neuronize's own tests.
    os.environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    pytest.main(QUIET, plugins=[Recorder(Path(report))])


if __name__ == "__main__":
    host_name, project_dir = sys.argv[1:3]
    simulate(host_name)
    os.chdir(project_dir)
    sys.path.insert(0, os.getcwd())
    import pytest

    sys.exit(pytest.main(["-rA", "-p", "no:cacheprovider"]))
