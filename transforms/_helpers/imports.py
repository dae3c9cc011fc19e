"""Imports: which statement bound each name, the requests that add or drop an import, and how an
import binds the file to a package (HARD or OPTIONAL).

``ctx.names`` (neuronize.analysis.context.ImportTable) answers "what does this name refer to?" for every
node. :func:`bindings` answers the rarer question a fix asks: "which statement bound it?", to drop
an import that becomes unused or to place a new one after it. It walks the statements only.

The central question for an import of a CUDA-only package is whether the code *needs* it:
a top-level, unguarded import is a HARD dependency (the module fails to import on a Trainium
host without the package, or imports a package whose kernels cannot run); an import inside
``try/except ImportError``, under an ``if is_x_available():`` / ``if HAS_X:`` style condition, or
made lazily inside a function is OPTIONAL (there is, or can easily be, another path).
"""

from __future__ import annotations

from dataclasses import dataclass
from collections.abc import Iterable, Iterator

import libcst as cst

from neuronize.analysis.context import FileContext, dotted_name
from neuronize.analysis.syntax import imported_names, is_main_test, module_matches  # noqa: F401 - module_matches is re-exported for the rules
from neuronize.analysis.walk import iter_syntax
from neuronize.transform import ImportRequest
from neuronize.transforms._helpers.messages import short


# -- which statement bound each name -------------------------------------------------------
@dataclass(frozen=True)
class Binding:
    """A name bound by an import statement."""

    local: str  # the name bound in the file ("*" for a star import)
    qualified: str  # what it refers to ("torch" for `import torch.cuda`, "torch.cuda.amp.autocast")
    module: str  # `import <module>` / `from <module> import ...`
    name: str | None  # `from ... import <name>`
    asname: str | None  # `... as <asname>`
    line: cst.SimpleStatementLine  # the statement line holding the import
    top_level: bool  # the line is a statement of the module itself

    def removal(self) -> ImportRequest:
        """A request to drop this import (the engine drops it only once nothing uses the name)."""
        return ImportRequest(self.module, self.name, self.asname, remove=True)


_BLOCKS = (cst.BaseCompoundStatement, cst.IndentedBlock, cst.Else, cst.Finally, cst.ExceptHandler,
           cst.ExceptStarHandler, cst.MatchCase)


def _lines(node: cst.CSTNode, top: bool) -> Iterator[tuple[cst.SimpleStatementLine, bool]]:
    for child in node.children:
        if isinstance(child, cst.SimpleStatementLine):
            yield child, top
        elif isinstance(child, _BLOCKS):
            yield from _lines(child, False)


def bindings(module: cst.Module) -> Iterator[Binding]:
    """Every name the module's import statements bind (in functions and blocks too), in order.

    Relative imports bind nothing here (their package is not known).
    """
    for line, top in _lines(module, True):
        for small in line.body:
            if not isinstance(small, (cst.Import, cst.ImportFrom)):
                continue
            for imported in imported_names(small):
                if imported.local is None:  # a star import
                    yield Binding("*", f"{imported.module}.*", imported.module, "*", None, line, top)
                else:
                    yield Binding(imported.local, imported.target, imported.module, imported.name,
                                  imported.asname, line, top)


def removal_of(ctx: FileContext, local: str, *, qualified: str | None = None,
               top_level: bool = False) -> ImportRequest | None:
    """A request to drop the import binding ``local`` (to ``qualified``, if given; at the top of
    the module only, if ``top_level``). The engine keeps it while the name is used."""
    for binding in bindings(ctx.module):
        if binding.local == local and (qualified is None or binding.qualified == qualified) \
                and (binding.top_level or not top_level):
            return binding.removal()
    return None


def removals_for(ctx: FileContext, qualified: Iterable[str]) -> tuple[ImportRequest, ...]:
    """Requests to drop the imports that bind ``qualified`` names (``from torch._inductor import
    config``, ``import torch.backends.cudnn as cudnn``), once they are unused.

    ``import torch`` itself is never dropped.
    """
    wanted = {q for q in qualified if "." in q}
    if not wanted or not any(ctx.names.local_names_for(q) for q in wanted):
        return ()
    found = (b.removal() for b in bindings(ctx.module)
             if b.qualified in wanted and (b.name is not None or b.asname is not None))
    return tuple(dict.fromkeys(found))


def cuda_import_removals(ctx: FileContext, func: cst.CSTNode) -> tuple[ImportRequest, ...]:
    """Imports that may become unused once ``func`` (a ``torch.cuda...`` name) is spelled ``torch.X``.

    ``autocast`` from ``from torch.cuda.amp import autocast``, ``amp`` from ``from torch.cuda import
    amp`` or ``import torch.cuda.amp as amp``. The engine removes them only if nothing uses them.
    """
    name = dotted_name(func)
    if name is None:
        return ()
    head = name.split(".")[0]
    full = ctx.qualify(cst.Name(head))
    if full is None or not full.startswith("torch.cuda"):
        return ()
    module, _, obj = full.rpartition(".")
    requests = [ImportRequest(module, obj, asname=None if head == obj else head, remove=True)]
    if full in ("torch.cuda", "torch.cuda.amp"):
        # ``import torch.cuda.amp as amp`` binds the same name as ``from torch.cuda import amp``.
        requests.append(ImportRequest(full, asname=head, remove=True))
    return tuple(requests)



# -- adding `import torch_neuronx` -----------------------------------------------------------
def import_anchor(module: cst.Module) -> cst.SimpleStatementLine | None:
    """The top-level import line ``import torch_neuronx`` should follow: the one importing
    ``torch.distributed`` if any, else the last top-level line importing ``torch``."""
    for prefix in ("torch.distributed", "torch"):
        found = list(dict.fromkeys(
            b.line for b in bindings(module)
            if b.top_level and (b.module == prefix or b.module.startswith(prefix + "."))))
        if found:
            return found[0] if prefix == "torch.distributed" else found[-1]
    return None


def guarded_torch_neuronx_import() -> cst.Try:
    """``import torch_neuronx`` that a host without it skips: the module still imports there."""
    return cst.ensure_type(cst.parse_statement(
        "try:\n    import torch_neuronx  # noqa: F401\nexcept ImportError:  # not a Neuron host\n    pass\n"
    ), cst.Try)


def has_main_block(module: cst.Module) -> bool:
    """The module has an ``if __name__ == "__main__":`` block: an entry point, run rather than imported."""
    for stmt in module.body:
        if isinstance(stmt, cst.If) and isinstance(stmt.test, cst.Comparison):
            parts = [stmt.test.left, *(c.comparator for c in stmt.test.comparisons)]
            names = {p.value for p in parts if isinstance(p, cst.Name)}
            strings = {p.evaluated_value for p in parts if isinstance(p, cst.SimpleString)}
            if "__name__" in names and "__main__" in strings:
                return True
    return False



# -- HARD or OPTIONAL dependencies ---------------------------------------------------------
_IMPORT_ERRORS = frozenset({
    "ImportError", "ModuleNotFoundError", "Exception", "BaseException", "OSError", "RuntimeError",
})


@dataclass(frozen=True)
class Dependency:
    """How an import statement binds the file to a package."""

    hard: bool
    reason: str  # e.g. "top-level import", "inside `try/except ImportError`"

    @property
    def kind(self) -> str:
        """``hard`` or ``optional``: the finding's ``dependency`` field."""
        return "hard" if self.hard else "optional"

    @property
    def label(self) -> str:
        kind = "HARD dependency" if self.hard else "OPTIONAL dependency"
        return f"{kind}, {self.reason}"


HARD = Dependency(True, "unguarded import")


def _handler_catches_import_error(handler: cst.ExceptHandler) -> bool:
    kind = handler.type
    if kind is None:
        return True  # bare `except:`
    names: list[cst.BaseExpression] = []
    if isinstance(kind, cst.Tuple):
        names = [el.value for el in kind.elements]
    else:
        names = [kind]
    for name in names:
        dotted = dotted_name(name)
        if dotted is not None and dotted.rsplit(".", 1)[-1] in _IMPORT_ERRORS:
            return True
    return False


def _suppresses_import_error(ctx: FileContext, node: cst.With) -> bool:
    for item in node.items:
        call = item.item
        if isinstance(call, cst.Call) and (dotted_name(call.func) or "").endswith("suppress"):
            for arg in call.args:
                dotted = dotted_name(arg.value)
                if dotted is not None and dotted.rsplit(".", 1)[-1] in _IMPORT_ERRORS:
                    return True
    return False


def _fallback_names(handler: cst.ExceptHandler) -> tuple[frozenset[str], frozenset[str]]:
    """The names an ``except ImportError:`` fallback sets (``HAVE_FLASH = False``), and those of
    them it sets to None (``flash_attn_func = None``)."""
    assigned = [(target.target.value, small.value) for line in getattr(handler.body, "body", ())
                if isinstance(line, cst.SimpleStatementLine) for small in line.body if isinstance(small, cst.Assign)
                for target in small.targets if isinstance(target.target, cst.Name)]
    return (frozenset(name for name, _ in assigned),
            frozenset(name for name, value in assigned if isinstance(value, cst.Name) and value.value == "None"))


_TESTS = (cst.If, cst.IfExp, cst.While, cst.Assert, cst.BooleanOperation)


def _called_unchecked(module: cst.Module, handler: cst.ExceptHandler) -> str | None:
    """A name ``handler`` sets to None, called in a function that tests none of the names it sets
    (``if HAVE_FLASH:``, ``x if flash_attn_func else y``): a path that needs the import; else None."""
    tested, nulled = _fallback_names(handler)
    if not nulled:
        return None
    for function in iter_syntax(module):
        if not isinstance(function, cst.FunctionDef):
            continue
        nodes = list(iter_syntax(function.body))
        if any(isinstance(n, cst.Name) and n.value in tested for test in nodes if isinstance(test, _TESTS)
               for n in iter_syntax(test.left if isinstance(test, cst.BooleanOperation) else test.test)):
            continue
        called = next((n.func.value for n in nodes if isinstance(n, cst.Call) and isinstance(n.func, cst.Name)
                       and n.func.value in nulled), None)
        if called is not None:
            return called
    return None


def classify_import(ctx: FileContext) -> Dependency:
    """HARD or OPTIONAL, for the node being visited (an import statement, or a dynamic import call).

    Walks ``ctx.ancestors()`` (innermost first), remembering which child of each ancestor the
    path came through, so that an import in the ``finally:`` of a ``try`` is not mistaken for a
    guarded one.
    """
    child: cst.CSTNode = ctx.stack[-1]
    for anc in ctx.ancestors():
        if isinstance(anc, cst.Try):
            catching = [h for h in anc.handlers if _handler_catches_import_error(h)]
            if catching and (child is anc.body or child is anc.orelse):
                kind = catching[0].type
                clause = f"try/except {short(kind, 50, tight=True)}" if kind is not None else "try/except"
                where = "inside" if child is anc.body else "in the `else` of"
                called = _called_unchecked(ctx.module, catching[0])
                # optional to import, not to run: a path calls what the fallback left None
                needed = (f", but a path needs it: the fallback sets `{called}` to None and `{called}(...)` is "
                          "called with no test that the import worked") if called is not None else ""
                return Dependency(False, f"{where} `{clause}`{needed}")
        elif isinstance(anc, cst.ExceptHandler):
            return Dependency(False, "in an `except` fallback")
        elif isinstance(anc, cst.If) and not is_main_test(anc.test):
            if child is anc.body:
                return Dependency(False, f"under `if {short(anc.test, 50, tight=True)}:`")
            if child is anc.orelse:
                return Dependency(False, f"in the `else` of `if {short(anc.test, 50, tight=True)}:`")
        elif isinstance(anc, cst.Else):
            pass  # handled by the If / Try above it
        elif isinstance(anc, (cst.FunctionDef, cst.Lambda)):
            name = anc.name.value if isinstance(anc, cst.FunctionDef) else "lambda"
            return Dependency(False, f"imported lazily inside `{name}()`")
        elif isinstance(anc, cst.With) and _suppresses_import_error(ctx, anc):
            return Dependency(False, "inside `contextlib.suppress(ImportError)`")
        child = anc
    return HARD


def imported_modules(node: cst.Import | cst.ImportFrom) -> Iterator[tuple[str, tuple[str, ...]]]:
    """(module, imported names) pairs of an import statement; relative imports yield nothing.

    ``import a.b, c`` -> ("a.b", ()), ("c", ()); ``from a.b import x, y`` -> ("a.b", ("x", "y")).
    """
    found = list(imported_names(node))
    if isinstance(node, cst.Import):
        for imported in found:
            yield imported.module, ()
    elif found:
        yield found[0].module, tuple(imported.name for imported in found if imported.name is not None)



