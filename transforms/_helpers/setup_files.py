"""What the rules for requirements, launchers, containers and configs (NRN6xx) share: the public
pages they cite, the TorchNeuron package families, and small pure planning functions (tested in
tests/test_plans.py)."""

from __future__ import annotations

import re
from collections.abc import Iterator

from neuronize.line_rule import TextDocument
from neuronize.sources.kinds import DEPENDENCY_KINDS, SourceKind  # noqa: F401 - DEPENDENCY_KINDS is re-exported for the rules
from neuronize.sources.requirements import (Requirement, cog_items, conda_items, normalise, pyproject_items,
                                            requirements_lines, setup_cfg_items)
from neuronize.sources.shell import CodeLine, dockerfile_lines, makefile_lines, shell_lines
from neuronize.analysis.cuda_packages import PACKAGES, Package, distribution_package

_DOCS = "https://awsdocs-neuron.readthedocs-hosted.com/en/latest"
SETUP_URL = f"{_DOCS}/setup/pytorch/index.html"
DLC_URL = f"{_DOCS}/setup/pytorch/dlc.html"
RUNTIME_URL = f"{_DOCS}/neuron-runtime/guides/configuration-guide.html"
NRT_ENV_URL = f"{_DOCS}/neuron-runtime/api/nrt-env-var-reference.html"
DISTRIBUTED_URL = f"{_DOCS}/torch/guides/torch-distributed.html"
DIST_TUTORIAL_URL = f"{_DOCS}/torch/tutorials/tutorial-torch-distributed.html"
TROUBLESHOOTING_URL = f"{_DOCS}/torch/troubleshooting.html"
#: an NVIDIA command-line tool named in a command (a path before it too: ``/usr/bin/nvidia-smi``)
NVIDIA_TOOL = re.compile(r"(?<![\w.-])(?:[\w./-]*/)?(?P<tool>nvidia-smi|nvcc|nvidia-docker|nvidia-container-cli)(?![\w.-])")
#: what does each tool's job on a Trainium host
NVIDIA_TOOL_INSTEAD = {
    "nvidia-smi": "use `neuron-ls` (devices and cores) or `neuron-top` (utilisation)",
    "nvcc": "there is no CUDA compiler on Trainium; custom kernels become NKI kernels "
            "(registered with `torch_neuronx.nki_op`)",
    "nvidia-docker": "use `docker run --device=/dev/neuron0` (one `--device` per Neuron device)",
    "nvidia-container-cli": "use `docker run --device=/dev/neuron0` (one `--device` per Neuron device)",
}
CONTAINER_URL = f"{_DOCS}/containers/tutorials/build-run-neuron-container.html"
TORCH_INDEX_URL = f"{_DOCS}/torch/index.html"

#: kinds that run shell commands
COMMAND_KINDS = (SourceKind.SHELL, SourceKind.DOCKERFILE, SourceKind.MAKEFILE)
CONFIG_KINDS = (SourceKind.YAML_CONFIG, SourceKind.JSON_CONFIG)

#: PyTorch minor version -> the torch-neuronx family built for it (Neuron 2.33 setup page)
TORCH_NEURONX_FAMILIES = {"2.13": "2.13.*", "2.14": "2.14.*"}
#: the torch distributions whose CUDA builds carry a ``+cuXXX`` local version
TORCH_DISTRIBUTIONS = frozenset({"torch", "torchvision", "torchaudio"})

#: what one process stands for on Trainium, for launcher messages
CORES_PER_INSTANCE = ("one process per logical NeuronCore: 64 on a trn2.48xlarge (16 Trainium2 chips x 4 "
                      "logical cores), 4 on a trn2.3xlarge (1 chip); the figure for Trn3 is not established here")
#: the path forward for a CUDA image or toolkit
NEURON_IMAGE = ("start from a Neuron deep-learning container (the PyTorch Training (TorchNeuron) image) or the "
                "single-framework Neuron DLAMI, which ship torch-neuronx and the Neuron runtime")

_LOCAL_CUDA = re.compile(r"^cu\d+$")
_CUDA_INDEX = re.compile(r"/whl/(?:nightly/|test/)?cu\d+/?$|/whl/(?:nightly/|test/)?cu\d+/")


def is_cuda_local_version(local: str) -> bool:
    """``cu121`` (a CUDA build), not ``cpu`` or ``rocm6.1``."""
    return bool(_LOCAL_CUDA.match(local))


def is_cuda_index(url: str) -> bool:
    """A PyTorch wheel index of CUDA builds (``https://download.pytorch.org/whl/cu121``)."""
    return bool(_CUDA_INDEX.search(url))


def torch_minor(version: str) -> str | None:
    """``2.13`` from ``2.13.0``, ``2.13.*`` or ``2.13.0+cu121``; None for anything else."""
    match = re.match(r"^(\d+)\.(\d+)(?:[.*]|$)", version)
    return f"{match.group(1)}.{match.group(2)}" if match else None


def neuronx_family(version: str | None) -> str | None:
    """The ``torch-neuronx`` family matching a pinned torch version, or None if there is none."""
    minor = torch_minor(version) if version else None
    return TORCH_NEURONX_FAMILIES.get(minor) if minor else None


def families_text() -> str:
    return ", ".join(f"torch {k}.x -> `torch-neuronx=={v}`" for k, v in TORCH_NEURONX_FAMILIES.items())


def code_lines(doc: TextDocument) -> Iterator[CodeLine]:
    """The lines of shell code of a script, a Dockerfile or a Makefile (comments and here-documents
    left out; a Makefile's own lines are kept, marked ``MAKE``: their exports reach the recipes)."""
    if doc.kind is SourceKind.DOCKERFILE:
        return dockerfile_lines(doc.lines)
    if doc.kind is SourceKind.MAKEFILE:
        return makefile_lines(doc.lines)
    return shell_lines(doc.lines)


def make_assignment(name: str) -> re.Pattern[str]:
    """A Makefile variable assignment of the variable(s) ``name`` (a regular expression, captured as
    ``name``): ``NCCL_DEBUG = INFO``, ``export CUDA_VISIBLE_DEVICES ?= 0``, ``override X := 1``."""
    return re.compile(rf"^[ \t]*(?:(?:export|override)[ \t]+)*(?P<name>{name})[ \t]*(?:::|[:?+!])?=")


#: a launcher that starts one process per device: under it, the neuron process group pins each
#: process to its own core
LAUNCHERS = re.compile(r"\b(?:torchrun|torch\.distributed\.(?:run|launch)|accelerate[ \t]+launch|deepspeed)\b")


def launches_processes(doc: TextDocument) -> bool:
    return any(LAUNCHERS.search(line.code) for line in code_lines(doc))


def dependency_items(doc: TextDocument) -> Iterator[object]:
    """The requirements (and index options, conda packages) of a dependency file of any kind."""
    if doc.kind is SourceKind.PYPROJECT:
        return pyproject_items(doc.lines)
    if doc.kind is SourceKind.CONDA:
        return conda_items(doc.lines)
    if doc.kind is SourceKind.SETUP_CFG:
        return setup_cfg_items(doc.lines)
    if doc.kind is SourceKind.COG:
        return cog_items(doc.lines)
    return requirements_lines(doc.lines)


def plain_version(item: Requirement) -> str | None:
    """The pinned version without its local part (``2.13.0`` from ``==2.13.0+cu121``), or None."""
    return item.version.split("+")[0] if item.version else None


#: the first release of each torch distribution with a TorchNeuron family (torch 2.13: ``torch-neuronx==2.13.*``)
_FIRST_WITH_NEURON = {"torch": (2, 13), "torchvision": (0, 28), "torchaudio": (2, 13)}


def before_neuron(item: Requirement) -> bool:
    """``item`` pins a torch distribution to a release before any TorchNeuron family: the plain pin
    gains Trainium nothing."""
    numbers = re.match(r"(\d+)\.(\d+)", plain_version(item) or "")
    return numbers is not None and (int(numbers[1]), int(numbers[2])) < _FIRST_WITH_NEURON.get(item.key, (0, 0))


def cuda_build_message(item: Requirement) -> str | None:
    """The finding on a ``torch`` / ``torchvision`` / ``torchaudio`` pinned to a ``+cuXXX`` build (NRN601),
    or None for any other requirement."""
    if item.key not in TORCH_DISTRIBUTIONS or item.local_start < 0 or not is_cuda_local_version(item.local):
        return None
    return (f"`{item.name}` is pinned to the CUDA build `+{item.local}`; pin the plain release "
            f"`{plain_version(item) or ''}` and add the matching `torch-neuronx` family for Trainium")


#: the table of CUDA-only packages, by distribution name as PEP 503 compares it
CUDA_ONLY_DISTRIBUTIONS = {normalise(name): package for name, package in PACKAGES.items() if package.reported}


def cuda_only_package(key: str) -> tuple[str, str] | None:
    """(what it is, the path forward) for a CUDA-only distribution, or None."""
    if key.startswith("nvidia-") and key not in ("nvidia-ml-py", "nvidia-ml-py3"):
        return ("an NVIDIA CUDA runtime wheel", "leave it out (torch-neuronx brings the Neuron runtime "
                "libraries it needs)")
    if key.startswith(("cupy-cuda", "cupy-rocm")):
        key = "cupy"
    if key in ("nvidia-ml-py", "nvidia-ml-py3"):
        key = "pynvml"
    # a project named after its module (`flash-attn`), else one of the entry's PyPI names (`cuml-cu12`)
    package: Package | None = CUDA_ONLY_DISTRIBUTIONS.get(key) or PACKAGES.get(distribution_package(key) or "")
    if package is None:
        return None
    return (f"{package.what} ({package.verdict})", package.instead)


def cuda_only_message(item: Requirement) -> str | None:
    """The finding on a requirement of a CUDA-only package (NRN603), or None."""
    found = cuda_only_package(item.key)
    if found is None:
        return None
    what, instead = found
    return (f"`{item.name}` is {what}; on Trainium: {instead}; keep it in a CUDA-only requirements file if "
            "CUDA hosts need it")


def torch_family_advice(version: str | None) -> tuple[str | None, str]:
    """For a torch pin (its plain version, None if unpinned): the ``torch-neuronx`` family that
    matches it (None if there is none) and the finding to report when the family is not added in
    place (NRN604)."""
    family = neuronx_family(version)
    if version is None:
        return None, (f"torch is not pinned to a version TorchNeuron is built for ({families_text()}); "
                      "pin it and add the matching `torch-neuronx` family for Trainium")
    if family is None:
        return None, (f"torch {torch_minor(version) or version} has no TorchNeuron family (Neuron 2.33: "
                      f"{families_text()}); move to one of those versions to run on Trainium")
    return family, (f"add `torch-neuronx=={family}` (the TorchNeuron family for torch "
                    f"{torch_minor(version)}) next to this requirement for Trainium")


#: a requirements file named for another framework (`requirements_flax.txt`, `requirements-jax.txt`)
OTHER_FRAMEWORK_FILE = re.compile(r"(?:^|[-_.])(?:flax|jax|tf|tensorflow|keras|mlx|paddle)(?:[-_.]|$)", re.IGNORECASE)
#: packages that make an environment another framework's (a JAX-only conda environment)
OTHER_FRAMEWORKS = frozenset({"jax", "jaxlib", "flax", "tensorflow", "tensorflow-gpu", "tf-nightly", "mlx",
                              "paddlepaddle", "paddlepaddle-gpu"})
TORCH = frozenset({"torch", "pytorch", "torchvision", "torchaudio", "pytorch-cuda", "lightning",
                   "pytorch-lightning"})


def other_framework(doc: TextDocument, names: set[str]) -> bool:
    """The file serves another framework: named for it (`requirements_flax.txt`), or it lists that
    framework and no PyTorch (a JAX-only environment)."""
    stem = doc.path.replace("\\", "/").rsplit("/", 1)[-1].rsplit(".", 1)[0]
    return (bool(OTHER_FRAMEWORK_FILE.search(stem)) or bool(names & OTHER_FRAMEWORKS)) and not names & TORCH
