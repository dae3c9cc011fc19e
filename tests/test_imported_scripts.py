"""A module that does a script's work at its top level (a call) and that other modules of the run
import is a library too: its top level runs in their programs on every host, so what it evaluates
at import must still build where torch-neuronx is missing (the CUDA box among them)."""

from __future__ import annotations

from helpers import neuronize

WRAPPER = (b"import torch\n\ntorch.set_grad_enabled(False)\nworkspace_device = torch.device('cuda', 0)\n\n\n"
           b"def buffer(n):\n    return torch.zeros(n, device=workspace_device)\n\n\n"
           b"if __name__ == '__main__':\n    print(buffer(4))\n")
AWARE = b"workspace_device = torch.device('neuron') if on_neuron() else torch.device('cuda', 0)\n"


def test_an_imported_scripts_top_level_stays_importable(tmp_path) -> None:
    (tmp_path / "ops").mkdir()
    (tmp_path / "ops" / "__init__.py").write_bytes(b"")
    (tmp_path / "ops" / "wrapper.py").write_bytes(WRAPPER)
    (tmp_path / "serve.py").write_bytes(b"from ops.wrapper import buffer\n\nprint(buffer(2))\n")
    assert neuronize("fix", "--no-cache", "-q", str(tmp_path)).returncode in (0, 1)
    # the device is chosen at import, Neuron's only where Neuron is: the module imports everywhere
    assert AWARE in (tmp_path / "ops" / "wrapper.py").read_bytes()


def test_a_script_nothing_imports_moves_its_top_level(tmp_path) -> None:
    (tmp_path / "wrapper.py").write_bytes(WRAPPER)
    (tmp_path / "other.py").write_bytes(b"import torch\n")
    assert neuronize("fix", "--no-cache", "-q", str(tmp_path)).returncode in (0, 1)
    assert AWARE in (tmp_path / "wrapper.py").read_bytes()


def test_both_copies_of_a_package_are_imported_by_their_scripts(tmp_path) -> None:
    # an archived copy of the package imports its modules by the same absolute names
    for root in (tmp_path / "current", tmp_path / "archive" / "v1"):
        (root / "lib" / "ops").mkdir(parents=True)
        (root / "lib" / "__init__.py").write_bytes(b"")
        (root / "lib" / "ops" / "__init__.py").write_bytes(b"")
        (root / "lib" / "ops" / "wrapper.py").write_bytes(WRAPPER)
        (root / "lib" / "serve.py").write_bytes(b"from lib.ops.wrapper import buffer\n\nprint(buffer(2))\n")
    assert neuronize("fix", "--no-cache", "-q", str(tmp_path)).returncode in (0, 1)
    assert AWARE in (tmp_path / "archive" / "v1" / "lib" / "ops" / "wrapper.py").read_bytes()
    assert AWARE in (tmp_path / "current" / "lib" / "ops" / "wrapper.py").read_bytes()
