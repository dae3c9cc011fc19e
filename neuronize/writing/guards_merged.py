"""``--target accelerator``: CUDA guards written next to each other become one.

The accelerator target keeps each CUDA-only statement for CUDA under its own ``if
torch.cuda.is_available():`` (NRN112, NRN116, NRN350, NRN351...). A training script's setup
block of three CUDA settings then reads as three guards of one line each. :func:`merge_guards`
joins guards that this run wrote, one directly after the other in the same block (no blank line
or comment between them, which would mark a paragraph of its own), into one guard over their
statements, in their order. Guards the code had before are left as they were.
"""

from __future__ import annotations

import libcst as cst

from neuronize.analysis.walk import visit

_GUARD_TEST = ".cuda.is_available()"


def _is_guard(stmt: cst.CSTNode) -> bool:
    """``if <torch>.cuda.is_available():`` over an indented block, with no ``else``."""
    if not (isinstance(stmt, cst.If) and stmt.orelse is None and isinstance(stmt.body, cst.IndentedBlock)):
        return False
    test = stmt.test
    return (isinstance(test, cst.Call) and not test.args and not test.lpar
            and cst.Module([]).code_for_node(test).endswith(_GUARD_TEST)
            and isinstance(test.func, cst.Attribute) and isinstance(test.func.value, cst.Attribute)
            and isinstance(test.func.value.value, cst.Name))


class _Guards(cst.CSTVisitor):
    def __init__(self) -> None:
        super().__init__()
        self.found: list[cst.If] = []

    def visit_If(self, node: cst.If) -> None:
        if _is_guard(node):
            self.found.append(node)


class _Merge(cst.CSTTransformer):
    def __init__(self, written: set[int]) -> None:
        super().__init__()
        self.written = written

    def _merged(self, original: cst.Module | cst.IndentedBlock, updated: cst.Module | cst.IndentedBlock):  # type: ignore[no-untyped-def]
        body: list[cst.BaseStatement] = []
        last_written = False
        for old, new in zip(original.body, updated.body, strict=True):
            written = id(old) in self.written
            previous = body[-1] if body else None
            if written and last_written and isinstance(new, cst.If) and not new.leading_lines:
                assert isinstance(previous, cst.If)
                inner = [*previous.body.body, *new.body.body]
                body[-1] = previous.with_changes(body=previous.body.with_changes(body=inner))
            else:
                body.append(new)
            last_written = written
        return updated.with_changes(body=body) if len(body) != len(updated.body) else updated

    def leave_Module(self, original_node: cst.Module, updated_node: cst.Module) -> cst.Module:
        return self._merged(original_node, updated_node)

    def leave_IndentedBlock(self, original_node: cst.IndentedBlock,
                            updated_node: cst.IndentedBlock) -> cst.IndentedBlock:
        return self._merged(original_node, updated_node)


def merge_guards(module: cst.Module, source: bytes) -> cst.Module:
    """``module`` with each run of adjacent guards this run wrote (in ``source``'s rewrite) joined
    into one; ``module`` itself when there is none."""
    if module.code.count(_GUARD_TEST) < 2:
        return module
    collect = _Guards()
    visit(module, collect)
    if len(collect.found) < 2:
        return module
    from neuronize.analysis.positions import on_changed_lines

    written = on_changed_lines(module, source, collect.found)
    if len(written) < 2:
        return module
    return module.visit(_Merge(written))
