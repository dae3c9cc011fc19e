"""NRN606: CUDA-specific requirements in ``setup.py`` (``setup(install_requires=[...], extras_require={...})``)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence

import libcst as cst

from neuronize.sources.requirements import Requirement, parse_specifier
from neuronize.analysis.syntax import iter_statements
from neuronize.transform import Evidence, Example, Safety, Transform
from neuronize.transforms._helpers.setup_files import (SETUP_URL, TORCH_INDEX_URL, cuda_build_message, cuda_only_message,
                                               plain_version, torch_family_advice)

#: the ``setup()`` functions whose keyword arguments declare dependencies
_SETUP_CALLS = frozenset({"setuptools.setup", "distutils.core.setup"})


Named = Mapping[str, Sequence[cst.BaseExpression]]


def named_values(module: cst.Module) -> dict[str, list[cst.BaseExpression]]:
    """The values the module's own code (not a function's or a class's) assigns to each plain name,
    ``+=`` included: ``REQUIRED = [...]`` then ``if ...: REQUIRED += [...]`` gives both lists."""
    found: dict[str, list[cst.BaseExpression]] = {}
    for stmt in iter_statements([s for s in module.body if not isinstance(s, (cst.FunctionDef, cst.ClassDef))]):
        if not isinstance(stmt, cst.SimpleStatementLine):
            continue
        for small in stmt.body:
            if isinstance(small, cst.Assign):
                pairs = [(t.target, small.value) for t in small.targets]
            elif isinstance(small, cst.AugAssign) and isinstance(small.operator, cst.AddAssign):
                pairs = [(small.target, small.value)]
            else:
                continue
            for target, value in pairs:
                if isinstance(target, cst.Name):
                    found.setdefault(target.value, []).append(value)
    return found


def _parts(node: cst.BaseExpression, named: Named, depth: int = 0) -> Iterator[cst.BaseExpression]:
    """``node`` with names replaced by the values the module assigns them and ``a + b`` split."""
    if isinstance(node, cst.Name) and depth < 4:
        for value in named.get(node.value, ()):
            yield from _parts(value, named, depth + 1)
    elif isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Add):
        yield from _parts(node.left, named, depth)
        yield from _parts(node.right, named, depth)
    else:
        yield node


def _literal_strings(node: cst.BaseExpression) -> Iterator[cst.SimpleString]:
    """The string literals of a list or tuple literal (a call, such as reading a requirements
    file, is not followed: that file is read as a requirements file)."""
    if isinstance(node, (cst.List, cst.Tuple)):
        for element in node.elements:
            if isinstance(element, cst.Element) and isinstance(element.value, cst.SimpleString):
                yield element.value


def declared_requirements(call: cst.Call, named: Named | None = None) -> Iterator[tuple[cst.SimpleString, Requirement]]:
    """The requirements written as string literals in ``install_requires=[...]`` and the lists of
    ``extras_require={...: [...]}`` of a ``setup()`` call, each with its literal; ``named``
    (:func:`named_values`) follows the names the module builds them in."""
    named = named or {}
    seen: set[int] = set()  # a list named twice (`extras["all"] = BASE + GPU`) is reported once
    for arg in call.args:
        keyword = arg.keyword.value if arg.keyword else None
        if keyword == "install_requires":
            lists = list(_parts(arg.value, named))
        elif keyword == "extras_require":
            lists = [part for table in _parts(arg.value, named) if isinstance(table, cst.Dict)
                     for e in table.elements if isinstance(e, cst.DictElement) for part in _parts(e.value, named)]
        else:
            continue
        for literal in (s for value in lists for s in _literal_strings(value)):
            text = literal.evaluated_value
            requirement = parse_specifier(text, 0, 0) if isinstance(text, str) else None
            if requirement is not None and id(literal) not in seen:
                seen.add(id(literal))
                yield literal, requirement


class SetupPyRequirement(Transform):
    """Finds CUDA-specific requirements declared in `setup.py`: CUDA torch builds, CUDA-only packages, a torch pin without its TorchNeuron family.

    What it does:
        Reads the string literals of `install_requires=[...]` and of the lists in
        `extras_require={...}` of a `setuptools.setup(...)` call, also through the names the
        module builds them in (`REQUIRED = [...]`, `REQUIRED += [...]`, `base + extra`; a list read
        from a file at run time is not followed: that file is read as a requirements file) and reports what the requirements-file rules report: a `torch` /
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
        declared = list(declared_requirements(node, named_values(self.ctx.module)))
        has_family = any(requirement.key == "torch-neuronx" for _, requirement in declared)
        for literal, requirement in declared:
            for message in (cuda_build_message(requirement), cuda_only_message(requirement)):
                if message is not None:
                    self.report(literal, message)
            if requirement.key == "torch" and not has_family:
                self.report(literal, torch_family_advice(plain_version(requirement))[1], evidence=Evidence.DOC)
