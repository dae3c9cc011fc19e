"""The values neuronize deals in: what a rule's finding is, what a file and a run come to.

A leaf module: it imports nothing from neuronize, so every other module can use these types
(imports form one chain: types <- context <- transform <- policy <- engine <- api <- cli).
Everything here is a plain value: frozen, comparable, picklable (results cross process boundaries
and the cache).
"""

from __future__ import annotations

import enum
import functools
from dataclasses import dataclass, field
from pathlib import Path


class _Word(str, enum.Enum):
    """A str-valued enum that prints, formats and compares as its value (``"safe"``)."""

    def __str__(self) -> str:
        return str(self.value)

    def __format__(self, spec: str) -> str:
        return format(str(self.value), spec)


class Safety(_Word):
    """How much a fix can be trusted, ruff-style."""

    SAFE = "safe"  # same behaviour on Neuron by the documentation
    UNSAFE = "unsafe"  # right in the usual case; applied only when asked for
    REPORT_ONLY = "report-only"  # cannot be migrated mechanically


class Evidence(_Word):
    """How sure the reference is of a fact (../shared/reference/torchneuron.md section 0.1)."""

    DOC = "DOC"
    DOC_OLD = "DOC-old"
    SRC = "SRC"
    THIRD_PARTY = "3P"
    INF = "INF"

    @property
    def weak(self) -> bool:
        """Evidence a fix may not be applied silently on."""
        return self in (Evidence.SRC, Evidence.THIRD_PARTY, Evidence.INF)


class Target(_Word):
    """What the rewritten code runs on (``--target``, ``target =`` in the config).

    A ``str`` subclass: ``Target.CPU == "cpu"``, and it hashes like its value.
    """

    NEURON = "neuron"  # Trainium through TorchNeuron
    ACCELERATOR = "accelerator"  # torch.accelerator: CPU, CUDA or Neuron, unchanged code
    CPU = "cpu"  # validate a migration locally


class SkipReason(_Word):
    """Why a path given to neuronize was passed over without being read."""

    NO_SUCH_FILE = "no such file or directory"
    SYMLINK_OUTSIDE = "symlink to a file outside the given paths; not processed"


@dataclass(frozen=True)
class Options:
    """Per-run choices that change what rules do. Part of the cache key of a result."""

    target: Target = Target.NEURON
    unsafe_fixes: bool = False
    report_unused_suppressions: bool = False
    #: top-level packages of the project being migrated (sorted): importing one is no dependency
    own_packages: tuple[str, ...] = ()
    #: the project's line length (ruff's or black's ``line-length``, flake8's ``max-line-length``):
    #: lines the fixes write stay within it (None: the file's longest line, at least 88)
    line_length: int | None = None
    #: the project may run on a torch without ``torch.accelerator`` (before 2.6: it declares no
    #: lower bound of at least 2.6, neuronize/sources/torch_requirement.py): the host-neutral calls
    #: the fixes write fall back to ``torch.cuda`` there
    old_torch: bool = False
    #: the newest release (major, minor) of torch and of transformers the project admits, each
    #: where every requirement of it that the project declares has an upper bound (``torch==1.6.0``,
    #: neuronize/sources/torch_requirement.py); a package absent has no bound, and None: not read
    #: yet. A rule whose fixes write a newer API (``Transform.needs``) only reports
    newest_releases: tuple[tuple[str, tuple[int, int]], ...] | None = None
    #: the oldest release (major, minor) of torch and of transformers the project says it runs on:
    #: the lowest lower bound of its requirements (``torch>=1.8``; a package without one is absent)
    #: (neuronize/sources/torch_requirement.py); None: not read. A rule whose fixes write a newer
    #: API (``Transform.needs``) only reports, unless its fix keeps the older call where it ran
    oldest_releases: tuple[tuple[str, tuple[int, int]], ...] | None = None
    #: why the file imports GPU-kernel code through the project's own modules
    #: (neuronize/analysis/kernel_imports.py), which makes it GPU-kernel code too; None: it does not
    kernel_import: str | None = None
    #: the names of this module that GPU-kernel files import, each with one such file
    #: (neuronize/analysis/kernel_imports.py): a device bound to one at module level stays CUDA's
    kernel_exports: tuple[tuple[str, str], ...] = ()
    #: the names of this module that files holding GPU-kernel code import, each with one such file
    #: (neuronize/analysis/kernel_imports.py): a function or class bound to one serves those kernels
    kernel_feeds: tuple[tuple[str, str], ...] = ()
    #: the modules of the CUDA extensions the project's build scripts declare (``setup.py``'s
    #: ``CUDAExtension(name=...)``): a function that imports one, even lazily, is GPU-kernel code
    project_extensions: tuple[str, ...] = ()
    #: module-level flags of the project stored from a CUDA capability probe
    #: (neuronize/analysis/probe_flags.py): a branch on one imported here is CUDA's
    probe_flags: frozenset[str] = frozenset()
    #: the project's functions that hand a parameter to a CUDA-only library: (name, parameters,
    #: those handed on) (neuronize/analysis/library_wrappers.py); a caller's argument for one is
    #: the library's
    library_wrappers: tuple[tuple[str, tuple[str, ...], tuple[str, ...]], ...] = ()
    #: the project's functions that return a model their loader places on GPUs
    #: (neuronize/analysis/placed_loaders.py): a call of one imported here pins the placements beside it
    placed_loaders: frozenset[str] = frozenset()
    #: the project's functions that hand a device to a library that rejects ``"neuron"`` (name,
    #: parameters, those handed on) (neuronize/analysis/device_sinks.py): a device choice that
    #: reaches one stays
    device_sinks: tuple[tuple[str, tuple[str, ...], tuple[str, ...]], ...] = ()
    #: the project's functions that always create an NCCL process group
    #: (neuronize/analysis/cuda_setups.py): a call of one imported here pins the script's device edits
    cuda_setups: frozenset[str] = frozenset()
    #: the names the project gives to its choice of backend (neuronize/analysis/backend_keys.py):
    #: a default of one of them is a key of the project's backend table, which has no Neuron entry
    backend_keys: frozenset[str] = frozenset()
    #: the operator namespaces the project defines in Python (neuronize/analysis/custom_ops.py): a
    #: call of ``torch.ops.<another>`` is one of a compiled extension's operators
    op_namespaces: frozenset[str] = frozenset()
    #: why the file is part of an engine implemented once per vendor, with no Neuron implementation
    #: (neuronize/analysis/vendor_engines.py); None: it is not
    vendor_engine: str | None = None
    #: another Python file of the run asks whether a host is available
    #: (neuronize/analysis/host_choice.py): the project runs on several hosts, so a library
    #: module's hard-coded CUDA serves them all and gains Neuron host-aware
    project_checks_host: bool = False
    #: another file of the run imports this module (neuronize/analysis/project_facts.py): its top
    #: level runs in the importers' programs too, on every host, even where it is also a script
    imported_elsewhere: bool = False
    #: a Python file of the run still runs on Python 2 (neuronize/analysis/python2.py): so do the
    #: others, and the code the fixes write parses there
    python2: bool = False
    #: the edit group of a placement pinned to CUDA at the top level of a cell of the notebook
    #: (``Report.pins``: a model its loader places on GPUs): the device edits of every cell wait for it
    notebook_pins: str | None = None
    #: the CUDA flags a notebook cell stores that later cells read, where some test of one cannot
    #: gain a Neuron branch (neuronize/analysis/notebooks.py): none of them gains one
    notebook_flags: frozenset[str] = frozenset()
    #: why the file's device edits wait for other programs of the run whose placements stay
    #: (neuronize/analysis/program_pins.py, kernel_imports.kernel_servants), None where none do
    program_pin: str | None = None
    #: another Python file of the run that makes float16 other than by an argument-less ``.half()``
    #: (neuronize/analysis/float16_sources.py), as shown; None where none does
    float16_elsewhere: str | None = None
    #: why the file's device edits are as safe as NRN106's edit in another module: it hands its
    #: device choice to a function there that makes a random generator on it
    #: (neuronize/analysis/generator_makers.py), None where it does not
    generator_partner: str | None = None

    def __post_init__(self) -> None:
        # Options(target="cpu") is a Target too (ValueError for a target that does not exist)
        object.__setattr__(self, "target", Target(self.target))


@dataclass(frozen=True)
class ImportRequest:
    """An import a fix needs (``import module`` / ``from module import obj``), or no longer needs.

    The engine adds or removes imports once, after all fixes are applied, and only for fixes that
    were applied. A removal is skipped while the name is still used.
    """

    module: str
    obj: str | None = None
    asname: str | None = None
    remove: bool = False


#: A note on a finding: ``(kind, text)``. The kinds, in the order a finding's text shows them:
#: ``target``, ``role`` and ``dispatch`` (why the rule's fix became a report: see
#: :mod:`neuronize.decision.policy`) follow the rule's words; the evidence mark comes next; then
#: ``import-safety``, ``group`` and ``guard`` (what the decision stage did), each in brackets.
Note = tuple[str, str]

#: how :meth:`Finding.text` shows a note of each kind that is not bracketed
_INLINE_NOTES = {"target": " ({})", "role": "; {}", "dispatch": "; {}"}


def subject_of(message: str) -> str | None:
    """The code a rule's message opens with (```from apex import amp` needs CUDA`` -> ``from apex
    import amp``): the place the finding names. None when it opens with words."""
    if message.startswith("`"):
        end = message.find("`", 1)
        if end > 0:
            return message[1:end]
    return None


@functools.total_ordering
@dataclass(frozen=True, eq=True)
class Finding:
    """One thing neuronize found, as users and other tools see it. Positions are 1-based.

    ``message`` holds the rule's own words; the facts about the finding are fields, and
    :attr:`text` renders them (once, by the output formats). Findings sort by position, rule and
    rendered text.
    """

    line: int
    column: int
    rule: str
    name: str
    safety: Safety
    message: str
    fixable: bool
    end_line: int = 0
    end_column: int = 0
    applied: bool = False
    #: 1-based cell number for a finding in a notebook (lines then count within the cell)
    cell: int | None = None
    #: the edit group the finding's fix belongs to (applied with the others or not at all)
    group: str | None = None
    #: the evidence the finding rests on (None: no rule's reference, e.g. a suppression comment)
    evidence: Evidence | None = None
    #: the code the message opens with, naming the place (see :func:`subject_of`)
    subject: str | None = None
    notes: tuple[Note, ...] = ()
    #: ``hard`` / ``optional`` for an import of a CUDA-only package, else None
    dependency: str | None = None

    def __post_init__(self) -> None:
        if self.subject is None:
            object.__setattr__(self, "subject", subject_of(self.message))

    @property
    def text(self) -> str:
        """The message as users read it: the rule's words, the notes on why a fix became a
        report, the evidence mark (``[evidence: INF]``, none for DOC) and the decision notes."""
        inline = "".join(_INLINE_NOTES[kind].format(text) for kind, text in self.notes if kind in _INLINE_NOTES)
        mark = "" if self.evidence in (None, Evidence.DOC) else f" [evidence: {self.evidence}]"
        bracketed = "".join(f" [{text}]" for kind, text in self.notes if kind not in _INLINE_NOTES)
        return f"{self.message}{inline}{mark}{bracketed}"

    def _order(self) -> tuple[object, ...]:
        return (self.line, self.column, self.rule, self.name, self.safety, self.text, self.fixable,
                self.end_line, self.end_column, self.applied, self.cell or 0, self.group or "")

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, Finding):
            return NotImplemented
        return self._order() < other._order()

    def to_json(self, path: str) -> dict[str, object]:
        return {
            "path": path,
            **({"cell": self.cell} if self.cell is not None else {}),
            "line": self.line,
            "column": self.column,
            "end_line": self.end_line,
            "end_column": self.end_column,
            "rule": self.rule,
            "name": self.name,
            "safety": self.safety.value,
            "fixable": self.fixable,
            "applied": self.applied,
            "message": self.text,
            **({"group": self.group} if self.group is not None else {}),
            **({"evidence": self.evidence.value} if self.evidence is not None else {}),
            **({"subject": self.subject} if self.subject is not None else {}),
            **({"notes": [{"kind": kind, "text": text} for kind, text in self.notes]} if self.notes else {}),
            **({"dependency": self.dependency} if self.dependency is not None else {}),
        }


@dataclass(frozen=True)
class FileError:
    """Why a file could not be processed. ``line`` is 1-based where known."""

    message: str
    line: int | None = None
    column: int | None = None

    def to_json(self, path: str) -> dict[str, object]:
        data: dict[str, object] = {"path": path, "message": self.message}
        if self.line is not None:
            data["line"] = self.line
        if self.column is not None:
            data["column"] = self.column
        return data


@dataclass(frozen=True)
class SourceResult:
    """The outcome for one source text. ``output`` is None when nothing changes."""

    findings: tuple[Finding, ...] = ()
    output: bytes | None = None
    error: FileError | None = None
    skipped: bool = False  # the pre-filter ruled the file out: no enabled rule's token in it
    warnings: tuple[str, ...] = ()
    #: fixes would apply, but the caller asked for analysis only (``fix=False``)
    would_change: bool = False
    #: the edit group of a placement this source pins to CUDA at its top level (``Report.pins``)
    pins: str | None = None

    @property
    def changed(self) -> bool:
        return self.output is not None


@dataclass(frozen=True)
class Skipped:
    """A path given to neuronize that was not processed, and why."""

    display: str
    reason: SkipReason


@dataclass(frozen=True)
class FileResult:
    """One file's outcome. ``source`` is kept only when the file would change (for diffs)."""

    display: str
    path: Path | None
    result: SourceResult
    source: bytes | None = None
    written: bool = False
    #: once written, ``result``'s findings are at their place in the file as written; these are
    #: the same findings at their place in ``source`` (the report shows each edit's before -> after)
    as_read: tuple[Finding, ...] = ()

    @property
    def error(self) -> FileError | None:
        return self.result.error


@dataclass
class RunResult:
    """What a run comes to (see ``neuronize.api.run``): the files, and the facts the command line
    renders. A run that could not start has ``error`` set and nothing else."""

    files: list[FileResult] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    #: temp files of an interrupted earlier run, removed before writing
    stale_removed: list[Path] = field(default_factory=list)
    #: why nothing was looked at: a bad option, rule selection, configuration or baseline file
    error: str | None = None
    #: how many findings the baseline hid
    baselined: int = 0
    #: how many entries were written to the baseline asked for (None: none was asked for)
    baseline_written: int | None = None
    #: whether the settings of some file applied the unsafe fixes (the summary's wording)
    unsafe_fixes: bool = False
    #: the configuration file each file was looked at with (None: the defaults)
    configs: dict[Path, Path | None] = field(default_factory=dict)
    #: the settings the first path is looked at with and where each came from (``show_settings``)
    settings: str | None = None

    @property
    def errors(self) -> list[FileResult]:
        return [f for f in self.files if f.error is not None]

    @property
    def changed(self) -> list[FileResult]:
        return [f for f in self.files if f.result.changed]

    @property
    def missing(self) -> list[Skipped]:
        """Paths given that do not exist (an error: exit code 2)."""
        return [s for s in self.skipped if s.reason is SkipReason.NO_SUCH_FILE]


#: The sections of the migration report, in its order: key -> title (a rule names its ``section``).
SECTIONS: dict[str, str] = {
    "kernels": "Custom kernels",
    "libraries": "CUDA-only libraries",
    "unsupported": "Unsupported features",
    "distributed": "Distributed",
    "review": "Review-needed comparisons and checks",
    "device": "Device placement and the torch.cuda runtime",
    "precision": "Mixed precision",
    "compile": "Compilation, static shapes and CUDA-only flags",
    "hf": "Hugging Face",
    "setup": "Requirements, launchers, containers and configs",
}
#: How much work a finding still needs by hand, least first.
EFFORTS = ("none", "low", "medium", "high")
