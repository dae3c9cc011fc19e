"""The one table of CUDA-only packages (neuronize/analysis/cuda_packages.py) and `neuronize explain packages`."""

from __future__ import annotations

import dataclasses
import importlib.util
import sys
from pathlib import Path

import pytest

from neuronize.analysis.cuda_packages import (CUDA_ONLY_PACKAGES, PACKAGES, Path as Forward, imported_package,
                                            is_cuda_extension_module)
from tests.helpers import neuronize


def test_every_package_has_a_path_forward_and_is_frozen():
    for name, package in PACKAGES.items():
        assert package.what and package.instead and isinstance(package.path, Forward), name
        with pytest.raises(dataclasses.FrozenInstanceError):
            package.what = "x"  # type: ignore[misc]


@pytest.mark.parametrize("module, names, entry", [
    ("deep_ep", (), "deep_ep"),
    ("fla.ops.gla", ("chunk_gla",), "fla"),
    ("torchao.float8", ("convert_to_float8_training",), "torchao.float8"),
    ("torchao.quantization", ("quantize_",), "torchao"),
    ("vllm", ("_custom_ops",), "vllm._custom_ops"),
    ("torch.distributed", ("_symmetric_memory",), "torch.distributed._symmetric_memory"),
    ("kernels", ("get_kernel",), "kernels"),
    ("kernels", ("attention",), None),  # a project's own `kernels` package
    ("numba", ("cuda", "njit"), "numba.cuda"),
    ("numba", ("njit",), None),
])
def test_an_import_names_its_table_entry(module, names, entry):
    assert imported_package(module, names) == entry


def test_a_shared_top_level_name_is_no_cuda_only_path():
    # submodule entries of packages that also run elsewhere must not make all of them CUDA-only
    assert not {"torch", "torchao", "kernels"} & CUDA_ONLY_PACKAGES
    assert {"deep_ep", "megablocks", "fbgemm_gpu"} <= CUDA_ONLY_PACKAGES


def test_compiled_extension_modules_by_name():
    assert is_cuda_extension_module("selective_scan_cuda")
    assert is_cuda_extension_module("xentropy_cuda_lib") and is_cuda_extension_module("fused_cuda_kernels.ops")
    assert not is_cuda_extension_module("utils.is_cuda") and not is_cuda_extension_module("cuda_utils")
    assert not is_cuda_extension_module("torch.cuda") and not is_cuda_extension_module("cuda")


def test_explain_packages_and_nrn903_print_the_table():
    table = neuronize("explain", "packages")
    assert table.returncode == 0
    text = table.stdout.decode()
    for heading in ("Path forward: stock PyTorch", "Path forward: NKI", "Path forward: none yet"):
        assert heading in text
    assert "deep_ep:" in text and "`*_cuda`" in text
    assert "deep_ep:" in neuronize("explain", "NRN903").stdout.decode()


def _harness():
    spec = importlib.util.spec_from_file_location("corpus_harness", Path(__file__).parents[1] / "scripts/corpus_harness.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["corpus_harness"] = module
    spec.loader.exec_module(module)
    return module


def test_corpus_harness_finds_cuda_code_left_without_a_finding():
    harness = _harness()
    source = (b"import torch as T\nfrom torch import cuda\nimport flash_attn\nimport scan_cuda\n"
              b"T.cuda.empty_cache()\nx = m.cuda()\nd = 'cuda:1'\nb = 'nccl'\ncuda.synchronize()\n"
              b"ok = 'cuda is fast'\n")
    assert harness.cuda_sites(source) == [
        (3, "CUDA-only import"), (4, "CUDA-only import"), (5, "torch.cuda"), (6, ".cuda()"),
        (7, "device string"), (8, "nccl"), (9, "torch.cuda")]
    left = harness.uncovered_sites(source, [(None, 3, 5), (None, 9, 9)])
    assert [(line, kind) for _, line, kind in left] == [(6, ".cuda()"), (7, "device string"), (8, "nccl")]


def test_top_level_packages_of_a_run():
    from neuronize.analysis.project_packages import top_level_packages

    paths = ["mamba_ssm/__init__.py", "mamba_ssm/ops/__init__.py", "src/kit/__init__.py", "tests/test_a.py",
             "setup.py"]
    assert top_level_packages(paths) == ("kit", "mamba_ssm")


def test_a_cuda_only_librarys_own_repository_reports_its_dependencies_not_itself(tmp_path):
    (tmp_path / "mamba_ssm").mkdir()
    (tmp_path / "mamba_ssm" / "__init__.py").write_bytes(b"import causal_conv1d\n")
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_scan.py").write_bytes(b"from mamba_ssm.ops import scan\nimport causal_conv1d\n")
    report = neuronize("check", "--output-format", "json", ".", cwd=tmp_path)
    import json

    where = sorted((f["path"], f["line"]) for f in json.loads(report.stdout)["findings"])
    assert where == [("mamba_ssm/__init__.py", 1), ("tests/test_scan.py", 2)]
