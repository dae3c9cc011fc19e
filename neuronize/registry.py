"""Rule discovery: every ``Transform`` subclass in a module of a family package of
``neuronize.transforms`` is a rule.

Adding a rule is adding one module; there is no central list to edit.
"""

from __future__ import annotations

import functools
import importlib
import pkgutil
import re
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Protocol, TypeVar

if TYPE_CHECKING:
    from neuronize.transform import Transform


class SelectionError(ValueError):
    """A --select / --ignore entry that matches no rule."""


def _rule_modules() -> Iterator[tuple[str, Path]]:
    """The dotted name and file of every rule module: the modules of the family packages of
    ``neuronize.transforms``, leaving out any name that starts with ``_`` (the helpers)."""
    import neuronize.transforms as package

    for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
        parts = info.name.split(".")[2:]
        if info.ispkg or any(part.startswith("_") for part in parts):
            continue
        yield info.name, Path(package.__path__[0], *parts).with_suffix(".py")


def rule_files() -> list[Path]:
    """Every module of ``neuronize.transforms``, the helpers included."""
    import neuronize.transforms as package

    return sorted(path for folder in package.__path__ for path in Path(folder).rglob("*.py"))


def _declared(module: ModuleType, code: str | None = None) -> Iterator[type[Transform]]:
    """The rules a module declares (optionally only the one with this id or name)."""
    from neuronize.transform import Transform

    for obj in vars(module).values():
        if not (isinstance(obj, type) and issubclass(obj, Transform) and obj is not Transform):
            continue
        if obj.__module__ != module.__name__ or "id" not in obj.__dict__:
            continue
        if code is None or obj.id == code.upper() or obj.name == code:
            yield obj


@functools.cache
def all_rules() -> tuple[type[Transform], ...]:
    """Every rule, sorted by id. Raises if two rules share an id or a name."""
    found: dict[str, type[Transform]] = {}
    names: dict[str, str] = {}
    for name, _ in _rule_modules():
        for obj in _declared(importlib.import_module(name)):
            if obj.id in found and found[obj.id] is not obj:
                raise TypeError(f"rule id {obj.id} is used by {found[obj.id].__name__} and {obj.__name__}")
            if obj.name in names and names[obj.name] != obj.id:
                raise TypeError(f"rule name {obj.name} is used by {names[obj.name]} and {obj.id}")
            found[obj.id] = obj
            names[obj.name] = obj.id
    return tuple(found[k] for k in sorted(found))


def load_rule(code: str) -> type[Transform] | None:
    """A rule by exact id or name, importing only the module that declares it (``neuronize
    explain`` loads what it prints); found by reading the rule modules' text for the ``id =`` or
    ``name =`` line, confirmed on the imported class."""
    wanted = re.compile(rf'^\s+(?:id = "{re.escape(code.upper())}"|name = "{re.escape(code)}")\s*$', re.MULTILINE)
    for name, path in _rule_modules():
        try:
            text = path.read_text(encoding="utf-8")
        except OSError:
            continue
        if wanted.search(text):
            for obj in _declared(importlib.import_module(name), code):
                return obj
    return rule_by_code(code)


def rule_by_code(code: str) -> type[Transform] | None:
    """A rule by exact id or name (case-insensitive for ids)."""
    for rule in all_rules():
        if rule.id == code.upper() or rule.name == code:
            return rule
    return None


class Named(Protocol):
    """A rule class or its :class:`~neuronize.rule_index.RuleInfo`: what selection reads."""

    @property
    def id(self) -> str: ...

    @property
    def name(self) -> str: ...


R = TypeVar("R", bound=Named)


def matches(rule: Named, code: str) -> bool:
    """Whether ``code`` (an id, an id prefix such as ``NRN1``, or a name) names ``rule``."""
    code = code.strip()
    if re.fullmatch(r"(?i)NRN\d{0,3}", code):
        return rule.id.startswith(code.upper())
    return rule.name == code


def select_rules(
    rules: Sequence[R], select: Iterable[str] | None = None, ignore: Iterable[str] | None = None
) -> tuple[R, ...]:
    """The ``rules`` chosen by id, id prefix (``NRN1``) or name; ``ignore`` wins over ``select``."""
    chosen = list(rules)
    for option, codes in (("select", select), ("ignore", ignore)):
        for code in codes or ():
            if not any(matches(r, code) for r in rules):
                raise SelectionError(f"--{option} {code}: no rule has that id, id prefix or name"
                                     + _did_you_mean(code, rules))
    if select:
        chosen = [r for r in rules if any(matches(r, c) for c in select)]
    if ignore:
        chosen = [r for r in chosen if not any(matches(r, c) for c in ignore)]
    if not chosen:
        asked = " ".join([*(f"--select {c}" for c in select or ()), *(f"--ignore {c}" for c in ignore or ())])
        raise SelectionError(f"{asked}: no rule left to run (`neuronize rules` lists them)")
    return tuple(chosen)


def _did_you_mean(code: str, rules: Iterable[Named]) -> str:
    """`` (did you mean NRN102?)`` for a code close to a rule's id or name, else empty."""
    import difflib

    rules = tuple(rules)
    digits = code.strip().upper()[:3] + code.strip().upper()[3:].translate(str.maketrans("OIL", "011"))
    if any(matches(r, digits) for r in rules):  # a letter O typed for a zero, an l for a one
        return f" (did you mean {digits}?)"
    by_key = {key: shown for r in rules for key, shown in ((r.id, r.id), (r.name.upper(), r.name))}
    close = difflib.get_close_matches(code.strip().upper(), list(by_key), n=1, cutoff=0.75)
    return f" (did you mean {by_key[close[0]]}?)" if close else ""
