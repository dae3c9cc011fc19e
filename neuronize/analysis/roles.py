"""What code is *for*: the roles in which CUDA is the point, computed once per file.

A rule that sees ``torch.cuda.X`` knows how to migrate it, not whether it should: in a training
script it should; in a Triton wrapper, a test skipped unless CUDA, a module that drives Inductor,
a CUDA-graph manager or a ``FakeTensorMode`` block the CUDA name *is* the point, and an edit breaks
what worked (a Neuron tensor reaches a Triton launch, a CUDA test no longer tests CUDA, a fake
``"cuda"`` label that worked on a CPU host becomes a ``"neuron"`` that raises). These roles are
facts about the file, like its import table: computed lazily, once, from byte tests on the source,
the import table and a walk of statements (never of expressions), and asked by
:meth:`neuronize.transform.Transform.fix`, which turns a fix inside such code into a report that
carries the role's reason. Report-only findings are unaffected.

Granularity, chosen by what real repositories showed (a hunk-by-hunk review of six of them):

- GPU-kernel code: the **file**. A module that imports a kernel language (Triton, TileLang, CuTe,
  Helion...), a package's kernel module (``mamba_ssm.ops.triton.ssd``), a compiled ``*_cuda``
  extension or builds one with ``cpp_extension.load`` holds the
  kernels *and* their wrappers, scratch allocators, ``is_cuda`` asserts, self-tests and benchmarks,
  all bound to CUDA; a function boundary would miss the wrappers, which are the edits that break.
  In another module, the **function or class** such a file imports (the device helper its
  wrappers call): its devices are the kernels' inputs.
- Tests: the **file** for test files (``test_*.py`` and ``*_test.py`` holding tests or importing a
  test framework, ``conftest.py``, files under ``tests/`` or ``test/``): tests are the spec of what worked, so they are not edited at all (in the
  review nearly every edit in a test file was wrong, and the few right ones were trivial); plus,
  anywhere, a module gated on CUDA (``pytestmark``, a module-level skip) and a function or class
  skipped unless CUDA (a decorator or marker naming cuda/gpu, an early ``if not
  torch.cuda.is_available(): pytest.skip(...)``).
- Inductor-driving code: the **file** when it imports Inductor internals (``compile_fx``,
  ``standalone_compile``, ``fx_passes``, custom graph passes); such a module exists to drive
  Inductor; also when it imports a module named for that work (a project's ``precompile``,
  ``jit_backend`` or ``*inductor*`` module: the compile entry points built on it). Setting or
  patching ``torch._inductor.config`` alone is not this role (a training
  script tuning its compile does that, and there the settings can go). A branch taken when the backend is ``"inductor"``:
  the **``if``** statement.
- CUDA-graph managers: the **function or class** that uses ``torch.cuda.graph``/``CUDAGraph``,
  ``make_graphed_callables``, ``graph_pool_handle`` or cudagraph trees, or whose name says it
  wraps CUDA graphs (``wrap_with_cuda_graph``); a class as a whole, because its capture stream is
  made in one method and used in another.
- Code named for CUDA: the **function or class** whose name says CUDA (``to_cuda``, a ``cuda()``
  method mirroring ``Tensor.cuda()``, ``CUDA_Accelerator``, ``_set_cuda_rng_state``): its callers
  ask for CUDA by that name, so its body keeps CUDA; Neuron gets a function of its own (not a
  function that asks whether CUDA is there, ``cuda_variable``: its callers ask for the GPU when
  there is one, a choice that gains Neuron). Also the
  **body of an ``if``** on a setting the user chose CUDA with (``if args.cuda:``, ``if
  self.use_gpu:``): a Neuron path put in front of the ``if`` is no edit inside it.
- Code built on CUDA helpers of another package: the **file** that imports a function named for
  CUDA work from a dependency (``cuda_memory_usage``, ``benchmark_cuda_function_in_microseconds``):
  a benchmark harness that times and measures CUDA through it; its devices feed those helpers.
  A question whether CUDA is there (``is_torch_cuda_available``) serves a choice and is not this.
- Fake tensors: the **``with`` block or function** under ``FakeTensorMode`` / ``fake_mode``.
- CUDA-only libraries (the package table of ``neuronize.analysis.cuda_packages``): an **argument**
  of a call into one (``xformers.ops.memory_efficient_attention(torch.randn(..., device="cuda"))``,
  ``te.Linear(..., device=torch.cuda.current_device())``): the library runs only on CUDA, so the
  CUDA value handed to it is what it needs; and the **function or class** that uses a serving
  engine that owns its device (vLLM: its CUDA-graph capture, cache flushes and streams are the
  engine's), as a class as a whole (the engine is built in one method and fed in another).

A fix a rule defers to ``leave_Module`` (after the walk) sees only the file-level roles.
torch_xla TPU code is a separate fact (:attr:`FileRoles.tpu`), asked only by the XLA-era rule.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property
from pathlib import PurePosixPath
from typing import Protocol
from collections.abc import Callable, Iterable, Sequence

import libcst as cst

from neuronize.analysis.cuda_packages import CUDA_ONLY_PACKAGES, PACKAGES
from neuronize.analysis.custom_ops import compiled_namespace
from neuronize.analysis.kernel_imports import (
    JIT_BUILDERS, KERNEL_LOADING, KERNEL_MADE, KERNEL_PACKAGES, extension_or_kernel_module, kernel_reason)
from neuronize.analysis.syntax import (
    ImportedName, assigned_value, dotted_name, imported_names, is_main_test, is_script, iter_statements, module_matches,
    named_parameters, scoped_statements)
from neuronize.analysis.walk import visit

KERNEL, TEST, INDUCTOR, CUDA_GRAPH, FAKE = "gpu-kernel", "cuda-test", "inductor", "cuda-graph", "fake-tensor"
LIBRARY = "cuda-library"
CUDA_NAMED = "cuda-named"
CUDA_FLAG = "cuda-flag"
#: a module that imports the project's GPU-kernel modules (neuronize/analysis/kernel_imports.py)
KERNEL_IMPORTER = "kernel-importer"
CUDA_HELPERS = "cuda-helpers"
#: a module that asks the CUDA device about itself when imported (``torch.cuda.get_device_capability()``)
CUDA_AT_IMPORT = "cuda-at-import"
#: a module of another deep-learning framework (PaddlePaddle, TensorFlow, JAX...) that never imports torch
OTHER_FRAMEWORK = "other-framework"
#: a module in a folder of another host's implementation (``backends/ascend/``, ``backends/dlinfer/``)
OTHER_HOST = "other-host"
#: a module of an engine implemented once per vendor, with no Neuron implementation
#: (neuronize/analysis/vendor_engines.py)
VENDOR_ENGINE = "vendor-engine"

NKI_GUIDE = "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/guides/how-to-work-with-nki.html"
_MESSAGES = {
    KERNEL: "not applied: {where} holds GPU-kernel code ({reason}), where CUDA is the point; port the "
            f"kernel to NKI by hand ({NKI_GUIDE})",
    TEST: "not applied: {where} is test code ({reason}); tests are the spec of what worked and are left "
          "as they are: port a CUDA-only test to Neuron, or skip it there, by hand",
    INDUCTOR: "not applied: {where} drives Inductor ({reason}), which Neuron does not use; keep it for "
              "CUDA/CPU and give Neuron a path of its own",
    CUDA_GRAPH: "not applied: {where} manages CUDA graphs ({reason}); its streams, events and memory "
                "calls belong to the capture",
    LIBRARY: "not applied: {where} serves a CUDA-only library ({reason}), which needs the CUDA value; "
             "keep it, and replace the library by hand where Neuron must run this code",
    CUDA_NAMED: "not applied: {where} is named for CUDA ({reason}); keep it, and give Neuron a "
                "function of its own where they should take Neuron",
    KERNEL_IMPORTER: "not applied: {where} imports GPU-kernel code ({reason}), which has no Neuron "
                     "kernels: on Neuron it fails to import, or at its first kernel; make that import "
                     f"optional (or port those kernels to NKI: {NKI_GUIDE}) before moving it",
    CUDA_HELPERS: "not applied: {where} is built on another package's CUDA helpers ({reason}), which "
                  "have no Neuron path; replace them by hand before moving its device",
    CUDA_AT_IMPORT: "not applied: {where} asks the CUDA device about itself when it is imported ({reason}), "
                    "which raises on every host without CUDA, so none of it runs on Neuron; guard that probe "
                    "(or move it into the code that needs it) by hand before moving its devices",
    CUDA_FLAG: "not applied: {where} runs when the user chose CUDA ({reason}), so it keeps CUDA; give "
               "Neuron a setting or a branch of its own by hand",
    OTHER_FRAMEWORK: "not applied: {where} is not PyTorch code ({reason}); its `.cuda()` and devices are that "
                     "framework's, which neuronize does not migrate",
    OTHER_HOST: "not applied: {where} is another host's implementation ({reason}); it keeps its devices: "
                "give Neuron an implementation of its own beside it",
    VENDOR_ENGINE: "not applied: {where} is part of an engine that picks among its own implementations by "
                   "device ({reason}), and has none for Neuron: its devices are keys of that choice; give "
                   "Neuron an implementation beside the others first",
    FAKE: "not applied: {where} builds fake tensors ({reason}): there the device is a label that works "
          "on any host, while \"neuron\" raises without torch-neuronx",
}

#: folders that hold CUDA's implementation of something the project also implements elsewhere
_CUDA_FOLDERS = frozenset({"cuda", "cutlass", "triton"})
#: folders that hold another host's implementation (vendor backends and their device runtimes)
_OTHER_HOST_FOLDERS = frozenset({"ascend", "npu", "dlinfer", "rocm", "hip", "xpu", "mps", "camb", "maca", "musa",
                                 "mlu", "hpu", "habana", "gaudi", "tpu"})

#: deep-learning frameworks whose tensors have a `.cuda()` of their own
_OTHER_FRAMEWORKS = ("paddle", "tensorflow", "jax", "mindspore", "oneflow", "mxnet")


#: modules whose import ties torch_xla code to the XLA-era torch-neuronx (not TPU code)
NEURON_XLA = ("torch_neuronx", "neuronx_distributed", "libneuronxla", "optimum.neuron")

#: signs that a file's torch_xla code serves TPUs (or any XLA device), not the XLA-era torch-neuronx
_TPU = re.compile(rb"\bis_torch_xla_available\b|\bXLA_AVAILABLE\b|\btpu\b|\bTPU\b"
                  rb"|\b\w*_tpu(?:_\w*)?\b|\btpu_\w+", re.IGNORECASE)  # `is_torch_tpu_available`, `tpu_cores`
_TEST_DIRS = frozenset({"tests", "test"})
_GATE_WORDS = ("skip", "mark", "requir", "need", "only")
CUDA_WORDS = re.compile(r"cuda|gpu", re.IGNORECASE)
#: a bare `return` is not enough: `if not torch.cuda.is_available(): return` also guards settings
_SKIP_BODY = re.compile(r"skip", re.IGNORECASE)

_INDUCTOR_TEXT = re.compile(rb"\b(standalone_compile|compile_fx|post_grad_custom_\w+|pre_grad_custom_\w+)\b")
_INDUCTOR_BRANCH = re.compile(r"""["']inductor["']""")
#: the last name of a module that drives Inductor (a project's AOT precompile or compile backend)
_INDUCTOR_MODULE = re.compile(r"^(?:\w*inductor\w*|\w*precompile\w*|jit_backend|compile_fx)$")
#: CUDA device probes: the device handed to one is asked about as a CUDA device
_CUDA_PROBES = frozenset({"torch.cuda.get_device_capability", "torch.cuda.get_device_properties"})
_PROBE_BYTES = re.compile(rb"^\w+\s*=.*\b(?:get_device_capability|get_device_properties)\(", re.MULTILINE)
#: serving engines that own the device they run on: a module importing one is their wrapper
ENGINE_PACKAGES = ("vllm", "sglang", "tensorrt_llm")
#: the CUDA-only packages of the package table, by their full names (``deepspeed.ops``)
_CUDA_ONLY_BY_NAME = tuple(name for name, package in PACKAGES.items() if package.cuda_only)
#: an import inside a block (a function's, most often): a lazy import of kernel code
_INDENTED_IMPORT = re.compile(rb"^[ \t]+(?:import|from)[ \t]", re.MULTILINE)
_GRAPH_BYTES = (b"CUDAGraph", b"cuda.graph", b"make_graphed_callables", b"graph_pool_handle", b"cudagraph_trees")
#: ``torch._inductor.cudagraph_trees`` (Inductor's CUDA-graph machinery), not the setting
#: ``torch._inductor.config.triton.cudagraph_trees = False``, which only configures Inductor (NRN303)
_GRAPH = re.compile(r"\bCUDAGraph\b|\bcuda\.graph\(|\bmake_graphed_callables\b|\bgraph_pool_handle\b"
                    r"|(?<!triton\.)\bcudagraph_trees\b")
_GRAPH_SHOWN = {"CUDAGraph": "uses `torch.cuda.CUDAGraph`", "cuda.graph(": "captures with `torch.cuda.graph`"}
_GRAPH_NAME = re.compile(r"cuda_?graph", re.IGNORECASE)
#: a function or class named for CUDA (``to_cuda``, ``cuda``, ``CUDA_Accelerator``, ``_set_cuda_rng_state``)
_CUDA_NAMED_BYTES = re.compile(rb"(?:def|class)[ \t]+\w*(?:cuda|CUDA|Cuda)")
_CUDA_NAME = re.compile(r"(?:^|_)cuda(?:_|$)|CUDA|Cuda")
#: a function of another package named for CUDA work (``cuda_memory_usage``,
#: ``benchmark_cuda_function``); one that asks whether CUDA is there (``is_cuda_available``) serves a choice
_CUDA_WORK = re.compile(r"(?:^|_)cuda(?:_|$)")
_CUDA_QUESTION = re.compile(r"^(?:is|has|can|use|supports?)_|avail|enabled")
#: CUDA-only libraries whose folder name is their own (not a common word such as ``kernels``): a
#: file under such a folder in a folder of vendored code is the library's source
VENDORED_LIBRARIES = frozenset({
    "deepspeed", "apex", "flash_attn", "xformers", "bitsandbytes", "transformer_engine", "mamba_ssm",
    "megablocks", "flashinfer", "liger_kernel", "auto_gptq", "fbgemm_gpu", "deep_ep", "sgl_kernel",
})
#: folders that hold other projects' code
_VENDOR_FOLDERS = frozenset({"third_party", "thirdparty", "3rdparty", "third-party", "vendor", "vendored",
                             "external", "externals", "extern", "deps", "dependencies", "submodules"})
#: an ``if`` on a setting the user chose CUDA with (``if args.cuda:``, ``if self.use_gpu:``)
_CUDA_FLAG_BYTES = re.compile(rb"\bif[ \t]+(?:[\w.]*\.)?(?:use_|with_|on_)?(?:cuda|gpu)s?[ \t]*:", re.IGNORECASE)
_CUDA_FLAG = re.compile(r"(?:use_|with_|on_)?(?:cuda|gpu)s?", re.IGNORECASE)
#: an attribute assigned a CUDA availability check (``args.cuda = ... torch.cuda.is_available()``)
_STORED_CHECK = re.compile(rb"^[ \t]*([A-Za-z_][\w.]*\.\w+)[ \t]*=[^=\n][^\n]*\bcuda\.is_available\(\)", re.MULTILINE)
_FAKE_BYTES = (b"FakeTensor", b"fake_mode", b"fake_tensor")
_FAKE = re.compile(r"\bFakeTensorMode\b|\bfake_mode\b|\bfake_tensor\b")


class Imports(Protocol):
    """What roles read of the import table (:class:`neuronize.analysis.context.ImportTable`)."""

    modules: set[str]

    def local_names_for(self, qualified: str) -> list[str]: ...

    def qualify(self, node: cst.CSTNode) -> str | None: ...


@dataclass(frozen=True)
class Role:
    """Why CUDA is the point somewhere: ``kind`` (one of the constants above), ``reason`` (what
    showed it, e.g. "imports triton") and ``where`` (e.g. "this file", "function `f`")."""

    kind: str
    reason: str
    where: str = "this file"

    @property
    def message(self) -> str:
        """The user-facing sentence a fix turned into a report carries."""
        return _MESSAGES[self.kind].format(where=self.where, reason=self.reason)


def is_test_path(path: str, source: bytes | None = None) -> bool:
    """``conftest.py``, a file under a ``tests``/``test`` directory, or ``test_*.py`` / ``*_test.py``
    (when ``source`` is given: one that holds tests, or imports a test framework; a script that
    only carries the name, ``test_on_image.py`` parsing its options at the top, is no test: a
    test runner that imported it would run it)."""
    parts = PurePosixPath(path.replace("\\", "/")).parts
    if not parts:
        return False
    name = parts[-1]
    stem = name.split(".", 1)[0]
    if stem == "conftest" or any(part in _TEST_DIRS for part in parts[:-1]):
        return True
    named = stem.startswith("test_") or stem.endswith("_test")
    return named and (source is None or _HOLDS_TESTS.search(source) is not None)


#: a test function or class, or a test framework's import
_HOLDS_TESTS = re.compile(rb"^[ \t]*(?:(?:async[ \t]+)?def[ \t]+test|class[ \t]+Test|(?:import|from)[ \t]+(?:pytest|unittest)\b)",
                          re.MULTILINE)


class FileRoles:
    """The roles of one file; ask :meth:`role_for` with the walk's stack."""

    def __init__(self, module: cst.Module, names: Imports, path: str, source: bytes,
                 kernel_import: str | None = None, extensions: tuple[str, ...] = (),
                 wrappers: tuple[tuple[str, tuple[str, ...], tuple[str, ...]], ...] = (),
                 own_packages: tuple[str, ...] = (), engine: str | None = None,
                 op_namespaces: frozenset[str] = frozenset(),
                 kernel_feeds: tuple[tuple[str, str], ...] = ()) -> None:
        self._module = module
        self._names = names
        self._path = path
        self._source = source
        #: why the file imports GPU-kernel code through the project's own modules (Options.kernel_import)
        self._kernel_import = kernel_import
        #: the CUDA extensions the project declares (Options.project_extensions)
        self._extensions = extensions
        #: the project's functions that hand a parameter to a CUDA-only library, named in this file
        #: (Options.library_wrappers): name -> (its parameters, those handed on)
        self._wrappers = {name: (params, fed) for name, params, fed in wrappers if name.encode() in source}
        #: the project's top-level packages (Options.own_packages): their helpers are read, not guessed
        self._own_packages = own_packages
        #: why the file is part of an engine implemented per vendor (Options.vendor_engine)
        self._engine = engine
        #: the operator namespaces the project defines in Python (Options.op_namespaces)
        self._op_namespaces = op_namespaces
        #: the names files holding GPU-kernel code import from this module, each with one such file
        #: (Options.kernel_feeds)
        self._kernel_feeds = dict(kernel_feeds)

    # -- file-level --------------------------------------------------------------------------
    @cached_property
    def _folders(self) -> tuple[str, ...]:
        """The folders of the file's path, outermost first."""
        return PurePosixPath(self._path.replace("\\", "/")).parts[:-1]

    @cached_property
    def file_role(self) -> Role | None:
        """The role of the whole file, if it has one."""
        return (self._other_framework() or self._kernel_file() or self._test_file() or self._inductor_file()
                or self._library_source() or self._host_folder() or self._engine_role())

    def _host_folder(self) -> Role | None:
        """A module in a folder named for one host's implementation, beside those of others
        (``kernels/cuda/``, ``backends/cuda/``, ``backends/ascend/``): the project chooses which
        one runs by host, so CUDA's stays CUDA's and another host's stays that host's."""
        for folder in reversed([f.lower() for f in self._folders]):
            if folder in _CUDA_FOLDERS:
                return Role(CUDA_NAMED, f"it sits in the folder `{folder}/`, CUDA's implementation")
            if folder in _OTHER_HOST_FOLDERS:
                return Role(OTHER_HOST, f"it sits in the folder `{folder}/`")
        return None

    @cached_property
    def _triton_client(self) -> bool:
        """The file is a client of NVIDIA's Triton Inference Server, whose module is often named
        ``triton`` too."""
        return b"tritonclient" in self._source

    def _engine_role(self) -> Role | None:
        return Role(VENDOR_ENGINE, self._engine) if self._engine is not None else None

    def _other_framework(self) -> Role | None:
        """A module of another framework's code (``import paddle``) that never imports torch: a port of
        the project to that framework, whose tensors have methods of the same names."""
        modules = self._names.modules
        if any(module_matches(m, ("torch",)) for m in modules):
            return None
        framework = next((f for m in sorted(modules) if (f := module_matches(m, _OTHER_FRAMEWORKS))), None)
        return Role(OTHER_FRAMEWORK, f"it imports `{framework}` and not torch") if framework else None

    def _library_source(self) -> Role | None:
        """A file of a vendored copy of a CUDA-only library (``third_party/DeepSpeed/deepspeed/``):
        the library runs only on CUDA, so its code keeps CUDA. The library's own repository is
        the project being migrated, and is not held as a whole."""
        folders = self._folders
        vendored = next((i for i, folder in enumerate(folders) if folder.lower() in _VENDOR_FOLDERS), None)
        if vendored is None:
            return None
        library = next((folder for folder in folders[vendored + 1:] if folder in VENDORED_LIBRARIES), None)
        if library is None:
            return None
        return Role(LIBRARY, f"it is part of a vendored `{library}`, {PACKAGES[library].what}")

    def _kernel_file(self) -> Role | None:
        modules = sorted(self._names.modules)
        for module in modules:  # a kernel language first: it names the work best
            package = module_matches(module, KERNEL_PACKAGES)
            if package is not None:
                return Role(KERNEL, f"imports {package}")
        for module in modules:
            reason = extension_or_kernel_module(module, self._triton_client)
            if reason is not None:
                return Role(KERNEL, reason)
            if module in JIT_BUILDERS:
                return Role(KERNEL, kernel_reason(module) or module)
        namespace = compiled_namespace(self._source, self._op_namespaces)
        if namespace is not None:
            return Role(KERNEL, f"calls `torch.ops.{namespace}`, operators a compiled extension registers")
        if self._kernel_import is not None:  # through the project's own modules (found for the run)
            return Role(KERNEL_IMPORTER, self._kernel_import)
        return self._built_on_kernels()

    def _lazy_kernel(self, function: cst.FunctionDef, where: str) -> Role | None:
        """A function that imports GPU-kernel code in its body (``import awq_engine`` where it
        launches the kernel): it feeds that kernel, so CUDA is its point. So does one that imports a
        CUDA-only library whatever path it takes (``import bitsandbytes.functional as F`` at the top
        of its body): its devices are the library's."""
        body = function.body.body if isinstance(function.body, cst.IndentedBlock) else ()
        for stmt in iter_statements(body):
            for small in stmt.body if isinstance(stmt, cst.SimpleStatementLine) else ():
                if isinstance(small, (cst.Import, cst.ImportFrom)):
                    for imported in imported_names(small):
                        reason = kernel_reason(imported.module, self._extensions, self._triton_client)
                        if reason is not None:
                            return Role(KERNEL, reason, where)
        package = self._library_imported(body)  # whatever path the function takes, it runs the library
        return Role(LIBRARY, f"it imports `{package}`, {PACKAGES[package].what}", where) if package else None

    def _library_imported(self, body: Sequence[cst.BaseStatement]) -> str | None:
        """The CUDA-only package a statement of ``body`` itself (not one nested in it) imports."""
        for stmt in body:
            for small in stmt.body if isinstance(stmt, cst.SimpleStatementLine) else ():
                if isinstance(small, (cst.Import, cst.ImportFrom)):
                    for imported in imported_names(small):
                        package = module_matches(imported.module, _CUDA_ONLY_BY_NAME)
                        if package is not None and not self.is_own_package(package.split(".")[0]):
                            return package
        return None

    def _built_on_kernels(self) -> Role | None:
        """A module whose unguarded top-level import is a package made of CUDA kernels (the NKI
        path of the package table: ``mamba_ssm``...), the project's own package excepted: its
        benchmarks, evaluations and converters build models that run only on those kernels. So is
        one that imports a package whose import loads its CUDA kernels (``flash_attn``): it does
        not import without CUDA, so a device moved there gains Neuron nothing and costs the CUDA box."""
        for stmt in self._module.body:
            if not isinstance(stmt, cst.SimpleStatementLine):
                continue
            for small in stmt.body:
                if isinstance(small, (cst.Import, cst.ImportFrom)):
                    for imported in imported_names(small):
                        package = module_matches(imported.module, KERNEL_MADE)
                        if package is not None and not self.is_own_package(package.split(".")[0]):
                            return Role(KERNEL, f"imports `{package}`, whose models run on CUDA kernels")
                        package = module_matches(imported.module, KERNEL_LOADING)
                        if package is not None and not self.is_own_package(package.split(".")[0]):
                            return Role(KERNEL_IMPORTER, f"`{package}`: {PACKAGES[package].what}")
                        if self._cuda_helper(imported):
                            return Role(CUDA_HELPERS, f"`{imported.name}` from `{imported.module}`")
        return self._asserted_import() or self._probed_at_import()

    def _asserted_import(self) -> Role | None:
        """A module that asserts at its top level that a guarded import of a CUDA-only package
        worked (``try: from xformers.ops import fmha; HAS_XFORMERS = True`` ``except ImportError:
        HAS_XFORMERS = False``, then ``assert HAS_XFORMERS``): it does not import without it."""
        if b"assert" not in self._source:
            return None
        found: dict[str, str] = {}  # the flag a guarded import sets -> the package
        for stmt in self._module.body:
            if isinstance(stmt, cst.Try) and isinstance(stmt.body, cst.IndentedBlock):
                package = self._library_imported(stmt.body.body)
                flags = [bound[0] for line in stmt.body.body if (bound := assigned_value(line)) is not None]
                found.update((flag, package) for flag in flags if package is not None)
            elif isinstance(stmt, cst.SimpleStatementLine) and found:
                for small in stmt.body:
                    if isinstance(small, cst.Assert) and isinstance(small.test, cst.Name) and small.test.value in found:
                        package = found[small.test.value]
                        return Role(KERNEL_IMPORTER, f"it asserts `{small.test.value}` after importing `{package}`, "
                                                     f"{PACKAGES[package].what}")
        return None

    def _probed_at_import(self) -> Role | None:
        """A module (not a script) that stores a CUDA device probe at its top level, unguarded
        (``__cuda_arch = torch.cuda.get_device_capability()``): its import raises without CUDA, and
        what it defines serves the CUDA device it asked about (kernel utilities gated on the arch)."""
        if not _PROBE_BYTES.search(self._source) or is_script(self._module):
            return None
        for stmt in self._module.body:
            bound = assigned_value(stmt)
            call = _probe_call(bound[1]) if bound is not None else None
            if call is not None and self._names.qualify(call.func) in _CUDA_PROBES:
                return Role(CUDA_AT_IMPORT, f"`{bound[0]} = {self._code(bound[1])}`")  # type: ignore[index]
        return None

    def _cuda_helper(self, imported: ImportedName) -> bool:
        """Whether ``imported`` is a function of another package named for CUDA work: the file
        measures or runs CUDA through it (a CUDA timer, a CUDA memory meter)."""
        name, top = imported.name, imported.module.split(".")[0]
        return (name is not None and name.islower() and _CUDA_WORK.search(name) is not None
                and _CUDA_QUESTION.search(name) is None and top != "torch"
                and top not in self._own_packages and not self.is_own_package(top))

    def _test_file(self) -> Role | None:
        if is_test_path(self._path, self._source):
            return Role(TEST, "a test file")
        if not CUDA_WORDS.search(self._source.decode("utf-8", "replace")) or b"skip" not in self._source.lower():
            return None
        for stmt in self._module.body:
            if isinstance(stmt, cst.SimpleStatementLine) and b"pytestmark" in self._source:
                code = self._code(stmt)
                if code.lstrip().startswith("pytestmark") and CUDA_WORDS.search(code):
                    return Role(TEST, "its `pytestmark` needs CUDA", "this module")
            elif isinstance(stmt, cst.If) and _skips_unless_cuda(stmt, self._code):
                return Role(TEST, "it is skipped unless CUDA is available", "this module")
        return None

    def _inductor_file(self) -> Role | None:
        if b"inductor" not in self._source:
            return self._inductor_module()
        for module in sorted(self._names.modules):
            if module.startswith("torch._inductor.") and not module.startswith("torch._inductor.config"):
                return Role(INDUCTOR, f"imports `{module}`")
        found = _INDUCTOR_TEXT.search(self._source)
        if found:
            return Role(INDUCTOR, f"uses `{found.group(1).decode()}`")
        return self._inductor_module()

    def _inductor_module(self) -> Role | None:
        for module in sorted(self._imported_modules):
            if module.startswith("torch.") or "." not in module:
                continue  # torch's own modules are judged above; a top-level package is a dependency
            if _INDUCTOR_MODULE.match(module.rsplit(".", 1)[-1]):
                return Role(INDUCTOR, f"imports the compile module `{module}`")
        return None

    @cached_property
    def _imported_modules(self) -> frozenset[str]:
        """The modules the file's import statements name as modules (``a.b`` of ``from a.b import
        c``, not ``a.b.c``, which may be a function)."""
        found: set[str] = set()
        for stmt in iter_statements(self._module.body):
            for small in getattr(stmt, "body", ()) if isinstance(stmt, cst.SimpleStatementLine) else ():
                if isinstance(small, (cst.Import, cst.ImportFrom)):
                    found.update(imported.module for imported in imported_names(small))
        return frozenset(found)


    # -- node-level --------------------------------------------------------------------------
    def role_for(self, stack: Sequence[cst.CSTNode]) -> Role | None:
        """The role of the code at the end of ``stack`` (the walk's path to a node): the file's,
        else that of the outermost enclosing function, class, ``with`` or ``if`` that has one (the
        class that manages a CUDA graph, rather than its ``__init__``)."""
        if self.file_role is not None:
            return self.file_role
        regions = self._regions
        if regions:
            for node in stack:
                role = regions.get(id(node))
                if role is not None:
                    return role
        if not self._library_locals and not self._wrappers and b"get_device_" not in self._source:
            return None
        return self._library_argument(stack) or self._library_value(stack)

    @cached_property
    def _library_locals(self) -> frozenset[str]:
        """The local names bound to CUDA-only packages (``xformers``, ``te``...); empty for most
        files, which then skip :meth:`_library_argument`."""
        return self._package_locals(CUDA_ONLY_PACKAGES)

    def _chooses(self, stmt: cst.FunctionDef | cst.ClassDef) -> bool:
        """A function that asks whether a host is there (``def cuda_variable(t): if
        torch.cuda.is_available(): return t.cuda() ... return t``): its callers ask for the GPU
        when there is one, not for CUDA, so it gains Neuron like any other choice."""
        return isinstance(stmt, cst.FunctionDef) and "is_available()" in self._code(stmt)

    def _package_locals(self, packages: Iterable[str]) -> frozenset[str]:
        """The local names bound to ``packages`` or their modules, the project's own package excepted."""
        found: set[str] = set()
        for module in self._names.modules:
            package = module_matches(module, packages)
            if package is not None and not self.is_own_package(package.split(".")[0]):
                parts = module.split(".")  # `import xformers.ops` binds `xformers`
                found.update(".".join(parts[:n]) for n in range(1, len(parts) + 1))
        return frozenset(local for module in found for local in self._names.local_names_for(module))

    def _library_argument(self, stack: Sequence[cst.CSTNode]) -> Role | None:
        """An argument of a call into a CUDA-only package: the CUDA value is what the library needs."""
        for call, arg in zip(stack, stack[1:], strict=False):
            if isinstance(call, cst.Call) and isinstance(arg, cst.Arg):
                qualified = self._cuda_only_call(call)
                if qualified is not None:
                    return Role(LIBRARY, f"it is handed to `{qualified}`", "this argument")
                handed = self._handed_on(call, arg)
                if handed is not None:
                    return Role(LIBRARY, handed, "this argument")
        return None

    def _handed_on(self, call: cst.Call, arg: cst.Arg) -> str | None:
        """Why ``arg`` of ``call`` is a CUDA-only library's: ``call`` is a function of the project
        that hands that parameter to one (:mod:`neuronize.analysis.library_wrappers`)."""
        name = (dotted_name(call.func) or "").rsplit(".", 1)[-1]
        if name not in self._wrappers:
            return None
        params, fed = self._wrappers[name]
        if arg.keyword is not None:
            param: str | None = arg.keyword.value
        else:
            index = sum(1 for a in call.args[:call.args.index(arg)] if a.keyword is None and not a.star)
            param = params[index] if not arg.star and index < len(params) else None
        return f"`{name}()` hands its `{param}` to a CUDA-only library" if param in fed else None

    def _cuda_only_call(self, call: cst.Call) -> str | None:
        """The qualified name of ``call`` when it is a CUDA-only API: a CUDA-only package's, or a
        CUDA device probe (``torch.cuda.get_device_capability`` / ``get_device_properties``)."""
        head = call.func
        while isinstance(head, cst.Attribute):
            head = head.value
        if not isinstance(head, cst.Name):
            return None
        qualified = self._names.qualify(call.func)
        if qualified in _CUDA_PROBES:
            return qualified
        if head.value in self._library_locals and qualified is not None and module_matches(qualified, CUDA_ONLY_PACKAGES):
            return qualified
        return None

    def _library_subclass(self, stmt: cst.ClassDef, where: str) -> Role | None:
        """A class built on a CUDA-only package's class (``class TELinear(te.pytorch.Linear)``):
        what it hands its base (``device=torch.cuda.current_device()``) is the library's."""
        for base in stmt.bases:
            qualified = self._names.qualify(base.value)
            if qualified is not None and module_matches(qualified, CUDA_ONLY_PACKAGES):
                return Role(LIBRARY, f"it subclasses `{qualified}`", where)
        return None

    def _library_value(self, stack: Sequence[cst.CSTNode]) -> Role | None:
        """The value of ``name = ...`` in a function whose every other use of ``name`` is an argument
        of a CUDA-only API (an xformers self-test's probe tensor, the device a capability probe
        asks about): the value goes nowhere else."""
        assign = next((n for n in reversed(stack) if isinstance(n, cst.Assign)), None)
        scope = next((n for n in reversed(stack) if isinstance(n, cst.FunctionDef)), None)
        if assign is None or scope is None or len(assign.targets) != 1:
            return None
        target = assign.targets[0].target
        if not isinstance(target, cst.Name):
            return None
        uses = self._uses(scope, target.value)
        if uses and all(use is not None for use in uses):
            return Role(LIBRARY, f"`{target.value}` is only handed to `{uses[0]}`", "this value")
        return None

    def _uses(self, scope: cst.FunctionDef, name: str) -> list[str | None]:
        """For each read of ``name`` in ``scope``: the CUDA-only API it is an argument of, or None."""
        roles = self
        found: list[str | None] = []

        class Uses(cst.CSTVisitor):
            def __init__(self) -> None:
                self.calls: list[cst.Call] = []

            def visit_Call(self, node: cst.Call) -> None:
                self.calls.append(node)

            def leave_Call(self, original_node: cst.Call) -> None:
                self.calls.pop()

            def visit_AssignTarget(self, node: cst.AssignTarget) -> bool:
                return False  # a (re)binding, not a use

            def visit_Name(self, node: cst.Name) -> None:
                if node.value == name:
                    call = self.calls[-1] if self.calls else None
                    api = roles._cuda_only_call(call) if call is not None and node in [a.value for a in call.args] else None
                    found.append(api)

            def visit_Attribute(self, node: cst.Attribute) -> bool:
                if node.attr.value == name:
                    visit(node.value, self)
                    return False
                return True

        visit(scope.body, Uses())
        return found

    @cached_property
    def _regions(self) -> dict[int, Role]:
        """id of a statement -> its role, for the statements that open a role of their own."""
        src = self._source
        lowered = src.lower()
        graphs = any(b in src for b in _GRAPH_BYTES) or b"cudagraph" in lowered or b"cuda_graph" in lowered
        fakes = any(b in src for b in _FAKE_BYTES)
        inductor = b"inductor" in src
        gates = b"skip" in lowered or b"requires" in src or b"mark" in src
        engine = self._package_locals(ENGINE_PACKAGES)
        uses_engine = re.compile(r"\b(?:" + "|".join(map(re.escape, sorted(engine))) + r")\b") if engine else None
        libraries = bool(self._library_locals)
        named = _CUDA_NAMED_BYTES.search(src) is not None
        flags = _CUDA_FLAG_BYTES.search(src) is not None
        lazy = _INDENTED_IMPORT.search(src) is not None
        fed = self._kernel_feeds
        if not (graphs or fakes or inductor or gates or engine or libraries or named or flags or lazy or fed):
            return {}
        regions: dict[int, Role] = {}
        top = {id(stmt) for stmt in self._module.body} if fed else set()
        for stmt, functions in scoped_statements(self._module.body):
            role = None
            if isinstance(stmt, (cst.FunctionDef, cst.ClassDef)):
                kind = "function" if isinstance(stmt, cst.FunctionDef) else "class"
                where = f"{kind} `{stmt.name.value}`"
                code = self._code(stmt) if graphs or fakes else ""
                if id(stmt) in top and stmt.name.value in fed:  # its devices are the kernels' inputs
                    role = Role(KERNEL, f"GPU-kernel code imports it: `{fed[stmt.name.value]}`", where)
                if role is None and gates:
                    role = self._gated(stmt, where)
                if role is None and lazy and isinstance(stmt, cst.FunctionDef):
                    role = self._lazy_kernel(stmt, where)
                if role is None and graphs and (found := _GRAPH.search(code)):
                    role = Role(CUDA_GRAPH, _GRAPH_SHOWN.get(found.group(0), f"uses `{found.group(0)}`"), where)
                if role is None and graphs and _GRAPH_NAME.search(stmt.name.value):
                    role = Role(CUDA_GRAPH, "its name says it wraps CUDA graphs", where)
                if role is None and named and _CUDA_NAME.search(stmt.name.value) and not self._chooses(stmt):
                    role = Role(CUDA_NAMED, "its callers ask for CUDA by that name", where)
                if role is None and fakes and _FAKE.search(code) and isinstance(stmt, cst.FunctionDef):
                    role = Role(FAKE, "it works with fake tensors", where)
                if role is None and libraries and isinstance(stmt, cst.ClassDef):
                    role = self._library_subclass(stmt, where)
                if role is None and uses_engine is not None and (found := uses_engine.search(self._code(stmt))):
                    role = Role(LIBRARY, f"it uses `{found.group(0)}` of a serving engine that owns its CUDA "
                                "device", where)
            elif isinstance(stmt, cst.With) and fakes:
                if any(_FAKE.search(self._code(item)) for item in stmt.items):
                    role = Role(FAKE, "under `FakeTensorMode`", "this `with` block")
            elif isinstance(stmt, cst.If) and inductor and _INDUCTOR_BRANCH.search(self._code(stmt.test)):
                role = Role(INDUCTOR, "a branch taken when the backend is \"inductor\"", "this `if`")
            elif isinstance(stmt, cst.If) and flags and _cuda_flag(stmt.test, functions, self._stored_checks) \
                    and not (isinstance(stmt.test, cst.Name) and _on_by_default(stmt.test.value, functions)
                             and _moves_only(stmt.body)):
                # the body only: a Neuron choice put in front of the whole `if` is no edit inside it
                regions[id(stmt.body)] = Role(CUDA_FLAG, f"`{self._code(stmt.test)}`", "this branch")
            if isinstance(stmt, cst.If) and lazy and isinstance(stmt.body, cst.IndentedBlock) \
                    and not is_main_test(stmt.test) and (package := self._library_imported(stmt.body.body)) is not None:
                # a branch that loads a CUDA-only library (`elif engine: import tensorrt`) is its own; the
                # script's entry point runs it beside its own code (an 8-bit optimizer for its model)
                regions.setdefault(id(stmt.body), Role(LIBRARY, f"it imports `{package}`, {PACKAGES[package].what}",
                                                       "this branch"))
            if role is not None:
                regions[id(stmt)] = role
        return regions

    @cached_property
    def _stored_checks(self) -> frozenset[str]:
        """The attributes the file stores a CUDA availability check in (``args.cuda = not
        args.no_cuda and torch.cuda.is_available()``): a branch on one is a host choice."""
        return frozenset(m.group(1).decode() for m in _STORED_CHECK.finditer(self._source))

    def _gated(self, stmt: cst.FunctionDef | cst.ClassDef, where: str) -> Role | None:
        for decorator in stmt.decorators:
            code = self._code(decorator.decorator)
            if CUDA_WORDS.search(code) and any(w in code.lower() for w in _GATE_WORDS):
                return Role(TEST, f"`@{code}`" if len(code) <= 60 else "a CUDA-only marker", where)
        if isinstance(stmt, cst.FunctionDef) and isinstance(stmt.body, cst.IndentedBlock):
            for first in stmt.body.body[:3]:
                if isinstance(first, cst.If) and _skips_unless_cuda(first, self._code):
                    return Role(TEST, "it is skipped unless CUDA is available", where)
        return None

    # -- the project's own packages ---------------------------------------------------------
    def is_own_package(self, top: str) -> bool:
        """Whether ``top`` (a top-level package name) is a directory this file sits in, i.e. the
        project's own package (``mamba_ssm`` imported inside ``mamba_ssm/ops/...``), not a
        dependency."""
        return top in self._folders

    # -- torch_xla ---------------------------------------------------------------------------
    @cached_property
    def tpu(self) -> str | None:
        """Why the file's torch_xla code is TPU code, or None: it imports torch_xla with no tie to
        the XLA-era torch-neuronx (no torch_neuronx, neuronx_distributed, libneuronxla,
        optimum.neuron import, no ``NEURON_*`` variable) and guards it the way libraries serving
        TPUs do (``is_torch_xla_available()``, ``XLA_AVAILABLE``) or names TPUs."""
        modules = self._names.modules
        if not any(module_matches(m, ("torch_xla",)) for m in modules):
            return None
        if any(module_matches(m, NEURON_XLA) for m in modules) or b"NEURON_" in self._source:
            return None
        found = _TPU.search(self._source)
        if found is None:  # a plain torch_xla script: the XLA-era torch-neuronx is the likelier reader
            return None
        return f"imports torch_xla with no tie to torch-neuronx and mentions `{found.group(0).decode()}`"

    def _code(self, node: cst.CSTNode) -> str:
        return self._module.code_for_node(node)


def _probe_call(value: cst.BaseExpression) -> cst.Call | None:
    """The call under a probe's result as stored: ``probe()``, ``probe()[0]``, ``probe(0).major``."""
    while isinstance(value, (cst.Subscript, cst.Attribute)):
        value = value.value
    return value if isinstance(value, cst.Call) else None


def _cuda_flag(test: cst.BaseExpression, functions: tuple[cst.FunctionDef, ...], stored: frozenset[str]) -> bool:
    """``test`` is a setting the user chose CUDA with: an attribute of options or of the object
    named for it (``args.cuda``, ``self.use_gpu``), or a parameter of that name with a ``True`` /
    ``False`` default of a function it sits in (``def quantize(self, use_cuda=True)``, one of
    ``functions``); another bare name is most often a check stored in a local (``use_cuda =
    torch.cuda.is_available()``), which NRN110 follows, and so is an attribute the file stores
    such a check in (``args.cuda = not args.no_cuda and torch.cuda.is_available()``, ``stored``)."""
    if isinstance(test, cst.Name):
        owner = next((f for f in reversed(functions) if test.value in _flag_parameters(f)), None)
        return owner is not None and not _stores_check(owner, test.value)
    return isinstance(test, cst.Attribute) and _CUDA_FLAG.fullmatch(test.attr.value) is not None \
        and dotted_name(test) not in stored


def _stores_check(function: cst.FunctionDef, name: str) -> bool:
    """``function`` stores a CUDA availability check in its parameter ``name`` (``use_gpu = use_gpu
    and torch.cuda.is_available()``): the parameter's tests are a host choice from there on."""
    return any((bound := assigned_value(stmt)) is not None and bound[0] == name
               and "cuda.is_available()" in cst.Module([]).code_for_node(bound[1])
               for stmt in iter_statements(function.body.body) if isinstance(function.body, cst.IndentedBlock))


def _on_by_default(name: str, functions: Sequence[cst.FunctionDef]) -> bool:
    """``name`` is a parameter of the innermost of ``functions`` that has it, with a ``True`` default."""
    for function in reversed(functions):
        for param in named_parameters(function):
            if param.name.value == name:
                return _boolean_default(param) is True
    return False


def _boolean_default(param: cst.Param) -> bool | None:
    """The default of ``param`` where it is ``True`` or ``False``, else None."""
    default = param.default
    return default.value == "True" if isinstance(default, cst.Name) and default.value in ("True", "False") else None


def _moves_only(body: cst.BaseSuite) -> bool:
    """``body`` only moves values to the GPU (``if gpu: model.cuda()``, ``x = x.to("cuda")``): under
    a ``gpu=True`` parameter that is where the function puts its model by default, which a
    host-aware move keeps for CUDA and gives Neuron where it raised before; work done for CUDA's
    kernels (a packing, a kernel's layout) stays the branch's."""
    lines = body.body if isinstance(body, cst.IndentedBlock) else ()
    if not lines or not all(isinstance(line, cst.SimpleStatementLine) for line in lines):
        return False
    return all(isinstance(small, (cst.Expr, cst.Assign)) and _bare_cuda(small.value)
               for line in lines for small in line.body)  # type: ignore[attr-defined]


def _bare_cuda(value: cst.BaseExpression) -> bool:
    """``x.cuda()`` or ``x.to("cuda")``: a move to the current GPU, nothing more."""
    if not (isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute)):
        return False
    if value.func.attr.value == "cuda":
        return not value.args
    return value.func.attr.value == "to" and len(value.args) == 1 and value.args[0].keyword is None \
        and isinstance(value.args[0].value, cst.SimpleString) and value.args[0].value.evaluated_value == "cuda"


def _flag_parameters(func: cst.FunctionDef) -> set[str]:
    """The parameters of ``func`` named like a CUDA setting with a boolean default."""
    return {p.name.value for p in named_parameters(func)
            if _boolean_default(p) is not None and _CUDA_FLAG.fullmatch(p.name.value) is not None}


def _skips_unless_cuda(stmt: cst.If, code: Callable[[cst.CSTNode], str]) -> bool:
    """``if not torch.cuda.is_available(): pytest.skip(...)`` (or ``self.skipTest``, ``raise SkipTest``)."""
    test = code(stmt.test)
    if not (CUDA_WORDS.search(test) and ("not " in test or "== 0" in test or "< " in test)):
        return False
    body = stmt.body.body  # an IndentedBlock or a one-line suite
    return len(body) <= 2 and bool(_SKIP_BODY.search("".join(code(s) for s in body)))
