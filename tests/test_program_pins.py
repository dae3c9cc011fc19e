"""A script whose placements stay on every host (its model wrapped in ``DataParallel``, its data
made with a legacy CUDA tensor type) keeps its device choice; the modules it shares with other
files of the run keep theirs too, or on Trainium their tensors would meet its model on another
device. A conditional wrapper pins nothing, and unrelated files move as before."""

from __future__ import annotations

from pathlib import Path

from helpers import full_report, neuronize
from neuronize.analysis.kernel_imports import import_graph
from neuronize.analysis.program_pins import program_pins

CHOICE = b"import torch\n\ndevice = torch.device('cuda' if torch.cuda.is_available() else 'cpu')\n"
TRAIN = (b"import torch\nfrom nets.heads import Head\n\n"
         b"device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')\n"
         b"model = torch.nn.DataParallel(Head()).to(device)\n")
HEAD = CHOICE + b"\n\nclass Head(torch.nn.Module):\n    def forward(self, x):\n        return x + torch.ones(1, device=device)\n"
OTHER = b"import torch\n\nx = torch.zeros(2).cuda()\n"


def _files(tmp_path: Path, files: dict[str, bytes]) -> list[tuple[Path, Path, bytes]]:
    found = []
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(text)
        found.append((path, Path(name), text))
    return found


def test_the_modules_a_pinned_program_shares_are_found(tmp_path) -> None:
    files = _files(tmp_path, {"train.py": TRAIN, "nets/__init__.py": b"", "nets/heads.py": HEAD, "other.py": OTHER})
    pins = program_pins(files, import_graph(files))
    assert set(pins) == {tmp_path / "train.py", tmp_path / "nets/heads.py"}
    assert "`train.py`, which wraps its model in `DataParallel` on every host," in pins[tmp_path / "nets/heads.py"]
    conditional = TRAIN.replace(b"model = torch.nn.DataParallel(Head()).to(device)",
                                b"model = Head().to(device)\nif torch.cuda.device_count() > 1:\n"
                                b"    model = torch.nn.DataParallel(model)")
    files = _files(tmp_path, {"train.py": conditional, "nets/heads.py": HEAD})
    assert program_pins(files, import_graph(files)) == {}


def test_a_shared_module_keeps_its_choice_with_the_pinned_program(tmp_path) -> None:
    _files(tmp_path, {"train.py": TRAIN, "nets/__init__.py": b"", "nets/heads.py": HEAD, "other.py": OTHER})
    assert neuronize("fix", "--no-cache", "-q", str(tmp_path)).returncode in (0, 1)
    assert (tmp_path / "nets/heads.py").read_bytes() == HEAD
    assert (tmp_path / "other.py").read_bytes() != OTHER  # joined to no pinned program
    full = full_report(str(tmp_path))
    assert "a program that shares modules with this file: moved alone, these tensors would meet its model" in full
