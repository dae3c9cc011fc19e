"""Which kind of source a file is: Python, a notebook, or one of the files that carry a project's
install, launch and container set-up (requirements, ``pyproject.toml``, ``setup.cfg``, shell
scripts, Makefiles, Dockerfiles, training/launch configs in YAML or JSON).

Decided by the name first; a name that says nothing (a script without a suffix, a ``.yaml`` or
``.json`` file) is decided by its first bytes: a shell shebang, or the keys of an Accelerate,
DeepSpeed, Lightning or Hydra config. A ``.yaml`` that is not such a config (a CI workflow, a
docker-compose file) is no source: neuronize has nothing to say about it.
"""

from __future__ import annotations

import fnmatch
import re
from pathlib import Path

from neuronize.types import _Word


class SourceKind(_Word):
    """A kind of source: each has its own reader/writer in ``neuronize/sources/`` and a comment
    syntax for suppressions (none for JSON: use a baseline)."""

    PYTHON = "python"
    NOTEBOOK = "notebook"
    REQUIREMENTS = "requirements"  # requirements*.txt, constraints*.txt, requirements/*.txt
    PYPROJECT = "pyproject"  # pyproject.toml dependency tables
    CONDA = "conda"  # conda environment files (environment*.yml, conda*.yml)
    SHELL = "shell"  # *.sh, *.bash, Slurm batch files, scripts with a shell shebang
    DOCKERFILE = "dockerfile"  # Dockerfile, *.Dockerfile, Dockerfile.*, Containerfile
    YAML_CONFIG = "yaml-config"  # Accelerate / DeepSpeed / Lightning / Hydra YAML
    JSON_CONFIG = "json-config"  # DeepSpeed / Accelerate JSON
    MAKEFILE = "makefile"  # Makefile, GNUmakefile, *.mk: recipes and exported variables are shell
    SETUP_CFG = "setup-cfg"  # setup.cfg: install_requires and extras_require
    COG = "cog"  # cog.yaml (Replicate's Cog): the container's GPU, CUDA and python_packages


#: the kinds Python rules handle unless they say otherwise
CODE_KINDS = (SourceKind.PYTHON, SourceKind.NOTEBOOK)
#: the kinds that hold dependency lists
DEPENDENCY_KINDS = (SourceKind.REQUIREMENTS, SourceKind.PYPROJECT, SourceKind.SETUP_CFG, SourceKind.CONDA,
                    SourceKind.COG)

#: the comment that starts a suppression on a line of each kind (None: the kind has no comments)
COMMENT_PREFIX: dict[SourceKind, str | None] = {
    SourceKind.REQUIREMENTS: "#", SourceKind.PYPROJECT: "#", SourceKind.CONDA: "#", SourceKind.SHELL: "#",
    SourceKind.DOCKERFILE: "#", SourceKind.YAML_CONFIG: "#", SourceKind.JSON_CONFIG: None,
    SourceKind.MAKEFILE: "#", SourceKind.SETUP_CFG: "#", SourceKind.COG: "#",
}

_REQUIREMENTS = ("requirements*.txt", "*requirements.txt", "*-requirements*.txt", "constraints*.txt",
                 "*constraints.txt")
_CONDA = ("environment*.yml", "environment*.yaml", "conda*.yml", "conda*.yaml")
#: lock files: generated from the environment files, which are read (lock again after migrating)
_LOCK_FILES = ("conda-lock.yml", "conda-lock.yaml", "*.conda-lock.yml", "*.conda-lock.yaml")
_SHELL_SUFFIXES = (".sh", ".bash", ".slurm", ".sbatch")
_COG = ("cog.yaml", "cog.yml")
_DOCKERFILES = ("dockerfile", "containerfile", "*.dockerfile", "dockerfile.*", "containerfile.*")
_MAKEFILES = ("makefile", "gnumakefile", "*.mk")
_SHEBANG = re.compile(rb"\A#![ \t]*\S*?(?:/|/env[ \t]+(?:-\S+[ \t]+)*)(?:ba|z|k|da)?sh\b")
#: keys that make a YAML file a launch/training config (at the start of a line, any indent)
_CONFIG_KEYS = (
    "distributed_type", "mixed_precision", "gpu_ids", "num_processes", "compute_environment",
    "deepspeed_config", "zero_optimization", "train_micro_batch_size_per_gpu", "fp16", "bf16",
    "accelerator", "precision", "devices", "strategy", "trainer", "device", "backend",
    "dist_backend", "_target_",
)
_YAML_KEY = re.compile(rb"^[ \t]*(?:-[ \t]+)?[\"']?(?:" + b"|".join(k.encode() for k in _CONFIG_KEYS)
                       + rb")[\"']?[ \t]*:", re.MULTILINE)
_JSON_KEY = re.compile(rb"\"(?:" + b"|".join(k.encode() for k in _CONFIG_KEYS) + rb")\"[ \t\r\n]*:")
#: how much of a file the content tests read; configs are small, a 10 MB vocab.json is not one
HEAD = 65536
MAX_CONFIG_BYTES = 1_000_000


def kind_by_name(path: Path) -> SourceKind | None:
    """The kind ``path``'s name alone decides, or None when its content must (or nothing does)."""
    name = path.name
    lower = name.lower()
    if lower.endswith(".py"):
        return SourceKind.PYTHON
    if lower.endswith(".ipynb"):
        return SourceKind.NOTEBOOK
    if lower.endswith(".txt") and (any(fnmatch.fnmatch(lower, p) for p in _REQUIREMENTS)
                                   or path.parent.name.lower() == "requirements"):
        return SourceKind.REQUIREMENTS
    if lower == "pyproject.toml":
        return SourceKind.PYPROJECT
    if _is_lock_file(lower):
        return None
    if any(fnmatch.fnmatch(lower, p) for p in _CONDA):
        return SourceKind.CONDA
    if lower.endswith(_SHELL_SUFFIXES):
        return SourceKind.SHELL
    if any(fnmatch.fnmatch(lower, p) for p in _DOCKERFILES):
        return SourceKind.DOCKERFILE
    if any(fnmatch.fnmatch(lower, p) for p in _MAKEFILES):
        return SourceKind.MAKEFILE
    if lower == "setup.cfg":
        return SourceKind.SETUP_CFG
    if lower in _COG:
        return SourceKind.COG
    return None


def _is_lock_file(lower: str) -> bool:
    return any(fnmatch.fnmatch(lower, p) for p in _LOCK_FILES)


def needs_content(path: Path) -> bool:
    """Whether the kind of ``path`` (not decided by its name) depends on its first bytes."""
    lower = path.name.lower()
    return (lower.endswith((".yaml", ".yml", ".json")) and not _is_lock_file(lower)
            and lower not in _COG) or "." not in lower


def kind_by_content(path: Path, head: bytes) -> SourceKind | None:
    """The kind of a file whose name did not decide, from its first bytes."""
    lower = path.name.lower()
    if lower.endswith((".yaml", ".yml")):
        return SourceKind.YAML_CONFIG if _YAML_KEY.search(head) else None
    if lower.endswith(".json"):
        return SourceKind.JSON_CONFIG if head.lstrip()[:1] == b"{" and _JSON_KEY.search(head) else None
    if "." not in lower and _SHEBANG.match(head):
        return SourceKind.SHELL
    return None


def kind_of(path: Path) -> SourceKind | None:
    """The kind of the file at ``path`` (reading its first bytes if the name does not decide);
    None: not a source neuronize reads."""
    kind = kind_by_name(path)
    if kind is not None or not needs_content(path):
        return kind
    try:
        if not path.is_file() or path.stat().st_size > MAX_CONFIG_BYTES:  # a FIFO would block
            return None
        with path.open("rb") as handle:
            head = handle.read(HEAD)
    except OSError:
        return None
    return kind_by_content(path, head)


_INCLUDE = re.compile(rb"^[ \t]*(?:-r|--requirement|-c|--constraint)(?:[ \t]*=[ \t]*|[ \t]+)(?P<file>[^\s#]+)",
                      re.MULTILINE)


def included_requirements(path: Path) -> list[Path]:
    """The files a requirements file pulls in with ``-r`` / ``-c`` (requirements too, whatever
    their names), relative to its folder; URLs and variables left out."""
    try:
        with path.open("rb") as handle:
            head = handle.read(HEAD)
    except OSError:
        return []
    names = (m.group("file").decode("utf-8", "replace") for m in _INCLUDE.finditer(head))
    return [path.parent / name for name in names if "://" not in name and "$" not in name]


def parse_kinds(values: str | tuple[str, ...] | list[str]) -> tuple[SourceKind, ...]:
    """Kind names (``python,requirements`` or a list) as kinds; ValueError names a bad one."""
    names = values.split(",") if isinstance(values, str) else [v for x in values for v in x.split(",")]
    out = []
    for name in (n.strip() for n in names):
        if not name:
            continue
        try:
            out.append(SourceKind(name))
        except ValueError:
            known = ", ".join(k.value for k in SourceKind)
            raise ValueError(f"unknown source kind {name!r} (known: {known})") from None
    return tuple(dict.fromkeys(out))
