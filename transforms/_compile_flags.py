"""Helpers shared by the NRN3xx rules (torch.compile, static shapes, CUDA-only flags)."""

from __future__ import annotations

from typing import Any, ClassVar, Iterable, Sequence

import libcst as cst

from neuronize.context import FileContext, _iter_statements, dotted_name
from neuronize.transform import ImportRequest, Transform
from neuronize.transforms._helpers import count_nodes, keyword, string_value

#: keyword arguments of ``torch.compile`` (all keyword-only after the model)
COMPILE_KEYWORDS = frozenset({"fullgraph", "dynamic", "backend", "mode", "options", "disable"})


# -- torch.compile call sites ----------------------------------------------------------------
def compile_kind(ctx: FileContext, call: cst.Call) -> str | None:
    """``"torch"`` for ``torch.compile(...)`` in any spelling, ``"module"`` for what looks like
    ``nn.Module.compile(...)`` (``model.compile(backend=...)``), else None.

    ``X.compile(...)`` counts only in a file that imports torch, when ``X`` is not an imported
    module (``re.compile``) and every argument is a ``torch.compile`` keyword (Keras'
    ``model.compile(optimizer=..., loss=...)`` is not).
    """
    func = call.func
    if isinstance(func, cst.Name):
        return "torch" if ctx.qualify(func) == "torch.compile" else None
    if not isinstance(func, cst.Attribute) or func.attr.value != "compile":
        return None
    qualified = ctx.qualify(func)
    if qualified == "torch.compile":
        return "torch"
    if qualified is not None or not ctx.names.imports_module("torch"):
        return None
    if isinstance(func.value, (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString)):
        return None
    for arg in call.args:
        if arg.star == "**":
            continue
        if arg.keyword is None or arg.keyword.value not in COMPILE_KEYWORDS:
            return None
    return "module"


def compile_aliases(ctx: FileContext) -> frozenset[str]:
    """Plain names bound to ``torch.compile`` (``from torch import compile as tcompile``)."""
    return frozenset(ctx.names.local_names_for("torch.compile"))


def call_name(func: cst.BaseExpression, aliases: frozenset[str] = frozenset()) -> str:
    """The last name of a call's function; ``"compile"`` for an alias of ``torch.compile``."""
    if isinstance(func, cst.Attribute):
        return func.attr.value
    if isinstance(func, cst.Name):
        return "compile" if func.value in aliases else func.value
    return ""


def has_double_star(call: cst.Call) -> cst.Arg | None:
    for arg in call.args:
        if arg.star == "**":
            return arg
    return None


def is_true(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Name) and node.value == "True"


def is_false(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Name) and node.value == "False"


def code(node: cst.CSTNode) -> str:
    """Source of a small node, on one line (for messages)."""
    text = cst.Module(body=[]).code_for_node(node)
    return " ".join(text.split())


def short(node: cst.CSTNode, limit: int = 50) -> str:
    text = code(node)
    return text if len(text) <= limit else text[: limit - 3] + "..."


# -- statements ------------------------------------------------------------------------------
def is_expression_statement(ctx: FileContext) -> bool:
    """The node being visited is the whole expression of an expression statement."""
    parent = ctx.parent
    if not isinstance(parent, cst.Expr):
        return False
    stack = ctx.stack
    return len(stack) >= 3 and isinstance(stack[-3], (cst.SimpleStatementLine, cst.SimpleStatementSuite))


def assign_targets(node: cst.Assign | cst.AugAssign) -> list[cst.BaseExpression]:
    if isinstance(node, cst.AugAssign):
        return [node.target]
    return [t.target for t in node.targets]


def has_call(node: cst.CSTNode) -> bool:
    """Whether evaluating ``node`` may run code (a call, an await, a yield or a walrus)."""
    return bool(count_nodes(node, cst.Call, cst.Await, cst.Yield, cst.NamedExpr))


def has_comment(node: cst.CSTNode) -> bool:
    return bool(count_nodes(node, cst.Comment))


# -- with blocks -----------------------------------------------------------------------------
def unwrap_with(node: cst.With, drop: Sequence[cst.WithItem]) -> cst.CSTNode | cst.FlattenSentinel | str:
    """``node`` without the items in ``drop``; its body alone when no item is left.

    Returns a reason (a string) when this cannot be done without losing something.
    """
    if node.asynchronous is not None:
        return "an `async with` block"
    for item in drop:
        if item.asname is not None:
            return f"the context value is bound (`as {code(item.asname.name)}`)"
        if has_comment(item):
            return "comments inside the `with` header"
    keep = [item for item in node.items if not any(item is d for d in drop)]
    if keep:
        last = node.items[-1]
        comma = last.comma if len(keep) > 1 else cst.MaybeSentinel.DEFAULT  # `with (a,):` is a tuple
        keep[-1] = keep[-1].with_changes(comma=comma)
        if len(keep) == 1 and isinstance(node.lpar, cst.LeftParen) and isinstance(node.rpar, cst.RightParen) \
                and not has_comment(node.lpar) and not has_comment(node.rpar):
            # `with (\n    a,\n    b,\n):` -> `with a:`
            return node.with_changes(items=keep, lpar=cst.MaybeSentinel.DEFAULT, rpar=cst.MaybeSentinel.DEFAULT,
                                     whitespace_after_with=cst.SimpleWhitespace(" "))
        return node.with_changes(items=keep)
    body = node.body
    header_comments: list[cst.EmptyLine] = []
    if any(has_comment(p) for p in (node.lpar, node.rpar) if isinstance(p, cst.CSTNode)):
        return "comments inside the `with` header"
    if isinstance(body, cst.SimpleStatementSuite):
        line = cst.SimpleStatementLine(
            body=body.body, leading_lines=node.leading_lines, trailing_whitespace=body.trailing_whitespace
        )
        return cst.FlattenSentinel([line])
    assert isinstance(body, cst.IndentedBlock)
    if any(line.comment is not None for line in body.footer):
        return "comments after the last statement of the block"
    if body.header.comment is not None:
        header_comments.append(cst.EmptyLine(indent=True, comment=body.header.comment))
    statements = list(body.body)
    first = statements[0]
    statements[0] = first.with_changes(
        leading_lines=[*node.leading_lines, *header_comments, *first.leading_lines]
    )
    return cst.FlattenSentinel(statements)


# -- imports ---------------------------------------------------------------------------------
def import_removals(ctx: FileContext, qualified: Iterable[str]) -> tuple[ImportRequest, ...]:
    """Requests to drop the imports that bind ``qualified`` names, once they are unused.

    ``import torch`` itself is never dropped. The engine removes an import only if nothing
    uses the name any more.
    """
    wanted = {q for q in qualified if "." in q}
    if not wanted or not any(ctx.names.local_names_for(q) for q in wanted):
        return ()
    requests: list[ImportRequest] = []
    for stmt in _iter_statements(ctx.module.body):
        if not isinstance(stmt, cst.SimpleStatementLine):
            continue
        for small in stmt.body:
            if isinstance(small, cst.Import):
                for alias in small.names:
                    full = dotted_name(alias.name)
                    if full in wanted and alias.asname is not None:
                        asname = dotted_name(alias.asname.name)
                        requests.append(ImportRequest(full, asname=asname, remove=True))
            elif isinstance(small, cst.ImportFrom) and not small.relative and small.module is not None:
                base = dotted_name(small.module)
                if base is None or isinstance(small.names, cst.ImportStar):
                    continue
                for alias in small.names:
                    if not isinstance(alias.name, cst.Name):
                        continue
                    if f"{base}.{alias.name.value}" in wanted:
                        asname = dotted_name(alias.asname.name) if alias.asname is not None else None
                        requests.append(ImportRequest(base, alias.name.value, asname, remove=True))
    return tuple(dict.fromkeys(requests))


def keyword_string(call: cst.Call, name: str) -> str | None:
    arg = keyword(call, name)
    return None if arg is None else string_value(arg.value)


# -- CUDA-only settings: a shared rule skeleton ------------------------------------------------
#: every settings namespace the NRN35x rules delete from; an assignment setting several is
#: handled by the rule owning its first target
FLAG_PREFIXES = ("torch.backends.cudnn.", "torch.backends.cuda.")


class _CudaOnlySettings(Transform):
    """Skeleton of the NRN35x rules: delete CUDA-only setting statements, unwrap CUDA-only contexts.

    Subclasses fill in the class attributes below and write the messages.
    """

    #: assignments to a name under one of these prefixes are deleted
    assign_prefixes: ClassVar[tuple[str, ...]] = ()
    #: attribute names whose reads (under ``assign_prefixes``) are reported
    read_attrs: ClassVar[frozenset[str]] = frozenset()
    #: qualified functions whose call statements are deleted -> what they do
    removable_calls: ClassVar[dict[str, str]] = {}
    #: qualified context managers whose ``with`` items are dropped -> what they do
    contexts: ClassVar[dict[str, str]] = {}
    #: qualified functions whose calls are only reported -> message
    report_calls: ClassVar[dict[str, str]] = {}
    #: modules whose imports are dropped once unused (besides the functions removed)
    modules: ClassVar[tuple[str, ...]] = ()
    #: why the setting means nothing on Neuron (ends the messages)
    why: ClassVar[str] = ""

    def __init__(self, ctx: FileContext) -> None:
        super().__init__(ctx)
        self._removed: set[int] = set()
        self._aliases = frozenset(
            local for q in (*self.removable_calls, *self.contexts) for local in ctx.names.local_names_for(q)
        )
        cls = type(self)
        if "_last_names" not in cls.__dict__:
            cls._last_names = frozenset(
                q.rsplit(".", 1)[-1] for q in (*cls.removable_calls, *cls.contexts, *cls.report_calls)
            )

    #: every target: the settings are deleted (neuron, cpu) or kept for CUDA (accelerator)
    targets: ClassVar[tuple[str, ...]] = ("neuron", "accelerator", "cpu")

    def remove(self, statement: cst.CSTNode, message: str, **kw: Any) -> None:  # type: ignore[override]
        """Under ``--target accelerator`` a CUDA-only setting stays for CUDA, guarded by
        ``if torch.cuda.is_available():``; the other targets delete it."""
        from neuronize.transforms import _target

        if _target.in_cuda_only_block(self.ctx):
            return  # already kept for CUDA under `if torch.cuda.is_available():`
        if _target.target(self.ctx) != _target.ACCELERATOR:
            if _target.target(self.ctx) == _target.CPU:
                message = message.replace("meaningless on Neuron", "meaningless on the CPU")
            super().remove(statement, message, **kw)
            return
        line = self.ctx.statement_to_remove(statement)
        if not isinstance(line, cst.SimpleStatementLine):
            self.report(statement, message.split(" removed: ")[-1] + ": guard it with "
                        "`if torch.cuda.is_available():` by hand")
            return
        new, imports = _target.guarded(self.ctx, line)
        why = message.split(" removed: ", 1)[-1]
        head = message.split(" removed: ", 1)[0] if " removed: " in message else "this setting"
        self.fix(line, new, f"{head} kept for CUDA under `if torch.cuda.is_available():`: "
                 f"{why.replace('meaningless on Neuron', 'meaningless on the CPU and Neuron')}",
                 safety=kw.get("safety"), evidence=kw.get("evidence"), imports=imports)

    # -- hooks ----------------------------------------------------------------------------------
    def extra_note(self, qualified: str, node: cst.CSTNode) -> str:
        """More to say about one setting (appended to the message)."""
        return ""

    # -- assignments ----------------------------------------------------------------------------
    def _own(self, qualified: str | None) -> bool:
        return qualified is not None and qualified.startswith(self.assign_prefixes)

    def visit_Assign(self, node: cst.Assign) -> None:
        self._assign(node)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._assign(node)

    def _assign(self, node: cst.Assign | cst.AugAssign) -> None:
        if not self.assign_prefixes:
            return
        targets = assign_targets(node)
        names = [self.ctx.qualify(t) if isinstance(t, cst.Attribute) else None for t in targets]
        flagged = [n for n in names if n is not None and n.startswith(FLAG_PREFIXES)]
        if not flagged or not self._own(flagged[0]):
            return  # not a setting, or another NRN35x rule owns the statement
        shown = ", ".join(f"`{short(t)}`" for t, n in zip(targets, names) if n in flagged)
        self._removed.add(id(node))
        if len(flagged) != len(targets):
            self.report(node, f"{shown}: {self.why}; this assignment also sets something else, so remove "
                        "the CUDA part by hand")
            return
        message = f"`{short(node, 80)}` removed: {self.why}"
        if has_call(node.value):
            message += f" (`{short(node.value)}` is no longer computed)"
        message += self.extra_note(flagged[0], node)
        self.remove(node, message, imports=import_removals(self.ctx, self.modules))

    def visit_Attribute(self, node: cst.Attribute) -> None:
        attr = node.attr.value
        if attr not in self.read_attrs and attr not in self._last_names:
            return
        qualified = self.ctx.qualify(node)
        if qualified is None:
            return
        parent = self.ctx.parent
        if isinstance(parent, (cst.AssignTarget, cst.AugAssign, cst.Del, cst.Attribute, cst.ImportFrom)):
            return
        if isinstance(parent, cst.Call) and parent.func is node:
            return
        if any(id(a) in self._removed for a in self.ctx.ancestors()):
            return
        if attr in self.read_attrs and self._own(qualified):
            self.report(node, f"`{short(node)}` is read here: {self.why}; it keeps its default value there, "
                        "so review the code that depends on it")
        elif qualified in self.removable_calls or qualified in self.contexts:
            self.report(node, f"`{short(node)}` is passed as a value: {self.why}; remove its use by hand")

    def visit_Name(self, node: cst.Name) -> None:
        if node.value not in self._aliases:
            return
        parent = self.ctx.parent
        if isinstance(parent, (cst.Call, cst.Attribute)) and getattr(parent, "func", None) is node:
            return
        if isinstance(parent, (cst.Attribute, cst.ImportAlias, cst.AsName, cst.AssignTarget)):
            return
        qualified = self.ctx.qualify(node)
        if qualified in self.removable_calls or qualified in self.contexts:
            self.report(node, f"`{node.value}` is passed as a value: {self.why}; remove its use by hand")

    # -- calls ------------------------------------------------------------------------------------
    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if isinstance(func, cst.Attribute):
            last = func.attr.value
        elif isinstance(func, cst.Name):
            last = func.value
        else:
            return
        if last not in self._last_names:
            return
        qualified = self.ctx.qualify(func)
        if qualified is None:
            return
        if qualified in self.report_calls:
            self.report(node, self.report_calls[qualified])
        elif qualified in self.removable_calls:
            what = self.removable_calls[qualified]
            if any(id(a) in self._removed for a in self.ctx.ancestors()):
                return
            if is_expression_statement(self.ctx):
                message = f"`{short(node.func)}(...)` removed: {what}; {self.why}" + self.extra_note(qualified, node)
                self.remove(self.ctx.parent, message,
                            imports=import_removals(self.ctx, (*self.modules, qualified)))
            else:
                self.report(node, f"`{short(node.func)}(...)` is used as a value: {what}; {self.why}; remove it "
                            "by hand")
        elif qualified in self.contexts:
            parent = self.ctx.parent
            if not isinstance(parent, cst.WithItem):
                self.report(node, f"`{short(node.func)}(...)` outside a `with` statement: {self.contexts[qualified]}; "
                            f"{self.why}; remove it by hand")

    # -- with blocks ----------------------------------------------------------------------------
    def visit_With(self, node: cst.With) -> None:
        if not self.contexts:
            return
        drop: list[cst.WithItem] = []
        found: list[str] = []
        for item in node.items:
            call = item.item
            if isinstance(call, cst.Call):
                qualified = self.ctx.qualify(call.func)
                if qualified in self.contexts:
                    drop.append(item)
                    found.append(qualified)
        if not drop:
            return
        inner = ", ".join(short(item.item) for item in drop)
        shown = ", ".join(f"`{short(item.item)}`" for item in drop)
        what = self.contexts[found[0]]
        result = unwrap_with(node, drop)
        if isinstance(result, str):
            self.report(node, f"{shown}: {what}; {self.why}; unwrap it by hand: {result}")
            return
        if isinstance(result, cst.FlattenSentinel):
            message = f"`with {inner}:` removed, its body kept: {what}; {self.why}"
        else:
            message = f"{shown} removed from the `with` statement: {what}; {self.why}"
        self.fix(node, result, message + self.extra_note(found[0], node),
                 imports=import_removals(self.ctx, (*self.modules, *found)))


# -- adding a keyword argument ------------------------------------------------------------------
# -- removing arguments / dict entries -----------------------------------------------------------
def count_comments(node: cst.CSTNode | None) -> int:
    return 0 if not isinstance(node, cst.CSTNode) else count_nodes(node, cst.Comment)


def drop_elements(elements: Sequence, remove: Sequence, closing: object = None) -> tuple[list, int, object]:
    """``elements`` (call arguments or dict entries) without ``remove``; also returns how many
    comments went, and ``closing`` (the whitespace before a dict's ``}``) as it must now be.

    When the last element goes, the new last one keeps the comment ending its own line and takes
    over the layout before the closing bracket.
    """
    keep = [e for e in elements if not any(e is r for r in remove)]
    dropped = sum(count_comments(r) for r in remove)
    if keep and elements and keep[-1] is not elements[-1]:
        old_last, new_last = elements[-1], keep[-1]
        own, tail = new_last.comma, old_last.comma
        own_ws = own.whitespace_after if isinstance(own, cst.Comma) else None
        changes: dict[str, object] = {}
        if isinstance(tail, cst.Comma) and isinstance(tail.whitespace_after, cst.ParenthesizedWhitespace) \
                and isinstance(own_ws, cst.ParenthesizedWhitespace):
            # call arguments: `a,  # note\n    b,\n)` -> `a,  # note\n)`
            changes["comma"] = own.with_changes(
                whitespace_after=own_ws.with_changes(last_line=tail.whitespace_after.last_line))
        elif isinstance(own_ws, cst.ParenthesizedWhitespace) and isinstance(closing, cst.ParenthesizedWhitespace):
            # dict entries: the line break before `}` belongs to the `}`
            changes["comma"] = tail if isinstance(tail, cst.Comma) else cst.MaybeSentinel.DEFAULT
            dropped += count_comments(closing.first_line) - count_comments(tail)
            closing = closing.with_changes(first_line=own_ws.first_line,
                                           empty_lines=[*own_ws.empty_lines, *closing.empty_lines])
        elif isinstance(tail, cst.Comma):
            changes["comma"] = tail
            dropped += count_comments(own) - count_comments(tail)
        else:
            changes["comma"] = cst.MaybeSentinel.DEFAULT
            dropped += count_comments(own)
            if isinstance(old_last, cst.Arg):
                changes["whitespace_after_arg"] = old_last.whitespace_after_arg
                dropped -= count_comments(old_last.whitespace_after_arg)
        keep[-1] = new_last.with_changes(**changes)
    return keep, dropped, closing
