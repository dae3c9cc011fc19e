"""A project adopting neuronize: [tool.neuronize], suppressions, baselines and notebooks."""

from __future__ import annotations

import json

from helpers import neuronize

CUDA = b"import torch\nmodel = Net().cuda()\n"
#: the helper `fix` defines for its host-aware edits: on the neuron target a file keeps its CUDA hosts
HELPER = (b'\n\ndef on_neuron() -> bool:\n    """True on an AWS Trainium (Neuron) device, False elsewhere."""\n'
          b'    return (\n        hasattr(torch, "accelerator")\n        and torch.accelerator.is_available()\n'
          b'        and torch.accelerator.current_accelerator().type == "neuron"\n    )\n\n\n')


def _pyproject(tmp_path, body: str) -> None:
    (tmp_path / "pyproject.toml").write_text(f"[project]\nname = 'demo'\n\n[tool.neuronize]\n{body}")


def test_config_select_ignore_and_per_file_ignores(tmp_path):
    _pyproject(tmp_path, 'ignore = ["NRN9"]\n[tool.neuronize.per-file-ignores]\n"tests/*" = ["cuda-method"]\n')
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_model.py").write_bytes(CUDA)
    (tmp_path / "train.py").write_bytes(CUDA + b"import triton\n")
    proc = neuronize("check", ".", cwd=tmp_path)
    out = proc.stdout.decode()
    assert "train.py:2:9 NRN102" in out
    assert "NRN902" not in out  # ignored for the project
    assert "tests/test_model.py" not in out  # NRN102 ignored under tests/
    assert proc.returncode == 1


def test_config_unsafe_fixes_and_command_line_override(tmp_path):
    _pyproject(tmp_path, "unsafe-fixes = true\n")
    (tmp_path / "a.py").write_bytes(b"x = x.cuda(3)\n")
    assert neuronize("fix", "--no-unsafe-fixes", "a.py", cwd=tmp_path).returncode == 1
    assert (tmp_path / "a.py").read_bytes() == b"x = x.cuda(3)\n"
    assert neuronize("fix", "a.py", cwd=tmp_path).returncode == 0
    # the unsafe fix applied: Neuron gains `.to("neuron")`, the CUDA box keeps its `.cuda(3)`
    assert (tmp_path / "a.py").read_bytes() == (
        b"import torch\n" + HELPER + b'x = x.to("neuron") if on_neuron() else x.cuda(3)\n')


def test_config_exclude(tmp_path):
    _pyproject(tmp_path, 'extend-exclude = ["legacy/"]\n')
    (tmp_path / "legacy").mkdir()
    (tmp_path / "legacy" / "old.py").write_bytes(CUDA)
    assert neuronize("check", ".", cwd=tmp_path).returncode == 0
    # named explicitly it is checked, unless --force-exclude (what the pre-commit hook passes)
    assert neuronize("check", "legacy/old.py", cwd=tmp_path).returncode == 1
    assert neuronize("check", "--force-exclude", "legacy/old.py", cwd=tmp_path).returncode == 0


def test_bad_config_is_a_clear_error(tmp_path):
    _pyproject(tmp_path, 'selekt = ["NRN1"]\n')
    (tmp_path / "a.py").write_bytes(CUDA)
    proc = neuronize("check", ".", cwd=tmp_path)
    assert proc.returncode == 2
    [line] = proc.stderr.decode().splitlines()
    assert "selekt" in line and "pyproject.toml" in line


def test_suppressions_silence_findings_and_their_fixes(tmp_path):
    source = (b"import torch\n"
              b"a = Net().cuda()  # neuronize: ignore[NRN102]\n"
              b"# neuronize: ignore[cuda-method]\n"
              b"b = Net().cuda()\n"
              b"c = Net().cuda()\n"
              b"d = 1  # neuronize: ignore\n")
    (tmp_path / "a.py").write_bytes(source)
    proc = neuronize("fix", "--unused-suppressions", "a.py", cwd=tmp_path)
    lines = proc.stdout.decode().splitlines()
    # only `c` is edited; the helper its host-aware edit calls goes below the import
    assert (tmp_path / "a.py").read_bytes() == source.replace(
        b"import torch\n", b"import torch\n" + HELPER).replace(
        b'c = Net().cuda()', b'c = Net().to("neuron" if on_neuron() else "cuda")')
    assert [line.split()[1] for line in lines] == ["NRN000"]
    assert lines[0].startswith("a.py:17:1 NRN000")  # line 6 as written, below the 11 lines of the helper


def test_baseline_ratchet(tmp_path):
    (tmp_path / "old.py").write_bytes(b"import triton\nx = Net().cuda()\n")
    proc = neuronize("check", "--write-baseline", "baseline.json", ".", cwd=tmp_path)
    assert proc.returncode == 0
    data = json.loads((tmp_path / "baseline.json").read_text())
    assert set(data["files"]) == {"old.py"}
    assert neuronize("check", "--baseline", "baseline.json", ".", cwd=tmp_path).returncode == 0
    # unrelated lines above shift the findings: still baselined
    (tmp_path / "old.py").write_bytes(b"# a new header\n\nimport triton\nx = Net().cuda()\n")
    assert neuronize("check", "--baseline", "baseline.json", ".", cwd=tmp_path).returncode == 0
    # a new finding fails
    (tmp_path / "new.py").write_bytes(b"y = Net().cuda()\n")
    proc = neuronize("check", "--baseline", "baseline.json", ".", cwd=tmp_path)
    assert proc.returncode == 1
    assert proc.stdout.decode().splitlines()[0].startswith("new.py:1:5 NRN102")
    assert b"2 baselined findings not shown" in proc.stderr


def test_fix_with_a_baseline_leaves_baselined_findings_unedited(tmp_path):
    (tmp_path / "old.py").write_bytes(b"import torch\nx = Net().cuda()\n")
    assert neuronize("check", "--write-baseline", "baseline.json", ".", cwd=tmp_path).returncode == 0
    (tmp_path / "old.py").write_bytes(b"import torch\nx = Net().cuda()\ny = torch.zeros(2).cuda()\n")
    proc = neuronize("fix", "--baseline", "baseline.json", ".", cwd=tmp_path)
    # the accepted line stays as it was; the new one is fixed, and the summary counts that fix
    assert (tmp_path / "old.py").read_bytes() == (
        b"import torch\n" + HELPER + b'x = Net().cuda()\ny = torch.zeros(2).to("neuron" if on_neuron() else "cuda")\n')
    assert b"fixes applied: 1 safe" in proc.stderr and b"1 baselined finding not shown" in proc.stderr
    assert proc.returncode == 0
    # nothing new: nothing written, the summary says no fix was applied
    proc = neuronize("fix", "--baseline", "baseline.json", "--diff", ".", cwd=tmp_path)
    assert proc.stdout == b"" and proc.returncode == 0


NOTEBOOK = {
    "cells": [
        {"cell_type": "markdown", "metadata": {}, "source": ["# Train on `cuda`\n", "Notes."]},
        {"cell_type": "code", "execution_count": 3, "metadata": {"tags": ["setup"]},
         "outputs": [{"name": "stdout", "output_type": "stream", "text": ["cuda\n"]}],
         "source": ["%matplotlib inline\n", "import torch\n", "!nvidia-smi\n",
                    "model = Net().cuda()\n", "model?"]},
        {"cell_type": "code", "execution_count": 4, "metadata": {}, "outputs": [],
         "source": ["print('nothing to change')"]},
    ],
    "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"}},
    "nbformat": 4, "nbformat_minor": 5,
}


def test_notebook_code_cells_are_fixed_and_everything_else_kept(tmp_path):
    text = json.dumps(NOTEBOOK, indent=1, ensure_ascii=False) + "\n"
    path = tmp_path / "train.ipynb"
    path.write_text(text)
    proc = neuronize("check", "train.ipynb", cwd=tmp_path)
    out = proc.stdout.decode().splitlines()
    assert out[0].startswith("train.ipynb:cell 2:3:1 NRN903")  # `!nvidia-smi`
    assert out[1].startswith("train.ipynb:cell 2:4:9 NRN102")
    assert neuronize("fix", "train.ipynb", cwd=tmp_path).returncode == 1  # `!nvidia-smi` is left to do
    after = path.read_text()
    expected = json.loads(text)
    # the host-aware move and, above it, the helper it calls (the cell keeps its CUDA hosts)
    expected["cells"][1]["source"][3:4] = [*HELPER.decode().splitlines(keepends=True),
                                           'model = Net().to("neuron" if on_neuron() else "cuda")\n']
    assert json.loads(after) == expected
    assert after == json.dumps(expected, indent=1, ensure_ascii=False) + "\n"  # everything else as it was


def test_invalid_notebook_is_an_error_for_that_file_only(tmp_path):
    (tmp_path / "bad.ipynb").write_text('{"cells": [ cuda')
    (tmp_path / "a.py").write_bytes(CUDA)
    proc = neuronize("fix", ".", cwd=tmp_path)
    assert proc.returncode == 2
    assert "error: bad.ipynb" in proc.stderr.decode()
    assert (tmp_path / "a.py").read_bytes() == (
        b"import torch\n" + HELPER + b'model = Net().to("neuron" if on_neuron() else "cuda")\n')


LIBRARY = b"import torch\n\n\ndef place(x):\n    return x.to(\"cuda\")\n"


def test_a_library_module_keeps_the_cuda_box(tmp_path):
    chooses, hard = tmp_path / "chooses", tmp_path / "hard"
    for root, script in ((chooses, b"import torch\nfrom lib import place\n"
                                   b"if torch.cuda.is_available():\n    print(place(torch.ones(1)))\n"),
                         (hard, b"import torch\nfrom lib import place\nprint(place(torch.ones(1)))\n")):
        root.mkdir()
        (root / "lib.py").write_bytes(LIBRARY)
        (root / "run.py").write_bytes(script)
        neuronize("fix", "--no-cache", "-q", ".", cwd=root)
    # called by a script that checks for CUDA: the CUDA box still runs the library's code
    assert b'x.to("neuron" if on_neuron() else "cuda")' in (chooses / "lib.py").read_bytes()
    # called by a script that names CUDA outright: that script's own edits may wait (a process
    # group a safe-only run leaves), so the library's code serves the CUDA box as well
    assert (hard / "lib.py").read_bytes().endswith(b'    return x.to("neuron" if on_neuron() else "cuda")\n')
    assert (hard / "run.py").read_bytes().endswith(b"print(place(torch.ones(1)))\n")


def test_a_module_run_by_a_program_that_keeps_cuda_keeps_the_cuda_box(tmp_path):
    # an evaluation module that works at its import (not a library), loaded lazily by a trainer
    # whose CUDA-only compute package keeps it on CUDA hosts, and one loaded by a trainer that
    # names CUDA outright: both run in their trainer's program, which may keep CUDA
    evaluation = b'import torch\nSCALE = torch.ones(1)\n\n\ndef score(x):\n    return x.to(device="cuda") * 2\n'
    for name, head in (("kept", b"import bitsandbytes\nimport torch\n"), ("moved", b"import torch\n")):
        root = tmp_path / name
        (root / "evals").mkdir(parents=True)
        (root / "evals" / "score.py").write_bytes(evaluation)
        (root / "train.py").write_bytes(head + b"model = torch.nn.Linear(2, 2).cuda()\n\n\ndef evaluate():\n"
                                       b"    from evals import score\n    return score.score(torch.ones(1))\n")
        neuronize("fix", "--no-cache", "-q", ".", cwd=root)
    assert b'x.to(device="neuron" if on_neuron() else "cuda")' in (tmp_path / "kept" / "evals" / "score.py").read_bytes()
    assert b'x.to(device="neuron" if on_neuron() else "cuda") * 2' in (tmp_path / "moved" / "evals" / "score.py").read_bytes()
    # the trainer itself keeps its CUDA hosts too: its placement is host-aware
    assert (tmp_path / "moved" / "train.py").read_bytes().startswith(
        b"import torch\n" + HELPER + b'model = torch.nn.Linear(2, 2).to("neuron" if on_neuron() else "cuda")\n')


def test_a_branch_on_a_flag_another_module_stored_from_a_cuda_probe_stays_cudas(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "caps.py").write_bytes(
        b"import torch\n\nFAST_KERNELS: bool = (\n"
        b"    torch.cuda.is_available() and torch.cuda.get_device_capability() >= (8, 0)\n)\n")
    masks = (b"import torch\n\nfrom .caps import FAST_KERNELS\n\n\ndef mask(ids):\n    if FAST_KERNELS:\n"
             b'        return torch.ones(ids.shape, device="cuda")\n    return torch.ones(ids.shape)\n\n\n'
             b'def place(x):\n    return x.to("cuda")\n')
    (tmp_path / "pkg" / "masks.py").write_bytes(masks)
    cache = {"NEURONIZE_CACHE_DIR": str(tmp_path.parent / f"{tmp_path.name}-cache")}
    first, cached = (neuronize("check", "--output-format", "concise", ".", cwd=tmp_path, env=cache) for _ in "12")
    assert first.stdout == cached.stdout  # the second run reads the project's facts from the cache
    neuronize("fix", "--no-cache", "-q", ".", cwd=tmp_path)
    fixed = (tmp_path / "pkg" / "masks.py").read_bytes()
    # the flag is False on Neuron: its branch keeps CUDA, and the report says why; the rest gains Neuron
    assert b'        return torch.ones(ids.shape, device="cuda")\n' in fixed and b'return x.to("neuron" if on_neuron() else "cuda")' in fixed
    assert b"(not applied: it runs only under `if FAST_KERNELS:`)" in cached.stdout


def test_a_device_handed_through_a_project_function_to_a_cuda_only_library_stays_cuda(tmp_path):
    # bitsandbytes imports without CUDA (a module importing a library whose import loads CUDA
    # kernels, such as Transformer Engine, holds its importers whole: test_kernel_imports.py)
    (tmp_path / "layers.py").write_bytes(
        b"import bitsandbytes as bnb\n\n\ndef fused_linear(width, device, dtype=None):\n"
        b"    return bnb.nn.Linear8bitLt(width, width, device=device)\n")
    (tmp_path / "model.py").write_bytes(
        b"import torch\n\nfrom layers import fused_linear\n\n\ndef build():\n"
        b'    first = fused_linear(64, "cuda")\n    second = fused_linear(64, device=torch.device("cuda"))\n'
        b'    head = torch.nn.Linear(64, 2).to("cuda")\n    return first, second, head\n')
    before = (tmp_path / "model.py").read_bytes()
    report = neuronize("check", "--no-cache", "--output-format", "full", ".", cwd=tmp_path).stdout.decode()
    neuronize("fix", "--no-cache", "-q", ".", cwd=tmp_path)
    # positional or keyword, the library gets the CUDA device it needs; the layer beside them waits
    # with them (one function's devices move together or not at all): the file is left as it was
    assert (tmp_path / "model.py").read_bytes() == before
    assert report.count("`fused_linear()` hands its `device` to a CUDA-only library") == 2


def test_a_default_a_function_hands_to_the_projects_cuda_extension_stays_cuda(tmp_path):
    (tmp_path / "setup.py").write_bytes(
        b"from setuptools import setup\nfrom torch.utils.cpp_extension import CUDAExtension\n\n"
        b"setup(name='q', ext_modules=[CUDAExtension('FusedOps', ['ops.cu'])])\n")
    dequant = (b"import torch\n\ntry:\n    import FusedOps\nexcept ImportError:\n    FusedOps = None\n\n\n"
               b"def dequantize_gpu(data, device='cuda'):\n    return FusedOps.dequantize(data, device)\n\n\n"
               b"def dequantize_cpu(data, device='cuda'):\n    return torch.tensor(data, device=device)\n")
    (tmp_path / "dequant.py").write_bytes(dequant)
    (tmp_path / "gated.py").write_bytes(dequant.replace(b"try:\n    import FusedOps\nexcept ImportError:\n    FusedOps = None\n",
                                                        b"if not torch.xpu.is_available():\n    import FusedOps\n"))
    (tmp_path / "run.py").write_bytes(b"import torch\nfrom dequant import dequantize_gpu\nimport gated\n\n"
                                      b"print(dequantize_gpu(b'x'), gated.dequantize_gpu(b'x'))\n")
    neuronize("fix", "--no-cache", "-q", ".", cwd=tmp_path)
    for name in ("dequant.py", "gated.py"):
        fixed = (tmp_path / name).read_bytes()
        # the extension's function keeps the CUDA device its kernel needs; the torch one moves
        assert b"def dequantize_gpu(data, device='cuda'):" in fixed
        assert b"def dequantize_cpu(data, device='cuda'):" not in fixed


def test_a_script_that_runs_a_module_choosing_its_host_keeps_the_cuda_box(tmp_path):
    (tmp_path / "helpers.py").write_bytes(
        b'import torch\n\n\ndef default_device():\n    return "cuda" if torch.cuda.is_available() else "cpu"\n')
    (tmp_path / "demo.py").write_bytes(
        b'import torch\n\nfrom helpers import *\n\nif __name__ == "__main__":\n    x = torch.ones(2).to("cuda")\n')
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "helpers.py").write_bytes(b'import torch\n\n\ndef ones():\n    return torch.ones(2)\n')
    (tmp_path / "other" / "demo.py").write_bytes(
        b'import torch\n\nfrom helpers import *\n\nif __name__ == "__main__":\n    x = ones().to("cuda")\n')
    for project in (tmp_path, tmp_path / "other"):
        neuronize("fix", "--no-cache", "-q", "helpers.py", "demo.py", cwd=project)
    # the demo runs the helpers' choice among hosts: the CUDA box keeps CUDA, Neuron gains its own
    assert b'.to("neuron" if on_neuron() else "cuda")' in (tmp_path / "demo.py").read_bytes()
    # where nothing the script runs chooses, it keeps its CUDA hosts all the same (every file does)
    assert (tmp_path / "other" / "demo.py").read_bytes().endswith(
        HELPER + b'if __name__ == "__main__":\n    x = ones().to("neuron" if on_neuron() else "cuda")\n')


def test_a_script_beside_a_library_module_that_keeps_the_cuda_box_keeps_it_too(tmp_path):
    # the project checks for a host elsewhere, so its library module keeps CUDA hosts; the script
    # that runs that module runs on them too, and moves with it
    (tmp_path / "probe.py").write_bytes(b"import torch\n\nprint(torch.cuda.is_available())\n")
    (tmp_path / "helpers.py").write_bytes(b'import torch\n\n\ndef load(model):\n    return model.to("cuda")\n')
    (tmp_path / "demo.py").write_bytes(b'import torch\n\nfrom helpers import *\n\nif __name__ == "__main__":\n'
                                       b'    model = load(torch.nn.Linear(2, 2))\n    x = torch.ones(2).to("cuda")\n')
    neuronize("fix", "--no-cache", "-q", ".", cwd=tmp_path)
    for name in ("helpers.py", "demo.py"):
        assert b'.to("neuron" if on_neuron() else "cuda")' in (tmp_path / name).read_bytes(), name


def test_a_compile_beside_placements_kept_host_aware_by_the_project_is_host_aware_too(tmp_path):
    """A module with no choice of its own, in a project that checks for a host elsewhere: its
    placements keep the CUDA box's device, and so does its compile's backend (a bare `"neuron"`
    backend raises on the CUDA box when the wrapper is built)."""
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "devices.py").write_bytes(
        b'import torch\n\n\ndef pick():\n    return "cuda" if torch.cuda.is_available() else "cpu"\n')
    (tmp_path / "pkg" / "bench.py").write_bytes(
        b'import torch\n\n\ndef main():\n    model = torch.nn.Linear(2, 2).to("cuda")\n'
        b'    fast = torch.compile(model, mode="max-autotune")\n    return fast(torch.ones(2, device="cuda"))\n')
    neuronize("fix", "--no-cache", "-q", ".", cwd=tmp_path)
    fixed = (tmp_path / "pkg" / "bench.py").read_text()
    assert '.to("neuron" if on_neuron() else "cuda")' in fixed
    assert 'backend="neuron" if on_neuron() else "inductor"' in fixed and 'backend="neuron",' not in fixed


def test_a_script_calling_the_projects_nccl_set_up_waits_for_it(tmp_path):
    """The script's devices move with the set-up another module makes: in a safe-only run the
    set-up's process group stays NCCL, so the script's placements are reported, not made; with
    --unsafe-fixes both move."""
    utils = (b"import os\n\nimport torch\nimport torch.distributed as dist\n\n\n"
             b"def init_distributed_mode(args):\n    args.gpu = int(os.environ['LOCAL_RANK'])\n"
             b"    torch.cuda.set_device(args.gpu)\n    dist.init_process_group(backend=\"nccl\")\n")
    train = (b"import torch\nfrom utils import init_distributed_mode\n\n\ndef main(args):\n"
             b"    init_distributed_mode(args)\n    model = torch.nn.Linear(2, 2).cuda()\n    return model\n\n\n"
             b"def evaluate(model, x):\n    return model(x.cuda())\n")
    for name, flags in (("safe", ()), ("unsafe", ("--unsafe-fixes",))):
        root = tmp_path / name
        root.mkdir()
        (root / "utils.py").write_bytes(utils)
        (root / "train.py").write_bytes(train)
        neuronize("fix", "--no-cache", "-q", *flags, ".", cwd=root)
    assert (tmp_path / "safe" / "train.py").read_bytes() == train
    check = neuronize("check", "--no-cache", "--output-format", "concise", ".", cwd=tmp_path / "safe").stdout.decode()
    assert "train.py:6:5 NRN407 [report-only] `init_distributed_mode()` sets up NCCL processes" in check
    moved = (tmp_path / "unsafe" / "train.py").read_bytes()
    assert b".cuda()" not in moved and b"nccl" not in (tmp_path / "unsafe" / "utils.py").read_bytes().replace(
        b'else "nccl"', b"")


def test_a_state_dict_load_naming_no_cuda_is_located_where_the_project_chooses_its_host(tmp_path):
    """A checkpoint loaded only into `load_state_dict` in a file that names no CUDA gets
    `map_location="cpu"` where another file of the project chooses among hosts (a CUDA GPU among
    them saved it); a whole pickled object there has no finding, and a project that chooses no
    host is left alone."""
    loader = (b"import torch\n\n\ndef restore(model, path):\n    model.load_state_dict(torch.load(path))\n"
              b"    return torch.load(path + '.extra')\n")
    (tmp_path / "chooses").mkdir()
    (tmp_path / "chooses" / "run.py").write_bytes(
        b"import torch\n\ndevice = 'cuda' if torch.cuda.is_available() else 'cpu'\n")
    (tmp_path / "chooses" / "restore.py").write_bytes(loader)
    (tmp_path / "alone").mkdir()
    (tmp_path / "alone" / "restore.py").write_bytes(loader)
    report = neuronize("check", "--no-cache", "--output-format", "concise", ".", cwd=tmp_path / "chooses").stdout.decode()
    assert report.count("NRN108") == 1 and "restore.py:5:" in report
    for project in ("chooses", "alone"):
        neuronize("fix", "--no-cache", "-q", ".", cwd=tmp_path / project)
    assert b"model.load_state_dict(torch.load(path, map_location='cpu'))" in (tmp_path / "chooses" / "restore.py").read_bytes()
    assert (tmp_path / "alone" / "restore.py").read_bytes() == loader
