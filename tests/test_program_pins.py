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


def test_a_shared_module_without_a_device_of_its_own_joins_nothing(tmp_path) -> None:
    # the builder places nothing: what it makes goes where each program puts it
    builder = b"import torch\n\n\ndef build():\n    return torch.nn.Linear(2, 2)\n"
    extract = (b"import torch\nfrom nets.builder import build\n\ndevice = 'cuda'\n"
               b"model = torch.nn.DataParallel(build()).to(device)\n")
    sample = b"import torch\nfrom nets.builder import build\n\nmodel = build().cuda()\n"
    files = _files(tmp_path, {"extract.py": extract, "sample.py": sample, "nets/__init__.py": b"",
                              "nets/builder.py": builder})
    assert set(program_pins(files, import_graph(files))) == {tmp_path / "extract.py"}


MASKS = (b"import torch\n\n\ndef padding_mask(lengths):\n    longest = int(lengths.max())\n"
         b"    ids = torch.arange(0, longest, out=torch.cuda.LongTensor(longest))\n    return ids < lengths.unsqueeze(1)\n")
NET = (b"import torch\nfrom masks import padding_mask\n\n\nclass Net(torch.nn.Module):\n"
       b"    def forward(self, x, lengths):\n        return x * padding_mask(lengths)\n")
RUN = b"import torch\nfrom net import Net\n\nmodel = Net().cuda()\n"


def test_a_model_calling_a_helper_that_makes_a_legacy_cuda_type_pins_its_program(tmp_path) -> None:
    files = _files(tmp_path, {"masks.py": MASKS, "net.py": NET, "run.py": RUN, "other.py": OTHER})
    pins = program_pins(files, import_graph(files))
    assert set(pins) == {tmp_path / "masks.py", tmp_path / "net.py", tmp_path / "run.py"}
    assert ("`net.py`, whose `forward` calls `padding_mask` of `masks.py`, which makes tensors with "
            "`torch.cuda.LongTensor` on every call," in pins[tmp_path / "run.py"])
    cast = MASKS.replace(b"out=torch.cuda.LongTensor(longest))", b").type(torch.cuda.LongTensor)")
    files = _files(tmp_path, {"masks.py": cast, "net.py": NET, "run.py": RUN})
    assert set(program_pins(files, import_graph(files))) == {tmp_path / "masks.py", tmp_path / "net.py", tmp_path / "run.py"}


def test_a_guarded_checked_or_occasional_legacy_cuda_type_pins_nothing(tmp_path) -> None:
    guarded = MASKS.replace(b"    ids = torch.arange(0, longest, out=torch.cuda.LongTensor(longest))\n",
                            b"    if lengths.is_cuda:\n        ids = torch.arange(0, longest, out=torch.cuda.LongTensor(longest))\n"
                            b"    else:\n        ids = torch.arange(0, longest)\n")
    checked = b"import torch\n\n\ndef on_gpu(x):\n    return isinstance(x, torch.cuda.FloatTensor)\n"
    for masks in (guarded, checked):
        files = _files(tmp_path, {"masks.py": masks, "net.py": NET, "run.py": RUN})
        assert program_pins(files, import_graph(files)) == {}
    scored = NET.replace(b"    def forward(self, x, lengths):\n        return x * padding_mask(lengths)\n",
                         b"    def forward(self, x):\n        return x\n\n\ndef score(x, lengths):\n    return x * padding_mask(lengths)\n")
    files = _files(tmp_path, {"masks.py": MASKS, "net.py": scored, "run.py": RUN})
    assert program_pins(files, import_graph(files)) == {}  # not on every forward pass


def test_a_program_calling_a_cuda_only_helper_keeps_its_placements(tmp_path) -> None:
    _files(tmp_path, {"masks.py": MASKS, "net.py": NET, "run.py": RUN, "other.py": OTHER})
    assert neuronize("fix", "--no-cache", "-q", str(tmp_path)).returncode in (0, 1)
    assert (tmp_path / "run.py").read_bytes() == RUN
    assert (tmp_path / "other.py").read_bytes() != OTHER
    assert "whose `forward` calls `padding_mask` of `masks.py`" in full_report(str(tmp_path))
