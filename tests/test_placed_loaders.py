"""A project function that loads a model onto GPUs with a `device_map` (another module's) pins the
placements of the script that calls it, as the loading itself would: its batches wait with it."""

from __future__ import annotations

from pathlib import PurePath

from helpers import neuronize
from neuronize.analysis.placed_loaders import placed_loaders
from neuronize.analysis.project_functions import names_one_of

LOADING = (b"from transformers import AutoModelForCausalLM\n\n\n"
           b"def load_model(name, quantized=False):\n    kwargs = {}\n    if quantized:\n"
           b"        kwargs[\"device_map\"] = \"auto\"\n"
           b"    return AutoModelForCausalLM.from_pretrained(name, **kwargs)\n\n\n"
           b"def load_tokenizer(name, device_map=None):\n    return name\n\n\n"
           b"def load_on_cpu(name):\n    return AutoModelForCausalLM.from_pretrained(name, device_map=\"cpu\")\n")


def test_functions_that_return_a_model_placed_on_gpus():
    found = placed_loaders([(PurePath("src/app/loading.py"), LOADING), (PurePath("tool.py"), b"def f(): pass\n")])
    assert found == {"src.app.loading.load_model"}
    assert names_one_of("app.loading.load_model", found)  # imported from below the `src` folder
    assert not names_one_of("triton.language.load_model", found)


def test_a_script_calling_one_keeps_the_placements_beside_it(tmp_path):
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "__init__.py").write_bytes(b"")
    (tmp_path / "app" / "loading.py").write_bytes(LOADING)
    (tmp_path / "infer.py").write_bytes(
        b"import torch\nfrom app.loading import load_model\n\n\n"
        b"def main(name, batch):\n    model = load_model(name, quantized=True)\n\n"
        b"    def step(inputs):\n        return model(inputs.to(\"cuda\"))\n\n    return step(batch)\n\n\n"
        b"def warm_up(x):\n    return x.to(\"cuda\")\n")
    assert neuronize("fix", "--no-cache", "-q", str(tmp_path)).returncode in (0, 1)
    fixed = (tmp_path / "infer.py").read_text()
    # the closure's batch waits with the model its function loads; the other function's move is made,
    # host-aware (the neuron target keeps CUDA hosts)
    assert 'inputs.to("cuda")' in fixed and 'return x.to("neuron" if on_neuron() else "cuda")\n' in fixed
    full = neuronize("check", "--no-cache", "--output-format", "full", str(tmp_path)).stdout.decode()
    assert "`load_model()` returns a model its loader places on GPUs" in " ".join(full.split())
