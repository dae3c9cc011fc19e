"""A module that hands its device choice to another module's function making a random generator on
it moves that choice only with NRN106's (unsafe) edit there: a run of safe fixes alone leaves both."""

from __future__ import annotations

from pathlib import Path, PurePath

from helpers import neuronize
from neuronize.analysis.generator_makers import generator_makers, generator_partners

SEEDING = (b"import random\nimport torch\n\n\n"
           b"def seeded(seed, device=None):\n    random.seed(seed)\n    return torch.Generator(device).manual_seed(seed)\n\n\n"
           b"def generator_for(seed, where):\n    return seeded(seed, device=str(where))\n")
SAMPLER = (b"import torch\nfrom app.seeding import generator_for\n\n\n"
           b"class Sampler:\n    def __init__(self):\n"
           b"        self.device = \"cuda\" if torch.cuda.is_available() else \"cpu\"\n\n"
           b"    def noise(self, seed):\n        g = generator_for(seed, self.device)\n"
           b"        return torch.randn(4, generator=g).to(self.device)\n")


def files(**sources: bytes) -> list[tuple[Path, PurePath, bytes]]:
    return [(Path("/p", name), PurePath(name), source) for name, source in
            ((name.replace("__", "/") + ".py", source) for name, source in sources.items())]


def test_functions_that_make_a_generator_on_a_device_they_are_given():
    found = generator_makers((relative, source) for _, relative, source in files(app__seeding=SEEDING))
    # directly, and through a function that hands its parameter on (through str())
    assert {name: fed for name, (_, _, fed, _) in found.items()} == {
        "app.seeding.seeded": ("device",), "app.seeding.generator_for": ("where",)}


def test_the_files_that_hand_them_a_device_from_another_module():
    partners = generator_partners(files(app__seeding=SEEDING, sampler=SAMPLER))
    assert list(partners) == [Path("/p/sampler.py")]
    assert "`generator_for` of `app/seeding.py` makes a random generator" in partners[Path("/p/sampler.py")]
    # a literal of another host reaches no Neuron generator; the module itself is grouped by NRN106
    cpu_only = SAMPLER.replace(b"generator_for(seed, self.device)", b'generator_for(seed, "cpu")')
    assert generator_partners(files(app__seeding=SEEDING, sampler=cpu_only)) == {}


def test_the_device_choice_moves_only_with_the_generator_edit(tmp_path):
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "__init__.py").write_bytes(b"")
    (tmp_path / "app" / "seeding.py").write_bytes(SEEDING)
    (tmp_path / "sampler.py").write_bytes(SAMPLER)
    assert neuronize("fix", "--no-cache", "-q", str(tmp_path)).returncode in (0, 1)
    assert (tmp_path / "sampler.py").read_bytes() == SAMPLER  # safe fixes alone: Trainium keeps its CPU fallback
    full = " ".join(neuronize("check", "--no-cache", "--output-format", "full", str(tmp_path)).stdout.decode().split())
    assert "NRN101 [unsafe fix]" in full and "like the edit it needs in another file" in full
    assert neuronize("fix", "--unsafe-fixes", "--no-cache", "-q", str(tmp_path)).returncode in (0, 1)
    assert '"neuron" if on_neuron() else "cuda" if torch.cuda.is_available()' in (tmp_path / "sampler.py").read_text()
    assert 'torch.Generator("cpu" if on_neuron() else device)' in (tmp_path / "app" / "seeding.py").read_text()
