"""What the run's Python files and notebooks say about the project, read before any file is
analysed: the modules that import GPU-kernel code (:mod:`neuronize.analysis.kernel_imports`),
whether a file checks for a host (:mod:`neuronize.analysis.host_choice`), the CUDA extensions the
project declares, the modules that serve CUDA hosts, the flags stored from a CUDA capability probe,
the functions that hand a parameter to a CUDA-only library, load a model onto GPUs, hand a
device to a library that rejects "neuron", or set up NCCL processes, and the names the project
gives to its choice of backend.

The facts are a function of the files' kinds, their paths below the files' common folder and their
bytes, and of neuronize's code: they are kept in the result cache under a hash of exactly those.
The files' options are part of every result's key, so a warm run needs the facts before it can
look up any result: reading and hashing the files costs a fraction of reading their imports.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from collections.abc import Sequence
from pathlib import Path, PurePath
from typing import TYPE_CHECKING, Any

from neuronize.sources.kinds import SourceKind

if TYPE_CHECKING:
    from neuronize.sources.cache import ResultCache
    from neuronize.sources.discover import Discovered

#: bumped when the stored form or the meaning of the facts changes without a code change
_FORMAT = "facts-19"


@dataclasses.dataclass(frozen=True)
class ProjectFacts:
    """What the run's Python files and notebooks say about the project, read once before any is
    analysed (each module named as from the files' common folder)."""

    #: the files that import GPU-kernel code through the project's own modules, and why
    #: (:mod:`neuronize.analysis.kernel_imports`)
    kernels: dict[Path, str] = dataclasses.field(default_factory=dict)
    #: a Python file checks for a host (:mod:`neuronize.analysis.host_choice`): the project's
    #: library modules serve several hosts (a notebook is a program of its own, which decides that
    #: for itself)
    checks_host: bool = False
    #: the CUDA extensions the project declares (in a build script, or a notebook cell)
    extensions: tuple[str, ...] = ()
    #: the modules another file of the run imports (lazily too): their top level runs in the
    #: importers' programs, even where the module is a script as well
    imported: set[Path] = dataclasses.field(default_factory=set)
    #: module-level flags stored from a CUDA capability probe (:mod:`neuronize.analysis.probe_flags`)
    probe_flags: frozenset[str] = frozenset()
    #: functions that hand a parameter to a CUDA-only library
    #: (:mod:`neuronize.analysis.library_wrappers`)
    wrappers: tuple[tuple[str, tuple[str, ...], tuple[str, ...]], ...] = ()
    #: functions that return a model their loader places on GPUs (:mod:`neuronize.analysis.placed_loaders`)
    placed_loaders: frozenset[str] = frozenset()
    #: functions that hand a device to a library that rejects ``"neuron"``
    #: (:mod:`neuronize.analysis.device_sinks`)
    device_sinks: tuple[tuple[str, tuple[str, ...], tuple[str, ...]], ...] = ()
    #: functions that always create an NCCL process group (:mod:`neuronize.analysis.cuda_setups`)
    cuda_setups: frozenset[str] = frozenset()
    #: per module, the names GPU-kernel files import from it, each with one such file (its path
    #: below the common folder) (:func:`neuronize.analysis.kernel_imports.kernel_exports`)
    kernel_exports: dict[Path, tuple[tuple[str, str], ...]] = dataclasses.field(default_factory=dict)
    #: per module, the names files holding GPU-kernel code themselves import from it, each with one
    #: such file (:func:`neuronize.analysis.kernel_imports.kernel_sources`; not a script that builds
    #: its models on a package made of kernels): the functions the kernels' wrappers call
    kernel_feeds: dict[Path, tuple[tuple[str, str], ...]] = dataclasses.field(default_factory=dict)
    #: the names the project gives to its choice of backend (:mod:`neuronize.analysis.backend_keys`)
    backend_keys: frozenset[str] = frozenset()
    #: the operator namespaces the project defines in Python (:mod:`neuronize.analysis.custom_ops`)
    op_namespaces: frozenset[str] = frozenset()
    #: the files joined by imports to a program whose placements stay
    #: (:mod:`neuronize.analysis.program_pins`), or that only programs importing GPU-kernel code
    #: import (:func:`neuronize.analysis.kernel_imports.kernel_servants`), and why
    program_pins: dict[Path, str] = dataclasses.field(default_factory=dict)
    #: a Python file still runs on Python 2 (:mod:`neuronize.analysis.python2`)
    python2: bool = False
    #: the Python files that make float16 other than by an argument-less ``.half()``, each as shown
    #: (:mod:`neuronize.analysis.float16_sources`)
    float16_sources: dict[Path, str] = dataclasses.field(default_factory=dict)
    #: the files that hand their device choice to a function of another module that makes a random
    #: generator on it, and why (:mod:`neuronize.analysis.generator_makers`)
    generator_partners: dict[Path, str] = dataclasses.field(default_factory=dict)


def project_facts(files: Sequence[Discovered], cache: ResultCache | None = None) -> ProjectFacts:
    """The :class:`ProjectFacts` of ``files``: from ``cache`` when it holds those of the same files
    with the same bytes, else read (and kept there)."""
    python = [f.path for f in files if f.kind is SourceKind.PYTHON]
    notebooks = [f.path for f in files if f.kind is SourceKind.NOTEBOOK]
    if len(python) + len(notebooks) < 2:
        return ProjectFacts()
    paths = [*python, *notebooks]
    absolute = [Path(os.path.abspath(p)) for p in paths]
    root = Path(os.path.commonpath([p.parent for p in absolute]))
    given = set(absolute)
    while root / "__init__.py" in given and root.parent != root:  # a package's modules are named from above it
        root = root.parent
    relative = [a.relative_to(root) for a in absolute]
    data = [_read_or_empty(p) for p in paths]
    if cache is None:
        return _read_facts(paths, relative, data, len(python))
    name = f"facts/{_key(cache, relative, data, len(python))}.json"
    facts = _decoded(cache.get_file(name), paths)
    if facts is None:
        facts = _read_facts(paths, relative, data, len(python))
        cache.put_file(name, _encoded(facts, paths))
    return facts


def _read_facts(paths: list[Path], relative: list[Path], data: list[bytes], python: int) -> ProjectFacts:
    """The facts read from the files' bytes (the first ``python`` are Python files, the others
    notebooks)."""
    from neuronize.analysis.host_choice import checks_host
    from neuronize.analysis.kernel_imports import (
        declared_extensions, import_graph, imported_modules, kernel_bound, kernel_exports,
        kernel_servants, kernel_sources, extension_packages)
    from neuronize.analysis.backend_keys import backend_keys
    from neuronize.analysis.cuda_setups import cuda_setups
    from neuronize.analysis.custom_ops import compiled_namespace, defined_namespaces
    from neuronize.analysis.device_sinks import device_sinks
    from neuronize.analysis.float16_sources import float16_sources
    from neuronize.analysis.generator_makers import generator_partners
    from neuronize.analysis.library_wrappers import library_wrappers
    from neuronize.analysis.placed_loaders import placed_loaders
    from neuronize.analysis.probe_flags import probe_flags
    from neuronize.analysis.program_pins import program_pins
    from neuronize.analysis.python2 import keeps_python2, notebook_keeps_python2

    sources = data[:python]
    code = [*sources, *(_cells_or_empty(raw) for raw in data[python:])]
    files_code = list(zip(paths, relative, code, strict=True))
    graph = import_graph(files_code)
    declared = declared_extensions(code)
    extensions = extension_packages(graph, declared)
    checks = any(map(checks_host, sources))
    namespaces = defined_namespaces(code)
    operators = {path: namespace for path, text in zip(paths[:python], sources, strict=True)
                 if (namespace := compiled_namespace(text, namespaces)) is not None}
    kernels = kernel_bound(graph, extensions, operators)
    shown = dict(zip(paths, relative, strict=True))

    def exports(importers: dict[Path, str]) -> dict[Path, tuple[tuple[str, str], ...]]:
        return {module: tuple(sorted((name, shown[importer].as_posix()) for name, importer in names.items()))
                for module, names in kernel_exports(graph, importers).items()}
    imported = imported_modules(graph)
    return ProjectFacts(kernels, checks, extensions, imported, probe_flags(sources),
                        library_wrappers(sources, declared), placed_loaders(zip(relative[:python], sources, strict=True)),
                        device_sinks(zip(relative[:python], sources, strict=True)),
                        cuda_setups(zip(relative[:python], sources, strict=True)), exports(kernels),
                        exports(kernel_sources(graph, extensions, operators, made=False)), backend_keys(sources),
                        namespaces, kernel_servants(files_code, graph, kernels) | program_pins(files_code[:python], graph),
                        any(map(keeps_python2, sources)) or any(map(notebook_keeps_python2, data[python:])),
                        float16_sources(zip(paths[:python], relative[:python], sources, strict=True)),
                        generator_partners(files_code[:python]))


def _key(cache: ResultCache, relative: Sequence[PurePath], data: Sequence[bytes], python: int) -> str:
    """A hash of everything the facts are read from: neuronize's code and version, and each file's
    kind, path below the common folder and bytes (each part length-prefixed, so no two inputs
    run together into the same bytes)."""
    import neuronize

    digest = hashlib.sha256()
    for part in (_FORMAT, neuronize.__version__, cache.fingerprint, str(python)):
        digest.update(b"%d:%s" % (len(part), part.encode()))
    for path, raw in zip(relative, data, strict=True):
        name = path.as_posix().encode("utf-8", "surrogateescape")
        digest.update(b"%d:%s%d:" % (len(name), name, len(raw)))
        digest.update(raw)
    return digest.hexdigest()


def _encoded(facts: ProjectFacts, paths: list[Path]) -> bytes:
    """The facts as stored: each file by its index among ``paths`` (the same files, in the same
    order, have the same key wherever the run was started from)."""
    index = {path: i for i, path in enumerate(paths)}
    return json.dumps({
        "kernels": [[index[path], why] for path, why in facts.kernels.items()],
        "checks_host": facts.checks_host,
        "extensions": list(facts.extensions),
        "imported": sorted(index[path] for path in facts.imported),
        "probe_flags": sorted(facts.probe_flags),
        "wrappers": [[name, list(params), list(fed)] for name, params, fed in facts.wrappers],
        "placed_loaders": sorted(facts.placed_loaders),
        "device_sinks": [[name, list(params), list(fed)] for name, params, fed in facts.device_sinks],
        "cuda_setups": sorted(facts.cuda_setups),
        **{key: [[index[path], [list(pair) for pair in names]] for path, names in getattr(facts, key).items()]
           for key in ("kernel_exports", "kernel_feeds")},
        "backend_keys": sorted(facts.backend_keys),
        "op_namespaces": sorted(facts.op_namespaces),
        "python2": facts.python2,
        **{key: [[index[path], text] for path, text in getattr(facts, key).items()]
           for key in ("program_pins", "float16_sources", "generator_partners")},
    }, separators=(",", ":")).encode()


def _decoded(stored: bytes | None, paths: list[Path]) -> ProjectFacts | None:
    """The inverse of :func:`_encoded`; None (read again) for anything missing or malformed."""
    if stored is None:
        return None
    try:
        data: Any = json.loads(stored)
        kernels = {paths[_index(i, paths)]: _text(why) for i, why in data["kernels"]}
        imported = {paths[_index(i, paths)] for i in data["imported"]}
        extensions = tuple(_text(name) for name in data["extensions"])
        flags = frozenset(_text(name) for name in data["probe_flags"])
        loaders = frozenset(_text(name) for name in data["placed_loaders"])
        setups = frozenset(_text(name) for name in data["cuda_setups"])
        keys = frozenset(_text(name) for name in data["backend_keys"])
        namespaces = frozenset(_text(name) for name in data["op_namespaces"])
        pins, float16, partners = ({paths[_index(i, paths)]: _text(why) for i, why in data[key]}
                                   for key in ("program_pins", "float16_sources", "generator_partners"))
        wrappers, sinks = (tuple((_text(name), tuple(map(_text, params)), tuple(map(_text, fed)))
                                 for name, params, fed in data[key]) for key in ("wrappers", "device_sinks"))
        exports, feeds = ({paths[_index(i, paths)]: tuple((_text(name), _text(importer)) for name, importer in names)
                           for i, names in data[key]} for key in ("kernel_exports", "kernel_feeds"))
        checks, python2 = data["checks_host"], data["python2"]
        if not isinstance(checks, bool) or not isinstance(python2, bool):
            raise ValueError("checks_host or python2 is not a boolean")
    except (ValueError, KeyError, TypeError):  # a damaged entry is a miss, never a crash
        return None
    return ProjectFacts(kernels, checks, extensions, imported, flags, wrappers, loaders, sinks, setups, exports, feeds,
                        keys, namespaces, pins, python2, float16, partners)


def _index(value: object, paths: list[Path]) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value < len(paths):
        raise ValueError(f"not a file index: {value!r}")
    return value


def _text(value: object) -> str:
    if not isinstance(value, str):
        raise ValueError(f"not a string: {value!r}")
    return value


def _cells_or_empty(raw: bytes) -> bytes:
    """A notebook's code cells, one after the other (empty if it cannot be read: its own analysis
    says why)."""
    from neuronize.sources.notebook import NotebookError, read_cells

    try:
        return b"".join(cell.source for cell in read_cells(raw))
    except NotebookError:
        return b""


def _read_or_empty(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError:
        return b""  # the file's own analysis reports why it cannot be read
