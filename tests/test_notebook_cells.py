"""A notebook is one namespace: earlier cells' imports count in later cells; GPU shell lines are reported."""

from __future__ import annotations

import json

from neuronize.analysis.notebook_magics import gpu_magics
from tests.helpers import neuronize


def _cell(*lines: str) -> dict:
    return {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [], "source": list(lines)}


def _fixed_cells(tmp_path, *cells: dict, name: str = "n.ipynb") -> list[str]:
    """The sources of ``cells``, written as a notebook and fixed with the default options."""
    notebook = {"cells": list(cells), "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    (tmp_path / name).write_text(json.dumps(notebook, indent=1) + "\n")
    neuronize("fix", "--no-cache", name, cwd=tmp_path)
    return ["".join(c["source"]) for c in json.loads((tmp_path / name).read_text())["cells"]]


NOTEBOOK = {
    "cells": [
        _cell("!nvidia-smi\n", "%pip install -q flash-attn transformers\n", "%env CUDA_VISIBLE_DEVICES=0\n"),
        _cell("import torch\n", "import os\n"),
        {"cell_type": "markdown", "metadata": {}, "source": ["## Training step\n"]},
        _cell("with torch.autocast(\"cuda\", dtype=torch.bfloat16):\n", "    loss = model(batch)\n",
              "os.environ[\"NCCL_DEBUG\"] = \"INFO\"\n"),
        _cell("import numpy as torch_like\n", "print(torch_like.zeros(2))\n"),
    ],
    "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"}},
    "nbformat": 4,
    "nbformat_minor": 5,
}


def test_a_later_cell_uses_an_earlier_cells_import(tmp_path):
    path = tmp_path / "train.ipynb"
    path.write_text(json.dumps(NOTEBOOK, indent=1) + "\n")
    report = json.loads(neuronize("check", "--output-format", "json", "train.ipynb", cwd=tmp_path).stdout)
    where = {(f["cell"], f["line"], f["rule"]) for f in report["findings"]}
    assert (4, 1, "NRN201") in where  # `torch` comes from cell 2
    assert (4, 3, "NRN911") in where  # and `os` too
    assert neuronize("fix", "train.ipynb", cwd=tmp_path).returncode == 1  # report-only findings are left
    cells = json.loads(path.read_text())["cells"]
    # the cell names CUDA only through autocast, so it ran on the CPU too: its device is host-aware,
    # through the Neuron test the cell defines (the first cell of the notebook that needs it)
    assert 'with torch.autocast("neuron" if on_neuron() else "cuda"' in "".join(cells[3]["source"])
    assert "".join(cells[3]["source"]).startswith("def on_neuron() -> bool:")
    assert cells[1]["source"] == ["import torch\n", "import os\n"]  # the cell that imports is untouched


def test_gpu_shell_lines_are_reported_under_the_rule_that_owns_the_thing(tmp_path):
    path = tmp_path / "train.ipynb"
    path.write_text(json.dumps(NOTEBOOK, indent=1) + "\n")
    report = json.loads(neuronize("check", "--output-format", "json", "train.ipynb", cwd=tmp_path).stdout)
    first = sorted((f["line"], f["rule"]) for f in report["findings"] if f["cell"] == 1)
    assert first == [(1, "NRN903"), (2, "NRN903"), (3, "NRN911")]
    ignored = neuronize("check", "--output-format", "json", "--ignore", "NRN903", "train.ipynb", cwd=tmp_path)
    assert not [f for f in json.loads(ignored.stdout)["findings"] if f["rule"] == "NRN903"]


def test_gpu_magics_by_kind():
    found = gpu_magics([
        (1, "gpus = !nvidia-smi -L | wc -l"),
        (2, "!pip install bitsandbytes>=0.43 --index-url https://download.pytorch.org/whl/cu121"),
        (3, "!export TORCH_NCCL_BLOCKING_WAIT=1 && python train.py"),
        (4, "!ls -la"),
        (5, "%matplotlib inline"),
        (6, "!pip install torch numpy"),
    ])
    assert [(line, rule) for line, rule, _ in found] == [
        (1, "NRN903"), (2, "NRN903"), (2, "NRN903"), (3, "NRN911")]


def test_variables_set_for_one_command_are_read():
    found = gpu_magics([
        (1, "!CUDA_VISIBLE_DEVICES=0 tune run lora_finetune_single_device --config cfg.yaml"),
        (2, "!CUDA_VISIBLE_DEVICES= python eval.py"),
        (3, "!OMP_NUM_THREADS=4 NCCL_DEBUG=INFO torchrun --nproc_per_node 2 train.py"),
        (4, "!DATA_DIR=/tmp/data python prepare.py"),
    ])
    assert [(line, rule) for line, rule, _ in found] == [(1, "NRN911"), (2, "NRN911"), (3, "NRN911")]
    assert "NEURON_RT_VISIBLE_CORES" in found[0][2]
    assert "NEURON_RT_VISIBLE_CORES" not in found[1][2] and "cpu" in found[1][2]  # hiding every GPU asks for the CPU
    assert "`NCCL_DEBUG`" in found[2][2]


def test_a_cell_that_names_cuda_keeps_the_cuda_box_when_another_cell_chooses_the_device(tmp_path):
    choice = _cell("import torch\n", 'device = "cuda" if torch.cuda.is_available() else "cpu"\n')
    chooses = _fixed_cells(tmp_path, choice, _cell("x = torch.ones(2).to(\"cuda\")\n"), name="chooses.ipynb")
    hard = _fixed_cells(tmp_path, _cell("import torch\n"), _cell("x = torch.ones(2).to(\"cuda\")\n"), name="hard.ipynb")
    # the notebook runs on the hosts its first cell chooses among: the later cell places on that
    # choice, which is CUDA's wherever CUDA is available and Neuron's on Trainium
    assert chooses[1] == "x = torch.ones(2).to(device)\n"
    # a notebook that names CUDA with no choice keeps the CUDA box too (the neuron target keeps CUDA
    # hosts): host-aware, through the Neuron test the cell defines; the cell that imports is untouched
    assert hard[0] == "import torch\n"
    assert hard[1] == (
        "def on_neuron() -> bool:\n"
        '    """True on an AWS Trainium (Neuron) device, False elsewhere."""\n'
        "    return (\n"
        '        hasattr(torch, "accelerator")\n'
        "        and torch.accelerator.is_available()\n"
        '        and torch.accelerator.current_accelerator().type == "neuron"\n'
        "    )\n\n\n"
        'x = torch.ones(2).to("neuron" if on_neuron() else "cuda")\n')


def test_a_flag_that_later_cells_test_gains_a_neuron_branch_in_every_cell(tmp_path):
    # the flag is one choice over the notebook: each cell testing it places on Neuron what it
    # places on CUDA, so the model and its data meet there
    stored = _cell("import torch\n", "use_gpu = torch.cuda.is_available()\n", "if use_gpu:\n", "    net.cuda()\n")
    later = _cell("x = torch.ones(2)\n", "if use_gpu:\n", "    x = x.cuda()\n", "y = net(x)\n")
    cells = _fixed_cells(tmp_path, stored, _cell(f"print(f'GPU: {{use_gpu}}')\n"), later)
    assert "if on_neuron():\n    net.to(\"neuron\")\nelif use_gpu:\n    net.cuda()\n" in cells[0]
    assert cells[2] == 'x = torch.ones(2)\nif on_neuron():\n    x = x.to("neuron")\nelif use_gpu:\n    x = x.cuda()\ny = net(x)\n'


def test_every_flag_a_cell_stores_reaches_the_cells_that_test_it(tmp_path):
    stored = _cell("import torch\n", "gpu = torch.cuda.is_available()\n",
                   "multi_gpu = torch.cuda.device_count() > 1\n")
    later = _cell("if gpu:\n", "    net.cuda()\n", "if multi_gpu:\n", "    print('several')\n")
    cells = _fixed_cells(tmp_path, stored, later)
    assert "if on_neuron():\n    net.to('neuron')\nelif gpu:\n    net.cuda()\nif multi_gpu:\n" in cells[1]


def test_a_flag_stays_cudas_in_every_cell_where_one_test_cannot_gain_neuron(tmp_path):
    stored = _cell("import torch\n", "use_gpu = torch.cuda.is_available()\n", "if use_gpu:\n", "    net.cuda()\n")
    # a test with no Neuron copy (a second GPU), and a flag handed on to the notebook's own code:
    # a Neuron branch in the first cell would place the model on Neuron and leave the data on the CPU
    for later in (_cell("if use_gpu:\n", "    x = x.cuda(1)\n"), _cell("x = prepare(x, use_gpu)\n")):
        cells = _fixed_cells(tmp_path, stored, later)
        assert cells[0] == "".join(stored["source"])
        assert "neuron" not in cells[1]


def test_a_cell_names_the_chosen_device_only_while_the_choice_stands(tmp_path):
    cells = _fixed_cells(tmp_path, _cell("x = torch.ones(2).to(\"cuda\")\n"),  # runs before the choice
                         _cell("import torch\n", 'device = "cuda" if torch.cuda.is_available() else "cpu"\n'),
                         _cell("y = torch.ones(2).cuda()\n"),
                         _cell('device = "cpu"\n'),  # the choice no longer stands
                         _cell("z = torch.ones(2).to(\"cuda\")\n"))
    assert cells[2] == "y = torch.ones(2).to(device)\n"
    for kept in (cells[0], cells[4]):
        assert "to(device)" not in kept and 'else "cuda"' in kept and '"neuron"' in kept


def test_a_notebook_bound_to_cuda_by_a_library_keeps_the_cuda_box(tmp_path):
    cells = _fixed_cells(tmp_path, _cell("from unsloth import FastLanguageModel\n",
                                         'model, tok = FastLanguageModel.from_pretrained("m", load_in_4bit=True)\n'),
                         _cell("import torch\n", "ids = torch.ones(2).to(\"cuda\")\n"))
    # the library runs its model on CUDA kernels only: the inputs it meets stay where it is (on
    # Neuron they would meet it nowhere) until the loading is replaced
    assert cells[1] == 'import torch\nids = torch.ones(2).to("cuda")\n'
    report = neuronize("check", "--no-cache", "n.ipynb", cwd=tmp_path).stdout.decode()
    assert "loads a model onto Unsloth" in report


def test_inputs_of_a_model_placed_by_a_device_map_stay_where_the_loader_puts_it(tmp_path):
    choice = _cell("import torch\n", 'device = torch.device("cuda" if torch.cuda.is_available() else "cpu")\n')
    loads = _cell("from transformers import AutoModelForCausalLM\n",
                  'model = AutoModelForCausalLM.from_pretrained("m", device_map="auto")\n')
    inputs = _cell("ids = torch.ones(2).to(device)\n", 'mask = torch.ones(2).to("cuda")\n')
    cells = _fixed_cells(tmp_path, choice, loads, inputs)
    # Accelerate puts the model on the GPUs where there are some, else on the CPU (Neuron too):
    # the device its inputs take, chosen in the cell before, waits for the loading; a CUDA name
    # takes the choice, which is where the model is on every host
    assert cells[:2] == ["".join(c["source"]) for c in (choice, loads)]
    assert cells[2] == "ids = torch.ones(2).to(device)\nmask = torch.ones(2).to(device)\n"
    unpinned = _fixed_cells(tmp_path, choice, inputs, name="unpinned.ipynb")
    assert '"neuron" if on_neuron() else' in unpinned[0]


def test_cells_after_a_kernel_restart_define_what_they_use_again(tmp_path):
    restart = {"cell_type": "markdown", "metadata": {}, "source": ["Now restart the kernel to free the GPU memory.\n"]}
    shutdown = _cell("import IPython\n", "IPython.Application.instance().kernel.do_shutdown(True)\n")
    first = _cell("import torch\n", 'device = "cuda" if torch.cuda.is_available() else "cpu"\n',
                  'x = torch.ones(2).to("cuda")\n')
    again = _cell("import torch\n", 'y = torch.ones(2).to("cuda")\n')
    for marker in (restart, shutdown):
        cells = _fixed_cells(tmp_path, first, marker, again)
        # the choice and the Neuron test of the first cell are gone after the restart: the cell
        # after it defines its own test and places on its own
        assert "to(device)" not in cells[2] and "def on_neuron() -> bool:" in cells[2]
        assert cells[0].count("def on_neuron") == 1
    kept = _fixed_cells(tmp_path, first, {"cell_type": "markdown", "metadata": {}, "source": ["## Evaluate\n"]}, again)
    assert kept[2] == 'import torch\ny = torch.ones(2).to(device)\n'


def test_a_cell_that_writes_a_script_is_a_module_of_its_own(tmp_path):
    first = _cell("import torch\n", 'device = "cuda" if torch.cuda.is_available() else "cpu"\n')
    script = _cell("%%writefile train.py\n", "import torch\n", "model = torch.nn.Linear(2, 2).cuda()\n")
    after = _cell('x = torch.ones(2).to("cuda")\n')
    cells = _fixed_cells(tmp_path, first, script, after)
    # the script runs in a process of its own (`!python train.py`): it defines its own Neuron test,
    # and the cells after it go on with the notebook's
    assert cells[1].startswith("%%writefile train.py\nimport torch\n") and "def on_neuron() -> bool:" in cells[1]
    assert "model = torch.nn.Linear(2, 2).to(\"neuron\" if on_neuron() else \"cuda\")" in cells[1]  # not `device`
    assert cells[0].count("def on_neuron") == 1 and "def on_neuron" not in cells[2]


def test_the_neuron_test_goes_below_a_cell_magic(tmp_path):
    cells = _fixed_cells(tmp_path, _cell("import torch\n"),
                         _cell("%%time\n", "with torch.autocast('cuda'):\n", "    y = torch.ones(2) * 2\n"),
                         _cell("device = 'cuda' if torch.cuda.is_available() else 'cpu'\n"))
    # `%%time` is the cell's first line or the cell fails on every host
    assert cells[1].startswith("%%time\n") and "def on_neuron() -> bool:" in cells[1]


def test_a_cells_opening_comment_stays_with_the_line_it_describes(tmp_path):
    cells = _fixed_cells(tmp_path, _cell("import torch\n"),
                         _cell("# pick the device the model trains on\n",
                               "device = 'cuda' if torch.cuda.is_available() else 'cpu'\n"))
    # the Neuron test the cell defines goes above the comment, not between it and its line
    assert cells[1].startswith("def on_neuron() -> bool:")
    assert "# pick the device the model trains on\ndevice = 'neuron' if on_neuron() else" in cells[1]


def test_a_licence_notice_stays_at_the_top_of_the_file(tmp_path):
    (tmp_path / "run.py").write_text("# Copyright 2026 Example Ltd.\n"
                                     "device = 'cuda' if torch.cuda.is_available() else 'cpu'\n")
    neuronize("fix", "--no-cache", "run.py", cwd=tmp_path)
    assert (tmp_path / "run.py").read_text().startswith("# Copyright 2026 Example Ltd.\n")


def test_a_notebook_with_an_unreadable_cell_offers_no_fix_it_would_not_make(tmp_path):
    """`fix` leaves a notebook alone while one of its cells has a syntax error; `check` says so on
    each finding it would otherwise fix, and counts none as fixable."""
    notebook = {"cells": [_cell("import torch\n", "model = torch.nn.Linear(2, 2).cuda()\n"),
                          _cell("for epoch from range(3):\n", "    batch = batch.cuda()\n")],
                "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    path = tmp_path / "n.ipynb"
    path.write_text(json.dumps(notebook, indent=1) + "\n")
    before = path.read_bytes()
    checked = neuronize("check", "--output-format", "json", "n.ipynb", cwd=tmp_path)
    findings = json.loads(checked.stdout)["findings"]
    assert checked.returncode == 2 and b"cell 2, line 1: syntax error" in checked.stderr
    assert [(f["rule"], f["fixable"]) for f in findings] == [("NRN102", False)]
    assert "the notebook is not rewritten while a cell cannot be read" in findings[0]["message"]
    assert neuronize("fix", "n.ipynb", cwd=tmp_path).returncode == 2 and path.read_bytes() == before


def test_a_neuron_only_import_under_an_earlier_cells_test_is_guarded(tmp_path):
    # the test for Neuron is defined in the first cell that needs it; a later cell's Neuron branch
    # imports torch_neuronx under a call of it, which runs only on Neuron
    notebook = {"cells": [_cell("import torch\n", "device = torch.device(\"cuda\" if torch.cuda.is_available() else \"cpu\")\n"),
                          _cell("names = []\n", "if torch.cuda.is_available():\n",
                                "    names = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]\n")],
                "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    (tmp_path / "n.ipynb").write_text(json.dumps(notebook, indent=1) + "\n")
    result = neuronize("fix", "--no-cache", "--unsafe-fixes", "n.ipynb", cwd=tmp_path)
    assert "internal error" not in str(result.stderr)
    cells = ["".join(c["source"]) for c in json.loads((tmp_path / "n.ipynb").read_text())["cells"]]
    assert "if on_neuron():\n        import torch_neuronx" in cells[1]
