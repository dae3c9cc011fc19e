"""Whether a project may run on a torch without ``torch.accelerator`` (before 2.6), read from the
torch requirement it declares; and the newest torch and transformers releases it admits.

Looked up from a file's folder upwards to the repository's root (a folder holding ``.git``); the
first folder that declares torch decides: ``requirements*.txt``, ``pyproject.toml``
(``[project]`` dependencies and optional dependencies, Poetry's dependencies), ``setup.cfg``
(``install_requires``), ``setup.py`` (the requirement strings in it), conda environment files
(``torch`` or ``pytorch``), Cog's ``cog.yaml`` (its ``python_packages``, quoted or not: the
environment a model's container runs in), the ``pip install`` or ``conda install`` commands of
a Dockerfile or of an install script (``install_req.sh``: ``pip install torch==1.9.0``), and those
of a README or an installation guide, with its lines that pin a version (``torch==1.11``). A project
that declares no torch, or no lower bound of at least 2.6, admits an older one: the calls a
migration writes must then run there too (a host-neutral call falls back to ``torch.cuda`` where
``torch.accelerator`` is missing). Never raises: a file that cannot be read says nothing.

The same declarations say the newest torch the project admits, where every one of them has an
upper bound (``torch==1.6.0``), and the oldest: a fix that writes an API newer than a release the
project admits (``torch.autocast``, new in 1.10; ``torch.amp.custom_fwd``, new in 2.4) would break
the CUDA box that keeps that torch. Transformers' requirements are read the same way
(``cache_implementation=`` is new in 4.38).
"""

from __future__ import annotations

import functools
import os
import re
from pathlib import Path

#: the first release with ``torch.accelerator``
ACCELERATOR_RELEASE = (2, 6)

#: how each package a fix may need is named in a requirement (torch's conda name is ``pytorch``)
_NAMES = {"torch": r"(?:py)?torch", "transformers": r"transformers"}


@functools.cache
def _requirement(package: str) -> tuple[re.Pattern[str], re.Pattern[str], re.Pattern[str]]:
    """The patterns of a requirement of ``package``: on a line of its own (requirements files,
    setup.cfg, conda files: ``- pytorch=1.13``), in a string (setup.py, pyproject.toml), and in
    Poetry's dependencies; Cog's ``cog.yaml`` lists it either way."""
    name = rf"{_NAMES[package]}(?![\w.-])\s*(?:\[[^\]]*\])?\s*"
    return (re.compile(rf"(?m)^\s*(?:-\s*)?(?:\w+::)?{name}(?P<spec>[^#;\n]*)"),
            re.compile(rf"[\"']\s*{name}(?P<spec>[^\"';]*)"),
            re.compile(rf"(?m)^\s*{_NAMES[package]}\s*=\s*(?:\{{[^}}\n]*version\s*=\s*)?[\"']([^\"']*)[\"']"))


@functools.cache
def _installed(package: str) -> re.Pattern[str]:
    """A requirement of ``package`` with a version in an install command (``pip install -U
    torch==1.9.0 torchvision``, ``conda install pytorch=1.13``): a word of that command's line."""
    return re.compile(rf"(?m)\b(?:pip3?|conda|mamba)\s+install\b[^\n#]*?[\s\"']{_NAMES[package]}"
                      rf"(?P<spec>(?:[=<>~!]=?|===)[^\s\"';#]*)")


#: a lower bound; the ``=`` of an upper bound (``<=2.8``) or an exclusion (``!=2.0``) is none
_LOWER = re.compile(r"(?<![<!=~>])(>=|===|==|~=|>|=)\s*(\d+)(?:\.(\d+))?")
_DECLARING = ("requirements.txt", "pyproject.toml", "setup.cfg", "setup.py", "environment.yml",
              "environment.yaml", "cog.yaml")


def _floor(spec: str) -> tuple[int, int] | None:
    """The least version ``spec`` (``>=1.12,<3``) admits, as (major, minor); None without a bound."""
    bounds = [(int(major), int(minor or 0)) for _, major, minor in _LOWER.findall(spec)]
    return max(bounds) if bounds else None


#: an upper bound: an exact pin (``==1.6.0``, conda's ``=1.6``, ``==1.*``), a cap (``<1.10``,
#: ``<=1.9``) or a compatible release (``~=1.6``: any 1.x)
_UPPER = re.compile(r"(?<![<>!~=])(===?|=|<=|<|~=)\s*(\d+)(?:\.(\d+|\*))?(?:\.(\d+))?")


def _ceiling(spec: str) -> tuple[int, int] | None:
    """The newest release (major, minor) ``spec`` (``>=1.4,<1.10``) admits; None without an upper bound."""
    ceilings = []
    for operator, major, minor, micro in _UPPER.findall(spec):
        x = int(major)
        if operator == "<":
            ceilings.append((x, int(minor) - 1) if minor not in ("", "*", "0") else (x - 1, 99))
        elif minor in ("", "*") or (operator == "~=" and not micro):
            ceilings.append((x, 99))  # ``==1.*``, ``~=1.6``: every 1.x
        else:
            ceilings.append((x, int(minor)))
    return min(ceilings) if ceilings else None


@functools.cache
def _pinned_line(package: str) -> re.Pattern[str]:
    """A line of a README that is a requirement of ``package`` with a version (``torch==1.11  #
    recommend``, ``- torch>=1.10``): prose that names the package has no version after it."""
    return re.compile(rf"(?m)^\s*(?:[-*]\s*)?`?{_NAMES[package]}(?P<spec>(?:[=<>~!]=?|===)\s*[^\s\"';#`]*)")


def _specs(text: str, name: str, package: str = "torch") -> list[str]:
    """The version specifier of each requirement of ``package`` in ``text`` (the file ``name``;
    Poetry's ``^2.1`` as its floor, ``>=2.1``)."""
    line, quoted, poetry = _requirement(package)
    patterns = {"setup.py": (quoted,), "pyproject.toml": (quoted,), "cog.yaml": (quoted, line)}.get(
        name, (_installed(package), _pinned_line(package)) if _is_readme(name)
        else (_installed(package),) if _installs(name) else (line,))
    found = [m.group("spec") for pattern in patterns for m in pattern.finditer(text)]
    if name == "pyproject.toml":
        found += [m.group(1).replace("^", ">=") for m in poetry.finditer(text)]
    return found


def _installs(name: str) -> bool:
    """The file ``name`` (lower case) sets up an environment with install commands: a Dockerfile,
    or a shell script named for installing or setting up (``install_req.sh``, ``setup_env.sh``);
    the project's other scripts run its programs."""
    return name.startswith("dockerfile") or name.endswith(".dockerfile") or (
        name.endswith(".sh") and any(word in name for word in ("install", "setup", "env", "requirement")))


def _is_readme(name: str) -> bool:
    """The file ``name`` (lower case) is a README or an installation guide: research code often
    declares its environment there alone (``pip install torch==1.11.0+cu113``)."""
    return name.startswith(("readme", "install")) and name.endswith((".md", ".rst", ".txt"))


def _declared(text: str, name: str) -> list[tuple[int, int] | None] | None:
    """The floor of each torch requirement in ``text`` (the file ``name``); None when it names
    torch nowhere."""
    return [_floor(spec) for spec in _specs(text, name)] or None


def _in_folder(folder: Path, package: str) -> tuple[str, ...] | None:
    """The specifiers of the requirements of ``package`` the files of ``folder`` declare; None if none does."""
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return None
    specs: list[str] = []
    for name in names:
        lower = name.lower()
        if not (lower in _DECLARING or (lower.startswith("requirements") and lower.endswith(".txt"))
                or (lower.startswith("environment") and lower.endswith((".yml", ".yaml"))) or _installs(lower)
                or _is_readme(lower)):
            continue
        try:
            text = (folder / name).read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        specs += _specs(text, lower, package)
    return tuple(specs) or None


@functools.lru_cache(maxsize=1024)
def _governing(folder: str, package: str = "torch") -> tuple[str, ...] | None:
    """The requirements of ``package`` that decide for ``folder`` (an absolute path): those of the
    first folder from it up to the repository's root that declares it; None if none does."""
    path = Path(folder)
    specs = _in_folder(path, package)
    if specs is not None or (path / ".git").exists() or path.parent == path:
        return specs
    return _governing(os.path.dirname(folder), package)


def newest_release(folder: str, package: str) -> tuple[int, int] | None:
    """The newest release (major, minor) of ``package`` (a key of :data:`_NAMES`) the project
    governing ``folder`` admits, where every requirement of it that the project declares has an
    upper bound (``torch==1.6.0``, ``transformers==4.37.1``); None otherwise. The fixes do not
    write an API newer than it: the CUDA box keeps running the migrated code on that release."""
    ceilings = [_ceiling(spec) for spec in _governing(folder, package) or ()]
    return max(c for c in ceilings if c is not None) if ceilings and None not in ceilings else None


def newest_releases(folder: str) -> tuple[tuple[str, tuple[int, int]], ...]:
    """:func:`newest_release` of every package a fix may need, where it is bounded."""
    return tuple((package, newest) for package in _NAMES if (newest := newest_release(folder, package)) is not None)


def oldest_release(folder: str, package: str) -> tuple[int, int] | None:
    """The oldest release (major, minor) of ``package`` (a key of :data:`_NAMES`) the project
    governing ``folder`` says it runs on: the lowest lower bound of its requirements of it
    (``torch>=1.8``); None where none has one. A fix that writes a newer API would break the CUDA
    box that keeps that release."""
    floors = [floor for spec in _governing(folder, package) or () if (floor := _floor(spec)) is not None]
    return min(floors, default=None)


def oldest_releases(folder: str) -> tuple[tuple[str, tuple[int, int]], ...]:
    """:func:`oldest_release` of every package a fix may need, where it is bounded."""
    return tuple((package, oldest) for package in _NAMES if (oldest := oldest_release(folder, package)) is not None)


def admits_old_torch(folder: str) -> bool:
    """Whether the project governing ``folder`` (an absolute path) may run on a torch before 2.6:
    it declares no torch, or some torch requirement without a lower bound of at least 2.6."""
    specs = _governing(folder)
    return specs is None or any(floor is None or floor < ACCELERATOR_RELEASE for floor in map(_floor, specs))
