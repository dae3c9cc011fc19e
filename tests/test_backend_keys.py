"""A project that picks its own backend by a name (``device_type in ["cuda", "ascend"]``, a
``--device`` option whose choices name vendor backends) keeps every default of that name, in every
module: the project's backend table has no Neuron entry, so ``"neuron"`` would fail where it is
looked up. Names checked only against torch device types are ordinary devices and move."""

from __future__ import annotations

from helpers import full_report, neuronize
from neuronize.analysis.backend_keys import backend_keys, names_backends

CONFIG = (b"from dataclasses import dataclass\n\n\n@dataclass\nclass EngineConfig:\n"
          b"    device_type: str = \"cuda\"\n\n    def __post_init__(self):\n"
          b"        assert self.device_type in [\"cuda\", \"ascend\", \"maca\"], \"unsupported device\"\n")
LAYER = (b"import torch\n\n\ndef build_engine(device_type=\"cuda\"):\n    return device_type\n\n\n"
         b"def make_weight(size, device=\"cuda\"):\n    return torch.empty(size, device=device)\n")


def test_names_checked_against_vendor_backends_are_keys() -> None:
    cli = (b"import argparse\np = argparse.ArgumentParser()\n"
           b"p.add_argument('--device', default='cuda', choices=['cuda', 'ascend', 'camb'])\n"
           b"p.add_argument('--eval-device', choices=('cpu', 'cuda', 'mps'))\n"
           b"p.add_argument('--backend', dest='engine_backend', choices=['cuda', 'dlinfer'])\n")
    found = backend_keys([CONFIG, cli, b"if device in ('cuda', 'cpu', 'npu', 'gpu', 'auto'): pass\n", b"def broken(:\n"])
    assert found == {"device_type", "device", "engine_backend"}
    assert names_backends(["cuda", "ascend"]) and not names_backends(["cuda:0", "cpu", "xpu"])


def test_a_backend_key_keeps_its_defaults_in_every_module_and_devices_still_move(tmp_path) -> None:
    (tmp_path / "config.py").write_bytes(CONFIG)
    (tmp_path / "layer.py").write_bytes(LAYER)
    assert neuronize("fix", "--no-cache", "-q", str(tmp_path)).returncode in (0, 1)
    assert (tmp_path / "config.py").read_bytes() == CONFIG  # the validation list gains no "neuron"
    layer = (tmp_path / "layer.py").read_bytes()
    assert b'def build_engine(device_type="cuda"):' in layer
    assert b'def make_weight(size, device="cuda"):' not in layer  # a torch device, not a backend key
    report = full_report(str(tmp_path))
    assert "`device_type` picks one of the project's own backends" in report
    assert "left in the code" not in report  # the backends listed beside "cuda" are entries, not leftovers
