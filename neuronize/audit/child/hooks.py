"""Run a function right after a module is imported (the program imports torch when it wants to;
importing it ourselves would slow down every interpreter the program starts)."""

from __future__ import annotations

import importlib.abc
import sys
from types import ModuleType
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from importlib.machinery import ModuleSpec

_pending: dict[str, Callable[[ModuleType], None]] = {}


class _AfterImportFinder(importlib.abc.MetaPathFinder):
    """Finds nothing itself: asks the finders after it and wraps the loader of a watched module."""

    def find_spec(self, name: str, path: Sequence[str] | None, target: ModuleType | None = None) -> ModuleSpec | None:
        if name not in _pending:
            return None
        callback = _pending.pop(name)
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None:
                break
        else:
            return None
        loader = spec.loader
        if loader is None or not hasattr(loader, "exec_module"):
            return spec
        original = loader.exec_module

        def exec_module(module: ModuleType) -> None:
            # torch's import runs a million Python calls, none of them the project's lines:
            # the executed-lines tracer is off meanwhile.
            tracer = sys.gettrace()
            sys.settrace(None)
            try:
                original(module)
            finally:
                sys.settrace(tracer)
            callback(module)

        loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec


_finder = _AfterImportFinder()


def after_import(name: str, callback: Callable[[ModuleType], None]) -> None:
    """Call ``callback(module)`` once ``name`` has been imported (now, if it already is)."""
    if name in sys.modules:
        callback(sys.modules[name])
        return
    _pending[name] = callback
    if _finder not in sys.meta_path:
        sys.meta_path.insert(0, _finder)
