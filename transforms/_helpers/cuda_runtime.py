"""Helpers shared by the ``torch.cuda`` runtime API rules (NRN110-NRN119).

Every rule of the family looks at the same thing: a *reference* to a ``torch.cuda`` function,
called or not, in any spelling the file's imports allow (``torch.cuda.synchronize``,
``T.cuda.synchronize``, ``cuda.synchronize`` after ``from torch import cuda``, ``synchronize``
after ``from torch.cuda import synchronize``, ``torch.cuda.memory.memory_allocated``).
:func:`match` turns the node being visited into a :class:`CudaRef` or None.

The context helpers answer the question the reference's F19 asks: is the code guarded by an
availability check device selection / device-agnostic code (rewrite), or a CUDA-only path
(flash-attn, bitsandbytes, cudnn, DataParallel, fp16...) that must stay off on Neuron (report)?
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import ClassVar

import libcst as cst

from neuronize.analysis.context import FileContext, dotted_name
from neuronize.transform import Evidence, ImportRequest, Safety, Transform
from neuronize.transforms._helpers import per_target
from neuronize.transforms._helpers.calls import MESSAGE_CALL_NAMES, with_function
from neuronize.transforms._helpers.imports import removal_of
from neuronize.transforms._helpers.device_model import KeepsCudaBranches, kept_for_cuda
from neuronize.transforms._helpers.literals import string_value
from neuronize.transforms._helpers.names import last_name, qualified_expr
from neuronize.transforms._helpers.nodes import in_place
from neuronize.analysis.walk import iter_syntax, visit

PREFIX = "torch.cuda."
#: the test "the accelerator here is Neuron" as a rule writes it (``per_target.available``), before
#: the tidying pass names it ``on_neuron()``: how the rules' examples show it
NEURON = ('hasattr(torch, "accelerator") and torch.accelerator.is_available() '
          'and torch.accelerator.current_accelerator().type == "neuron"')
#: ``torch.cuda.<submodule>.<fn>`` is the same function as ``torch.cuda.<fn>``.
SUBMODULES = frozenset({"memory", "random", "streams"})

#: ``torch.cuda`` names other families own (mixed precision, nvtx, CUDA graphs, legacy tensor
#: types, custom kernels, sparse types): this family says nothing about them.
OTHERS = frozenset({
    "amp", "nvtx", "CUDAGraph", "graph", "graphs", "make_graphed_callables",
    "is_current_stream_capturing", "graph_pool_handle", "jiterator", "sparse",
    *SUBMODULES,
})


@dataclass(frozen=True)
class CudaRef:
    """A reference to ``torch.cuda.<fn>`` found in the file."""

    node: cst.BaseExpression  # the Name / Attribute naming the function
    fn: str  # "synchronize"
    extra: tuple[str, ...]  # attributes after the function (``torch.cuda.Event.elapsed_time``)
    call: cst.Call | None  # the call, when ``node`` is its function
    head: str  # the local name the reference starts with (``torch``, ``T``, ``cuda``...)

    @property
    def outer(self) -> cst.BaseExpression:
        """The call if the function is called, else the reference itself."""
        return self.call if self.call is not None else self.node


def is_legacy_tensor_type(fn: str) -> bool:
    return fn.endswith("Tensor") and fn[:1].isupper()


def match(ctx: FileContext, node: cst.CSTNode) -> CudaRef | None:
    """The ``torch.cuda`` reference ``node`` is (visit Name and Attribute nodes with this)."""
    parent = ctx.parent
    if isinstance(parent, cst.Attribute) and (parent.value is node or parent.attr is node):
        return None  # a prefix of a longer dotted name, or the attribute part of one
    if isinstance(node, cst.Name):
        if isinstance(parent, (cst.ImportAlias, cst.ImportFrom, cst.AsName, cst.Param, cst.FunctionDef,
                               cst.ClassDef, cst.NameItem, cst.AssignTarget)):
            return None
        if isinstance(parent, cst.Arg) and parent.keyword is node:
            return None
    elif isinstance(node, cst.Attribute):
        if isinstance(parent, (cst.ImportFrom, cst.ImportAlias, cst.AsName, cst.AssignTarget)):
            return None
    else:
        return None
    qualified = ctx.qualify(node)
    if qualified is None or not qualified.startswith(PREFIX):
        return None
    parts = qualified[len(PREFIX):].split(".")
    if len(parts) > 1 and parts[0] in SUBMODULES:
        parts = parts[1:]
    dotted = dotted_name(node) or ""
    call = parent if isinstance(parent, cst.Call) and parent.func is node else None
    return CudaRef(node, parts[0], tuple(parts[1:]), call, dotted.split(".")[0])


# -- building replacements -----------------------------------------------------------------
def replacement_for(ctx: FileContext, ref: CudaRef, qualified: str, *, any_torch: bool = False
                    ) -> tuple[cst.BaseExpression, tuple[ImportRequest, ...]]:
    """``qualified`` spelled as this file spells its package (``any_torch``: as
    :func:`~neuronize.transforms._helpers.names.qualified_expr`), keeping the reference's
    parentheses, plus the imports to add and the now-unused ``torch.cuda`` import to drop (if any)."""
    expr, imports = qualified_expr(ctx, qualified, any_torch=any_torch)
    node = ref.node
    expr = expr.with_changes(lpar=node.lpar, rpar=node.rpar)
    return expr, imports + unused_import(ctx, ref)


def rewritten(ctx: FileContext, ref: CudaRef, qualified: str, *, any_torch: bool = False
              ) -> tuple[cst.CSTNode, cst.BaseExpression, tuple[ImportRequest, ...]]:
    """What a rewrite of the reference to ``qualified`` replaces, with what, and the imports: the
    function reference (:func:`replacement_for`), or the whole call where its keyword argument
    goes by position (:func:`~neuronize.transforms._helpers.calls.with_function`)."""
    expr, needed = replacement_for(ctx, ref, qualified, any_torch=any_torch)
    call = ref.call if ref.call is not None and ref.call.func is ref.node else None
    if call is not None and (new := with_function(call, expr, qualified)).args != call.args:
        return call, new, needed
    return ref.node, expr, needed


def unused_import(ctx: FileContext, ref: CudaRef) -> tuple[ImportRequest, ...]:
    """A removal request for the import that bound the reference's head name, when that import
    came from ``torch.cuda`` (``from torch import cuda``, ``from torch.cuda import synchronize``,
    ``import torch.cuda as tc``). The engine removes it only if nothing uses it any more."""
    full = ctx.qualify(cst.Name(ref.head))
    if full is None or not (full == "torch.cuda" or full.startswith(PREFIX)):
        return ()
    removal = removal_of(ctx, ref.head, qualified=full)
    return () if removal is None else (removal,)


# -- where a reference sits ----------------------------------------------------------------
def cuda_keyed_entry(ctx: FileContext, ref: CudaRef) -> bool:
    """True for the value of a ``{"cuda": ...}`` entry or a ``cuda=...`` keyword: a per-backend
    dispatch table, where the right edit is to add a ``"neuron"`` entry, not to replace this one."""
    target: cst.CSTNode = ref.outer
    for anc in ctx.ancestors():
        if anc is target:
            continue
        if isinstance(anc, cst.DictElement) and anc.value is target:
            key = string_value(anc.key)
            return key is not None and key.lower() == "cuda"
        if isinstance(anc, cst.Arg) and anc.value is target and anc.keyword is not None:
            return anc.keyword.value == "cuda"
        return False
    return False


def enclosing_small_statement(ctx: FileContext, ref: CudaRef) -> cst.BaseSmallStatement | None:
    """The ``Expr`` statement when the call is a statement of its own (``torch.cuda.f(...)``)."""
    if ref.call is None:
        return None
    seen_call = False
    for anc in ctx.ancestors():
        if anc is ref.call:
            seen_call = True
            continue
        if seen_call and isinstance(anc, cst.Expr) and anc.value is ref.call:
            return anc
        return None
    return None


def heading_statement(ctx: FileContext, ref: CudaRef) -> cst.Expr | None:
    """The ``Expr`` statement the call is, or heads as the start of a method chain
    (``torch.cuda.current_stream().wait_stream(side)``): a line that can be copied for each host."""
    if ref.call is None:
        return None
    child: cst.CSTNode = ref.call
    for anc in ctx.ancestors():
        if anc is ref.call:
            continue
        if isinstance(anc, cst.Attribute) and anc.value is child or isinstance(anc, cst.Call) and anc.func is child:
            child = anc
            continue
        return anc if isinstance(anc, cst.Expr) and anc.value is child else None
    return None


def _available_arm(ctx: FileContext) -> cst.IfExp | None:
    """The conditional expression on an availability check (``name() if torch.cuda.is_available()
    else "N/A"``) whose first arm holds the node being visited, in its statement. A fix of the whole
    statement gives Neuron that arm alone and names the expression as its guard: the test then
    stays CUDA's, and is not widened without the fix (policy step 8)."""
    from neuronize.transforms._helpers.device_choice import has_is_available

    child: cst.CSTNode | None = ctx.stack[-1] if ctx.stack else None
    for anc in ctx.ancestors():
        if isinstance(anc, cst.IfExp) and child is anc.body and has_is_available(ctx, anc.test):
            return anc
        if isinstance(anc, (cst.BaseSmallStatement, cst.BaseCompoundStatement, cst.Lambda)):
            return None
        child = anc
    return None


class Context(enum.Enum):
    IF = "if"  # the test of an if / while statement
    IFEXP = "ifexp"  # the test of a conditional expression
    FLAG = "flag"  # assigned to a name (a flag or a count used elsewhere)
    SKIP = "skip"  # a test skip marker
    ASSERT = "assert"
    OTHER = "other"


_PASS_THROUGH = (cst.UnaryOperation, cst.BooleanOperation, cst.Comparison, cst.ComparisonTarget,
                 cst.BinaryOperation, cst.Arg, cst.Call)
SKIP_CALLS = frozenset({"skipif", "skipIf", "skipUnless", "skip", "skipTest", "SkipTest", "xfail"})


def classify(ctx: FileContext, ref: CudaRef) -> tuple[Context, cst.CSTNode | None]:
    """Where the value of the reference goes: an if test, a conditional expression, a flag..."""
    child: cst.CSTNode = ref.outer
    for anc in ctx.ancestors():
        if anc is ref.call:
            continue
        if isinstance(anc, cst.Call) and last_name(anc.func) in SKIP_CALLS:
            return Context.SKIP, anc
        if isinstance(anc, _PASS_THROUGH):
            child = anc
            continue
        if isinstance(anc, (cst.If, cst.While)) and anc.test is child:
            if isinstance(anc, cst.If) and _is_skip_body(anc):
                return Context.SKIP, anc
            return Context.IF, anc
        if isinstance(anc, cst.IfExp) and anc.test is child:
            if _says_the_test(anc):
                child = anc
                continue
            return Context.IFEXP, anc
        if isinstance(anc, (cst.Assign, cst.AnnAssign)) and anc.value is child:
            return Context.FLAG, anc
        if isinstance(anc, cst.Assert) and anc.test is child:
            return Context.ASSERT, anc
        return Context.OTHER, anc
    return Context.OTHER, None


def _says_the_test(choice: cst.IfExp) -> bool:
    """``True if <test> else False`` (or the other way round): the test's own truth, spelled
    longer; where it goes is where the test goes (a flag it is stored in, an ``if``)."""
    arms = {getattr(arm, "value", None) for arm in (choice.body, choice.orelse) if isinstance(arm, cst.Name)}
    return arms == {"True", "False"}


def _is_skip_body(node: cst.If) -> bool:
    body = node.body
    if not isinstance(body, (cst.IndentedBlock, cst.SimpleStatementSuite)):
        return False
    stmts = body.body
    for stmt in stmts:
        smalls = stmt.body if isinstance(stmt, cst.SimpleStatementLine) else [stmt]
        for small in smalls:
            if isinstance(small, cst.Expr) and isinstance(small.value, cst.Call):
                if last_name(small.value.func) in SKIP_CALLS:
                    return True
            if isinstance(small, cst.Raise) and small.exc is not None:
                exc = small.exc.func if isinstance(small.exc, cst.Call) else small.exc
                if last_name(exc) in SKIP_CALLS:
                    return True
    return False


#: RNG state getters: they raise on a host without CUDA (the setters and seeding calls are queued instead)
RNG_STATE = frozenset({"get_rng_state", "get_rng_state_all"})


# -- the base class of the family's rules --------------------------------------------------
def kept_for_other_hosts(ctx: FileContext) -> bool:
    """The CUDA call being visited is the ``else`` of ``<torch.accelerator call> if
    torch.accelerator.is_available() else <the CUDA call>``, as ``neutral_rewrite`` writes it: the
    value the hosts without an accelerator keep (rewritten again, it would grow run after run)."""
    child = ctx.stack[-1]
    for anc in ctx.ancestors():
        if isinstance(anc, cst.IfExp) and anc.orelse is child:
            return ctx.module.code_for_node(anc.test).endswith("accelerator.is_available()")
        if isinstance(anc, (cst.BaseStatement, cst.BaseSuite)):
            return False
        child = anc
    return False


class _CudaApiRule(KeepsCudaBranches, Transform):
    """Dispatches every reference to one of ``FUNCTIONS`` (called or not) to :meth:`on_ref`."""

    abstract = True
    FUNCTIONS: ClassVar[frozenset[str]] = frozenset()

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if node.attr.value not in self.FUNCTIONS:
            return
        self._dispatch(node)

    def visit_Name(self, node: cst.Name) -> None:
        if node.value in self.ctx.names.names_under(PREFIX):  # `from torch.cuda import synchronize`
            self._dispatch(node)

    def _dispatch(self, node: cst.CSTNode) -> None:
        ref = match(self.ctx, node)
        if ref is None or ref.extra or ref.fn not in self.FUNCTIONS:
            return
        if per_target.in_cuda_only_block(self.ctx):
            return  # `if torch.cuda.is_available(): <CUDA-only code>` runs anywhere already
        if cuda_keyed_entry(self.ctx, ref):
            target = self.target_for(ref)
            hint = f" (`{target}`)" if target else ""
            keep = ("it raises on a host without CUDA: keep it for CUDA under `if torch.cuda.is_available():`, "
                    "restore each entry under the same condition (save and load move together), and"
                    if ref.fn in RNG_STATE else "keep it and")
            self.report(ref.outer, f"per-backend table entry for `torch.cuda.{ref.fn}`: {keep} "
                                   f"add a `\"neuron\"` entry{hint} beside it", group=self.group_for(ref))
            return
        self.on_ref(ref)

    def target_for(self, ref: CudaRef) -> str | None:
        """The TorchNeuron name that replaces ``ref``, for messages (None if there is none)."""
        return None

    def group_for(self, ref: CudaRef) -> str | None:
        """The edit group ``ref`` belongs to, reported or rewritten (None: it moves alone)."""
        return None

    def on_ref(self, ref: CudaRef) -> None:
        raise NotImplementedError

    # -- helpers for subclasses --
    def portable(self, ref: CudaRef, message: str, *, keep_on_cuda: bool = True) -> None:
        """``--target cpu`` / ``accelerator`` for a CUDA-only call with no portable equivalent: a
        statement of its own is deleted (cpu, or ``keep_on_cuda=False``) or kept for CUDA
        inside ``if torch.cuda.is_available():`` (accelerator); any other use is reported."""
        statement = enclosing_small_statement(self.ctx, ref)
        line = self.ctx.statement_to_remove(statement) if statement is not None else None
        if statement is None:
            self.report(ref.outer, f"{spelled(ref)}: {message}; no automatic `--target "
                                   f"{per_target.target(self.ctx)}` fix for this use: migrate by hand")
        elif per_target.target(self.ctx) == per_target.CPU or not keep_on_cuda:
            self.remove(statement, f"{spelled(ref)} deleted: {message}")
        elif isinstance(line, cst.SimpleStatementLine):
            new, imports = per_target.guarded(self.ctx, line)
            self.fix(line, new, f"{spelled(ref)} kept for CUDA under `if torch.cuda.is_available():`: "
                     f"{message}", imports=imports)
        else:
            self.report(ref.outer, f"{spelled(ref)}: {message}; guard it with "
                                   "`if torch.cuda.is_available():` by hand")

    def guarded_rewrite(self, ref: CudaRef, qualified: str, message: str, *, group: str | None = None,
                        evidence: Evidence | None = None) -> None:
        """The neuron target's rewrite of a ``torch.cuda`` runtime call in code every host runs
        (seeding, RNG state, cache control, memory statistics, streams and events): CUDA keeps its
        call, Neuron gets ``qualified``, as ``torch.neuron`` / ``torch_neuronx`` raise without Neuron.
        In place where only Neuron gets there (``cuda_guard.neuron_guarded(only=True)``: under
        ``<Neuron> or torch.cuda.is_available()`` CUDA would call it too); a statement of
        its own becomes ``if <per_target.available>: <the Neuron call> else: <the CUDA call>``
        (with a local ``import torch_neuronx`` where needed: never an unconditional one); any other
        use, called or not, ``<the Neuron one> if <per_target.available> else <the CUDA one>``
        (reported where it needs ``torch_neuronx``, which an expression cannot import)."""
        from neuronize.transforms._helpers.cuda_guard import neuron_guarded

        local_import = qualified.startswith("torch_neuronx.")
        if not local_import and neuron_guarded(self.ctx, ref.outer, only=True):
            self.rewrite(ref, qualified, message, group=group, evidence=evidence)
            return
        statement = heading_statement(self.ctx, ref)
        line = self.ctx.statement_to_remove(statement) if statement is not None else None
        if not (isinstance(line, cst.SimpleStatementLine) and len(line.body) == 1):
            if local_import:
                self.report(ref.outer, f"{message}; not applied: it raises on a host without Neuron where the CUDA "
                                       "call did nothing; call it where Neuron is known to be present, by hand",
                            evidence=evidence, group=group)
            elif (value := host_kept_value(self.ctx, ref, qualified)) is not None:
                self.fix(ref.outer, value[0], f"{message} where the accelerator is Neuron, else the CUDA one as before",
                         imports=value[1], group=group, evidence=evidence)
            return
        assert statement is not None
        body, imports = neuron_statements(self.ctx, ref, statement, line, qualified)
        new, more = kept_for_cuda(self.ctx, line, body)
        self.fix(line, new, f"{message}, under `if <the accelerator is Neuron>:`, the CUDA call kept in its `else:` "
                            "for every other host (`torch.neuron` exists only on Neuron)",
                 imports=(*more, *imports), group=group, evidence=evidence)

    def fix_with_local_import(self, ref: CudaRef, new: cst.BaseExpression, message: str, *,
                              imports: tuple[ImportRequest, ...] = (), group: str | None = None) -> None:
        """Replace the call of ``ref`` by ``new`` (which uses ``torch_neuronx``), importing
        ``torch_neuronx`` just before the statement instead of at the top of the module: a module
        that others import must still import on a host without Neuron. Reported where the call is
        not part of a simple statement line."""
        assert ref.call is not None
        if self.ctx.names.imports_module("torch_neuronx"):
            self.fix(ref.call, new, message, imports=(*imports, *unused_import(self.ctx, ref)), group=group)
            return
        line = next((a for a in self.ctx.ancestors() if isinstance(a, (cst.SimpleStatementLine, cst.BaseSuite))), None)
        if not isinstance(line, cst.SimpleStatementLine):
            self.report(ref.outer, f"{message}; not applied: `torch_neuronx` must be imported where it is used "
                                   "(never at the top of a module others import): migrate by hand")
            return
        from neuronize.transforms._helpers.cuda_guard import neuron_guarded

        arm = _available_arm(self.ctx)
        # under `if <Neuron>:` the availability test that chose the call's arm is answered: the arm alone
        swapped = line.deep_replace(arm, arm.body.deep_replace(ref.call, new)) if arm is not None \
            else line.deep_replace(ref.call, new)
        assert isinstance(swapped, cst.SimpleStatementLine)
        neuron_lines = [_IMPORT_NEURONX.with_changes(leading_lines=line.leading_lines), swapped.with_changes(leading_lines=())]
        if neuron_guarded(self.ctx, ref.outer, only=True):
            self.fix(line, cst.FlattenSentinel(neuron_lines), f"{message} (with `import torch_neuronx` just before it)",
                     imports=(*imports, *unused_import(self.ctx, ref)), group=group)
            return
        kept, more = kept_for_cuda(self.ctx, line, neuron_lines)
        self.fix(line, kept, f"{message}, under `if <the accelerator is Neuron>:` (with `import torch_neuronx`), "
                             "the CUDA call kept in its `else:` for every other host",
                 imports=(*more, *imports, *unused_import(self.ctx, ref)), group=group, guard=arm)

    def neutral_rewrite(self, ref: CudaRef, qualified: str, message: str) -> None:
        """A call CUDA makes a silent no-op (or a zero) on a host without CUDA, as the host-neutral
        ``qualified`` (``torch.accelerator.*``), which raises without an accelerator: a statement
        of its own under ``if torch.accelerator.is_available():`` (in place where a guard already
        says CUDA or Neuron is here), a value as ``<qualified>(...) if torch.accelerator.is_available()
        else <the original call>``. CUDA keeps the call's effect; Neuron gets it; other hosts run as
        before."""
        from neuronize.transforms._helpers.cuda_guard import neuron_guarded

        if kept_for_other_hosts(self.ctx):
            return
        if ref.call is None or neuron_guarded(self.ctx, ref.outer):
            self.rewrite(ref, qualified, message)
            return
        func, imports = replacement_for(self.ctx, ref, qualified)
        test, more = per_target.accelerator_present(self.ctx)
        call = with_function(ref.call, func, qualified)
        statement = enclosing_small_statement(self.ctx, ref)
        line = self.ctx.statement_to_remove(statement) if statement is not None else None
        if isinstance(line, cst.SimpleStatementLine) and len(line.body) == 1:
            inner = line.with_changes(body=[statement.with_changes(value=call)], leading_lines=())  # type: ignore[union-attr]
            new = cst.If(test=test, body=cst.IndentedBlock(body=[inner]), leading_lines=line.leading_lines)
            self.fix(line, new, f"{message}, under `if torch.accelerator.is_available():`",
                     imports=(*more, *imports))
            return
        value = cst.IfExp(test=test, body=call.with_changes(lpar=(), rpar=()), orelse=ref.call.with_changes(lpar=(), rpar=()),
                          lpar=ref.call.lpar or [cst.LeftParen()], rpar=ref.call.rpar or [cst.RightParen()])
        self.fix(ref.call, value, f"{message} where there is an accelerator, else the CUDA call as before",
                 imports=(*more, *imports))

    def rewrite(self, ref: CudaRef, qualified: str, message: str, *, safety: Safety | None = None,
                evidence: Evidence | None = None, imports: tuple[ImportRequest, ...] = (),
                group: str | None = None, any_torch: bool = False, pins: str | None = None) -> None:
        """Replace the function reference by ``qualified`` (arguments untouched; ``any_torch``: a
        call every host makes, as :func:`replacement_for`)."""
        at, new, needed = rewritten(self.ctx, ref, qualified, any_torch=any_torch)
        self.fix(at, new, message, safety=safety, evidence=evidence, imports=needed + imports, group=group, pins=pins)


_IMPORT_NEURONX = cst.SimpleStatementLine(body=[cst.Import(names=[cst.ImportAlias(name=cst.Name("torch_neuronx"))])])


def neuron_statements(ctx: FileContext, ref: CudaRef, statement: cst.Expr, line: cst.SimpleStatementLine,
                      qualified: str) -> tuple[list[cst.BaseStatement], tuple[ImportRequest, ...]]:
    """``line`` with the call of ``ref`` (which ``statement`` is or heads) calling ``qualified``,
    after a local ``import torch_neuronx`` where ``qualified`` is one of its functions."""
    assert ref.call is not None
    body: list[cst.BaseStatement] = []
    if qualified.startswith("torch_neuronx."):
        func: cst.BaseExpression = cst.parse_expression(qualified)
        imports, body = unused_import(ctx, ref), [_IMPORT_NEURONX]
    else:
        func, imports = replacement_for(ctx, ref, qualified)
    call = with_function(ref.call, func, qualified)
    body.append(line.with_changes(body=[statement.deep_replace(ref.call, call)], leading_lines=()))
    return body, imports


def host_kept_value(ctx: FileContext, ref: CudaRef, qualified: str) -> tuple[cst.BaseExpression, tuple[ImportRequest, ...]] | None:
    """``<qualified>(...) if <per_target.available> else <the CUDA reference>``, parenthesised
    unless its place takes a conditional expression as it is; None in an annotation, which stays
    (the CUDA class exists on every host; only creating one needs CUDA)."""
    if any(isinstance(anc, cst.Annotation) for anc in ctx.ancestors()):
        return None
    func, imports = replacement_for(ctx, ref, qualified)
    neuron = func if ref.call is None else with_function(ref.call, func, qualified)
    test, more = per_target.available(ctx)
    outer = ref.outer
    value = cst.IfExp(test=test, body=neuron.with_changes(lpar=(), rpar=()), orelse=outer.with_changes(lpar=(), rpar=()))
    parent = next((a for a in ctx.ancestors() if a is not ref.call and a is not ref.node), None)
    return in_place(value, outer, parent), (*more, *imports)


def timing_group(ctx: FileContext) -> str | None:
    """The edit group of the CUDA event timers of the scope being visited (its function, else the
    module) and its synchronisations, when it creates a ``torch.cuda.Event``: the synchronisations
    bracket what the events time, so they move with the events or stay with them (moved alone,
    Neuron still stops at the CUDA timer)."""
    if b"Event" not in ctx.source:
        return None
    scope: cst.CSTNode = next((n for n in reversed(ctx.stack) if isinstance(n, cst.FunctionDef)), ctx.module)
    key = ("creates a CUDA event", id(scope))
    if key not in ctx.memo:
        ctx.memo[key] = any(isinstance(node, cst.Call) and ctx.qualify(node.func) == "torch.cuda.Event"
                            for node in iter_syntax(scope))
    if not ctx.memo[key]:
        return None
    where = f"in {scope.name.value}()" if isinstance(scope, cst.FunctionDef) else "at module level"
    return f"CUDA event timing {where}"


def spelled(ref: CudaRef) -> str:
    """``torch.cuda.synchronize()`` or ``torch.cuda.synchronize`` for a message."""
    return f"`torch.cuda.{ref.fn}()`" if ref.call is not None else f"`torch.cuda.{ref.fn}`"


def owned() -> frozenset[str]:
    """Every ``torch.cuda`` function a rule of this family handles (NRN119 reports the others):
    the union of the rules' ``FUNCTIONS``, so the table is the rules themselves."""
    from neuronize.registry import all_rules

    return frozenset().union(*(r.FUNCTIONS for r in all_rules() if issubclass(r, _CudaApiRule)))


# -- capability probes: `torch.cuda.is_available() and torch.cuda.get_device_capability() >= (8, 0)` --
#: qualified names that ask what kind of CUDA device is present (not whether one is)
CAPABILITY_PROBES = ("torch.cuda.get_device_capability", "torch.cuda.get_device_properties",
                     "torch.cuda.is_bf16_supported", "torch.version.cuda", "torch.version.hip")


def _probes_in(ctx: FileContext, node: cst.CSTNode) -> list[str]:
    """The capability probes and ``torch.cuda.is_available`` named inside ``node`` (qualified)."""
    wanted = (*CAPABILITY_PROBES, "torch.cuda.is_available")
    found: list[str] = []

    class _Find(cst.CSTVisitor):
        def visit_Attribute(self, attr: cst.Attribute) -> bool:
            qualified = ctx.qualify(attr) or ""
            if qualified.startswith(wanted):
                found.append(qualified)
                return False
            return True

        def visit_Name(self, name: cst.Name) -> None:
            qualified = ctx.qualify(name) or ""
            if qualified.startswith(wanted):
                found.append(qualified)

    visit(node, _Find())
    return found


def capability_probe(ctx: FileContext, ref: CudaRef) -> str | None:
    """The probe ``ref`` is part of, when it sits in an ``and`` / ``or`` chain (through ``not``
    and comparisons) that asks a CUDA capability question together with an availability check
    (``torch.cuda.is_available() and torch.cuda.get_device_capability() >= (8, 0)``,
    ``... and torch.cuda.is_bf16_supported()``, ``torch.version.cuda``, ``torch.version.hip``, which
    asks for a ROCm build): the whole probe is about
    CUDA and stays as it is. Returns the qualified name of another part of the probe."""
    chain: cst.CSTNode | None = None
    for anc in ctx.ancestors():
        if anc is ref.call or anc is ref.node:
            continue
        if isinstance(anc, cst.BooleanOperation):
            chain = anc
            continue
        if isinstance(anc, (cst.UnaryOperation, cst.Comparison, cst.ComparisonTarget, cst.Subscript,
                            cst.SubscriptElement, cst.Index, cst.Attribute)):
            continue
        break
    if chain is None:
        return _probe_after_exit(ctx, ref)
    own = ctx.qualify(ref.node) or ""
    others = [name for name in _probes_in(ctx, chain) if name != own]
    if not own.startswith(CAPABILITY_PROBES):
        # an availability check or a device count: part of a probe only if one is asked (both
        # halves of `is_available() and device_count() > n` are migrated alike, in one round)
        others = [name for name in others if name.startswith(CAPABILITY_PROBES)]
    return others[0] if others else _probe_after_exit(ctx, ref)


def _probe_after_exit(ctx: FileContext, ref: CudaRef) -> str | None:
    """The probe a ``torch.cuda.is_available()`` check guards by leaving early: ``if not
    torch.cuda.is_available() or not flash: return`` followed, in the same block, by
    ``torch.cuda.get_device_properties(...)``. The check and the probe are one question about
    CUDA: rewritten alone, the check sends Neuron into the CUDA probe and CUDA away from it."""
    if ctx.qualify(ref.node) != "torch.cuda.is_available":
        return None
    child: cst.CSTNode = ref.outer
    ancestors = list(ctx.ancestors())
    for i, anc in enumerate(ancestors):
        if anc is ref.call or anc is ref.node:
            continue
        if isinstance(anc, (cst.BooleanOperation, cst.UnaryOperation, cst.Comparison, cst.ComparisonTarget)):
            child = anc
            continue
        if not (isinstance(anc, cst.If) and anc.test is child and _only_exits(anc.body)):
            return None
        block = ancestors[i + 1] if i + 1 < len(ancestors) else None
        body = getattr(block, "body", None)
        if not isinstance(body, (list, tuple)) or anc not in body:
            return None
        for stmt in body[body.index(anc) + 1:]:
            found = [name for name in _probes_in(ctx, stmt) if name.startswith(CAPABILITY_PROBES)]
            if found:
                return found[0]
        return None
    return None


def _only_exits(block: cst.BaseSuite) -> bool:
    lines = block.body if isinstance(block, cst.IndentedBlock) else [block]
    if not all(isinstance(line, (cst.SimpleStatementLine, cst.SimpleStatementSuite)) for line in lines):
        return False
    smalls = [s for line in lines for s in line.body]  # type: ignore[union-attr]
    return bool(smalls) and all(isinstance(s, (cst.Return, cst.Raise, cst.Continue, cst.Break)) for s in smalls)


def probe_kept(ref: CudaRef, probe: str) -> str:
    """The message of a reference kept because it is part of a capability probe."""
    return (f"{spelled(ref)} is part of a CUDA capability probe (with `{probe}`): kept, the whole probe "
            "stays CUDA (False on Neuron); choose the Neuron path by hand")


#: calls whose arguments are shown to a person (a printed fact about CUDA stays about CUDA)
DIAGNOSTIC_CALLS = MESSAGE_CALL_NAMES | {"write"}


def printed(ctx: FileContext, ref: CudaRef) -> bool:
    """The reference is an argument of ``print`` or a logging call (``print("CUDA:",
    torch.cuda.is_available())``, f-strings included): a diagnostic that names CUDA."""
    for anc in ctx.ancestors():
        if isinstance(anc, cst.Call) and anc is not ref.call:
            return last_name(anc.func) in DIAGNOSTIC_CALLS
        if isinstance(anc, (cst.BaseStatement, cst.BaseSmallStatement, cst.Lambda)):
            return False
    return False


def cuda_named_answer(ctx: FileContext, ref: CudaRef) -> str | None:
    """The function whose answer the reference is (``return torch.cuda.is_available()``, alone or
    joined by ``and``/``or``/``not`` and comparisons), where the function's name says CUDA (``def
    is_cuda_available():``): its callers read it as "CUDA is here", so it stays that. None
    otherwise."""
    chain = ctx.stack[::-1]  # the node being visited, then its ancestors
    at = next((i for i, node in enumerate(chain) if node is ref.outer), None)
    if at is None:
        return None
    at += 1
    while at < len(chain) and isinstance(chain[at], (cst.BooleanOperation, cst.UnaryOperation, cst.Comparison,
                                                     cst.ComparisonTarget)):
        at += 1  # part of the answer (`torch.cuda.is_available() and torch.cuda.device_count() > 0`)
    if at >= len(chain) or not isinstance(chain[at], cst.Return):
        return None
    function = next((a for a in chain[at + 1:] if isinstance(a, (cst.FunctionDef, cst.Lambda, cst.ClassDef))), None)
    return function.name.value if isinstance(function, cst.FunctionDef) and "cuda" in function.name.value.lower() else None
