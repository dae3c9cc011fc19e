"""How code chooses its device (the device-placement rules, NRN101-NRN109): comparisons with
``"cuda"``, the ``"cuda" if torch.cuda.is_available() else "cpu"`` idiom, and ``if`` statements
that only pick device settings."""

from __future__ import annotations

from dataclasses import dataclass
from collections.abc import Iterator

import libcst as cst

from neuronize.analysis.context import FileContext, dotted_name
from neuronize.analysis.syntax import (
    assigned_attribute, assigned_value, binding_counts, binding_scope, is_stub, iter_statements, named_parameters,
    scope_statements, stored_once, without_not)
from neuronize.analysis.import_safety import calls_neuron_test, is_neuron_test, is_neuron_test_call
from neuronize.analysis.walk import iter_syntax
from neuronize.transform import ImportRequest
from neuronize.writing.late_defaults import FASTAPI_PARAMETERS
from neuronize.transforms._helpers import per_target
from neuronize.transforms._helpers.imports import removal_of
from neuronize.transforms._helpers.messages import short
from neuronize.transforms._helpers.calls import argument, insert_after, is_cuda_available_call, keyword
from neuronize.transforms._helpers.literals import (
    CUDA_INDEXED, Kind, cuda_literal, is_device_word, make_string, quote_source, string_like, string_value,
)
from neuronize.transforms._helpers.names import last_name, target_name
from neuronize.transforms._helpers.nodes import in_place, iter_conditions, parenthesized, read_paths
from neuronize.transforms._helpers.value_flow import LOOKUPS, alternatives, assigned, option_names

#: calls whose ``device=`` keyword is not a placement, or is owned by another rule family
EXCLUDED_DEVICE_CALLS = frozenset({
    "autocast", "custom_fwd", "custom_bwd", "GradScaler", "init_device_mesh", "DeviceMesh",
    "Generator",  # NRN106
})


def device_named(name: str | None) -> bool:
    """A variable, attribute, parameter or key name that holds a device (not a HF device_map)."""
    if not name:
        return False
    low = name.lower()
    return "device" in low and "device_map" not in low


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
    values = [el.value for el in container.elements if isinstance(el, cst.Element)]
    return any(cuda_literal(v) is not None for v in values) and not any(string_value(v) == "neuron" for v in values)


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
                return node.with_changes(comparisons=[target.with_changes(comparator=string_like(right, "neuron"))])
            if cuda_literal(left) is not None and string_value(left) is not None \
                    and not _is_literal_value(right):
                return node.with_changes(left=string_like(left, "neuron"))
            return None
        if isinstance(op, (cst.In, cst.NotIn)):
            if _cuda_prefix(left) and not _is_literal_value(right):
                return node.with_changes(left=string_like(left, "neuron"))
        return None
    if isinstance(node, cst.Call):
        func = node.func
        if (isinstance(func, cst.Attribute) and func.attr.value == "startswith"
                and len(node.args) == 1 and node.args[0].keyword is None
                and _cuda_prefix(node.args[0].value) and not _is_literal_value(func.value)):
            arg = node.args[0]
            return node.with_changes(args=[arg.with_changes(value=string_like(arg.value, "neuron"))])
    return None


def has_cuda_comparison(test: cst.BaseExpression) -> bool:
    return any(rewrite_cuda_comparison(atom) is not None for atom in iter_conditions(test))


def rewrite_condition(test: cst.BaseExpression) -> cst.BaseExpression:
    """``test`` with every CUDA comparison among its atoms turned to Neuron."""
    if isinstance(test, cst.BooleanOperation):
        return test.with_changes(left=rewrite_condition(test.left), right=rewrite_condition(test.right))
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        return test.with_changes(expression=rewrite_condition(test.expression))
    return rewrite_cuda_comparison(test) or test


def is_torch_device_call(ctx: FileContext, node: cst.CSTNode) -> bool:
    return isinstance(node, cst.Call) and ctx.qualify(node.func) == "torch.device"


def selects_device(ctx: FileContext, ifexp: cst.IfExp) -> bool:
    """A conditional expression whose branches are device names or ``torch.device(...)``."""
    for branch in (ifexp.body, ifexp.orelse):
        if isinstance(branch, cst.IfExp):
            if selects_device(ctx, branch):
                return True
        elif is_device_word(branch) or is_torch_device_call(ctx, branch):
            return True
    return False



def neuron_first(node: cst.IfExp) -> bool:
    """``"neuron" if <Neuron is here> else <the original choice>``: the form the migration gives a
    choice (the idiom, a host-aware default); its ``else`` keeps serving the other hosts."""
    body = node.body
    if isinstance(body, cst.Call) and body.args and (dotted_name(body.func) or "").endswith("device"):
        body = body.args[0].value
    return string_value(body) == "neuron" and asks_if_neuron(node.test)


def asks_if_neuron(test: cst.BaseExpression) -> bool:
    """``test`` asks the question the migration writes, "is the accelerator here Neuron?" (any
    quote style), spelled out or through the function a module defines for it (``on_neuron()``),
    alone or as part of a larger test (``import_safety.is_neuron_test`` is the exact test only)."""
    code = cst.Module([]).code_for_node(test)
    return "current_accelerator().type" in code and ('"neuron"' in code or "'neuron'" in code) or (
        calls_neuron_test(code))


def says_only_neuron(test: cst.BaseExpression) -> bool:
    """``test`` is the Neuron test and nothing else (``on_neuron()``, or written out): not a check
    extended to Neuron (``on_neuron() or torch.cuda.is_available()``), where CUDA passes too."""
    return is_neuron_test(test) or is_neuron_test_call(test)


def only_on_neuron(test: cst.BaseExpression) -> bool:
    """``test`` holds only where the device is Neuron: the migration's test (:func:`says_only_neuron`)
    or a device compared with ``"neuron"`` (``device.type == "neuron"``, ``"neuron" in device``),
    alone or ``and``-ed with other conditions (an ``or`` or a ``not`` lets other hosts in): the
    branch it guards is Neuron's own."""
    if says_only_neuron(test):
        return True
    if isinstance(test, cst.BooleanOperation):
        return isinstance(test.operator, cst.And) and (only_on_neuron(test.left) or only_on_neuron(test.right))
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
        target = test.comparisons[0]
        if isinstance(target.operator, cst.Equal):
            return "neuron" in (string_value(test.left), string_value(target.comparator))
        return isinstance(target.operator, cst.In) and string_value(test.left) == "neuron"
    return False


# -- the "cuda" if torch.cuda.is_available() else "cpu" idiom -----------------------------
def idiom_branch(ctx: FileContext, ifexp: cst.IfExp) -> tuple[str, cst.BaseExpression, Kind] | None:
    """For ``"cuda" if torch.cuda.is_available() else "cpu"``: which branch holds the CUDA
    device ("body" or "orelse"), the literal itself, and its kind; None for any other IfExp.

    The test may be the call, ``not`` the call (CUDA branch in ``orelse``), or an ``and`` /
    ``or`` chain holding the call (every occurrence with the same polarity), or a flag stored
    from the check (:func:`flag_side`). The CUDA branch is a literal or
    ``torch.device(<literal>)``.
    """
    side = available_side(ctx, ifexp) or flag_side(ctx, ifexp)
    found = idiom_literal(ctx, getattr(ifexp, side)) if side is not None else None
    return (side, *found) if side is not None and found is not None else None


def idiom_literal(ctx: FileContext, branch: cst.BaseExpression) -> tuple[cst.BaseExpression, Kind] | None:
    """The CUDA device literal a branch of the idiom names (``"cuda"``, or the argument of
    ``torch.device("cuda")``), and its kind; None for any other branch."""
    literal = branch
    if is_torch_device_call(ctx, branch):
        call = branch
        assert isinstance(call, cst.Call)
        if len(call.args) != 1 or call.args[0].keyword is not None or call.args[0].star:
            return None
        literal = call.args[0].value
    kind = cuda_literal(literal)
    return (literal, kind) if kind is not None else None


def flag_side(ctx: FileContext, ifexp: cst.IfExp) -> str | None:
    """On the neuron target, which branch of a choice by a flag runs where CUDA is (:func:`flag_check`)."""
    found = flag_check(ctx, ifexp)
    return found[0] if found is not None else None


def flag_check(ctx: FileContext, ifexp: cst.IfExp) -> tuple[str, cst.BaseExpression] | None:
    """On the neuron target, for a choice by a flag stored once in its scope from the check itself,
    alone or among conditions joined by ``and`` (``has_cuda = torch.cuda.is_available()``,
    ``args.cuda = not args.no_cuda and torch.cuda.is_available()``, then ``"cuda" if has_cuda else
    "cpu"``, or ``"cpu" if not has_cuda else "cuda"``): which branch runs where CUDA is, and the
    check. An attribute is such a flag where the file assigns it once. The Neuron arm goes in front
    of the whole choice, which keeps the flag for what else it decides (fp16 on CUDA); the other
    targets rewrite the check itself, which a flag hides, so they leave it."""
    test, negated = ifexp.test, False
    while isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        test, negated = test.expression, not negated
    if per_target.target(ctx) != per_target.NEURON:
        return None
    if isinstance(test, cst.Attribute):
        values = stored_attributes(ctx).get(dotted_name(test) or "", [])
        stored = values[0] if len(values) == 1 else None
    elif isinstance(test, cst.Name) and test.value in _stored_checks(ctx):
        stored = stored_value(ctx, ifexp, test.value)
    else:
        return None
    if stored is None or not _positive_check(ctx, stored):
        return None
    return ("orelse" if negated else "body"), stored


def stored_value(ctx: FileContext, node: cst.CSTNode, name: str) -> cst.BaseExpression | None:
    """The value the one binding of ``name`` that ``node`` reads stores, if it is bound once in its scope."""
    # where the walk has reached `node`, its parents are known; else it sits below the node being
    # visited (the call it is an argument of, or later in the function of a flag being visited)
    path: list[cst.CSTNode] = [node]
    while id(path[-1]) in ctx.parents:
        path.append(ctx.parents[id(path[-1])])
    around = reversed(path) if len(path) > 1 else list(ctx.ancestors())[::-1] + ctx.stack[-1:]
    functions = tuple(n for n in around if isinstance(n, cst.FunctionDef))
    scope = binding_scope(name, functions, ctx.module)
    if not stored_once(scope, name):
        return None
    return next((found[1] for statement in iter_statements(scope_statements(scope))
                 if (found := assigned_value(statement)) is not None and found[0] == name), None)


def rebound_check(ctx: FileContext, ifexp: cst.IfExp) -> tuple[cst.Call, bool] | None:
    """On the neuron target, the CUDA check of a choice by a parameter its function rebinds from
    that check and the wish it was given (``def f(use_cuda=None): use_cuda =
    torch.cuda.is_available() and (True if use_cuda is None else use_cuda)``, then
    ``torch.device("cuda" if use_cuda else "cpu")``), and whether every read of the flag is the
    test of such a choice of a device. The flag is False on Neuron, so the choice's Neuron arm
    runs only with the check widened to Neuron, in one edit with it, which only such reads allow;
    no test put in front of the choice could read the wish, which the rebinding hides. None for
    any other choice."""
    test, negated = without_not(ifexp.test)
    if per_target.target(ctx) != per_target.NEURON or not isinstance(test, cst.Name) \
            or idiom_literal(ctx, ifexp.orelse if negated else ifexp.body) is None:
        return None
    name = test.value
    function = next((anc for anc in ctx.ancestors() if isinstance(anc, (cst.FunctionDef, cst.Lambda, cst.ClassDef))), None)
    if not isinstance(function, cst.FunctionDef) or name not in {p.name.value for p in named_parameters(function)} \
            or binding_counts(function, (name,), own_scope=True)[name] != 2:
        return None
    rebinding = next((statement for statement in scope_statements(function)
                      if (bound := assigned_value(statement)) is not None and bound[0] == name), None)
    found = assigned_value(rebinding) if rebinding is not None else None
    operands = list(_and_operands(found[1])) if found is not None else []
    checks = [operand for operand in operands if is_cuda_available_call(ctx, operand)]
    if len(checks) != 1 or any(has_is_available(ctx, o) for o in operands if o is not checks[0]) \
            or not any(isinstance(n, cst.Name) and n.value == name for o in operands for n in iter_syntax(o)):
        return None
    return cst.ensure_type(checks[0], cst.Call), all(
        _tests_device_choice(ctx, path) for path in read_paths(function, name, rebinding))


def _and_operands(value: cst.BaseExpression) -> Iterator[cst.BaseExpression]:
    """The operands of ``a and b and ...`` (``value`` itself where it is no ``and``)."""
    if isinstance(value, cst.BooleanOperation) and isinstance(value.operator, cst.And) and not value.lpar:
        yield from _and_operands(value.left)
        yield from _and_operands(value.right)
    else:
        yield value


def _tests_device_choice(ctx: FileContext, path: list[cst.CSTNode]) -> bool:
    """The read at the end of ``path`` is the test (under any ``not``) of a choice whose branch for
    a true test names a CUDA device."""
    child, negated = path[-1], False
    for parent in reversed(path[:-1]):
        if isinstance(parent, cst.UnaryOperation) and isinstance(parent.operator, cst.Not):
            child, negated = parent, not negated
            continue
        return isinstance(parent, cst.IfExp) and parent.test is child \
            and idiom_literal(ctx, parent.orelse if negated else parent.body) is not None
    return False


def extended_check(available: cst.BaseExpression, call: cst.Call) -> cst.BaseExpression:
    """``<Neuron is here> or <the check as written>``: the check gains Neuron and keeps every host
    it was true on (the CUDA box keeps its path)."""
    return cst.BooleanOperation(left=available, operator=cst.Or(), right=call.with_changes(lpar=(), rpar=()))


def _positive_check(ctx: FileContext, value: cst.BaseExpression) -> bool:
    """``value`` is the CUDA check, alone or ``and``-ed with other conditions, none negating it."""
    return is_cuda_available_call(ctx, value) or (only_and(value) and available_polarities(ctx, value) == {False})


def _stored_checks(ctx: FileContext) -> frozenset[str]:
    """The names some statement of the file binds to the CUDA check (``has_cuda =
    torch.cuda.is_available()``), in any scope: the only candidates for :func:`flag_check`."""
    key = ("stored-checks", 0)
    if key not in ctx.memo:
        found: set[str] = set()
        if b"is_available" in ctx.source:
            found = {stored[0] for statement in iter_statements(ctx.module.body)
                     if (stored := assigned_value(statement)) is not None and _positive_check(ctx, stored[1])}
        ctx.memo[key] = frozenset(found)
    return ctx.memo[key]


def stored_attributes(ctx: FileContext) -> dict[str, list[cst.BaseExpression]]:
    """Every attribute the file assigns (``args.cuda = ...``), in any scope, with the values."""
    key = ("stored-attributes", 0)
    if key not in ctx.memo:
        found: dict[str, list[cst.BaseExpression]] = {}
        if b"is_available" in ctx.source:
            for statement in iter_statements(ctx.module.body):
                if (stored := assigned_attribute(statement)) is not None:
                    found.setdefault(stored[0], []).append(stored[1])
        ctx.memo[key] = found
    return ctx.memo[key]


def _available_polarity(ctx: FileContext, test: cst.BaseExpression, negated: bool) -> Iterator[bool]:
    """For each ``torch.cuda.is_available()`` atom of ``test``: whether it sits under a ``not``."""
    if is_cuda_available_call(ctx, test):
        yield negated
    elif isinstance(test, cst.BooleanOperation):
        yield from _available_polarity(ctx, test.left, negated)
        yield from _available_polarity(ctx, test.right, negated)
    elif isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        yield from _available_polarity(ctx, test.expression, not negated)


def only_and(test: cst.BaseExpression) -> bool:
    """``a and b and ...`` (no ``or`` among its operators), or a single condition."""
    if isinstance(test, cst.BooleanOperation):
        return isinstance(test.operator, cst.And) and only_and(test.left) and only_and(test.right)
    return True


def has_is_available(ctx: FileContext, test: cst.BaseExpression) -> bool:
    return any(True for _ in _available_polarity(ctx, test, False))


def replace_is_available(ctx: FileContext, test: cst.BaseExpression,
                         available: cst.BaseExpression) -> cst.BaseExpression:
    """``test`` with its ``torch.cuda.is_available()`` call(s) replaced by ``available`` (the
    target's test, see ``per_target.available``), parenthesised where it becomes an operand."""
    if is_cuda_available_call(ctx, test):
        assert isinstance(test, cst.Call)
        if test.lpar:
            return available.with_changes(lpar=test.lpar, rpar=test.rpar)
        return available

    def operand(node: cst.BaseExpression) -> cst.BaseExpression:
        new = replace_is_available(ctx, node, available)
        return parenthesized(new) if is_cuda_available_call(ctx, node) else new

    if isinstance(test, cst.UnaryOperation):
        return test.with_changes(expression=operand(test.expression))
    if isinstance(test, cst.BooleanOperation):
        return test.with_changes(left=operand(test.left), right=operand(test.right))
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
        lines = [block]  # type: ignore[list-item]
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
            if isinstance(small, cst.Return) and small.value is not None and is_device_word(small.value):
                found = True  # `if device == "cuda" and not ...: return "cpu"`: a fallback choice
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


def is_available_calls(ctx: FileContext, test: cst.BaseExpression) -> Iterator[cst.Call]:
    """The ``torch.cuda.is_available()`` calls among the atoms of ``test``."""
    for atom in iter_conditions(test):
        if is_cuda_available_call(ctx, atom):
            assert isinstance(atom, cst.Call)
            yield atom



def neuron_arm(ctx: FileContext, node: cst.IfExp, side: str, branch: cst.BaseExpression,
               available: cst.BaseExpression, flag: cst.BaseExpression | None = None) -> cst.IfExp:
    """``<branch> if <Neuron is here> else <node>``: a choice by ``torch.cuda.is_available()``
    (its CUDA value in ``side``) with a Neuron arm in front, ``branch`` being the CUDA value made
    Neuron's (``"neuron"``, bf16). Additive: the original, whole, keeps serving CUDA and every host
    its fallback served; the other conditions of an ``and`` (``args.gpu and
    torch.cuda.is_available()``, in the test or in the flag it reads) still apply to Neuron.
    ``available``: the target's test; ``flag``: the check the flag ``node`` tests was stored from,
    where the caller knows it."""
    if flag is None and side == "body" and (found := flag_check(ctx, node)) is not None:
        flag = found[1]
    neuron_test = without_cuda_probes(ctx, replace_is_available(ctx, node.test, available)) \
        if flag is None and side == "body" and only_and(node.test) and has_is_available(ctx, node.test) \
        else without_cuda_probes(ctx, replace_is_available(ctx, flag, available)) if flag is not None \
        else available
    # a choice its author spread one part a line (`"cuda"` / `if ...` / `else ...`) gets its Neuron
    # arm laid out the same way, in front
    spread = node.whitespace_before_if if isinstance(node.whitespace_before_if, cst.ParenthesizedWhitespace) \
        else None
    layout = {"whitespace_before_if": spread, "whitespace_before_else": spread} if spread is not None else {}
    return cst.IfExp(test=neuron_test, body=branch.with_changes(lpar=(), rpar=()),
                     orelse=node.with_changes(lpar=(), rpar=()), lpar=node.lpar, rpar=node.rpar, **layout)


#: what a condition asks of the CUDA stack's presence beside the availability check (cuDNN there,
#: some CUDA device counted): False on Neuron, whose branch asks for Neuron instead
_CUDA_PRESENCE = frozenset({"torch.backends.cudnn.is_available", "torch.backends.cudnn.enabled",
                            "torch.cuda.device_count"})


def without_cuda_probes(ctx: FileContext, test: cst.BaseExpression) -> cst.BaseExpression:
    """``test``, a Neuron branch's ``and`` of conditions, without those that ask whether the CUDA
    stack is there (a cuDNN check, a count of CUDA devices): kept, they would keep Neuron out of
    its own branch. The user's settings (``args.gpu``) and other questions about CUDA's state
    (``torch.cuda.is_initialized()``) stay."""
    def kept(node: cst.BaseExpression) -> cst.BaseExpression | None:
        if isinstance(node, cst.BooleanOperation) and isinstance(node.operator, cst.And):
            left, right = kept(node.left), kept(node.right)
            if left is None or right is None:
                return left or right
            return node if left is node.left and right is node.right else node.with_changes(left=left, right=right)
        nodes = list(iter_syntax(node))
        parts = {id(n.attr) for n in nodes if isinstance(n, cst.Attribute)}  # `x.is_available`'s name is no variable
        asks = any(isinstance(n, (cst.Name, cst.Attribute)) and id(n) not in parts
                   and ctx.qualify(n) in _CUDA_PRESENCE for n in nodes)
        return None if asks else node
    return kept(test) or test


def available_side(ctx: FileContext, node: cst.IfExp | cst.If) -> str | None:
    """Which branch of a choice by ``torch.cuda.is_available()`` runs where CUDA is (``"body"``,
    or ``"orelse"`` under ``not``); None when the test holds no check, or checks of both
    polarities."""
    polarities = set(_available_polarity(ctx, node.test, False))
    return None if len(polarities) != 1 else "orelse" if polarities.pop() else "body"


@dataclass(frozen=True)
class IdiomRewrite:
    """The rewrite of one ``"cuda" if torch.cuda.is_available() else "cpu"`` idiom."""

    replacement: cst.BaseExpression
    message: str
    imports: tuple[ImportRequest, ...]
    literal: cst.BaseExpression  # the CUDA device literal
    branch: cst.BaseExpression  # the branch holding it (the literal or `torch.device(<literal>)`)
    kind: Kind


#: why the idiom's rewrite is right, per target
IDIOM_WHY = {
    per_target.NEURON: "Neuron first, then the original choice: CUDA and the CPU fallback are kept (a Mac's MPS "
                    "still falls back as before)",
    per_target.ACCELERATOR: "same CPU fallback; the current accelerator (CUDA, Neuron...) is detected",
}


def rewrite_idiom(ctx: FileContext, node: cst.IfExp, side: str, literal: cst.BaseExpression,
                  kind: Kind) -> IdiomRewrite:
    """The idiom ``node`` (its CUDA device ``literal`` in branch ``side``, see :func:`idiom_branch`)
    for the file's target: ``per_target.available`` tests for the target's device, the CUDA
    branch names the target's device; on the CPU target a choice between two CPUs collapses."""
    target = per_target.target(ctx)
    available, imports = per_target.available(ctx)
    branch = getattr(node, side)
    new_literal: cst.BaseExpression = string_like(literal, "neuron")
    if target == per_target.ACCELERATOR:
        # the test already checks for an accelerator: no fallback needed inside the branch
        t = short(available).split(".")[0]
        new_literal = cst.parse_expression(f"{t}.accelerator.current_accelerator().type")
    elif target == per_target.CPU:
        new_literal = make_string("cpu", quote_source(literal))
    if branch is literal:
        new_branch: cst.BaseExpression = new_literal.with_changes(
            lpar=getattr(literal, "lpar", ()), rpar=getattr(literal, "rpar", ()))
    else:
        assert isinstance(branch, cst.Call)
        new_branch = branch.with_changes(args=[branch.args[0].with_changes(value=new_literal)])
    replacement: cst.BaseExpression = node.with_changes(
        test=replace_is_available(ctx, node.test, available), **{side: new_branch})
    if target == per_target.NEURON:
        replacement = neuron_arm(ctx, node, side, new_branch, available)
    if target == per_target.CPU:
        other = node.orelse if side == "body" else node.body
        if short(other) == short(new_branch):
            # "cuda" if torch.cuda.is_available() else "cpu" -> "cpu": both branches are the CPU now
            imports = ()
            replacement = new_branch.with_changes(lpar=node.lpar, rpar=node.rpar)
        message = f"device choice `{short(node)}` -> `{short(replacement)}`: runs on the CPU"
    else:
        # the message names the target's test instead of spelling out `per_target.available`
        marker = "__available__"
        new_test = replace_is_available(ctx, node.test, cst.Name(marker))
        if target == per_target.ACCELERATOR:
            new_test = replacement.test  # type: ignore[attr-defined]
        if target == per_target.NEURON:
            old_text = f"{short(node, 60)}"
            new_text = f"{per_target.spell(ctx, new_branch)} if {marker} else <the original choice>"
        elif side == "body":
            old_text = f"{short(branch)} if {short(node.test)} else ..."
            new_text = f"{per_target.spell(ctx, new_branch)} if {short(new_test)} else ..."
        else:
            old_text = f"... if {short(node.test)} else {short(branch)}"
            new_text = f"... if {short(new_test)} else {per_target.spell(ctx, new_branch)}"
        new_text = new_text.replace(marker, "<the accelerator is Neuron>")
        message = f"`{old_text}` -> `{new_text}`: {IDIOM_WHY[target]}"
    for call in () if target == per_target.NEURON else is_available_calls(ctx, node.test):
        head = (dotted_name(call.func) or "").split(".")[0]
        if ctx.qualify(cst.Name(head)) in ("torch.cuda", "torch.cuda.is_available"):
            removal = removal_of(ctx, head, top_level=True)  # `from torch import cuda` / `... import is_available`
            if removal is not None:
                imports = (*imports, removal)
    return IdiomRewrite(replacement, message, imports, literal, branch, kind)


def indexed_device(ctx: FileContext, node: cst.IfExp, plan: IdiomRewrite) -> tuple[cst.CSTNode, cst.BaseExpression, str]:
    """Where the idiom ``node`` is rewritten, to what, and a note for the message: ``node`` as
    ``plan`` says; but on the neuron target, where the idiom is the type of ``torch.device(<idiom>,
    <index>)`` (a per-process GPU index, ``local_rank``), the call, as ``torch.device("neuron") if
    <Neuron is here> else <the call>``: each process of a ``"neuron"`` process group sees one
    device, so the index stays with the hosts that had it."""
    above = ctx.ancestors()
    arg, call = next(above, None), next(above, None)
    if per_target.target(ctx) != per_target.NEURON or not isinstance(plan.replacement, cst.IfExp) or not (
            isinstance(arg, cst.Arg) and isinstance(call, cst.Call) and len(call.args) == 2 and call.args[0] is arg
            and arg.keyword is None and last_name(call.func) == "device") or (
            isinstance(call.args[1].value, cst.Integer) and call.args[1].value.value == "0"):  # Neuron's 0 too
        return node, plan.replacement, ""
    neuron = call.with_changes(args=[arg.with_changes(value=plan.replacement.body, comma=cst.MaybeSentinel.DEFAULT)])
    return call, cst.IfExp(test=plan.replacement.test, body=neuron, orelse=call.with_changes(lpar=(), rpar=()),
                           lpar=call.lpar, rpar=call.rpar), OTHER_HOSTS_INDEX_NOTE


def with_choice(container: cst.List | cst.Tuple, added: str,
                value: cst.BaseExpression | None = None) -> cst.List | cst.Tuple | None:
    """An option's ``choices=[..., "cuda", ...]`` with ``added`` (or the expression ``value``,
    the accelerator target's device) next to its last ``"cuda"``; None when it is there already,
    no plain ``"cuda"`` is, or an element is starred."""
    elements = container.elements
    values = [string_value(e.value) if isinstance(e, cst.Element) else None for e in elements]
    if value is not None and any(e.value.deep_equals(value) for e in elements):
        return None
    if added in values or any(isinstance(e, cst.StarredElement) for e in elements):
        return None
    cuda_at = [i for i, e in enumerate(elements) if cuda_literal(e.value) is Kind.PLAIN
               and string_value(e.value) is not None]
    if not cuda_at:
        return None
    anchor = elements[cuda_at[-1]]
    new = cst.Element(value=value if value is not None else make_string(added, anchor.value))
    return container.with_changes(elements=insert_after(elements, cuda_at[-1], new))


# -- device literals in device positions (NRN101) ---------------------------------------------------
INDEX_NOTE = ("; the device index is dropped: under a `\"neuron\"` process group each process sees "
              "one device (review single-process multi-device code)")
PORTABLE_INDEX_NOTE = ("; the device index is dropped (torchrun code selects its CUDA device with "
                       "`torch.cuda.set_device`; review single-process multi-device code)")
OTHER_HOSTS_INDEX_NOTE = ("; Neuron's device takes no index, the other hosts keep theirs: under a `\"neuron\"` "
                          "process group each process sees one device")
KEPT_INDEX_NOTE = (": the CUDA device (with its index) where CUDA is present, else the current accelerator "
                   "(a Neuron process sees one device) or the CPU")


def index_note(ctx: FileContext) -> str:
    """What dropping a device index means for the file's target (ends a message)."""
    return INDEX_NOTE if per_target.target(ctx) == per_target.NEURON else PORTABLE_INDEX_NOTE


def device_literals(ctx: FileContext, expr: cst.BaseExpression) -> Iterator[tuple[cst.BaseExpression, Kind]]:
    """The CUDA device literals an expression in a device position evaluates to: itself, and
    through its :func:`~neuronize.transforms._helpers.value_flow.alternatives` (the branches of a
    conditional, but not the idiom, a choice by comparison or a kept CUDA index; either side of
    ``or``; the default of ``x.get(key, default)`` / ``getattr(x, name, default)``)."""
    kind = cuda_literal(expr)
    if kind is not None:
        yield expr, kind
        return
    if isinstance(expr, cst.IfExp) and neuron_first(expr):
        return  # `"neuron" if <Neuron is here> else <the original>`: migrated already
    if isinstance(expr, cst.IfExp):
        if per_target.is_kept_cuda_index(ctx, expr):
            return  # `f"cuda:{i}" if torch.cuda.is_available() else <accelerator>`: portable
        if idiom_branch(ctx, expr) is not None or selection_ifexp(ctx, expr):
            return  # the idiom (rewritten as a unit) / a "cuda" comparison choosing a device (NRN103)
    found = alternatives(expr, ctx.qualify)
    for part in found[0] if found is not None else ():
        yield from device_literals(ctx, part)


@dataclass(frozen=True)
class LiteralEdit:
    """A CUDA device literal written for the target: the new expression, its imports, the note
    ending the message, and whether it is unsafe (a device index dropped)."""

    replacement: cst.BaseExpression
    imports: tuple[ImportRequest, ...]
    note: str
    unsafe: bool
    shown: str | None = None  # how a message shows the replacement, where not spelt out


def literal_edit(ctx: FileContext, node: cst.BaseExpression, kind: Kind, nested: bool) -> LiteralEdit:
    """``node`` (a CUDA device literal of ``kind``) as the target's device. ``nested``: it sits
    inside a larger expression (the accelerator's conditional expression gets parentheses)."""
    if kind.drops_index and per_target.target(ctx) == per_target.ACCELERATOR:
        # keep the index for CUDA (torch.cuda.set_device(device) is kept for CUDA too)
        new, imports = per_target.kept_cuda_index(ctx, node, parens=nested)
        return LiteralEdit(new, imports, KEPT_INDEX_NOTE, True)
    if per_target.target(ctx) == per_target.NEURON:
        new, imports = string_like(node, "neuron"), ()
    else:
        new, imports = per_target.device(ctx, string_like(node, "neuron"), parens=nested)
        if getattr(node, "lpar", ()):  # the literal's own parentheses, else those `nested` asked for
            new = new.with_changes(lpar=node.lpar, rpar=node.rpar)
    return LiteralEdit(new, imports, index_note(ctx) if kind.drops_index else "", kind.drops_index)


def indexed_device_edit(ctx: FileContext, call: cst.Call, first: cst.Arg, index: cst.Arg, keep_cuda: bool
                        ) -> LiteralEdit:
    """``torch.device("cuda", i)`` as ``torch.device(<the target's device>)``: the index goes
    (unsafe unless it is a literal 0). ``keep_cuda`` (the file keeps its CUDA hosts): only on
    Neuron, ``torch.device("neuron") if <Neuron is here> else <the call>``, so the CUDA box keeps
    its index."""
    if per_target.target(ctx) == per_target.NEURON:
        new_first, imports = string_like(first.value, "neuron"), ()
    else:
        new_first, imports = per_target.device(ctx, first.value)  # type: ignore[assignment]
    args = [first.with_changes(value=new_first) if a is first else a for a in call.args if a is not index]
    args[-1] = args[-1].with_changes(comma=call.args[-1].comma)
    zero = isinstance(index.value, cst.Integer) and index.value.evaluated_value == 0
    moved = call.with_changes(args=args)
    if not keep_cuda:
        return LiteralEdit(moved, imports, "" if zero else index_note(ctx), not zero)
    test, more = per_target.available(ctx)
    return LiteralEdit(in_place(cst.IfExp(test=test, body=moved, orelse=call), call, ctx.parent), (*imports, *more),
                       "" if zero else index_note(ctx), not zero,
                       f"{short(moved)} if <the accelerator is Neuron> else {short(call)}")


def in_selection_if(ctx: FileContext) -> bool:
    """The node being visited sits in a block of ``if device == "cuda": ...`` that NRN103
    rewrites as a whole (see :func:`selection_if`)."""
    for anc in ctx.ancestors():
        if isinstance(anc, (cst.SimpleStatementLine, cst.SimpleStatementSuite, cst.IndentedBlock, cst.Else)):
            continue
        return isinstance(anc, cst.If) and selection_if(anc)
    return False


# -- a device's own validation: `assert device in ["cuda", "cpu"]`, `if d not in (...): raise` --------
#: calls that only say something or stop the program, in a block that validates
_SAYS_OR_EXITS = frozenset({"exit", "error", "warning", "warn", "critical", "info", "print"})


def _raises(block: cst.BaseSuite) -> bool:
    """A block that raises or exits (``parser.error``), after at most saying why, in an ``if`` of
    its own too (``if verbose: logger.error(...)``): the ``if`` around it validates."""
    lines = block.body if isinstance(block, cst.IndentedBlock) else [block]
    last = lines[-1] if lines else None
    return isinstance(last, (cst.SimpleStatementLine, cst.SimpleStatementSuite)) and (
        isinstance(last.body[-1], cst.Raise) or _call_named(last.body[-1], {"exit", "error"})) and _only_says(block)


def _only_says(block: cst.BaseSuite) -> bool:
    """Every statement of ``block`` says something, raises or exits (in an ``if`` too)."""
    lines = block.body if isinstance(block, cst.IndentedBlock) else [block]
    return bool(lines) and all(
        isinstance(line, cst.If) and line.orelse is None and _only_says(line.body)
        or isinstance(line, (cst.SimpleStatementLine, cst.SimpleStatementSuite))
        and all(isinstance(s, cst.Raise) or _call_named(s, _SAYS_OR_EXITS) for s in line.body)
        for line in lines)


def _call_named(small: cst.BaseSmallStatement, names: frozenset[str] | set[str]) -> bool:
    return isinstance(small, cst.Expr) and isinstance(small.value, cst.Call) and last_name(small.value.func) in names


def validation_list(ctx: FileContext, node: cst.Comparison) -> cst.List | cst.Tuple | None:
    """The list of accepted device names of ``node`` when it validates a device setting:
    ``assert device_type in ["cuda", "cpu"]``, ``if device not in ("cuda", "cpu"): raise ...``,
    or any ``if device not in ("cuda", "cpu"):`` whose body treats the devices the list does not
    name (``device = int(device)``: an index) (the comparison visited; a device-named value; a
    literal list naming ``"cuda"``). A default changed to ``"neuron"`` must pass it, as it must
    pass argparse ``choices``: ``"neuron"`` is a device name like those listed."""
    if not cuda_membership_list(node) or not device_named(target_name(node.left) or dotted_name(node.left)):
        return None
    container = node.comparisons[0].comparator
    if not isinstance(container, (cst.List, cst.Tuple)):
        return None
    child: cst.CSTNode = node
    for anc in ctx.ancestors():
        if isinstance(anc, (cst.BooleanOperation, cst.UnaryOperation)):
            child = anc
            continue
        if isinstance(anc, cst.Assert) and anc.test is child:
            return container
        if isinstance(anc, cst.If) and anc.test is child and (_raises(anc.body) or (
                child is node and isinstance(node.comparisons[0].operator, cst.NotIn))):
            return container
        return None
    return None


#: device types a validation chain accepts (one already accepting ``"neuron"`` needs nothing)
_VALIDATED_DEVICES = frozenset({"cpu", "cuda", "mps", "xpu", "hpu", "npu", "meta"})


def validation_chain(ctx: FileContext, statement: cst.If | cst.Assert) -> cst.BaseExpression | None:
    """The test of a device validation written as one test per accepted device with Neuron's test
    added, or None: ``if "cpu" not in device and "cuda" not in device: raise ...`` (``not in`` or ``!=``
    joined by ``and``, the body only raising) gets ``and "neuron" not in device``; ``assert device
    == "cpu" or device == "cuda"`` (``in`` or ``==`` joined by ``or``) gets ``or device == "neuron"``.
    Every operand tests the same value against a device name, one of them CUDA's."""
    if per_target.target(ctx) == per_target.CPU:
        return None  # the CPU target moves the device to the CPU, which the validation accepts
    if isinstance(statement, cst.If) and not _raises(statement.body):
        return None
    joiner: type[cst.BaseBooleanOp]
    operators: tuple[type[cst.BaseCompOp], ...]
    joiner, operators = (cst.And, (cst.NotIn, cst.NotEqual)) if isinstance(statement, cst.If) else (cst.Or, (cst.In, cst.Equal))
    operands: list[cst.BaseExpression] = []
    pending = [statement.test]
    while pending:
        node = pending.pop()
        if isinstance(node, cst.BooleanOperation) and isinstance(node.operator, joiner) and not node.lpar:
            pending += [node.right, node.left]
        else:
            operands.append(node)
    tested: set[str] = set()
    neuron = None
    for operand in operands:
        if not (isinstance(operand, cst.Comparison) and len(operand.comparisons) == 1
                and isinstance(operand.comparisons[0].operator, operators)):
            return None
        left, right = operand.left, operand.comparisons[0].comparator
        named, value = (left, right) if string_value(left) is not None else (right, left)
        if string_value(named) not in _VALIDATED_DEVICES or string_value(value) is not None:
            return None
        tested.add(ctx.module.code_for_node(value))
        if string_value(named) == "cuda":
            neuron = rewrite_cuda_comparison(operand)
    if neuron is None or len(operands) < 2 or len(tested) != 1:
        return None
    return cst.BooleanOperation(left=statement.test, operator=joiner(), right=neuron)


def device_settings(block: cst.BaseSuite | None) -> Iterator[tuple[cst.BaseExpression, cst.BaseExpression]]:
    """The CUDA device literals ``block`` assigns to a device-named target, with the target."""
    lines = [] if block is None else block.body if isinstance(block, cst.IndentedBlock) else [block]
    for line in lines:
        for small in getattr(line, "body", ()):
            if isinstance(small, (cst.Assign, cst.AnnAssign)) and small.value is not None and cuda_literal(small.value):
                target = small.targets[0].target if isinstance(small, cst.Assign) else small.target
                if device_named(target_name(target)):
                    yield small.value, target


def available_polarities(ctx: FileContext, test: cst.BaseExpression) -> set[bool]:
    """Whether each ``torch.cuda.is_available()`` of ``test`` is negated (``{False}``: every one
    says "CUDA is here")."""
    return set(_available_polarity(ctx, test, False))


# -- where a device is meant (NRN101's positions) ---------------------------------------------------
#: calls that declare a command-line option (argparse, click)
OPTION_CALLS = frozenset({"add_argument", "option"})


def in_test_file(path: str) -> bool:
    """A test module (``test_*.py``, ``*_test.py``, under ``tests/``)."""
    parts = path.replace("\\", "/").split("/")
    name = parts[-1]
    return name.startswith("test_") or name.endswith("_test.py") or "tests" in parts[:-1]


def kept_for_other_code(ctx: FileContext) -> bool:
    """The call being visited is an argument of ``init_process_group(device_id=...)`` (the
    distributed rules': a ``device_id`` must keep its index) or of a ``torch.cuda.*`` call (a
    CUDA-only API, which the runtime rules keep or report): its CUDA device stays with it."""
    stack = list(ctx.ancestors())
    if any(isinstance(a, cst.Arg) and a.keyword is not None and a.keyword.value == "device_id" for a in stack):
        return True
    for parent, grand in zip(stack, stack[1:], strict=False):
        if isinstance(parent, cst.Arg) and isinstance(grand, cst.Call):
            return (ctx.qualify(grand.func) or "").startswith("torch.cuda.")
    return False


#: calls that take a device *type* and answer for ``"cuda"`` on any host, while ``"neuron"`` is an
#: unknown device type (an error) where torch-neuronx is not installed
DEVICE_TYPE_QUERIES = frozenset({
    "torch.get_autocast_dtype", "torch.is_autocast_enabled", "torch.set_autocast_dtype",
    "torch.set_autocast_enabled", "torch.amp.is_autocast_available",
})


#: calls whose device argument feeds CUDA-only machinery: a device default that reaches one stays
#: (reported), as moving it to "neuron" would break the call on every host
CUDA_PLUMBING = {
    "torch.Generator": "a generator on the Neuron device is not available; random numbers come from the CPU",
    "torch.cuda.get_device_capability": "a kernel capability probe: Neuron has no compute capability",
    "torch.cuda.get_device_properties": "CUDA device properties",
    "torch.cuda.get_rng_state": "the CUDA generator's state",
    "torch.cuda.set_rng_state": "the CUDA generator's state",
    "torchvision.io.decode_jpeg": "nvJPEG decoding, made on a CUDA device only",
    "torchvision.io.encode_jpeg": "nvJPEG encoding, made on a CUDA device only",
}


def default_serves_nothing(ctx: FileContext, param: cst.Param) -> bool:
    """``param`` (the node being visited) belongs to a stub (:func:`is_stub`), whose implementations
    choose their own defaults, or to a function whose body never reads it: its default does nothing
    a migration could change."""
    function = next((a for a in ctx.ancestors() if isinstance(a, (cst.FunctionDef, cst.Lambda))), None)
    if not isinstance(function, cst.FunctionDef):
        return False
    return is_stub(function) or not any(read_paths(function.body, read, param)
                                        for read in (param.name.value, "locals", "vars"))


_DECLARED_PARAMETERS = frozenset(f"fastapi.{name}" for name in FASTAPI_PARAMETERS)


def parameter_default(ctx: FileContext, param: cst.Param) -> cst.BaseExpression | None:
    """The value ``param`` defaults to: its default, or the default a FastAPI declaration gives
    (``Query("cuda", ...)``, ``Form(default="cuda")``)."""
    default = param.default
    if isinstance(default, cst.Call) and ctx.qualify(default.func) in _DECLARED_PARAMETERS:
        given = argument(default, "default", 0)
        return given.value if given is not None else None
    return default


def kept_parameter_default(ctx: FileContext, param: cst.Param) -> str | None:
    """Why the CUDA default of ``param`` (the node being visited) stays, when its function passes
    the parameter, by its bare name, to a query of :data:`DEVICE_TYPE_QUERIES` (``def
    dtype(device="cuda"): return torch.get_autocast_dtype(device)``): a ``"neuron"`` default would
    make a call without the argument raise on a host where the CUDA default answered; or to CUDA
    plumbing (:data:`CUDA_PLUMBING`: ``torch.Generator(device=device)``, a capability probe), by
    its name or as the object keeps it (``self.device = device`` read by another method); or, from
    a module-level function, to a CUDA-only library (``Options.library_wrappers``)."""
    scopes = [a for a in ctx.ancestors() if isinstance(a, (cst.FunctionDef, cst.ClassDef))]
    function = scopes[0] if scopes and isinstance(scopes[0], cst.FunctionDef) else None
    default = parameter_default(ctx, param)
    if function is None or default is None or cuda_literal(default) is None:
        return None
    name = param.name.value
    if len(scopes) == 1 and any(wrapper == function.name.value and name in fed
                                for wrapper, _, fed in ctx.options.library_wrappers):
        return (f"default of parameter `{name}`: kept, the function hands it to a CUDA-only library "
                "(or a CUDA extension of the project); give Neuron its own path by hand")
    # the parameter as the object keeps it (`self.device = device`), read by the class's methods
    kept = {target for node in iter_syntax(function.body) if isinstance(node, cst.Assign)
            and isinstance(node.value, cst.Name) and node.value.value == name
            for t in node.targets if (target := dotted_name(t.target)) is not None and target.startswith("self.")}
    owner = next((a for a in ctx.ancestors() if isinstance(a, cst.ClassDef)), None) if kept else None
    for node in iter_syntax(owner.body if owner is not None else function.body):
        if not isinstance(node, cst.Call):
            continue
        query = ctx.qualify(node.func)
        if query is None or query not in DEVICE_TYPE_QUERIES and query not in CUDA_PLUMBING:
            continue
        if not any(dotted_name(a.value) in (name, *kept) for a in node.args):
            continue
        if query in CUDA_PLUMBING:
            return (f"default of parameter `{name}`: kept, it feeds `{query}(...)`, CUDA plumbing "
                    f"({CUDA_PLUMBING[query]}); give Neuron its own path by hand")
        return (f"default of parameter `{name}`: kept, it reaches `{query}(...)`, which answers for "
                "`\"cuda\"` on any host while `\"neuron\"` raises without torch-neuronx; pass the device "
                "type at the calls instead")
    return None


def in_excluded_call(ctx: FileContext) -> bool:
    """The node being visited is an argument of a call whose device is another rule's
    (``torch.Generator(device=...)`` is NRN106's; autocast and GradScaler are NRN2xx's)."""
    stack = list(ctx.ancestors())
    return (len(stack) > 1 and isinstance(stack[0], cst.Arg) and isinstance(stack[1], cst.Call)
            and last_name(stack[1].func) in EXCLUDED_DEVICE_CALLS)


def triton_keyword(call: cst.Call) -> str | None:
    """The keyword with which ``call`` asks for Triton kernels (``use_triton=True``), or None."""
    for arg in call.args:
        if arg.keyword is not None and "triton" in arg.keyword.value.lower() \
                and isinstance(arg.value, cst.Name) and arg.value.value == "True":
            return arg.keyword.value
    return None


def call_device_positions(ctx: FileContext, node: cst.Call) -> Iterator[tuple[cst.BaseExpression, str]]:
    """The expressions ``node`` takes where a device is meant, with how a message names each:
    ``device=`` / ``map_location=`` (not of :data:`EXCLUDED_DEVICE_CALLS`), the target of
    ``.to(...)``, ``torch.set_default_device(...)``, and a lookup of a device-named key
    (``cfg.get("device", "cuda")``: the call itself, whose default is followed)."""
    name = last_name(node.func)
    if name is None:
        return
    if name not in EXCLUDED_DEVICE_CALLS:
        for arg in node.args:
            if arg.keyword is not None and arg.keyword.value in ("device", "map_location"):
                yield arg.value, f"`{arg.keyword.value}=` argument"
    if name == "to":
        if isinstance(node.func, cst.Attribute) and node.args and node.args[0].keyword is None \
                and not node.args[0].star:
            yield node.args[0].value, "`.to()`"
    elif name == "set_default_device":
        first = argument(node, "device", 0)
        if first is not None and ctx.qualify(node.func) == "torch.set_default_device":
            yield first.value, "`torch.set_default_device`"
    elif name in LOOKUPS or name == "getattr":
        key = argument(node, "key", 1 if name == "getattr" else 0)
        if key is not None and device_named(string_value(key.value)):
            yield node, f"default of `{string_value(key.value)}`"


def call_devices(ctx: FileContext, node: cst.Call, name: str | None) -> list[tuple[cst.BaseExpression, str]] | None:
    """:func:`call_device_positions` of ``node`` (the call being visited, its function's last name
    ``name``), or None when its devices stay as they are: the call has no name, or takes no
    device and is neither ``torch.device`` nor an option (most calls: told by their name before
    the enclosing calls are looked up), or :func:`kept_for_other_code`."""
    if name is None:
        return None
    positions = list(call_device_positions(ctx, node))
    if not positions and name != "device" and name not in OPTION_CALLS:
        return None
    return None if kept_for_other_code(ctx) else positions


def device_option(call: cst.Call) -> tuple[str, cst.Arg | None, cst.List | cst.Tuple | None] | None:
    """A command-line option that holds a device (``add_argument("--device", default="cuda",
    choices=[...])``): its name, its ``default=`` and its literal ``choices=`` list; None for
    any other option."""
    option = next((n for n in option_names(call) if device_named(n)), None)
    if option is None:
        return None
    choices = keyword(call, "choices")
    listed = choices.value if choices is not None and isinstance(choices.value, (cst.List, cst.Tuple)) else None
    return option, keyword(call, "default"), listed


def device_setting(node: cst.Assign | cst.AnnAssign) -> tuple[cst.BaseExpression, str] | None:
    """The value a statement gives a device-named target (``device = ...``, ``self.device = ...``,
    ``cfg["device"] = ...``, a dataclass field ``device: str = field(default=...)``), with how a
    message names it; None when it sets no device."""
    for target, value in assigned(node):
        if device_named(target_name(target)):
            return value, f"`{short(target)}` setting"
    return None
