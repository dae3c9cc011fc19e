"""Helpers shared by the cannot-migrate rules (NRN9xx): import classification, name matching.

The central question for an import of a CUDA-only package is whether the code *needs* it:
a top-level, unguarded import is a HARD dependency (the module fails to import on a Trainium
host without the package, or imports a package whose kernels cannot run); an import inside
``try/except ImportError``, under an ``if is_x_available():`` / ``if HAS_X:`` style condition, or
made lazily inside a function is OPTIONAL (there is, or can easily be, another path).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Iterator

import libcst as cst

from neuronize.context import FileContext, dotted_name
from neuronize.transforms._helpers import string_value

# Exception names whose handler catches a failed import.
_IMPORT_ERRORS = frozenset({
    "ImportError", "ModuleNotFoundError", "Exception", "BaseException", "OSError", "RuntimeError",
})


@dataclass(frozen=True)
class Dependency:
    """How an import statement binds the file to a package."""

    hard: bool
    reason: str  # e.g. "top-level import", "inside `try/except ImportError`"

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


def _short(ctx: FileContext, node: cst.CSTNode, limit: int = 50) -> str:
    text = " ".join(ctx.module.code_for_node(node).split()).replace("( ", "(").replace(" )", ")")
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _suppresses_import_error(ctx: FileContext, node: cst.With) -> bool:
    for item in node.items:
        call = item.item
        if isinstance(call, cst.Call) and (dotted_name(call.func) or "").endswith("suppress"):
            for arg in call.args:
                dotted = dotted_name(arg.value)
                if dotted is not None and dotted.rsplit(".", 1)[-1] in _IMPORT_ERRORS:
                    return True
    return False


def _is_main_guard(test: cst.BaseExpression) -> bool:
    """``__name__ == "__main__"``: the script's own entry point, not an availability guard."""
    return (
        isinstance(test, cst.Comparison)
        and isinstance(test.left, cst.Name)
        and test.left.value == "__name__"
    )


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
                clause = f"try/except {_short(ctx, kind)}" if kind is not None else "try/except"
                where = "inside" if child is anc.body else "in the `else` of"
                return Dependency(False, f"{where} `{clause}`")
        elif isinstance(anc, cst.ExceptHandler):
            return Dependency(False, "in an `except` fallback")
        elif isinstance(anc, cst.If) and not _is_main_guard(anc.test):
            if child is anc.body:
                return Dependency(False, f"under `if {_short(ctx, anc.test)}:`")
            if child is anc.orelse:
                return Dependency(False, f"in the `else` of `if {_short(ctx, anc.test)}:`")
        elif isinstance(anc, cst.Else):
            pass  # handled by the If / Try above it
        elif isinstance(anc, (cst.FunctionDef, cst.Lambda)):
            name = anc.name.value if isinstance(anc, cst.FunctionDef) else "lambda"
            return Dependency(False, f"imported lazily inside `{name}()`")
        elif isinstance(anc, cst.With) and _suppresses_import_error(ctx, anc):
            return Dependency(False, "inside `contextlib.suppress(ImportError)`")
        child = anc
    return HARD


# -- imported modules ----------------------------------------------------------------------
def imported_modules(node: cst.Import | cst.ImportFrom) -> Iterator[tuple[str, tuple[str, ...]]]:
    """(module, imported names) pairs of an import statement; relative imports yield nothing.

    ``import a.b, c`` -> ("a.b", ()), ("c", ()); ``from a.b import x, y`` -> ("a.b", ("x", "y")).
    """
    if isinstance(node, cst.Import):
        for alias in node.names:
            full = dotted_name(alias.name)
            if full is not None:
                yield full, ()
        return
    if node.relative or node.module is None:
        return
    base = dotted_name(node.module)
    if base is None:
        return
    if isinstance(node.names, cst.ImportStar):
        yield base, ("*",)
        return
    names = tuple(a.name.value for a in node.names if isinstance(a.name, cst.Name))
    yield base, names


def module_matches(module: str, packages: Iterable[str]) -> str | None:
    """The entry of ``packages`` that ``module`` is, or is a submodule of."""
    for package in packages:
        if module == package or module.startswith(package + "."):
            return package
    return None


def inside_call(ctx: FileContext, qualified: frozenset[str]) -> bool:
    """True when an enclosing call's function resolves to one of ``qualified``."""
    for anc in ctx.ancestors():
        if isinstance(anc, cst.Call) and ctx.qualify(anc.func) in qualified:
            return True
    return False


def code(ctx: FileContext, node: cst.CSTNode, limit: int = 60) -> str:
    """The node's source on one line, shortened for a message."""
    return _short(ctx, node, limit)


#: The path forward for a hand-written CUDA/Triton kernel (reference F1, F2).
NKI_PATH = "port it to an NKI kernel registered with `torch_neuronx.nki_op` (check aws-neuron/nki-library first)"
NKI_PATH_KERNELS = NKI_PATH.replace("port it to an NKI kernel", "port the kernels to NKI kernels")


def string_values(node: cst.BaseExpression) -> list[str] | None:
    """The strings of a literal string, or of a list/tuple/set of literal strings, else None."""
    single = string_value(node)
    if single is not None:
        return [single]
    if isinstance(node, (cst.List, cst.Tuple, cst.Set)):
        values = [string_value(el.value) for el in node.elements]
        if all(v is not None for v in values):
            return [v for v in values if v is not None]
    return None


def is_false_literal(node: cst.BaseExpression) -> bool:
    """``False``, ``None`` or ``0``: a keyword that switches a feature off."""
    if isinstance(node, cst.Name):
        return node.value in ("False", "None")
    return isinstance(node, cst.Integer) and node.value == "0"
