"""A project whose requirements admit a torch before 2.6 (no ``torch.accelerator``) gets host-neutral
calls that fall back to ``torch.cuda`` there; one that requires 2.6 or later gets the plain call.
A project whose requirements stop below the torch that has the API a fix writes (``torch==1.6.0``
and ``torch.autocast``, new in 1.10), or admit one below it (``torch>=2.1`` and
``torch.amp.custom_fwd``, new in 2.4), gets the finding, not the fix."""

from __future__ import annotations

import pytest

from helpers import neuronize
from neuronize.sources.torch_requirement import (
    _ceiling, _declared, admits_old_torch, newest_release, newest_releases, oldest_releases)

SCRIPT = b"import torch\n\ndef step(x):\n    torch.cuda.synchronize()\n    torch.cuda.empty_cache()\n    return x\n"


@pytest.mark.parametrize(("name", "text", "floors"), [
    ("requirements.txt", "torch>=1.12\nnumpy\n", [(1, 12)]),
    ("requirements.txt", "torch==2.7.1+cu118 --hash=sha256:00\n", [(2, 7)]),
    ("requirements.txt", "torch\n", [None]),
    ("requirements.txt", "torchvision>=0.20\nnumpy\n", None),
    ("environment.yml", "dependencies:\n  - pytorch=1.13\n  - pytorch-cuda=11.7\n", [(1, 13)]),
    ("environment.yml", "dependencies:\n  - pytorch::pytorch>=2.6\n", [(2, 6)]),
    ("setup.py", "import torch\nsetup(install_requires=['torch>=2.6', 'numpy'])\n", [(2, 6)]),
    ("setup.cfg", "[options]\ninstall_requires =\n    torch>=2.8\n", [(2, 8)]),
    ("pyproject.toml", '[project]\ndependencies = ["torch >= 2.7, <3", "einops"]\n', [(2, 7)]),
    ("pyproject.toml", '[project]\ndependencies = ["torch>=1.13.0,<=2.8.0"]\n', [(1, 13)]),
    ("requirements.txt", "torch!=2.0.0,>=1.12\n", [(1, 12)]),
    ("pyproject.toml", '[tool.poetry.dependencies]\ntorch = "^2.1"\n', [(2, 1)]),
    ("cog.yaml", 'build:\n  python_packages:\n    - "torch==1.8.0"\n    - "torchvision==0.9.0"\n', [(1, 8)]),
    ("cog.yaml", "build:\n  python_packages:\n    - torch>=2.6\n", [(2, 6)]),
    ("install_deps.sh", "#!/bin/bash\npip install -U torch==1.9.0 torchvision --no-cache-dir\n", [(1, 9)]),
    ("setup_env.sh", "conda install -y pytorch=1.13 torchvision -c pytorch\n", [(1, 13)]),
    ("dockerfile", "FROM python:3.11\nRUN pip install 'torch>=2.6' -f https://download.pytorch.org/whl/torch_stable.html\n",
     [(2, 6)]),
    ("install.sh", "pip install -r requirements.txt\n", None),
    ("readme.md", "## Install\n```\npip install torch==1.11.0+cu113 torchvision==0.12.0+cu113\n```\n", [(1, 11)]),
    ("readme.md", "Requirements:\n```\ntorch==1.11 # recommended\nmmcv-full\n```\n", [(1, 11)]),
    ("install.md", "- `torch>=1.10`\n", [(1, 10)]),
    ("readme.md", "torch is all you need; we use torch 1.13.\npip install torch torchvision\n", None),
])
def test_the_declared_torch_floor_is_read(name, text, floors):
    assert _declared(text, name) == floors


def test_the_nearest_declaration_decides_up_to_the_repository_root(tmp_path):
    (tmp_path / ".git").mkdir()
    (tmp_path / "requirements.txt").write_text("torch>=2.6\n")
    (tmp_path / "sub" / "old").mkdir(parents=True)
    (tmp_path / "sub" / "old" / "requirements.txt").write_text("torch>=1.13\n")
    assert not admits_old_torch(str(tmp_path / "sub"))
    assert admits_old_torch(str(tmp_path / "sub" / "old"))
    bare = tmp_path / "elsewhere"
    (bare / ".git").mkdir(parents=True)
    assert admits_old_torch(str(bare))  # nothing declared: any torch may be installed


@pytest.mark.parametrize(("requirement", "expected"), [
    ("torch>=2.6\n", b"    torch.accelerator.synchronize()\n"),
    ("torch>=1.12\n", b'    getattr(torch, "accelerator", torch.cuda).synchronize()\n'),
])
def test_a_fix_run_writes_what_the_declared_torch_has(tmp_path, requirement, expected):
    (tmp_path / ".git").mkdir()
    (tmp_path / "requirements.txt").write_text(requirement)
    (tmp_path / "train.py").write_bytes(SCRIPT)
    assert neuronize("fix", "--no-cache", "-q", str(tmp_path)).returncode in (0, 1)
    assert expected in (tmp_path / "train.py").read_bytes()


@pytest.mark.parametrize(("spec", "newest"), [
    ("==1.6.0", (1, 6)), ("=1.6", (1, 6)), ("~=1.6.0", (1, 6)), ("<=1.9.1", (1, 9)), (">=1.4,<1.10", (1, 9)),
    ("<2", (1, 99)), ("<2.0", (1, 99)), ("~=1.6", (1, 99)), ("==1.*", (1, 99)),
    (">=1.6", None), ("!=1.7", None), ("", None),
])
def test_the_newest_torch_a_requirement_admits_is_read(spec, newest):
    assert _ceiling(spec) == newest


def test_the_newest_torch_is_bounded_only_where_every_requirement_is(tmp_path):
    (tmp_path / ".git").mkdir()
    (tmp_path / "requirements.txt").write_text("torch==1.6.0\n")
    (tmp_path / "environment.yml").write_text("dependencies:\n  - pytorch=1.8\n")
    assert newest_release(str(tmp_path), "torch") == (1, 8)
    (tmp_path / "loose").mkdir()
    (tmp_path / "loose" / "requirements-dev.txt").write_text("torch>=1.6\n")
    assert newest_release(str(tmp_path / "loose"), "torch") is None


AMP = (b"import torch\nfrom torch.cuda.amp import autocast\n\nmodel = torch.nn.Linear(2, 2).cuda()\n\n\n"
       b"def step(x):\n    with autocast(enabled=True):\n        return model(x)\n")
#: a decorator runs at import, on every host: it can keep no CUDA call beside Neuron's
AMP_DECORATOR = (b"import torch\nfrom torch.cuda.amp import autocast\n\nmodel = torch.nn.Linear(2, 2).cuda()\n\n\n"
                 b"@autocast(enabled=True)\ndef step(x):\n    return model(x)\n")
GENERATE = (b"from transformers import AutoModelForCausalLM\n\nmodel = AutoModelForCausalLM.from_pretrained(\"m\")\n"
            b"out = model.generate(**inputs, max_new_tokens=8)\n")
CUSTOM_FWD = (b"import torch\n\n\nclass Scale(torch.autograd.Function):\n    @staticmethod\n"
              b"    @torch.cuda.amp.custom_fwd\n    def forward(ctx, x):\n        return x * 2\n")
#: (the API's release, source, what the fix writes, the finding of a pin below it, that of a floor below it)
_NEWER_API = {
    "torch": ("1.10", AMP_DECORATOR, b"torch.autocast(", "new in torch 1.10, and the project's torch requirement "
              "stops at 1.6", "new in torch 1.10, and the project's torch requirement admits 1.6"),
    "transformers": ("4.38", GENERATE, b"cache_implementation", "new in transformers 4.38, and the project's "
                     "transformers requirement stops at 4.37", "transformers requirement admits 4.37"),
    "custom_fwd": ("2.4", CUSTOM_FWD, b"torch.amp.custom_fwd(", "new in torch 2.4, and the project's torch "
                   "requirement stops at 2.3", "admits 2.3, which a CUDA host may keep; raise it to `torch>=2.4`"),
}


@pytest.mark.parametrize("api", sorted(_NEWER_API))
@pytest.mark.parametrize("requirement", ["pinned below", "floor below", "floor at"])
def test_a_fix_that_writes_an_api_newer_than_a_release_the_project_admits_is_a_finding(tmp_path, api, requirement):
    release, source, written, pinned, floored = _NEWER_API[api]
    package = "transformers" if api == "transformers" else "torch"
    major, minor = map(int, release.split("."))
    below = f"{major}.{minor - 1}" if api != "torch" else "1.6"
    spec = {"pinned below": f"=={below}.0", "floor below": f">={below}", "floor at": f">={release}"}[requirement]
    (tmp_path / ".git").mkdir()
    (tmp_path / "requirements.txt").write_text(f"{package}{spec}\n")
    (tmp_path / "code.py").write_bytes(source)
    assert neuronize("fix", "--unsafe-fixes", "--no-cache", "-q", str(tmp_path)).returncode in (0, 1)
    assert (written in (tmp_path / "code.py").read_bytes()) is (requirement == "floor at")
    checked = " ".join(neuronize("check", "--no-cache", "--output-format", "full", str(tmp_path)).stdout.decode().split())
    assert (pinned in checked) is (requirement == "pinned below")
    assert (floored in checked) is (requirement == "floor below")


def test_the_oldest_release_is_the_lowest_declared_floor(tmp_path):
    (tmp_path / ".git").mkdir()
    (tmp_path / "requirements.txt").write_text("torch>=2.4\ntransformers\n")
    (tmp_path / "environment.yml").write_text("dependencies:\n  - pytorch>=2.1\n")
    # transformers without a floor says nothing of the release it runs on
    assert oldest_releases(str(tmp_path)) == (("torch", (2, 1)),)


def test_a_fix_that_keeps_the_original_call_off_neuron_is_made_under_a_pinned_release(tmp_path):
    """Only Neuron, whose torch is new, runs `torch.autocast`; every other host keeps its call."""
    (tmp_path / ".git").mkdir()
    (tmp_path / "requirements.txt").write_text("torch==1.6.0\n")
    (tmp_path / "code.py").write_bytes(AMP)
    assert neuronize("fix", "--no-cache", "-q", str(tmp_path)).returncode in (0, 1)
    written = (tmp_path / "code.py").read_bytes()
    assert b'torch.autocast(device_type="neuron"' in written and b"else autocast(enabled=True)" in written


def test_the_newest_transformers_is_read_like_torch(tmp_path):
    (tmp_path / "requirements.txt").write_text("torch>=2.1\ntransformers==4.37.1\naccelerate\n")
    assert newest_releases(str(tmp_path)) == (("transformers", (4, 37)),)
    (tmp_path / "loose").mkdir()
    (tmp_path / "loose" / "requirements.txt").write_text("transformers>=4.30\n")
    assert newest_releases(str(tmp_path / "loose")) == ()


TRAINER = (b"import torch\nfrom transformers import Trainer\n\n"
           b"device = torch.device(\"cuda\" if torch.cuda.is_available() else \"cpu\")\n\n\n"
           b"def predict(model, batch):\n    return model(batch.to(device))\n\n\n"
           b"def train(model, args, data):\n    trainer = Trainer(model=model, args=args, train_dataset=data)\n"
           b"    trainer.train()\n    return predict(trainer.model, data[0])\n")


@pytest.mark.parametrize(("requirement", "moved"), [("transformers==4.16.2\n", False), ("transformers>=5.1\n", True)])
def test_a_trainer_without_a_neuron_device_holds_the_devices_of_its_file(tmp_path, requirement, moved):
    # transformers 4.x hands back a model on the CPU on Trainium, which Neuron inputs would meet
    (tmp_path / ".git").mkdir()
    (tmp_path / "requirements.txt").write_text(requirement)
    (tmp_path / "train.py").write_bytes(TRAINER)
    assert neuronize("fix", "--no-cache", "-q", str(tmp_path)).returncode in (0, 1)
    assert ((tmp_path / "train.py").read_bytes() != TRAINER) is moved
