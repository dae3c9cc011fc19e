"""Matchers shared by the device-placement rules (NRN101-NRN109).

A "cuda literal" is an expression that spells a CUDA device: ``"cuda"``, ``"cuda:1"``,
``f"cuda:{rank}"``, ``"cuda:{}".format(rank)``, ``"cuda:%d" % rank`` or ``"cuda:" + str(rank)``.
"""

from __future__ import annotations

import enum
import re
from typing import Iterator

import libcst as cst

from neuronize.context import FileContext, dotted_name
from neuronize.transform import ImportRequest
from neuronize.transforms._helpers import make_string, string_value

CUDA_INDEXED = re.compile(r"^cuda:(\d+)$")
# Strings that name a device type; a conditional expression choosing between them picks a device.
DEVICE_WORD = re.compile(r"^(cuda|cpu|mps|xpu|neuron|meta|hpu|npu|xla|mtia)(:\d+)?$")

#: calls whose ``device=`` keyword is not a placement, or is owned by another rule family
EXCLUDED_DEVICE_CALLS = frozenset({
    "autocast", "custom_fwd", "custom_bwd", "GradScaler", "init_device_mesh", "DeviceMesh",
    "Generator",  # NRN106
})


class Kind(enum.Enum):
    """How a CUDA device literal names its device."""

    PLAIN = "plain"  # "cuda", "cuda:0": dropping nothing
    INDEXED = "indexed"  # "cuda:1": a non-zero literal index is dropped
    DYNAMIC = "dynamic"  # f"cuda:{rank}", "cuda:{}".format(i)...: a computed index is dropped

    @property
    def drops_index(self) -> bool:
        return self is not Kind.PLAIN


def cuda_literal(node: cst.CSTNode) -> Kind | None:
    """The kind of CUDA device ``node`` spells, or None if it is no CUDA device literal."""
    value = string_value(node)
    if value is not None:
        if value == "cuda":
            return Kind.PLAIN
        m = CUDA_INDEXED.match(value)
        if m:
            return Kind.PLAIN if int(m.group(1)) == 0 else Kind.INDEXED
        return None
    if isinstance(node, cst.FormattedString):
        parts = node.parts
        if (len(parts) == 2 and isinstance(parts[0], cst.FormattedStringText)
                and parts[0].value == "cuda:" and isinstance(parts[1], cst.FormattedStringExpression)
                and parts[1].format_spec is None):
            return Kind.DYNAMIC
        return None
    if isinstance(node, cst.Call):
        # "cuda:{}".format(rank)
        func = node.func
        if (isinstance(func, cst.Attribute) and func.attr.value == "format"
                and string_value(func.value) == "cuda:{}" and len(node.args) == 1
                and node.args[0].keyword is None and not node.args[0].star):
            return Kind.DYNAMIC
        return None
    if isinstance(node, cst.BinaryOperation):
        left = string_value(node.left)
        if isinstance(node.operator, cst.Modulo) and left in ("cuda:%d", "cuda:%s", "cuda:%i"):
            return Kind.DYNAMIC
        if isinstance(node.operator, cst.Add) and left == "cuda:":
            return Kind.DYNAMIC
    return None


def _quote_source(node: cst.CSTNode) -> cst.SimpleString | None:
    """A string literal whose quote style the replacement should follow."""
    if isinstance(node, cst.SimpleString):
        return node
    if isinstance(node, cst.FormattedString):
        quote = node.start.lstrip("fFrRbB")
        return cst.SimpleString(f"{quote}x{quote}") if quote in ("'", '"') else None
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute):
        return _quote_source(node.func.value)
    if isinstance(node, cst.BinaryOperation):
        return _quote_source(node.left)
    if isinstance(node, cst.ConcatenatedString):
        return _quote_source(node.left)
    return None


def neuron_literal(node: cst.CSTNode) -> cst.SimpleString:
    """``"neuron"`` in the quote style of ``node``, keeping its parentheses."""
    new = make_string("neuron", _quote_source(node))
    return new.with_changes(lpar=getattr(node, "lpar", ()), rpar=getattr(node, "rpar", ()))


def device_named(name: str | None) -> bool:
    """A variable, attribute, parameter or key name that holds a device (not a HF device_map)."""
    if not name:
        return False
    low = name.lower()
    return "device" in low and "device_map" not in low


def target_name(node: cst.CSTNode) -> str | None:
    """``device`` for ``device``, ``self.device``, ``cfg["device"]``; else None."""
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        return node.attr.value
    if isinstance(node, cst.Subscript) and len(node.slice) == 1:
        index = node.slice[0].slice
        if isinstance(index, cst.Index):
            return string_value(index.value)
    return None


def last_name(func: cst.BaseExpression) -> str | None:
    if isinstance(func, cst.Attribute):
        return func.attr.value
    if isinstance(func, cst.Name):
        return func.value
    return None


# -- comparisons with "cuda" ---------------------------------------------------------------
def _cuda_prefix(node: cst.CSTNode) -> bool:
    value = string_value(node)
    return value is not None and (value in ("cuda", "cuda:") or bool(CUDA_INDEXED.match(value)))


def _is_literal_value(node: cst.CSTNode) -> bool:
    return isinstance(node, (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString,
                             cst.Integer, cst.Float, cst.List, cst.Tuple, cst.Set, cst.Dict))


def cuda_membership_list(node: cst.CSTNode) -> bool:
    """``x in ("cuda", "mps")``: a membership test against a literal list holding a CUDA name."""
    if not (isinstance(node, cst.Comparison) and len(node.comparisons) == 1):
        return False
    target = node.comparisons[0]
    if not isinstance(target.operator, (cst.In, cst.NotIn)):
        return False
    container = target.comparator
    if not isinstance(container, (cst.List, cst.Tuple, cst.Set)):
        return False
    return any(cuda_literal(el.value) is not None for el in container.elements
               if isinstance(el, cst.Element))


def rewrite_cuda_comparison(node: cst.CSTNode) -> cst.BaseExpression | None:
    """The Neuron form of a device comparison with ``"cuda"``, or None if ``node`` is none.

    ``d == "cuda"``, ``d.type != "cuda:0"``, ``"cuda" in d``, ``str(d).startswith("cuda")``.
    """
    if isinstance(node, cst.Comparison):
        if len(node.comparisons) != 1:
            return None
        target = node.comparisons[0]
        op, left, right = target.operator, node.left, target.comparator
        if isinstance(op, (cst.Equal, cst.NotEqual)):
            if cuda_literal(right) is not None and string_value(right) is not None \
                    and not _is_literal_value(left):
                return node.with_changes(comparisons=[target.with_changes(comparator=neuron_literal(right))])
            if cuda_literal(left) is not None and string_value(left) is not None \
                    and not _is_literal_value(right):
                return node.with_changes(left=neuron_literal(left))
            return None
        if isinstance(op, (cst.In, cst.NotIn)):
            if _cuda_prefix(left) and not _is_literal_value(right):
                return node.with_changes(left=neuron_literal(left))
        return None
    if isinstance(node, cst.Call):
        func = node.func
        if (isinstance(func, cst.Attribute) and func.attr.value == "startswith"
                and len(node.args) == 1 and node.args[0].keyword is None
                and _cuda_prefix(node.args[0].value) and not _is_literal_value(func.value)):
            arg = node.args[0]
            return node.with_changes(args=[arg.with_changes(value=neuron_literal(arg.value))])
    return None


def iter_conditions(test: cst.BaseExpression) -> Iterator[cst.BaseExpression]:
    """The atoms of a condition: through ``and`` / ``or`` / ``not``."""
    if isinstance(test, cst.BooleanOperation):
        yield from iter_conditions(test.left)
        yield from iter_conditions(test.right)
    elif isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        yield from iter_conditions(test.expression)
    else:
        yield test


def has_cuda_comparison(test: cst.BaseExpression) -> bool:
    return any(rewrite_cuda_comparison(atom) is not None for atom in iter_conditions(test))


def rewrite_condition(test: cst.BaseExpression) -> cst.BaseExpression:
    """``test`` with every CUDA comparison among its atoms turned to Neuron."""
    if isinstance(test, cst.BooleanOperation):
        return test.with_changes(left=rewrite_condition(test.left), right=rewrite_condition(test.right))
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        return test.with_changes(expression=rewrite_condition(test.expression))
    return rewrite_cuda_comparison(test) or test


def device_word(node: cst.CSTNode) -> bool:
    value = string_value(node)
    return (value is not None and bool(DEVICE_WORD.match(value))) or cuda_literal(node) is not None


def is_torch_device_call(ctx: FileContext, node: cst.CSTNode) -> bool:
    return isinstance(node, cst.Call) and ctx.qualify(node.func) == "torch.device"


def selects_device(ctx: FileContext, ifexp: cst.IfExp) -> bool:
    """A conditional expression whose branches are device names or ``torch.device(...)``."""
    for branch in (ifexp.body, ifexp.orelse):
        if isinstance(branch, cst.IfExp):
            if selects_device(ctx, branch):
                return True
        elif device_word(branch) or is_torch_device_call(ctx, branch):
            return True
    return False


# -- the "cuda" if torch.cuda.is_available() else "cpu" idiom -----------------------------
def _is_available_call(ctx: FileContext, node: cst.CSTNode) -> bool:
    return (isinstance(node, cst.Call) and not node.args
            and ctx.qualify(node.func) == "torch.cuda.is_available")


def idiom_branch(ctx: FileContext, ifexp: cst.IfExp) -> tuple[str, cst.BaseExpression, Kind] | None:
    """For ``"cuda" if torch.cuda.is_available() else "cpu"``: which branch holds the CUDA
    device ("body" or "orelse"), the literal itself, and its kind; None for any other IfExp.

    The test may be the call, ``not`` the call (CUDA branch in ``orelse``), or an ``and`` /
    ``or`` chain holding the call (every occurrence with the same polarity). The CUDA branch is a literal or ``torch.device(<literal>)``.
    """
    polarities = set(_available_polarity(ctx, ifexp.test, False))
    if len(polarities) != 1:
        return None
    side = "orelse" if polarities.pop() else "body"
    branch = getattr(ifexp, side)
    literal = branch
    if is_torch_device_call(ctx, branch):
        call = branch
        assert isinstance(call, cst.Call)
        if len(call.args) != 1 or call.args[0].keyword is not None or call.args[0].star:
            return None
        literal = call.args[0].value
    kind = cuda_literal(literal)
    if kind is None:
        return None
    return side, literal, kind


def _available_polarity(ctx: FileContext, test: cst.BaseExpression, negated: bool) -> Iterator[bool]:
    """For each ``torch.cuda.is_available()`` atom of ``test``: whether it sits under a ``not``."""
    if _is_available_call(ctx, test):
        yield negated
    elif isinstance(test, cst.BooleanOperation):
        yield from _available_polarity(ctx, test.left, negated)
        yield from _available_polarity(ctx, test.right, negated)
    elif isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        yield from _available_polarity(ctx, test.expression, not negated)


def has_is_available(ctx: FileContext, test: cst.BaseExpression) -> bool:
    return any(True for _ in _available_polarity(ctx, test, False))


def replace_is_available(ctx: FileContext, test: cst.BaseExpression,
                         new_call: cst.BaseExpression) -> cst.BaseExpression:
    """``test`` with its ``torch.cuda.is_available()`` call(s) replaced by ``new_call``."""
    if _is_available_call(ctx, test):
        assert isinstance(test, cst.Call)
        return cst.Call(func=new_call, lpar=test.lpar, rpar=test.rpar)
    if isinstance(test, cst.UnaryOperation):
        return test.with_changes(expression=replace_is_available(ctx, test.expression, new_call))
    if isinstance(test, cst.BooleanOperation):
        return test.with_changes(left=replace_is_available(ctx, test.left, new_call),
                                 right=replace_is_available(ctx, test.right, new_call))
    return test


# -- selection statements: if device == "cuda": device_type = "cuda" else: ... -----------------
def _block_assigns_devices(block: cst.BaseSuite | cst.CSTNode | None) -> bool:
    if block is None:
        return True
    if isinstance(block, cst.Else):
        return _block_assigns_devices(block.body)
    if isinstance(block, cst.If):
        return _block_assigns_devices(block.body) and _block_assigns_devices(block.orelse)
    if isinstance(block, cst.IndentedBlock):
        lines = list(block.body)
    elif isinstance(block, cst.SimpleStatementSuite):
        lines = [block]
    else:
        return False
    found = False
    for line in lines:
        if not isinstance(line, (cst.SimpleStatementLine, cst.SimpleStatementSuite)):
            return False
        for small in line.body:
            if isinstance(small, cst.Pass):
                continue
            if isinstance(small, cst.Assign) and all(
                    device_named(target_name(t.target)) for t in small.targets):
                found = True
                continue
            if isinstance(small, cst.AnnAssign) and device_named(target_name(small.target)):
                found = True
                continue
            return False
    return found or not lines


def selection_if(node: cst.If) -> bool:
    """An ``if`` whose test compares with ``"cuda"`` and whose blocks only assign device settings."""
    return (has_cuda_comparison(node.test) and _block_assigns_devices(node.body)
            and _block_assigns_devices(node.orelse))


def selection_ifexp(ctx: FileContext, node: cst.IfExp) -> bool:
    """A conditional expression choosing a device by comparing with ``"cuda"`` (NRN103 owns it)."""
    return (has_cuda_comparison(node.test) and selects_device(ctx, node)
            and idiom_branch(ctx, node) is None)


def import_removal(ctx: FileContext, local: str) -> ImportRequest | None:
    """A request to drop the module-level import binding ``local`` (the engine keeps it while used)."""
    for stmt in ctx.module.body:
        if not isinstance(stmt, cst.SimpleStatementLine):
            continue
        for small in stmt.body:
            if isinstance(small, cst.Import):
                for alias in small.names:
                    full = dotted_name(alias.name)
                    if not full:
                        continue
                    has_as = alias.asname is not None and isinstance(alias.asname.name, cst.Name)
                    bound = alias.asname.name.value if has_as else full.split(".")[0]  # type: ignore[union-attr]
                    if bound == local:
                        return ImportRequest(full, asname=bound if has_as else None, remove=True)
            elif (isinstance(small, cst.ImportFrom) and small.module is not None and not small.relative
                  and not isinstance(small.names, cst.ImportStar)):
                for alias in small.names:
                    if not isinstance(alias.name, cst.Name):
                        continue
                    has_as = alias.asname is not None and isinstance(alias.asname.name, cst.Name)
                    bound = alias.asname.name.value if has_as else alias.name.value  # type: ignore[union-attr]
                    if bound == local:
                        return ImportRequest(dotted_name(small.module) or "", alias.name.value,
                                             bound if has_as else None, remove=True)
    return None


def is_available_calls(ctx: FileContext, test: cst.BaseExpression) -> Iterator[cst.Call]:
    """The ``torch.cuda.is_available()`` calls among the atoms of ``test``."""
    for atom in iter_conditions(test):
        if _is_available_call(ctx, atom):
            assert isinstance(atom, cst.Call)
            yield atom


def short(ctx: FileContext, node: cst.CSTNode, limit: int = 90) -> str:
    """The source of ``node`` on one line, shortened for a message."""
    text = " ".join(ctx.module.code_for_node(node).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


