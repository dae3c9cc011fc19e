"""The test "the accelerator here is Neuron", written once per module as a small function.

Host-aware edits choose Neuron with ``hasattr(torch, "accelerator") and
torch.accelerator.is_available() and torch.accelerator.current_accelerator().type == "neuron"``
(:func:`neuronize.transforms._helpers.per_target.neuron_present`, and ``_target.available`` on the
neuron target; files an earlier version migrated have it without the ``hasattr``, which
:data:`neuronize.analysis.import_safety.NEURON_TEST` accepts too). Written out at every place, an
autocast line repeats it twice and runs past 200 characters. :func:`name_neuron_test` defines it
once, as a person would, near the imports::

    def on_neuron() -> bool:
        \"\"\"True on an AWS Trainium (Neuron) device, False elsewhere.\"\"\"
        return (
            hasattr(torch, "accelerator")
            and torch.accelerator.is_available()
            and torch.accelerator.current_accelerator().type == "neuron"
        )

and the places this run wrote call it: ``"neuron" if on_neuron() else "cuda"`` (in a project that
still runs on Python 2, where one module says ``from __future__ import print_function``, without the
return annotation). Its first line
keeps every host the code ran on: ``torch.accelerator`` is new in torch 2.6, and a project that
admits an older torch (``torch>=2.4``) still runs where it did, the test being False there. The function
is evaluated when called, never at import, so nothing initialises a device early. The function a
first run defined is reused (a second run defines nothing); a name the module uses is never taken
(``on_neuron``, then ``on_neuron_device``, ``on_neuron_device_2``...);
the test written by hand stays as it is (only lines this run changed are renamed).

:func:`neuronize.analysis.import_safety.neuron_tests` finds such functions, so that the import-safety
check (and rules) take a call of one as the test itself.
"""

from __future__ import annotations

from collections.abc import Callable

import libcst as cst

from neuronize.analysis.import_safety import NEURON_TEST, NEURON_TEST_NAME, is_neuron_test, neuron_tests
from neuronize.analysis.python2 import keeps_python2
from neuronize.analysis.subtrees import code as _code, free_name, replaced
from neuronize.analysis.syntax import imported_names, is_star_import, one_line
from neuronize.analysis.walk import iter_syntax, walk
from neuronize.sources.notebook import MAGIC_PLACEHOLDER

#: the names the function gets, in order of preference (then ``_2``, ``_3``...)
_TEST_NAMES = ("on_neuron", "on_neuron_device")
_DOC = "True on an AWS Trainium (Neuron) device, False elsewhere."


def _tests(module: cst.Module) -> list[tuple[cst.BooleanOperation, tuple[cst.CSTNode, ...]]]:
    """Every spelled-out test, with its path from the module down to it."""
    path: list[cst.CSTNode] = []
    found: list[tuple[cst.BooleanOperation, tuple[cst.CSTNode, ...]]] = []

    def enter(node: cst.CSTNode) -> None:
        path.append(node)
        if isinstance(node, cst.BooleanOperation) and is_neuron_test(node):
            found.append((node, tuple(path)))

    def leave(node: cst.CSTNode) -> None:
        path.pop()

    walk(module, enter, leave)
    return found


def _used_names(module: cst.Module) -> set[str]:
    return {node.value for node in iter_syntax(module) if isinstance(node, cst.Name)}


def _imported_at_top(module: cst.Module, name: str) -> bool:
    """``import torch`` (as ``name``) at the top level of ``module``, or in a block there (not in
    a function or class); or a star import there, which the run read as binding it
    (:func:`neuronize.analysis.context.collect_imports`)."""
    return any(isinstance(node, cst.Import) and any(imported.local == name for imported in imported_names(node))
               or is_star_import(node)
               for stmt in module.body if not isinstance(stmt, (cst.FunctionDef, cst.ClassDef))
               for node in iter_syntax(stmt))


def _definition(module: cst.Module, name: str, test: str, python2: bool) -> cst.FunctionDef:
    """The function, in the module's indentation, newlines and quotes (those of ``test``); with
    ``python2``, without the return annotation Python 2 cannot parse."""
    match = NEURON_TEST.fullmatch(test)
    assert match is not None
    t, q = match["t"], match["q"]
    indent = module.default_indent
    returns = "" if python2 else " -> bool"
    code = (f"def {name}(){returns}:\n"
            f"{indent}{q * 3}{_DOC}{q * 3}\n"
            f"{indent}return (\n"
            f"{indent * 2}hasattr({t}, {q}accelerator{q})\n"
            f"{indent * 2}and {t}.accelerator.is_available()\n"
            f"{indent * 2}and {t}.accelerator.current_accelerator().type == {q}neuron{q}\n"
            f"{indent})\n")
    func = cst.parse_statement(code.replace("\n", module.default_newline), config=module.config_for_parsing)
    assert isinstance(func, cst.FunctionDef)
    return func


def _opening(module: cst.Module, name: str) -> int:
    """Where the function goes: after the docstring, imports and environment settings the module
    opens with (a library may read those when it is imported); where ``name`` (``torch``) is
    imported at the top level after other code, after that import and the imports that follow it."""
    opening = _imports_from(module, 0)
    plain = _lines_with(module, lambda small: isinstance(small, cst.Import) and any(
        imported.local == name for imported in imported_names(small)))
    # where only star imports bind it (`from .utils import *`), the run read it as bound by them
    binding = plain or _lines_with(module, is_star_import)
    later = next((i for i in binding if i >= opening), None)
    # past that line even where it goes on with code (``import torch; torch.set_grad_enabled(False)``)
    return opening if later is None else _imports_from(module, later + 1)


def _lines_with(module: cst.Module, test: Callable[[cst.BaseSmallStatement], bool]) -> list[int]:
    """The indexes of the module's top-level lines holding a statement that passes ``test``."""
    return [i for i, stmt in enumerate(module.body)
            if isinstance(stmt, cst.SimpleStatementLine) and any(test(small) for small in stmt.body)]


def _masked_magic(stmt: cst.BaseStatement) -> bool:
    """``stmt`` stands for an IPython line of a notebook cell (:mod:`neuronize.sources.notebook`)."""
    return isinstance(stmt, cst.SimpleStatementLine) and all(
        isinstance(s, cst.Expr) and isinstance(s.value, cst.Name) and s.value.value.startswith(MAGIC_PLACEHOLDER)
        for s in stmt.body)


def _imports_from(module: cst.Module, start: int) -> int:
    """The index past the run of imports (and docstring, environment settings) that starts at ``start``;
    an ``assert`` among them (``assert torch.__version__ >= "1.8.1"`` before more imports) goes on with it."""
    index = start
    for i, stmt in enumerate(module.body[start:], start):
        if isinstance(stmt, cst.SimpleStatementLine) and all(isinstance(s, cst.Assert) for s in stmt.body):
            continue  # the imports after it are the opening's too
        if isinstance(stmt, cst.SimpleStatementLine) and all(
                isinstance(s, (cst.Import, cst.ImportFrom)) or "environ" in _code(s)
                or isinstance(s, cst.Expr) and isinstance(s.value, cst.SimpleString)
                for s in stmt.body):
            index = i + 1
        elif isinstance(stmt, cst.Try) and "import" in _code(stmt.body):
            index = i + 1  # try: import x / except ImportError: ...
        else:
            break
    return index


_BLANK = cst.EmptyLine(indent=False, whitespace=cst.SimpleWhitespace(""), comment=None)


def _apart(stmt: cst.BaseStatement, blank: int = 2) -> cst.BaseStatement:
    """``stmt`` with at least ``blank`` blank lines above it (its comments kept below them)."""
    lines = list(stmt.leading_lines)  # type: ignore[attr-defined]
    opening = 0
    while opening < len(lines) and lines[opening].comment is None:
        opening += 1
    missing = max(0, blank - opening)
    return stmt.with_changes(leading_lines=[_BLANK] * missing + lines)


def name_neuron_test(module: cst.Module, source: bytes, inherited: cst.Module | None = None,
                     python2: bool = False) -> cst.Module:
    """``module`` (a rewrite of ``source``) with the tests this run wrote replaced by calls of one
    function the module defines (defined here unless the module already has one, or a notebook's
    earlier cell defined it: ``inherited``); without a return annotation where the project
    (``python2``) or the module still runs on Python 2 (:mod:`neuronize.analysis.python2`)."""
    from neuronize.analysis.positions import on_changed_lines

    tests = list(_tests(module))
    if not tests:
        return module
    written = on_changed_lines(module, source, (node for node, _ in tests))
    # only a function of the migration's own names: rules recognise a call of it as the test
    existing = frozenset(name for name in neuron_tests(module) | (neuron_tests(inherited) if inherited else set())
                         if NEURON_TEST_NAME.fullmatch(name))
    # a test inside that function is its body: left as it is
    tests = [(node, path) for node, path in tests if id(node) in written
             and not any(isinstance(p, cst.FunctionDef) and p.name.value in existing for p in path)]
    if not tests:
        return module
    spelled = one_line(tests[0][0])
    match = NEURON_TEST.fullmatch(spelled)
    assert match is not None
    if not existing and not _imported_at_top(module, match["t"]) and not (
            inherited is not None and _imported_at_top(inherited, match["t"])):
        return module  # torch is imported in a function only: a module-level function could not see it
    name = min(existing) if existing else free_name(_TEST_NAMES, _used_names(module))
    call = cst.Call(func=cst.Name(name))
    renamed = replaced(module, {id(node): call for node, _ in tests})
    if existing:
        return renamed
    # before the first top-level statement that calls it at import, else after the opening
    first_use = min(module.body.index(path[1]) for _, path in tests)
    at = min(_opening(module, match["t"]), first_use)
    while at < len(module.body) and _masked_magic(module.body[at]):
        at += 1  # a cell magic (`%%time`) is the cell's first line or fails
    body = list(renamed.body)
    definition = _definition(module, name, spelled, python2 or keeps_python2(source))
    if at:
        definition = _apart(definition)  # type: ignore[assignment]
    following = [_apart(body[at])] if at < len(body) else []
    return renamed.with_changes(body=[*body[:at], definition, *following, *body[at + 1:]])
