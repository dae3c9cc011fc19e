"""NRN606: CUDA-specific requirements in ``setup.py`` (``setup(install_requires=[...], extras_require={...})``)."""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from neuronize.sources.requirements import Requirement, parse_specifier
from neuronize.transform import Evidence, Example, Safety, Transform
from neuronize.transforms._setup_files import (SETUP_URL, TORCH_INDEX_URL, cuda_build_message, cuda_only_message,
                                               plain_version, torch_family_advice)

#: the ``setup()`` functions whose keyword arguments declare dependencies
_SETUP_CALLS = frozenset({"setuptools.setup", "distutils.core.setup"})


def _literal_strings(node: cst.BaseExpression) -> Iterator[cst.SimpleString]:
    """The string literals of a list or tuple literal (anything else, a name or a call, is not followed)."""
    if isinstance(node, (cst.List, cst.Tuple)):
        for element in node.elements:
            if isinstance(element, cst.Element) and isinstance(element.value, cst.SimpleString):
                yield element.value


def declared_requirements(call: cst.Call) -> Iterator[tuple[cst.SimpleString, Requirement]]:
    """The requirements written as string literals in ``install_requires=[...]`` and the lists of
    ``extras_require={...: [...]}`` of a ``setup()`` call, each with its literal."""
    for arg in call.args:
        keyword = arg.keyword.value if arg.keyword else None
        if keyword == "install_requires":
            lists: list[cst.BaseExpression] = [arg.value]
        elif keyword == "extras_require" and isinstance(arg.value, cst.Dict):
            lists = [e.value for e in arg.value.elements if isinstance(e, cst.DictElement)]
        else:
            continue
        for literal in (s for value in lists for s in _literal_strings(value)):
            text = literal.evaluated_value
            requirement = parse_specifier(text, 0, 0) if isinstance(text, str) else None
            if requirement is not None:
                yield literal, requirement


class SetupPyRequirement(Transform):
    """Finds CUDA-specific requirements declared in `setup.py`: CUDA torch builds, CUDA-only packages, a torch pin without its TorchNeuron family.

    What it does:
        Reads the string literals of `install_requires=[...]` and of the lists in
        `extras_require={...}` of a `setuptools.setup(...)` call (a list built elsewhere is not
        followed) and reports what the requirements-file rules report: a `torch` /
        `torchvision` / `torchaudio` pinned to a `+cuXXX` build (as `cuda-torch-build`, NRN601),
        CUDA-only packages such as `nvidia-*` wheels, `cupy-cuda*` and flash-attn (as
        `cuda-only-requirement`, NRN603), and a torch pin with no `torch-neuronx` family next to
        it (as `torch-neuronx-family`, NRN604), with the same messages.

    Why on TorchNeuron:
        A package installed with `pip install .` pulls these requirements onto the Trainium host:
        a `+cu121` build exists only on PyTorch's CUDA wheel index, the CUDA-only packages hold
        CUDA kernels or runtime libraries that do not run on Trainium, and TorchNeuron needs the
        `torch-neuronx` family built for the pinned PyTorch version.

    Example:
        setup(name="demo", install_requires=["torch==2.13.0+cu121", "flash-attn"])

    Use instead:
        setup(name="demo", install_requires=["torch==2.13.0"],
              extras_require={"trainium": ["torch-neuronx==2.13.*"]})

    Fix safety:
        Report only: `setup.py` is code, and which requirements CUDA hosts still need (an
        extra of their own, a separate requirements file) is the maintainer's choice.

    Evidence:
        As for the requirements-file rules: DOC for the TorchNeuron families (Neuron setup page);
        INF that the plain release is the build to pin and that the CUDA-only packages do not
        run on Trainium.
    """

    id = "NRN606"
    name = "setup-py-requirement"
    safety = Safety.REPORT_ONLY
    evidence = Evidence.INF
    section = "setup"
    effort = "low"
    tokens = (b"install_requires", b"extras_require")
    references = (SETUP_URL, TORCH_INDEX_URL)
    examples = (
        Example('from setuptools import setup\n'
                'setup(name="demo", install_requires=["torch==2.13.0+cu121", "flash-attn", "numpy"])\n'),
        Example('import setuptools\nsetuptools.setup(extras_require={"gpu": ["nvidia-nccl-cu12"]})\n'),
        Example('from setuptools import setup\nsetup(install_requires=["torch>=2.0", "tqdm"])\n'),
    )

    def visit_Call(self, node: cst.Call) -> None:
        if self.ctx.qualify(node.func) not in _SETUP_CALLS:
            return
        declared = list(declared_requirements(node))
        has_family = any(requirement.key == "torch-neuronx" for _, requirement in declared)
        for literal, requirement in declared:
            for message in (cuda_build_message(requirement), cuda_only_message(requirement)):
                if message is not None:
                    self.report(literal, message)
            if requirement.key == "torch" and not has_family:
                self.report(literal, torch_family_advice(plain_version(requirement))[1], evidence=Evidence.DOC)
