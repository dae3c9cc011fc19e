"""Import safety: a migrated module still imports on a host without Neuron.

Code that runs when a module is imported (module and class bodies, decorators, default values,
annotations without ``from __future__ import annotations``) must not need ``torch_neuronx``: not
an unguarded ``import torch_neuronx``, not ``torch.neuron.X`` (which exists only with it), not a
``torch.compile(..., backend="neuron")`` or ``autocast("neuron")`` (both fail where the backend or
device is missing), not a ``torch.device("neuron")`` (an unknown device type there, while
``torch.device("cuda")`` builds on any host: a default ``device=torch.device("cuda")`` runs at import). The device autoloads
(https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/index.html), so no module needs the
import to use it.

:func:`hazard` judges one fix before it is applied (the engine turns a fix that fails it into a
finding); :func:`hazards` counts what a whole module evaluates at import, the engine's last check
on every changed file.
"""

from __future__ import annotations

import ast
import re
from collections import Counter
from collections.abc import Iterator

import libcst as cst

from neuronize.analysis.context import dotted_name
from neuronize.analysis.syntax import is_docstring, is_main_test, one_line
from neuronize.analysis.walk import Parents, ancestors, iter_syntax
from neuronize.transform import Report

IMPORT = "an unguarded `import torch_neuronx`"
NEURON_MODULE = "`torch.neuron.X` (there only with torch_neuronx)"
NEURON_BACKEND = 'a `"neuron"` compile backend or autocast device'
NEURON_DEVICE = '`torch.device("neuron")` (an unknown device type without torch_neuronx)'
OPTIONAL_TORCH = "code that needs `torch`, which this module imports only where it is installed,"


def _is_neuronx(module: str | None) -> bool:
    return module is not None and module.split(".")[0] == "torch_neuronx"


def _catches_import_error(handler: cst.ExceptHandler) -> bool:
    if handler.type is None:
        return True
    names = {dotted_name(n) for n in ([*(e.value for e in handler.type.elements)]
                                      if isinstance(handler.type, cst.Tuple) else [handler.type])}
    return bool(names & {"ImportError", "ModuleNotFoundError", "Exception", "BaseException"})


def _neuron_string(node: cst.CSTNode) -> bool:
    if not isinstance(node, cst.SimpleString):
        return False
    value = node.evaluated_value
    return isinstance(value, str) and value.split(":")[0] == "neuron"


def _is_device_call(name: str) -> bool:
    """``torch.device(...)`` (or ``device`` imported from torch, or through an alias of torch)."""
    return name == "device" or name.endswith(".device") and name.count(".") == 1


def _call_hazard(call: cst.Call) -> str | None:
    """What ``call`` needs Neuron for when it runs, if anything."""
    name = dotted_name(call.func) or ""
    if _is_device_call(name) and call.args and _neuron_string(call.args[0].value) and (
            call.args[0].keyword is None or call.args[0].keyword.value == "type"):
        return NEURON_DEVICE
    for i, arg in enumerate(call.args):
        if arg.keyword is not None and arg.keyword.value == "backend" and name.endswith("compile"):
            if _neuron_string(arg.value):
                return NEURON_BACKEND
        elif name.endswith("autocast") and (arg.keyword is None and i == 0 or
                                            arg.keyword is not None and arg.keyword.value == "device_type"):
            if _neuron_string(arg.value):
                return NEURON_BACKEND
    return None


def _found_in(node: cst.CSTNode, tests: frozenset[str]) -> Iterator[str]:
    """The hazards in ``node``'s own code (guarded imports excepted); ``tests``: the module's
    functions that test for Neuron (:func:`neuron_tests`)."""
    if isinstance(node, cst.Try) and any(_catches_import_error(h) for h in node.handlers):
        return
    if isinstance(node, (cst.IfExp, cst.If)) and _neuron_branch(node, tests):
        yield from _found_in(node.test, tests)  # the body runs only on the Neuron side
        if node.orelse is not None:
            yield from _found_in(node.orelse, tests)
        return
    if isinstance(node, cst.Import) and any(_is_neuronx(dotted_name(a.name)) for a in node.names):
        yield IMPORT
    elif isinstance(node, cst.ImportFrom) and node.module is not None and _is_neuronx(dotted_name(node.module)):
        yield IMPORT
    elif isinstance(node, (cst.Attribute, cst.Name)):
        name = dotted_name(node) or ""
        if name == "torch.neuron" or name.startswith("torch.neuron."):
            yield NEURON_MODULE
            return
    elif isinstance(node, cst.Call) and (found := _call_hazard(node)) is not None:
        yield found
    for child in node.children:
        yield from _found_in(child, tests)


def _neuron_branch(node: cst.IfExp | cst.If, tests: frozenset[str]) -> bool:
    """A conditional expression whose body is evaluated only where its test chose Neuron, or an
    ``if`` whose body runs only where the Neuron device is present."""
    test = cst.Module([]).code_for_node(node.test)
    return _names_neuron(test, tests) if isinstance(node, cst.IfExp) else _tests_for_neuron(test, tests)


def _runs_at_import(node: cst.CSTNode, parents: Parents, lazy_annotations: bool, tests: frozenset[str]) -> bool:
    child = node
    while (parent := parents.get(id(child))) is not None:
        if isinstance(parent, (cst.FunctionDef, cst.Lambda)) and child is parent.body:
            return False
        if isinstance(child, cst.Annotation) and lazy_annotations:
            return False
        if isinstance(parent, cst.If) and child is parent.body and is_main_test(parent.test):
            return False  # runs when the file is a script, never when it is imported
        if isinstance(parent, cst.If) and child is parent.body and _neuron_branch(parent, tests):
            return False  # runs only where the Neuron device is present
        if isinstance(parent, cst.Try) and child is parent.body and any(_catches_import_error(h)
                                                                         for h in parent.handlers):
            return False
        child = parent
    return True


def _names_neuron(test: str, tests: frozenset[str]) -> bool:
    """A condition that chooses by the Neuron device (its availability or a device named
    ``"neuron"``): the value it guards is built only where Neuron was chosen."""
    return '"neuron"' in test or "'neuron'" in test or _calls_test(test, tests)


def _tests_for_neuron(test: str, tests: frozenset[str] = frozenset()) -> bool:
    """A condition true only where the Neuron device is present (as ``_target.available`` writes
    it, or a call of one of ``tests``, the module's functions that return that test): code under
    it never runs on a host without Neuron."""
    return 'type == "neuron"' in test or "type == 'neuron'" in test or _calls_test(test, tests)


def _calls_test(test: str, tests: frozenset[str]) -> bool:
    return any(re.search(rf"(?<![\w.]){name}\(\)", test) for name in tests)


#: the test for the Neuron device as the migration writes it (``_target.available``; in the
#: function it defines, behind ``hasattr(torch, "accelerator")``, which torch before 2.6 lacks);
#: ``t`` is the module's name for torch
NEURON_TEST = re.compile(r"(?:hasattr\([A-Za-z_]\w*, (?P<hq>['\"])accelerator(?P=hq)\) and )?"
                         r"(?P<t>[A-Za-z_]\w*)\.accelerator\.is_available\(\) and "
                         r"(?P=t)\.accelerator\.current_accelerator\(\)\.type == (?P<q>['\"])neuron(?P=q)")


#: the names the migration gives the function that returns that test (``neuronize/writing/neuron_test.py``)
NEURON_TEST_NAME = re.compile(r"on_neuron(?:_device(?:_\d+)?)?")
#: a call of it in a condition's code
_NEURON_TEST_CALL = re.compile(rf"(?<![\w.])(?:{NEURON_TEST_NAME.pattern})\(\)")


def calls_neuron_test(code: str) -> bool:
    """``code`` calls the function the migration defines for the test (``on_neuron()``)."""
    return _NEURON_TEST_CALL.search(code) is not None


def is_neuron_test_call(node: cst.CSTNode) -> bool:
    """``node`` is a call of that function and nothing more (``on_neuron()``)."""
    return _NEURON_TEST_CALL.fullmatch(one_line(node)) is not None


def is_neuron_test(node: cst.CSTNode) -> bool:
    """``node`` is the test written out (any name for torch, any quotes, parentheses or wrapping)."""
    return isinstance(node, cst.BooleanOperation) and NEURON_TEST.fullmatch(one_line(node)) is not None


def neuron_tests(module: cst.Module) -> frozenset[str]:
    """The functions at the top level of ``module`` that take nothing and only return the test
    for the Neuron device (as the migration defines one: ``on_neuron``)."""
    found = set()
    for stmt in module.body:
        if not isinstance(stmt, cst.FunctionDef) or stmt.params.params or not isinstance(stmt.body, cst.IndentedBlock):
            continue
        body = [s for s in stmt.body.body if not is_docstring(s)]
        if len(body) == 1 and isinstance(body[0], cst.SimpleStatementLine) and len(body[0].body) == 1:
            small = body[0].body[0]
            if isinstance(small, cst.Return) and small.value is not None and is_neuron_test(small.value):
                found.add(stmt.name.value)
    return frozenset(found)


def _replacement_nodes(report: Report) -> list[cst.CSTNode]:
    replacement = report.replacement
    if isinstance(replacement, cst.FlattenSentinel):
        return list(replacement.nodes)
    return [replacement] if isinstance(replacement, cst.CSTNode) else []


def _in_parameter_default(node: cst.CSTNode, parents: Parents) -> bool:
    child = node
    while (parent := parents.get(id(child))) is not None:
        if isinstance(parent, cst.Param) and child is parent.default:
            return True
        child = parent
    return False


def hazard(report: Report, parents: Parents, lazy_annotations: bool, defaults_only: bool = False,
           tests: frozenset[str] = frozenset(), optional_torch: bool = False) -> str | None:
    """What ``report``'s fix would add to the code run at import time that fails without Neuron.
    ``defaults_only`` (a script, :func:`is_script`): only a parameter's default counts, which runs
    when the program starts whatever its options (``--device cpu`` never reaches it otherwise).
    ``tests``: the module's functions that test for Neuron (:func:`neuron_tests`).
    ``optional_torch`` (:func:`imports_torch_optionally`): the Neuron test itself fails at import
    where torch is missing, which the module allows."""
    if defaults_only and not _in_parameter_default(report.node, parents):
        return None
    if any(_is_neuronx(r.module) and not r.remove for r in report.imports):
        return IMPORT + " at the top of the module"
    if not report.fixable or not _runs_at_import(report.node, parents, lazy_annotations, tests):
        return None
    if optional_torch and not _needs_torch(report.node) and any(_needs_torch(n) for n in _replacement_nodes(report)):
        return OPTIONAL_TORCH
    for node in _replacement_nodes(report):
        for found in _found_in(node, tests):
            return found
        if _neuron_string(node):  # a literal that becomes a compile backend or autocast device
            arg = parents.get(id(report.node))
            call = parents.get(id(arg)) if isinstance(arg, cst.Arg) else None
            if isinstance(call, cst.Call) and (found_in_call := _call_hazard(
                    call.deep_replace(report.node, node))) is not None:  # type: ignore[arg-type]
                return found_in_call
    return None


def torch_imported_at(module: cst.Module) -> int | None:
    """The index of the first top-level statement of ``module`` that binds ``torch``, if any."""
    return next((i for i, stmt in enumerate(module.body)
                 if isinstance(stmt, cst.SimpleStatementLine) and any(_binds_torch(small) for small in stmt.body)), None)


def runs_before_torch(report: Report, module: cst.Module, parents: Parents, lazy_annotations: bool,
                      torch_at: int | None) -> bool:
    """``report``'s fix needs ``torch`` (the Neuron test) in code that runs at import above the
    module's ``import torch`` (``torch_at``, :func:`torch_imported_at`; ``RUN_DEVICE = "cuda"`` set
    before it, as an environment value read at import): there the name is not bound yet, and the
    module fails on every host."""
    if torch_at is None or not report.fixable:
        return False
    top = next((a for a in [report.node, *ancestors(report.node, parents)] if parents.get(id(a)) is module), None)
    if top is None or module.body.index(top) >= torch_at:
        return False
    return (_runs_at_import(report.node, parents, lazy_annotations, frozenset()) and not _needs_torch(report.node)
            and any(_needs_torch(n) for n in _replacement_nodes(report)))


def _binds_torch(node: cst.CSTNode) -> bool:
    """``node`` is ``import torch`` (or ``import torch.nn as nn``, which binds ``torch`` too; ``import x as torch``)."""
    return isinstance(node, cst.Import) and any(
        (a.asname is None and (dotted_name(a.name) or "").split(".")[0] == "torch")
        or (a.asname is not None and isinstance(a.asname.name, cst.Name) and a.asname.name.value == "torch")
        for a in node.names)


def _needs_torch(node: cst.CSTNode) -> bool:
    """``node`` uses ``torch``: a ``torch.`` name, or the Neuron test (``on_neuron()``, which does)."""
    code = one_line(node)
    return calls_neuron_test(code) or re.search(r"(?<![\w.])torch\.", code) is not None


def imports_torch_optionally(module: cst.Module) -> bool:
    """``module`` binds ``torch`` at its top level only under an ``if`` or a ``try`` (``if
    TORCH_AVAILABLE: import torch``): torch is an optional dependency, and code run at import must
    not need it."""
    nested = False
    for stmt in module.body:
        if isinstance(stmt, cst.SimpleStatementLine) and any(_binds_torch(small) for small in stmt.body):
            return False
        nested = nested or isinstance(stmt, (cst.If, cst.Try)) and any(_binds_torch(n) for n in iter_syntax(stmt))
    return nested


def lazy_annotations(module: cst.Module) -> bool:
    """``from __future__ import annotations``: annotations are strings, never evaluated at import."""
    for stmt in module.body:
        if isinstance(stmt, cst.SimpleStatementLine):
            for small in stmt.body:
                if isinstance(small, cst.ImportFrom) and dotted_name(small.module or cst.Name("_")) == "__future__" \
                        and not isinstance(small.names, cst.ImportStar) \
                        and any(isinstance(a.name, cst.Name) and a.name.value == "annotations" for a in small.names):
                    return True
    return False


# -- the last check, on a whole module (ast: the engine has just parsed the output with it) --------
def hazards(tree: ast.Module, tests: frozenset[str] = frozenset(), code: bytes | None = None) -> Counter[str]:
    """What ``tree`` evaluates at import that fails without Neuron, by kind (none for a script,
    :func:`is_script`); ``tests``: its functions that test for Neuron (:func:`neuron_tests`);
    ``code``: the bytes ``tree`` was parsed from, when known: an expression none of whose lines
    says ``neuron`` is not looked into (every hazard names it)."""
    found: Counter[str] = Counter()
    if not any(isinstance(s, (ast.With, ast.For, ast.While)) or isinstance(s, ast.Expr) and
               isinstance(s.value, (ast.Call, ast.Await)) for s in tree.body):
        _scan(tree.body, found, tests, code.splitlines() if code is not None else None)
    return found


def _silent(node: ast.AST, lines: list[bytes] | None) -> bool:
    """Whether none of ``node``'s lines says ``neuron`` (so it holds no hazard)."""
    if lines is None:
        return False
    first, last = getattr(node, "lineno", None), getattr(node, "end_lineno", None)
    if first is None or last is None:
        return False
    return not any(b"neuron" in line for line in lines[first - 1:last])


def _scan(body: list[ast.stmt], found: Counter[str], tests: frozenset[str], lines: list[bytes] | None) -> None:
    for stmt in body:
        if isinstance(stmt, ast.Import) and any(_is_neuronx(a.name) for a in stmt.names):
            found[IMPORT] += 1
        elif isinstance(stmt, ast.ImportFrom) and _is_neuronx(stmt.module):
            found[IMPORT] += 1
        elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for expr in [*stmt.decorator_list, *stmt.args.defaults, *(d for d in stmt.args.kw_defaults if d)]:
                _scan_expr(expr, found, tests, lines)
        elif isinstance(stmt, ast.ClassDef):
            for expr in [*stmt.decorator_list, *stmt.bases]:
                _scan_expr(expr, found, tests, lines)
            _scan(stmt.body, found, tests, lines)
        elif isinstance(stmt, ast.Try):
            if not any(h.type is None or "Error" in ast.unparse(h.type) or "Exception" in ast.unparse(h.type)
                       for h in stmt.handlers):
                _scan(stmt.body, found, tests, lines)
        elif isinstance(stmt, ast.If):
            test = ast.unparse(stmt.test)
            if "__main__" not in test and not _tests_for_neuron(test, tests):
                _scan(stmt.body, found, tests, lines)
            _scan(stmt.orelse, found, tests, lines)
        elif isinstance(stmt, (ast.Expr, ast.Assign, ast.AnnAssign, ast.AugAssign)):
            _scan_expr(stmt, found, tests, lines)


def _scan_expr(node: ast.AST, found: Counter[str], tests: frozenset[str], lines: list[bytes] | None) -> None:
    if _silent(node, lines):
        return
    for sub in _evaluated(node, tests):
        if isinstance(sub, ast.Attribute) and ast.unparse(sub).startswith("torch.neuron."):
            found[NEURON_MODULE] += 1
        elif isinstance(sub, ast.Call) and isinstance(sub.func, (ast.Name, ast.Attribute)):
            name = ast.unparse(sub.func)
            if _is_device_call(name):
                if any(_neuron_constant(v) for v in [k.value for k in sub.keywords if k.arg == "type"] + sub.args[:1]):
                    found[NEURON_DEVICE] += 1
            elif name.endswith(("compile", "autocast")) and any(_neuron_constant(v) for v in [
                    k.value for k in sub.keywords if k.arg in ("backend", "device_type")] + sub.args[:1]):
                found[NEURON_BACKEND] += 1


def _evaluated(node: ast.AST, tests: frozenset[str]) -> Iterator[ast.AST]:
    """``node`` and what it contains, less the bodies of conditional expressions that choose by
    the Neuron device (:func:`_names_neuron`)."""
    yield node
    if isinstance(node, ast.IfExp) and _names_neuron(ast.unparse(node.test), tests):
        children: list[ast.AST] = [node.test, node.orelse]
    else:
        children = list(ast.iter_child_nodes(node))
    for child in children:
        yield from _evaluated(child, tests)


def _neuron_constant(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.split(":")[0] == "neuron"
