"""Issue 21: a program that already chooses among hosts keeps every host after migration and takes
the Neuron path on Trainium. The migrated code of fixtures/pipeline/device_choice_gains_neuron is
run with real torch on this CPU, then on simulated CUDA and Neuron hosts (the availability and
count queries patched; nothing is placed on them), next to the original."""

from __future__ import annotations

import types
from pathlib import Path

import pytest
import torch

from neuronize.analysis.context import Options
from neuronize.analysis.engine import run_source
from neuronize.registry import all_rules

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "pipeline" / "device_choice_gains_neuron.before.py"


def migrate(source: bytes, target: str = "neuron", unsafe: bool = True) -> bytes:
    result = run_source(source, all_rules(), Options(target=target, unsafe_fixes=unsafe), path="train.py")
    assert result.error is None, result.error
    assert result.output is not None
    return result.output


def load(code: bytes) -> dict[str, object]:
    namespace: dict[str, object] = {"__name__": "migrated"}
    exec(compile(code, "migrated.py", "exec"), namespace)
    return namespace


@pytest.fixture
def cuda_host(monkeypatch):
    """CUDA present, two GPUs: what the device choice asks (no tensor is placed there)."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    monkeypatch.setattr(torch.accelerator, "is_available", lambda: True)
    monkeypatch.setattr(torch.accelerator, "current_accelerator", lambda *a, **k: types.SimpleNamespace(type="cuda"))
    monkeypatch.setattr(torch.accelerator, "device_count", lambda: 2)


@pytest.fixture
def neuron_host(monkeypatch):
    """A Neuron accelerator with four cores, no CUDA."""
    monkeypatch.setattr(torch.accelerator, "is_available", lambda: True)
    monkeypatch.setattr(torch.accelerator, "current_accelerator", lambda *a, **k: types.SimpleNamespace(type="neuron"))
    monkeypatch.setattr(torch.accelerator, "device_count", lambda: 4)


@pytest.mark.parametrize("unsafe", [False, True], ids=["safe", "unsafe"])
def test_the_cpu_host_runs_as_before(unsafe):
    original = FIXTURE.read_bytes()
    before, after = load(original), load(migrate(original, unsafe=unsafe))
    for argv in ([], ["--device", "cpu"]):
        assert after["main"](argv) == before["main"](argv)  # type: ignore[operator]


@pytest.mark.parametrize("unsafe", [False, True], ids=["safe", "unsafe"])
def test_the_cuda_host_keeps_its_choices(cuda_host, unsafe):
    original = FIXTURE.read_bytes()
    before, after = load(original), load(migrate(original, unsafe=unsafe))
    for name, args in (("default_device", ()), ("per_device", (8,))):
        assert after[name](*args) == before[name](*args)  # type: ignore[operator]
    assert after["default_device"]() == "cuda"  # type: ignore[operator]
    assert after["per_device"](8) == 4  # type: ignore[operator]


def test_the_neuron_host_takes_the_neuron_path(neuron_host):
    after = load(migrate(FIXTURE.read_bytes(), unsafe=True))
    assert after["default_device"]() == "neuron"  # type: ignore[operator]
    assert after["per_device"](8) == 2  # type: ignore[operator]
    code = migrate(FIXTURE.read_bytes()).decode()  # the dispatch gained a Neuron branch, in bf16
    assert 'elif device_type == "neuron":\n        return torch.autocast(device_type="neuron", dtype=torch.bfloat16)' in code


def test_safe_only_runs_move_a_default_with_the_branches_that_accept_it():
    code = migrate(FIXTURE.read_bytes(), unsafe=False).decode()
    assert 'elif device_type == "neuron":' in code
    assert 'choices=["cpu", "cuda", "neuron", "mps"]' in code
    assert 'default="neuron" if on_neuron() else "cuda",' in code  # "cuda" stays wherever Neuron is not


@pytest.mark.parametrize("target", ["neuron", "accelerator"])
def test_the_accelerator_target_keeps_the_cpu_host_too(target):
    original = FIXTURE.read_bytes()
    before, after = load(original), load(migrate(original, target=target))
    assert after["main"]([]) == before["main"]([])  # type: ignore[operator]


def test_a_cache_release_and_a_guarded_sync_run_on_a_host_without_an_accelerator():
    source = (b"import torch\n\n\ndef step(device_type):\n    torch.cuda.empty_cache()\n"
              b"    if device_type == \"cuda\":\n        torch.cuda.synchronize()\n    return device_type\n")
    for target in ("neuron", "accelerator"):
        assert load(migrate(source, target=target))["step"]("cpu") == "cpu"  # type: ignore[operator]


def test_an_is_cuda_gate_stays_shut_on_the_cpu():
    source = b"def pick(x):\n    return x * 2 if x.is_cuda else x\n"
    for target in ("neuron", "accelerator"):
        assert load(migrate(source, target=target))["pick"](torch.ones(1)) == torch.ones(1)  # type: ignore[operator]


def test_an_is_cuda_gate_that_chooses_a_named_path_stays():
    source = b"def pick(x):\n    return 'chunked' if x.is_cuda else 'plain'\n"
    result = run_source(source, all_rules(), Options(unsafe_fixes=True), path="train.py")
    assert result.output is None
    assert 'chooses `"chunked"`' in result.findings[0].message


def test_a_default_that_a_dispatch_rejects_stays():
    source = (FIXTURE.parent / "device_default_blocked.before.py").read_bytes()
    result = run_source(source, all_rules(), Options(unsafe_fixes=True), path="train.py")
    assert result.output is None or b'default="cuda"' in result.output
    kept = [f for f in result.findings if f.rule == "NRN101" and "kept" in f.message]
    assert kept and "dispatch over `device`" in kept[0].message
