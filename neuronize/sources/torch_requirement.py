"""Whether a project may run on a torch without ``torch.accelerator`` (before 2.6), read from the
torch requirement it declares.

Looked up from a file's folder upwards to the repository's root (a folder holding ``.git``); the
first folder that declares torch decides: ``requirements*.txt``, ``pyproject.toml``
(``[project]`` dependencies and optional dependencies, Poetry's dependencies), ``setup.cfg``
(``install_requires``), ``setup.py`` (the requirement strings in it) and conda environment files
(``torch`` or ``pytorch``). A project that declares no torch, or no lower bound of at least 2.6,
admits an older one: the calls a migration writes must then run there too (a host-neutral call
falls back to ``torch.cuda`` where ``torch.accelerator`` is missing). Never raises: a file that
cannot be read says nothing.

The same declarations say the newest torch the project admits, where every one of them has an
upper bound (``torch==1.6.0``): a fix that writes an API newer than that (``torch.autocast``, new in
1.10) would break the CUDA box that keeps that torch.
"""

from __future__ import annotations

import functools
import os
import re
from pathlib import Path

#: the first release with ``torch.accelerator``
ACCELERATOR_RELEASE = (2, 6)

_NAME = r"(?:py)?torch(?![\w.-])\s*(?:\[[^\]]*\])?\s*"
#: a torch requirement on a line of its own: requirements files, setup.cfg, conda files (``- pytorch=1.13``)
_LINE = re.compile(rf"(?m)^\s*(?:-\s*)?(?:\w+::)?{_NAME}(?P<spec>[^#;\n]*)")
#: a torch requirement in a string: setup.py, pyproject.toml
_QUOTED = re.compile(rf"[\"']\s*{_NAME}(?P<spec>[^\"';]*)")
#: a lower bound; the ``=`` of an upper bound (``<=2.8``) or an exclusion (``!=2.0``) is none
_LOWER = re.compile(r"(?<![<!=~>])(>=|===|==|~=|>|=)\s*(\d+)(?:\.(\d+))?")
_POETRY = re.compile(r"(?m)^\s*torch\s*=\s*(?:\{[^}\n]*version\s*=\s*)?[\"']([^\"']*)[\"']")
_DECLARING = ("requirements.txt", "pyproject.toml", "setup.cfg", "setup.py", "environment.yml",
              "environment.yaml")


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


def _specs(text: str, name: str) -> list[str]:
    """The version specifier of each torch requirement in ``text`` (the file ``name``; Poetry's
    ``^2.1`` as its floor, ``>=2.1``)."""
    quoted = name in ("setup.py", "pyproject.toml")
    found = [m.group("spec") for m in (_QUOTED if quoted else _LINE).finditer(text)]
    if name == "pyproject.toml":
        found += [m.group(1).replace("^", ">=") for m in _POETRY.finditer(text)]
    return found


def _declared(text: str, name: str) -> list[tuple[int, int] | None] | None:
    """The floor of each torch requirement in ``text`` (the file ``name``); None when it names
    torch nowhere."""
    return [_floor(spec) for spec in _specs(text, name)] or None


def _in_folder(folder: Path) -> tuple[str, ...] | None:
    """The specifiers of the torch requirements the files of ``folder`` declare; None if none does."""
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return None
    specs: list[str] = []
    for name in names:
        lower = name.lower()
        if not (lower in _DECLARING or (lower.startswith("requirements") and lower.endswith(".txt"))
                or (lower.startswith("environment") and lower.endswith((".yml", ".yaml")))):
            continue
        try:
            text = (folder / name).read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        specs += _specs(text, lower)
    return tuple(specs) or None


@functools.lru_cache(maxsize=1024)
def _governing(folder: str) -> tuple[str, ...] | None:
    """The torch requirements that decide for ``folder`` (an absolute path): those of the first
    folder from it up to the repository's root that declares torch; None if none does."""
    path = Path(folder)
    specs = _in_folder(path)
    if specs is not None or (path / ".git").exists() or path.parent == path:
        return specs
    return _governing(os.path.dirname(folder))


def newest_torch(folder: str) -> tuple[int, int] | None:
    """The newest torch release (major, minor) the project governing ``folder`` admits, where every
    torch requirement it declares has an upper bound (``torch==1.6.0``); None otherwise. The fixes
    do not write an API newer than it: the CUDA box keeps running the migrated code on that torch."""
    ceilings = [_ceiling(spec) for spec in _governing(folder) or ()]
    return max(c for c in ceilings if c is not None) if ceilings and None not in ceilings else None


def admits_old_torch(folder: str) -> bool:
    """Whether the project governing ``folder`` (an absolute path) may run on a torch before 2.6:
    it declares no torch, or some torch requirement without a lower bound of at least 2.6."""
    specs = _governing(folder)
    return specs is None or any(floor is None or floor < ACCELERATOR_RELEASE for floor in map(_floor, specs))
