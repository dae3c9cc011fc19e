"""Which modules of the project import GPU-kernel code, directly or through the project's own
modules: a fact about the run, found before any file is analysed.

A module that unconditionally imports a kernel language (Triton...), a package's kernel module
(``<pkg>.ops.triton.<module>``) or a compiled ``*_cuda`` extension holds GPU-kernel code
(:mod:`neuronize.analysis.roles`), and so does one that imports a CUDA extension the project's build
script declares (``CUDAExtension(name=...)``) or calls a compiled extension's operators
(``torch.ops.<namespace>.<op>``). So does, for a migration, every module that unconditionally
imports such a module of the project: the script that builds a model on those kernels cannot
import on Neuron, so moving its devices breaks the NVIDIA box it runs on and gains nothing; the
report names the import that blocks it instead. An import of ``pkg.mod`` also runs
``pkg/__init__.py``: a package whose ``__init__.py`` imports kernel code binds every module that
imports one of its modules. The functions and classes a module holding kernel
code imports from the project's other modules serve those kernels (:func:`kernel_exports`).

Only imports at the start of a line (column 0) count: they run whenever the module is imported;
an import under ``try:``, ``if`` or in a function is the author's own guard. So do the imports of
the ``except`` of a top-level ``try:``: the fallback runs wherever the first way failed (a
prebuilt extension, else one built by the project's ``backend`` module). The lines are found
with one regular expression per file: no parse.
"""

from __future__ import annotations

import functools
import re
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path, PurePath

from neuronize.analysis.cuda_packages import PACKAGES, is_cuda_extension_module, module_matches
from neuronize.analysis.import_choices import BRANCH_OPENER, import_choices
from neuronize.analysis.cuda_packages import Path as KernelPath

#: kernel languages and GPU array libraries: importing one makes a module GPU-kernel code
KERNEL_PACKAGES = ("triton", "tilelang", "cutlass", "cuda.cute", "cute", "helion", "numba.cuda",
                   "cupy", "cupyx", "pycuda")
#: a package directory of kernels named after their language (``<pkg>.ops.triton.<module>``)
_KERNEL_SUBMODULE = frozenset({"triton", "tilelang", "cute", "cutlass", "helion"})

#: ``from a import b, c``, ``from a import (b,`` with names on the lines after, up to a comment or the
#: closing parenthesis, ``import a, b``
_IMPORT = re.compile(rb"^(?:from[ \t]+([.\w]+)[ \t]+import\b[ \t]*\(?((?<=\()[\w,\s]*|[\w, \t]*)"
                     rb"|import[ \t]+([\w., \t]+))", re.MULTILINE)


def extension_or_kernel_module(module: str, triton_client: bool = False) -> str | None:
    """Why importing ``module`` makes GPU-kernel code: a package's kernel module (``from
    mamba_ssm.ops.triton.ssd import scan``: a wrapper of its kernels) or a compiled CUDA extension.
    Where the code is a client of NVIDIA's Triton Inference Server (``triton_client``: it names
    ``tritonclient``), a module named ``triton`` is that client, not Triton kernels."""
    words = _KERNEL_SUBMODULE - {"triton"} if triton_client else _KERNEL_SUBMODULE
    if words.intersection(module.split(".")[1:-1]):
        return f"imports the kernel module `{module}`"
    if is_cuda_extension_module(module):
        return f"imports the compiled CUDA extension `{module.split('.')[0]}`"
    return None


#: packages made of CUDA kernels (the NKI path of the package table: ``mamba_ssm``...)
KERNEL_MADE = tuple(name for name, p in PACKAGES.items() if p.path is KernelPath.NKI and p.cuda_only)
#: packages whose import loads CUDA kernels (``flash_attn``): a module importing one unguarded does not
#: import without CUDA, whatever its other code does
KERNEL_LOADING = tuple(name for name, p in PACKAGES.items() if p.loads_kernels)


#: a native extension a build script declares (``CUDAExtension(name="awq_inference_engine", ...)``,
#: ``CMakeExtension(name="_engine")`` of a CMake build,
#: ``Ext(f"pkg._{name}_{kind}", ...)`` after ``Ext = CUDAExtension if cuda else CppExtension``): its
#: module, or the part of it written before a placeholder (``%s``: the names of the extension classes)
_DECLARED_EXTENSION = rb"\b(?:%s)\(\s*(?:name\s*=\s*)?[rRbBuUfF]{0,2}['\"]([\w.]*)['\"{]"
#: what declares an extension in a build script: setuptools' classes of torch and CMake, and the
#: ``torch.utils.ffi.create_extension`` of torch before 1.0 (``create_extension("_ext.nms", ...)``),
#: whose extensions no later torch builds
_EXTENSION_CLASSES = (b"CUDAExtension", b"CppExtension", b"CMakeExtension", b"create_extension")
#: a name bound to an extension class (``Ext = CUDAExtension if cuda else CppExtension``)
_EXTENSION_ALIAS = re.compile(rb"^[ \t]*(\w+)[ \t]*=[^=\n]*\b(?:CUDA|Cpp)Extension\b", re.MULTILINE)


def declared_extensions(sources: Iterable[bytes]) -> tuple[str, ...]:
    """The modules of the CUDA and C++ extensions ``sources`` (a project's files; its build scripts
    among them) declare, sorted, by their full names (``torch_scatter._scatter_cuda``); not those
    of a build of C++ extensions only (:func:`_cpu_only_build`)."""
    found = set()
    for source in sources:
        if _cpu_only_build(source):
            continue
        if any(name in source for name in _EXTENSION_CLASSES):
            classes = {*_EXTENSION_CLASSES, *(m.group(1) for m in _EXTENSION_ALIAS.finditer(source))}
            declared = re.compile(_DECLARED_EXTENSION % b"|".join(sorted(map(re.escape, classes))))
            for match in declared.finditer(source):
                name = match.group(1).decode().rstrip("._")
                if name:
                    found.add(name)
    return tuple(sorted(found))


def _cpu_only_build(source: bytes) -> bool:
    """``source`` builds C++ extensions only (``CppExtension``, no CUDA class and no ``.cu``
    source): their operators run on the host's memory, the data a CUDA program hands them is
    host data too, and they make nothing of the program GPU-kernel code (a COCO evaluator)."""
    return b"CppExtension" in source and re.search(rb"CUDAExtension|CMakeExtension|create_extension|\.cu\b|"
                                                   rb"\.cuh\b|CUDA_HOME|nvcc", source) is None


def extension_packages(graph: ImportGraph, modules: tuple[str, ...]) -> tuple[str, ...]:
    """The packages of the extension ``modules`` (:func:`declared_extensions`): a module inside a
    package as that package, whose Python modules wrap the compiled operators, which have the
    kernels of the build only (CPU, CUDA). An extension the project imports by name in the block
    of a top-level ``try:`` (``try: from pkg import _C`` ``except ImportError: <fallback>``) and
    never at column 0 is optional, with a fallback of the author's, and makes no package GPU-kernel
    code; one imported in a function, or loaded otherwise (``torch.ops.load_library``), does."""
    always = {name for names in graph.top.values() for name in names}
    return tuple(sorted({module.rsplit(".", 1)[0] for module in modules
                         if module not in graph.tried or module in always}))


def _names_built(module: str, built: tuple[str, ...]) -> str | None:
    """The package of ``built`` (the project's declared extensions) that ``module`` is or is in,
    named from the project's root or from a folder below it: an extension built beside its build
    script (``create_extension("_ext.nms", relative_to=__file__)`` in ``lib/nms/build.py``) is
    imported as ``lib.nms._ext``, a relative import resolved against the importer's own path."""
    dotted = f".{module}."
    return next((package for package in built if f".{package}." in dotted), None)


@functools.lru_cache(maxsize=4096)  # a project imports the same modules file after file
def kernel_reason(module: str, built: tuple[str, ...] = (), triton_client: bool = False,
                  made: bool = True) -> str | None:
    """Why importing ``module`` is importing GPU-kernel code (``built``: the project's declared
    CUDA extensions), or None. ``made``: a package made of CUDA kernels (``mamba_ssm``) counts,
    whose importer builds models on them; without it only what launches kernels counts."""
    package = _names_built(module, built)
    if package is not None:
        return f"imports the project's compiled CUDA extension `{package}`"
    package = module_matches(module, KERNEL_PACKAGES)
    if package is not None:
        return f"imports {package}"
    package = module_matches(module, KERNEL_MADE) if made else None
    if package is not None:
        return f"imports `{package}`, whose models run on CUDA kernels"
    if module in JIT_BUILDERS:
        return f"builds a CUDA extension with `{module.rsplit('.', 1)[1]}`"
    return extension_or_kernel_module(module, triton_client)


#: the functions that compile and load an extension when the module runs (``load(name, sources=[...
#: "kernel.cu"])``): the module is the extension's, and its importers run on its kernels
JIT_BUILDERS = ("torch.utils.cpp_extension.load", "torch.utils.cpp_extension.load_inline")


def _names(package: list[str], match: re.Match[bytes]) -> list[str]:
    """The modules one import line names (``from a import b`` names ``a`` and maybe ``a.b``)."""
    if match.group(3) is not None:
        return [part.split()[0] for part in match.group(3).decode().split(",") if part.strip()]
    module = match.group(1).decode()
    if module.startswith("."):  # relative: against the file's own package
        level = len(module) - len(module.lstrip("."))
        base = package[:len(package) - level + 1]
        module = ".".join([*base, module.lstrip(".")] if module.lstrip(".") else base)
    imported = [name.split()[0] for name in match.group(2).decode().split(",") if name.strip()]
    return [module, *(f"{module}.{name}" for name in imported)]


#: an import line at any indentation (indented: under ``try:``, ``if`` or in a function, run when
#: that code runs; at column 0: whenever the module is imported), or an import after a ``;`` of
#: such a line (``sys.path.insert(0, "./ops"); import ops``)
_ANY_IMPORT = re.compile(rb"^[ \t]*(?:[^\n#]*;[ \t]*)?" + _IMPORT.pattern[1:], re.MULTILINE)


@dataclass(frozen=True)
class ImportGraph:
    """The project's modules and what each imports, read once from the bytes of its files."""

    #: every dotted name a file can be imported as (from any folder above it) -> the file
    by_name: dict[str, Path]
    #: the modules each file imports whenever it is imported (lines at column 0)
    top: dict[Path, list[str]]
    #: the modules each file imports anywhere (in a function, under ``try:`` too)
    every: dict[Path, list[str]]
    #: the modules some file imports in the block of a ``try:`` at its top level (``try: from pkg
    #: import _C``), whose ``except`` is the author's fallback
    tried: set[str] = field(default_factory=set)
    #: the modules of its own package each file imports in a function's body, not under an ``if``
    #: or a ``try:`` (``def call(*args): from ._backend import _C``, a package's lazy wrappers of
    #: its extension's operators): each call of the function runs them; so does the ``except``
    #: of a ``try:`` in a function (``try: import _prebuilt as _backend`` ``except ImportError:
    #: from .backend import _backend``): the author's way of building the extension on first use
    called: dict[Path, list[str]] = field(default_factory=dict)
    #: the dotted module paths each file writes as strings (``import_path="pkg.ops.scan"``): modules it
    #: imports by name, with ``importlib``
    named: dict[Path, list[str]] = field(default_factory=dict)

    #: a dotted name of two dots or more that another file is named by too (a second copy of a
    #: package, ``archive/pkg/...`` beside ``pkg/...``) -> those files: an import of it may be of either
    twins: dict[str, list[Path]] = field(default_factory=dict)
    #: every Python file of the project
    files: set[Path] = field(default_factory=set)
    #: the imports each script chooses among, one of which runs whenever it does: each choice's
    #: branches, each with the modules it imports (:mod:`neuronize.analysis.import_choices`)
    choices: dict[Path, list[list[list[str]]]] = field(default_factory=dict)

    def module_for(self, name: str, importer: Path) -> Path | None:
        """The file ``importer`` gets for ``import name``: the one below the nearest folder above it
        that has one (the first entry of ``sys.path`` is the folder of the script it runs in: each of
        several projects in one repository can have its ``utils/misc.py``, and a module of
        ``train/utils/`` that imports ``utils.misc`` gets ``train/utils/misc.py``), else the one the
        project names so. Above its own folder, a name of the standard library's or of a well-known
        package's is that package."""
        for folder in importer.parents:
            if folder != importer.parent and name.split(".")[0] in _EXTERNAL:
                break
            beside = folder.joinpath(*name.split("."))
            found = next((c for c in (beside.with_suffix(".py"), beside / "__init__.py") if c in self.files), None)
            if found is not None:
                return found
        return self.by_name.get(name)

    def links(self) -> Iterator[tuple[Path, Path]]:
        """Each file with each module of the project it imports (lazily too), as (importer, module)."""
        for path, names in self.every.items():
            for name in names:
                module = self.module_for(name, path)
                if module is not None:
                    yield path, module
                    yield from ((path, twin) for twin in self.twins.get(name, ()))


#: top-level modules of the standard library and of well-known packages: a module of the project's
#: package with one of these names (``pkg/utils/torch.py``, ``pkg/logging.py``) is never what
#: ``import torch`` or ``import logging`` finds
_EXTERNAL = frozenset({
    *sys.stdlib_module_names, *(name.split(".")[0] for name in PACKAGES), *KERNEL_PACKAGES,
    "torch", "torchvision", "torchaudio", "transformers", "numpy", "scipy", "jax", "tensorflow", "accelerate",
    "datasets", "diffusers", "peft", "safetensors", "tokenizers", "PIL", "cv2", "sklearn", "pandas",
})

_TOP_TRY = re.compile(rb"try\s*:")
_FUNCTION = re.compile(rb"(?:async\s+)?def\b")
_RELATIVE = re.compile(rb"from\s+\.")
#: the ``except ImportError:`` of a top-level ``try:``: its imports run wherever the first way of
#: importing failed (``try: import _prebuilt as _backend`` ``except ImportError: from .backend
#: import _backend``, which builds the extension): the module's own fallback, not a guard
_TOP_EXCEPT = re.compile(rb"except\b[^:]*:")
#: a string that is a dotted module path (``"pkg.ops.scan"``)
_DOTTED_STRING = re.compile(rb"""['"]([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+)['"]""")


def _openers(source: bytes, start: int) -> Iterator[bytes]:
    """The lines that open the blocks around the indented line at ``start``, innermost first:
    each the nearest line above with less indentation that is not blank or a comment (read
    upwards, line by line)."""
    line_end = source.find(b"\n", start)
    line = source[start:line_end if line_end >= 0 else len(source)]
    depth = len(line) - len(line.lstrip(b" \t"))
    end = start  # the start of a line: the import pattern is anchored at one
    while end > 0 and depth:
        begin = source.rfind(b"\n", 0, end - 1) + 1
        above = source[begin:end].rstrip(b"\r\n")
        text = above.lstrip(b" \t")
        if text and not text.startswith(b"#") and len(above) - len(text) < depth:
            yield above
            depth = len(above) - len(text)
        end = begin


def _in_function(openers: Iterator[bytes]) -> bool:
    """One of ``openers`` opens a function."""
    return any(_FUNCTION.match(opener.lstrip()) for opener in openers)


def import_graph(files: Iterable[tuple[Path, PurePath, bytes]]) -> ImportGraph:
    """The :class:`ImportGraph` of ``files`` (a path, its path relative to the folder it was found
    in, its bytes). A module is named from each folder above it (a script's folder, or one the
    project puts on ``sys.path`` to import vendored code by its own names), but not from inside a
    package by the name of the standard library's or a well-known package's module: there
    ``import torch`` is torch, not the package's own ``torch.py``. A notebook imports modules,
    and is none."""
    files = list(files)
    packages = {relative.parent for _, relative, _ in files if relative.name == "__init__.py"}

    graph = ImportGraph({}, {}, {})
    for path, relative, source in files:
        if relative.suffix == ".py":
            graph.files.add(path)
        parts = list(relative.with_suffix("").parts)
        if parts and parts[-1] == "__init__":
            parts.pop()
        for start in range(len(parts)) if relative.suffix == ".py" else ():  # a notebook is no module
            if start == 0 or PurePath(*parts[:start]) not in packages or parts[start] not in _EXTERNAL:
                name = ".".join(parts[start:])
                if graph.by_name.setdefault(name, path) != path and name.count(".") >= 2:
                    graph.twins.setdefault(name, []).append(path)
        if b"import" in source:
            package = parts[:-1] if relative.stem != "__init__" else parts
            top, every = graph.top.setdefault(path, []), graph.every.setdefault(path, [])
            for match in _ANY_IMPORT.finditer(source):
                names = _names(package, match)
                every.extend(names)
                openers = _openers(source, match.start()) if match.group(0)[:1] in b" \t" else iter(())
                opener = next(openers, b"")
                own_package = _RELATIVE.match(match.group(0).rpartition(b";")[2].lstrip())
                if not opener or _TOP_EXCEPT.match(opener):
                    top.extend(names)
                elif _TOP_TRY.match(opener):
                    graph.tried.update(names)
                elif own_package and (_FUNCTION.match(opener.lstrip())
                                   or _TOP_EXCEPT.match(opener.lstrip()) and _in_function(openers)):
                    graph.called.setdefault(path, []).extend(names)
                elif path not in graph.choices and BRANCH_OPENER.match(opener.lstrip()):
                    graph.choices[path] = import_choices(source, package)
        named = [match.group(1).decode() for match in _DOTTED_STRING.finditer(source)]
        if named:
            graph.named[path] = named
    return graph


def imported_modules(graph: ImportGraph) -> set[Path]:
    """The files of ``graph`` another file of the project imports (lazily too): their code runs in
    the importers' programs, on whatever host those run."""
    return {module for path, module in graph.links() if module != path}


def kernel_sources(graph: ImportGraph, extensions: tuple[str, ...] = (),
                   operators: dict[Path, str] | None = None, made: bool = True) -> dict[Path, str]:
    """For each file of ``graph`` that holds GPU-kernel code itself, why: it imports a kernel
    language, a kernel module or a compiled CUDA extension unconditionally, is a module of the
    package a declared extension (``extensions``, :func:`declared_extensions`) is built into, or
    calls a compiled extension's operators (``operators``: each file with the namespace it calls,
    :func:`neuronize.analysis.custom_ops.compiled_namespace`); ``made``: or imports a package made
    of CUDA kernels (``mamba_ssm``: a script that builds its models on them)."""
    reasons = {path: reason for path, names in graph.top.items()
               for reason in [next(filter(None, (kernel_reason(n, extensions, made=made) for n in names)), None)
                              or (_loading_reason(path, names) if made else None)]
               if reason is not None}
    for name, path in graph.by_name.items() if extensions else ():  # the package that wraps the compiled operators
        package = module_matches(name, extensions)
        if package is not None and path not in reasons:
            reasons[path] = f"is part of `{package}`, the package of the project's compiled extension"
    for path, namespace in (operators or {}).items():
        reasons.setdefault(path, f"calls `torch.ops.{namespace}`, operators a compiled extension registers")
    return reasons


def _loading_reason(path: Path, names: list[str]) -> str | None:
    """Why the file ``path``, which imports ``names`` whenever it is imported, does not import
    without CUDA: one is a package whose import loads CUDA kernels (``tensorrt``, ``flash_attn``),
    other than the one the file is part of (a folder of its path named for it)."""
    for name in names:
        package = module_matches(name, KERNEL_LOADING)
        if package is not None and package.split(".")[0] not in path.parts:
            return f"imports `{package}`: {PACKAGES[package].what}"
    return None


def kernel_bound(graph: ImportGraph, extensions: tuple[str, ...] = (),
                 operators: dict[Path, str] | None = None) -> dict[Path, str]:
    """For each file of ``graph`` that imports GPU-kernel code unconditionally, directly or through
    the project's modules, why (``imports `apps.model`, which through the project's modules imports
    triton``); the files that hold it (:func:`kernel_sources`) among them. Importing a module of a
    package runs the package's ``__init__.py`` first (``from .utils import comm`` in ``pkg/`` runs
    ``pkg/__init__.py``), which may import kernel code itself. A module of its own
    package a function imports (``def traverse(*args): from ._backend import _C``, a lazy wrapper
    of the package's extension) counts when a compiled extension is behind it: each call runs its
    kernels. One behind which is only a kernel language (``def quantize(self): from .quantization
    import quantize_with_gptq``, Triton kernels of an optional quantized path) is the author's
    guard, as is another import in a function (a script's ``def build(): from pkg.model import
    Net``): neither is followed."""
    top = {path: [(name, False) for name in names] for path, names in graph.top.items()}
    imports = {path: [*top.get(path, ()), *((name, True) for name in graph.called.get(path, ()))]
               for path in {*graph.top, *graph.called}}
    reasons = kernel_sources(graph, extensions, operators)
    seeds = set(reasons)
    roots = dict(reasons)  # each file's first kernel import, at the end of the chain
    languages = {path for path in seeds
                 if any(module_matches(name, KERNEL_PACKAGES) for name in graph.top.get(path, ()))}
    origins = {path: path for path in seeds}  # each file's seed, at the end of the chain
    while True:  # through the project's own modules, until nothing more is reached
        more = {}
        for path, names in imports.items():
            if path in reasons:
                continue
            for name, lazy, bound in ((run, lazy, module) for imported, lazy in names
                                      for run, module in _run_by(graph, imported, path)):
                if lazy and bound is not None and origins.get(bound) in languages:
                    continue
                if bound is not None and bound != path and bound in reasons:
                    origins[path] = origins[bound]
                    roots[path] = roots[bound]
                    through = "" if bound in seeds else " through the project's modules"
                    more[path] = f"imports `{name}`, which{through} {roots[bound]}"
                    break
            for branches in graph.choices.get(path, ()) if path not in more else ():
                picked = [next((n for n in branch if graph.module_for(n, path) in reasons), "") for branch in branches]
                first = graph.module_for(picked[0], path) if all(picked) else None
                if first is not None:
                    roots[path], origins[path] = roots[first], origins[first]
                    listed = ", ".join(f"`{name}`" for name in dict.fromkeys(picked))
                    more[path] = (f"imports one of {listed} (one in each branch of an `if`), each GPU-kernel code: "
                                  f"`{picked[0]}` through the project's modules {roots[first]}")
                    break
        if not more:
            return reasons | _importing_by_name(graph, reasons)
        reasons.update(more)


def _run_by(graph: ImportGraph, name: str, importer: Path) -> Iterator[tuple[str, Path | None]]:
    """The modules ``importer``'s import of ``name`` runs, each with its file: the module, then the
    ``__init__.py`` of each package its dotted name goes through, innermost first, as found beside
    the module (``import pkg.sub.mod`` runs ``pkg/__init__.py`` and ``pkg/sub/__init__.py``; a
    folder without one is a namespace package, and so are the folders above it)."""
    module = graph.module_for(name, importer)
    yield name, module
    if module is None:
        return
    folder = module.parent.parent if module.name == "__init__.py" else module.parent
    parts = name.split(".")[:-1]
    while parts and (init := folder / "__init__.py") in graph.files:
        yield ".".join(parts), init
        parts.pop()
        folder = folder.parent


def _importing_by_name(graph: ImportGraph, reasons: dict[Path, str]) -> dict[Path, str]:
    """The files that name one of the project's GPU-kernel modules by its dotted path (a registry
    of ops whose ``import_path`` ``importlib`` resolves): the tensors they build feed those kernels."""
    found = {}
    for path, names in graph.named.items():
        if path in reasons:
            continue
        for name in names:
            bound = graph.by_name.get(name)
            if bound is not None and bound != path and bound in reasons:
                found[path] = f"imports `{name}` by name (a string), a module of the project with GPU-kernel code"
                break
    return found


#: a script's entry point: a module run as a program has a user of its own
_MAIN = re.compile(rb"^if[ \t(]+__name__[ \t]*==", re.MULTILINE)


def kernel_servants(files: Iterable[tuple[Path, PurePath, bytes]], graph: ImportGraph,
                    kernels: dict[Path, str]) -> dict[Path, str]:
    """Each module of the project, no script, that only files importing GPU-kernel code import
    (``kernels``, :func:`kernel_bound`), directly or through other such modules (the timing helpers
    only a kernel benchmark uses): no program that runs on Neuron reaches it, so its Neuron arms
    never would; why its device edits wait, a clause of the report."""
    files = list(files)
    shown = {path: relative.as_posix() for path, relative, _ in files}
    scripts = {path for path, _, source in files if _MAIN.search(source)}
    importers: dict[Path, set[Path]] = {}
    named = ((path, graph.by_name.get(name)) for path, names in graph.named.items() for name in names)
    for path, module in (*graph.links(), *named):
        if module is not None and module != path:
            importers.setdefault(module, set()).add(path)
    found: dict[Path, str] = {}
    while more := {module: users for module, users in importers.items()
                   if module not in kernels and module not in found and module not in scripts
                   and all(user in kernels or user in found for user in users)}:
        for module, users in more.items():
            listed = ", ".join(f"`{shown[user]}`" for user in sorted(users)[:3]) + (", ..." if len(users) > 3 else "")
            found[module] = (f"it waits for the programs it serves ({listed}), which import GPU-kernel code: none of "
                             "them runs on Neuron, so neither would its Neuron arms; move it with them")
    return found


def kernel_exports(graph: ImportGraph, kernels: dict[Path, str]) -> dict[Path, dict[str, Path]]:
    """For each module of the project, the names a GPU-kernel file (``kernels``, :func:`kernel_bound`)
    imports from it (``from utils import DEV``), each with one such file: what the module binds to
    those names is consumed by kernel code, so a device bound there stays CUDA's. A package that
    re-exports a name (``from .modelutils import DEV`` in its ``__init__``) passes it on to the
    module that binds it."""
    found: dict[Path, dict[str, Path]] = {}
    pending = [(name, importer) for importer in kernels for name in graph.top.get(importer, ())]
    seen: set[tuple[str, Path]] = set()
    while pending:
        name, importer = pending.pop()
        module, _, attr = name.rpartition(".")
        exporter = graph.by_name.get(module)
        if not module or name in graph.by_name or exporter is None or (name, exporter) in seen:
            continue  # a module itself, not a name; or not one of the project's modules
        seen.add((name, exporter))
        found.setdefault(exporter, {}).setdefault(attr, importer)
        pending.extend((again, importer) for again in graph.top.get(exporter, ()) if again.rpartition(".")[2] == attr)
    return found
