"""A device handed to a library that parses it itself and rejects "neuron" (safetensors, Lightning,
CTranslate2), directly or through the project's own loaders in another module, keeps the device
choice that reaches it: the consumer blocks it, and the report says which and what to do."""

from __future__ import annotations

import pytest

from pathlib import PurePath

from helpers import full_report, neuronize
from neuronize.analysis.device_sinks import device_sinks, sink_of

WEIGHTS = (b"import torch\nfrom safetensors.torch import load_file as read_weights\n\n\n"
           b"def load_encoder(path, device=\"cuda\"):\n    return read_weights(path, device=str(device))\n\n\n"
           b"def load_decoder(path, *, target):\n    return load_encoder(path, device=torch.device(target))\n\n\n"
           b"def load_on_cpu(path, device):\n    return read_weights(path, device=\"cpu\")\n")



def kept_and_reported(folder, name: str, source: bytes) -> str:
    """Write ``source`` as ``name`` in ``folder``, fix the folder, check that the file is unchanged;
    the full report, whitespace collapsed."""
    (folder / name).write_bytes(source)
    assert neuronize("fix", "--no-cache", "-q", str(folder)).returncode in (0, 1)
    assert (folder / name).read_bytes() == source
    return full_report(str(folder))

def test_loaders_that_hand_their_device_to_safetensors_through_any_number_of_project_functions():
    runner = (b"from .weights import load_decoder\n\n\ndef run(path, dev):\n    return load_decoder(path, target=dev)\n")
    found = device_sinks([(PurePath("src/app/weights.py"), WEIGHTS), (PurePath("src/app/runner.py"), runner),
                          (PurePath("tool.py"), b"def f(device): return device\n")])
    assert found == (("src.app.runner.run", ("path", "dev"), ("dev",)),
                     ("src.app.weights.load_decoder", ("path", "target"), ("target",)),
                     ("src.app.weights.load_encoder", ("path", "device"), ("device",)))
    assert sink_of("app.weights.load_encoder", found) is not None  # imported from below the `src` folder
    assert sink_of("other.load_encoder", found) is None


def test_a_device_choice_that_reaches_one_stays_and_the_others_move(tmp_path):
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "__init__.py").write_bytes(b"")
    (tmp_path / "app" / "weights.py").write_bytes(WEIGHTS)
    (tmp_path / "serve.py").write_bytes(
        b"import torch\nfrom app.weights import load_encoder\n\n\n"
        b"def main(path, device=\"cuda\" if torch.cuda.is_available() else \"cpu\"):\n"
        b"    encoder = load_encoder(path, device=torch.device(device))\n    return encoder\n")
    (tmp_path / "train.py").write_bytes(
        b"import torch\n\ndevice = \"cuda\" if torch.cuda.is_available() else \"cpu\"\n"
        b"model = torch.nn.Linear(2, 2).to(device)\n")
    before = (tmp_path / "serve.py").read_bytes(), (tmp_path / "app" / "weights.py").read_bytes()
    assert neuronize("fix", "--no-cache", "-q", str(tmp_path)).returncode in (0, 1)
    # the script's choice and the loader's own default reach safetensors: both stay; the script
    # that only places a model gains Neuron
    assert ((tmp_path / "serve.py").read_bytes(), (tmp_path / "app" / "weights.py").read_bytes()) == before
    assert b'"neuron" if on_neuron() else' in (tmp_path / "train.py").read_bytes()
    full = full_report(str(tmp_path))
    assert "which rejects \"neuron\" (`app.weights.load_encoder` asserts CUDA for any device but the CPU, checks" in full
    assert "`read_weights(path, device=str(device))`, which rejects \"neuron\" (it parses the device itself)" in full


def test_a_literal_device_handed_to_one_stays_cuda_and_the_model_beside_it_waits(tmp_path):
    full = kept_and_reported(tmp_path, "restore.py", (
        b"import torch\nfrom safetensors.torch import load_file\n\nmodel = torch.nn.Linear(2, 2).cuda()\n"
        b"model.load_state_dict(load_file(\"weights.safetensors\", device=\"cuda\"))\n"))
    assert "kept: `safetensors.torch.load_file` rejects \"neuron\" (it parses the device itself)" in full


def test_a_dispatch_whose_device_reaches_one_gains_no_neuron_branch_and_says_why(tmp_path):
    full = kept_and_reported(tmp_path, "shards.py", (
        b"import torch\nfrom safetensors import safe_open\n\n\ndef load_shard(path, name, device):\n"
        b"    if isinstance(device, torch.device):\n        if device.type == \"cuda\":\n"
        b"            device = device.index\n        elif device.type == \"cpu\":\n            device = \"cpu\"\n"
        b"    with safe_open(path, framework=\"pt\", device=device) as f:\n        return f.get_tensor(name)\n"))
    assert "dispatch over `device.type` gains no Neuron branch (this file hands its device to `safe_open(" in full


def test_an_accelerator_detection_handed_to_lightning_gains_no_neuron_branch(tmp_path):
    """Lightning's Fabric and Trainer parse an accelerator name that has no "neuron": a detection
    whose value reaches one stays, and the report says what to do there."""
    script = (b"import lightning as L\nimport torch\n\n\ndef build(model):\n    if torch.cuda.is_available():\n"
              b"        accelerator = \"cuda\"\n    else:\n        accelerator = \"cpu\"\n"
              b"    fabric = L.Fabric(accelerator=accelerator, devices=1)\n    return fabric.setup_module(model)\n")
    (tmp_path / "serve.py").write_bytes(script)
    neuronize("fix", "--no-cache", "-q", str(tmp_path))
    assert (tmp_path / "serve.py").read_bytes() == script
    (tmp_path / "train.py").write_bytes(b"import pytorch_lightning as pl\nimport torch\n\n"
                                        b"device = \"cuda\" if torch.cuda.is_available() else \"cpu\"\n"
                                        b"trainer = pl.Trainer(accelerator=device)\n")
    neuronize("fix", "--no-cache", "-q", str(tmp_path / "train.py"))
    assert b"neuron" not in (tmp_path / "train.py").read_bytes()
    full = full_report(str(tmp_path / "train.py"))
    assert 'which rejects "neuron" (it parses the device itself); give it an accelerator it knows there' in full


def test_a_speech_model_option_handed_to_faster_whisper_stays_cuda(tmp_path):
    # faster-whisper hands the device to CTranslate2, which knows cpu, cuda and auto only
    full = kept_and_reported(tmp_path, "transcribe.py", (
        b"import argparse\n\nimport torch\nfrom faster_whisper import WhisperModel\n\n"
        b"parser = argparse.ArgumentParser()\nparser.add_argument(\"--device\", default=\"cuda\")\n"
        b"args = parser.parse_args()\nasr = WhisperModel(\"small\", device=args.device, compute_type=\"float16\")\n"))
    assert "kept: this file hands its device to `WhisperModel(\"small\", device=a" in full, full


@pytest.mark.parametrize(("package", "init"), [("mmpose", "init_pose_model"), ("mmseg", "init_segmentor")])
def test_a_device_option_handed_to_an_mmcv_1_inference_api_stays(tmp_path, package, init):
    # the model goes where it is told, but each batch reaches it through mmcv's CUDA-only scatter
    full = kept_and_reported(tmp_path, "demo.py", (
        f"from argparse import ArgumentParser\n\nfrom {package}.apis import {init}\n\n"
        "parser = ArgumentParser()\nparser.add_argument('--device', default='cuda:0')\n"
        f"args = parser.parse_args()\nmodel = {init}('cfg.py', 'ckpt.pth', device=args.device.lower())\n").encode())
    assert "its inference functions move each batch to the model's device only on CUDA" in full, full


def test_a_cpu_fallback_for_a_device_kept_for_the_library_stays_too(tmp_path):
    # widened alone, the fallback would hand the kept "cuda" to CTranslate2 on Trainium
    full = kept_and_reported(tmp_path, "transcribe.py", (
        b"import argparse\n\nimport torch\nfrom faster_whisper import WhisperModel\n\n"
        b"parser = argparse.ArgumentParser()\nparser.add_argument(\"--device\", default=\"cuda\")\n"
        b"args = parser.parse_args()\nif not torch.cuda.is_available():\n    args.device = \"cpu\"\n"
        b"asr = WhisperModel(\"small\", device=args.device)\n"))
    assert "decides a CPU fallback for `args.device`, whose CUDA value stays" in full, full


SELECT = (b"import os\nimport torch\n\n\ndef pick_device(device=''):\n    device = str(device).replace('cuda:', '')\n"
          b"    if device == 'cpu':\n        os.environ['CUDA_VISIBLE_DEVICES'] = '-1'\n    elif device:\n"
          b"        assert torch.cuda.is_available() and torch.cuda.device_count() >= len(device.split(',')), device\n"
          b"    return torch.device('cuda:0' if device != 'cpu' and torch.cuda.is_available() else 'cpu')\n")


def test_a_helper_that_asserts_cuda_for_any_device_but_the_cpu_keeps_the_defaults_handed_to_it(tmp_path):
    """YOLOv5-style device pickers assert CUDA, and count CUDA devices, for whatever non-empty device
    they are given: a default handed to one stays (the report names it); a helper whose assert sits
    in its CUDA branch only accepts "neuron"."""
    cuda_branch = SELECT.replace(b"    elif device:", b"    elif device.startswith('0'):")
    found = device_sinks([(PurePath("utils/torch_utils.py"), SELECT), (PurePath("utils/other.py"),
                          cuda_branch.replace(b"pick_device", b"pick_other"))])
    assert found == (("utils.torch_utils.pick_device", ("device",), ("device",)),)
    (tmp_path / "utils").mkdir()
    (tmp_path / "utils" / "torch_utils.py").write_bytes(SELECT)
    full = kept_and_reported(tmp_path, "detector.py", (
        b"from utils.torch_utils import pick_device\n\n\nclass Detector:\n"
        b"    def __init__(self, weights, device='cuda:0'):\n        self.device = pick_device(device)\n"))
    assert "`pick_device(device)`, which rejects \"neuron\" (`utils.torch_utils.pick_device` asserts CUDA" in full
    # the picker's migrated assert (widened, its count made Neuron's beside CUDA's) still rejects it
    detector = (tmp_path / "detector.py").read_bytes()
    for _ in range(2):
        assert neuronize("fix", "--no-cache", "-q", "--unsafe-fixes", str(tmp_path)).returncode in (0, 1)
        assert (tmp_path / "detector.py").read_bytes() == detector



SCOPE = (b"import torch\n\n\nclass default_type:\n    def __init__(self, dtype=None, device=None):\n"
         b"        assert device is None or device in [\"cpu\", \"cuda\"]\n        self.dtype, self.device = dtype, device\n\n"
         b"    def __enter__(self):\n        torch.set_default_tensor_type(self.tensor_type())\n\n"
         b"    def __exit__(self, *exc):\n        torch.set_default_tensor_type(torch.FloatTensor)\n\n"
         b"    def tensor_type(self):\n        return {\"cpu\": torch.FloatTensor, \"cuda\": torch.cuda.FloatTensor}[self.device]\n")


def test_a_class_that_checks_its_device_against_hosts_it_maps_to_legacy_cuda_types_keeps_what_it_is_given(tmp_path):
    """A context manager that asserts its device is one it lists (CPU, CUDA) and maps each to a
    legacy tensor type: the list gains no Neuron entry while the CUDA type stays (NRN105), so a
    device handed to it stays CUDA's, defaults and literals alike, with the placements beside it;
    a class that only validates (no legacy type) gains "neuron" in its list and rejects nothing."""
    validating = SCOPE.replace(b"torch.cuda.FloatTensor", b"torch.FloatTensor")
    found = device_sinks([(PurePath("util/types.py"), SCOPE), (PurePath("util/plain.py"), validating)])
    assert found == (("util.types.default_type", ("dtype", "device"), ("device",)),)
    (tmp_path / "util").mkdir()
    (tmp_path / "util" / "types.py").write_bytes(SCOPE)
    full = kept_and_reported(tmp_path, "build.py", (
        b"import torch\nfrom util.types import default_type\n\n\ndef build(make, device=\"cuda\"):\n"
        b"    with default_type(dtype=torch.bfloat16, device=device):\n        return make()\n\n\n"
        b"def train(make, batch):\n    with default_type(device=\"cuda\"):\n        model = make()\n"
        b"    return model(batch.cuda())\n"))
    assert "which rejects \"neuron\" (`util.types.default_type` asserts CUDA for any device but the CPU, checks" in full
    assert "kept: rejects \"neuron\" (`util.types.default_type`" in full
