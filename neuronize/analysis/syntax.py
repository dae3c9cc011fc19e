"""Names and statements read without a full tree walk: the cheap half of reading a module."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass

import libcst as cst

from neuronize.analysis.cuda_packages import module_matches  # noqa: F401 - re-exported
from neuronize.analysis.walk import children


def one_line(node: cst.CSTNode) -> str:
    """``node``'s code on one line, without its own parentheses: what a pattern over written code
    matches, however the line was wrapped."""
    bare = node.with_changes(lpar=(), rpar=()) if getattr(node, "lpar", ()) else node
    return " ".join(cst.Module([]).code_for_node(bare).split())


def is_docstring(stmt: cst.CSTNode) -> bool:
    """``stmt`` is a line holding only a string (a module's, class's or function's docstring
    when it comes first)."""
    return (isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1
            and isinstance(stmt.body[0], cst.Expr) and isinstance(stmt.body[0].value, cst.SimpleString))


def with_attached_comment(module: cst.Module) -> cst.Module:
    """``module`` with the comment lines that end its header right above its first statement
    (after the header's last blank line; ``# load the data`` over ``data = load()``) moved into
    that statement's leading lines: the same code, byte for byte, whose comment stays with its
    statement when code is inserted above it. A shebang, an encoding line or a licence notice
    stays in the header."""
    header = list(module.header)
    start = len(header)
    while start and header[start - 1].comment is not None:
        start -= 1
    block = header[start:]
    if not block or not module.body or any(_heads_the_file(line.comment.value) for line in block if line.comment):
        return module
    first = module.body[0]
    return module.with_changes(header=header[:start], body=[
        first.with_changes(leading_lines=[*block, *first.leading_lines]), *module.body[1:]])


def with_usual_indent(module: cst.Module) -> cst.Module:
    """``module`` with the indentation most of its statements use as its default (the code libcst
    writes into new blocks), where its first indented block (which libcst takes the default from)
    differs: a tab-indented ``try:`` at the top of a file indented with four spaces. The same code,
    byte for byte: each block keeps its own indentation."""
    counts: dict[str, int] = {}
    for stmt in iter_statements(module.body):
        for node in _clauses_of(stmt):
            if isinstance(node, cst.IndentedBlock):
                own = module.default_indent if node.indent is None else node.indent
                counts[own] = counts.get(own, 0) + len(node.body)  # by the lines indented so
    usual = max(counts, key=lambda indent: counts[indent], default=module.default_indent)
    if usual == module.default_indent or counts[usual] <= counts.get(module.default_indent, 0):
        return module
    old = module.default_indent

    class Fix(cst.CSTTransformer):
        def leave_IndentedBlock(self, original: cst.IndentedBlock, updated: cst.IndentedBlock) -> cst.IndentedBlock:
            own = old if original.indent is None else original.indent
            return updated.with_changes(indent=None if own == usual else own)

    return module.visit(Fix()).with_changes(default_indent=usual)


def _heads_the_file(comment: str) -> bool:
    lowered = comment.lower()
    return comment.startswith(("#!", "# -*-", "# vim:")) or "coding" in lowered or any(
        word in lowered for word in ("copyright", "licen", "spdx"))


def dotted_name(node: cst.CSTNode) -> str | None:
    """``a.b.c`` for a Name/Attribute chain, else None."""
    parts: list[str] = []
    while isinstance(node, cst.Attribute):
        parts.append(node.attr.value)
        node = node.value
    if not isinstance(node, cst.Name):
        return None
    parts.append(node.value)
    return ".".join(reversed(parts))


def ends_early(body: cst.BaseSuite, *, stops_only: bool = False) -> bool:
    """``body`` ends its block early: its last statement raises, returns, breaks, continues or
    exits; with ``stops_only``, only one that stops the run (``raise``, ``sys.exit``...)."""
    stmts = body.body
    if not stmts:
        return False
    last = stmts[-1]
    if isinstance(body, cst.SimpleStatementSuite):
        smalls: Sequence[cst.CSTNode] = [last]
    elif isinstance(last, cst.SimpleStatementLine):
        smalls = last.body
    else:
        return False
    for small in smalls:
        if isinstance(small, cst.Raise) or not stops_only and isinstance(small, (cst.Return, cst.Continue, cst.Break)):
            return True
        if isinstance(small, cst.Expr) and isinstance(small.value, cst.Call):
            if (dotted_name(small.value.func) or "").rsplit(".", 1)[-1] in ("exit", "quit", "_exit"):
                return True
    return False


def else_ends_early(stmt: cst.If) -> bool:
    """The ``else`` that closes ``stmt``'s ``elif`` chain ends the block early: the statements
    after the chain run only where the test of ``stmt`` or of another ``if`` of the chain held
    (``elif torch.cuda.is_available(): ... else: sys.exit(1)``)."""
    *_, last = chain_links(stmt)
    return isinstance(last.orelse, cst.Else) and ends_early(last.orelse.body)


def chain_links(stmt: cst.If) -> Iterator[cst.If]:
    """``stmt`` and each ``elif`` after it in its chain, in order."""
    link: cst.BaseSuite | cst.If | cst.Else | None = stmt
    while isinstance(link, cst.If):
        yield link
        link = link.orelse


def chain_head(stmt: cst.If, parents: Mapping[int, cst.CSTNode]) -> cst.If:
    """The ``if`` that starts the ``elif`` chain ``stmt`` is in (``stmt`` itself for an ``if``)."""
    head = stmt
    while isinstance(parent := parents.get(id(head)), cst.If) and parent.orelse is head:
        head = parent
    return head


@dataclass(frozen=True)
class ImportedName:
    """One name an import statement binds (relative imports bind nothing we can qualify).

    ``import a.b`` -> module ``a.b``, name None, local ``a``, target ``a``;
    ``import a.b as c`` -> local ``c``, target ``a.b``; ``from a import x as y`` -> module ``a``,
    name ``x``, local ``y``, target ``a.x``; ``from a import *`` -> name ``*``, local None.
    """

    module: str
    name: str | None
    local: str | None
    target: str
    asname: str | None = None


def imported_names(stmt: cst.Import | cst.ImportFrom) -> Iterator[ImportedName]:
    """What ``stmt`` binds, alias by alias: the one reading of import statements."""
    if isinstance(stmt, cst.Import):
        for alias in stmt.names:
            full = dotted_name(alias.name)
            if full is None:
                continue
            asname = _asname(alias)
            if asname is not None:
                yield ImportedName(full, None, asname, full, asname)
            else:
                head = full.split(".")[0]
                yield ImportedName(full, None, head, head)
        return
    if stmt.relative or stmt.module is None:
        return
    base = dotted_name(stmt.module)
    if base is None:
        return
    if isinstance(stmt.names, cst.ImportStar):
        yield ImportedName(base, "*", None, base)
        return
    for alias in stmt.names:
        if not isinstance(alias.name, cst.Name):
            continue
        asname = _asname(alias)
        yield ImportedName(base, alias.name.value, asname or alias.name.value, f"{base}.{alias.name.value}", asname)


def _asname(alias: cst.ImportAlias) -> str | None:
    if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
        return alias.asname.name.value
    return None


def iter_statements(body: Sequence[cst.CSTNode]) -> Iterator[cst.CSTNode]:
    """Every statement of ``body``, nested blocks included, parents before children; never
    an expression (so never inside a lambda or comprehension)."""
    for stmt in body:
        yield stmt
        for block in blocks_of(stmt):
            yield from iter_statements(block)


def iter_blocks(body: Sequence[cst.CSTNode]) -> Iterator[Sequence[cst.CSTNode]]:
    """``body`` and every block of statements nested in it (an ``elif`` as a block of its own),
    parents before children, in source order; never an expression."""
    yield body
    for stmt in body:
        for block in blocks_of(stmt):
            yield from iter_blocks(block)


def blocks_of(stmt: cst.CSTNode) -> Iterable[Sequence[cst.CSTNode]]:
    """The statement lists of the blocks ``stmt`` holds (an ``elif`` is a block of its own)."""
    for clause in _clauses_of(stmt):
        yield [clause] if isinstance(clause, cst.If) else clause.body


def _clauses_of(stmt: cst.CSTNode) -> Iterator[cst.IndentedBlock | cst.If]:
    """The indented blocks a compound statement holds (its body, its ``else`` / ``finally``, its
    handlers' and cases'), and its ``elif``, a statement of its own."""
    if isinstance(stmt, cst.SimpleStatementLine):
        return
    for attr in ("body", "orelse", "finalbody", "handlers", "cases"):
        part = getattr(stmt, attr, None)
        for clause in part if isinstance(part, Sequence) else (part,):
            if isinstance(clause, cst.If):
                yield clause
                continue
            body = clause if isinstance(clause, cst.BaseSuite) else getattr(clause, "body", None)
            if isinstance(body, cst.IndentedBlock):
                yield body


def binding_counts(tree: cst.CSTNode, names: Collection[str], *, own_scope: bool = False) -> dict[str, int]:
    """How often each of ``names`` is bound anywhere in ``tree`` as a plain name (assignment,
    annotated, augmented and loop targets, parameters): 1 for a flag stored once. With
    ``own_scope``, only the bindings of ``tree``'s own scope (a module's or a function's,
    its parameters included) count, not those of the functions and classes nested in it."""
    counts = dict.fromkeys(names, 0)
    pending = [tree]
    while pending:
        node = pending.pop()
        target = node.name if isinstance(node, cst.Param) else getattr(node, "target", None) \
            if isinstance(node, (cst.AssignTarget, cst.AnnAssign, cst.AugAssign, cst.For)) else None
        if isinstance(target, cst.Name) and target.value in counts:
            counts[target.value] += 1
        if not (own_scope and node is not tree and isinstance(node, _SCOPES)):
            pending.extend(children(node))
    return counts


_SCOPES = (cst.FunctionDef, cst.ClassDef, cst.Lambda)


def assigned_value(statement: cst.CSTNode) -> tuple[str, cst.BaseExpression] | None:
    """The name a line ``name = value`` (one statement, one plain-name target) binds, and the value;
    None for any other statement."""
    small = statement.body[0] if isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1 else None
    if isinstance(small, cst.Assign) and len(small.targets) == 1 and isinstance(target := small.targets[0].target, cst.Name):
        return target.value, small.value
    return None


def assigned_attribute(statement: cst.CSTNode) -> tuple[str, cst.BaseExpression] | None:
    """The attribute a line ``obj.attr = value`` (one statement, one target) binds, dotted, and the
    value; None for any other statement."""
    small = statement.body[0] if isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1 else None
    if isinstance(small, cst.Assign) and len(small.targets) == 1 and isinstance(small.targets[0].target, cst.Attribute):
        name = dotted_name(small.targets[0].target)
        return (name, small.value) if name is not None else None
    return None


def scope_statements(scope: cst.CSTNode) -> Sequence[cst.BaseStatement]:
    """The statements of a function's body or of a module, at their top level."""
    if isinstance(scope, cst.FunctionDef):
        return scope.body.body if isinstance(scope.body, cst.IndentedBlock) else ()
    return scope.body if isinstance(scope, cst.Module) else ()


def is_main_test(test: cst.BaseExpression) -> bool:
    """``__name__ == "__main__"``: the script's own entry point, not a choice of host."""
    if not isinstance(test, cst.Comparison) or len(test.comparisons) != 1:
        return False
    sides = [test.left, test.comparisons[0].comparator]
    return any(isinstance(s, cst.Name) and s.value == "__name__" for s in sides) and any(
        isinstance(s, cst.SimpleString) and s.evaluated_value == "__main__" for s in sides)


def is_script(module: cst.Module) -> bool:
    """The module runs work at its top level (a call, a ``with``, a loop): a script run as a
    program, not a module other code imports. Import safety is about the latter; a script's
    top-level code is what the program does, and fails or works with it."""
    for stmt in module.body:
        if isinstance(stmt, (cst.With, cst.For, cst.While)):
            return True
        if isinstance(stmt, cst.SimpleStatementLine) and any(
                isinstance(s, cst.Expr) and isinstance(s.value, (cst.Call, cst.Await)) for s in stmt.body):
            return True
    return False


def stored_once(scope: cst.CSTNode, name: str) -> bool:
    """``name`` holds one value in ``scope``'s own scope: it is bound once, or once after constant
    defaults (``HAS_CUDA = False`` lines first) with at most a constant fallback in the ``except``
    of the ``try`` that binds it (``try: has_cuda = torch.cuda.is_available()`` ``except
    Exception: has_cuda = False``). Every default comes first and the binding runs whenever the
    scope does, so the value the flag ends with is the one bound, however the check ends."""
    count = binding_counts(scope, (name,), own_scope=True)[name]
    return count == 1 or count == _bound_after_defaults(scope_statements(scope), name)


def _bound_after_defaults(block: Sequence[cst.BaseStatement], name: str) -> int:
    """How many bindings of ``name`` ``block`` holds up to its first binding to a value: constant
    defaults, then that binding, on a line of the block or in the body of a ``try`` of it with its
    handlers' constant fallbacks; 0 when the first value is bound under any other statement."""
    defaults = 0
    for statement in block:
        if (bound := assigned_value(statement)) is not None and bound[0] == name:
            if not is_false_or_none(bound[1]):
                return defaults + 1
            defaults += 1
        elif isinstance(statement, cst.Try) and isinstance(statement.body, cst.IndentedBlock) \
                and (inner := _bound_after_defaults(statement.body.body, name)):
            return defaults + inner + sum(_constant_binding(handler.body, name) for handler in statement.handlers)
    return 0


def without_not(test: cst.BaseExpression) -> tuple[cst.BaseExpression, bool]:
    """``test`` without the ``not``s in front (and the parentheses they needed), and whether they
    are an odd number: the condition then holds where the rest does not."""
    negated = False
    while isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        test, negated = test.expression, not negated
        if getattr(test, "lpar", ()):
            test = test.with_changes(lpar=(), rpar=())
    return test, negated


def is_false_or_none(node: cst.BaseExpression) -> bool:
    """``False`` or ``None``."""
    return isinstance(node, cst.Name) and node.value in ("False", "None")


def is_stub(function: cst.FunctionDef) -> bool:
    """``function`` is an abstract method (``@abstractmethod``), or its body (past a docstring) is
    ``...`` or ``raise NotImplementedError``: an interface, whose defaults serve no call."""
    if any((dotted_name(d.decorator) or "").endswith("abstractmethod") for d in function.decorators):
        return True
    body = function.body
    lines = [line for line in (body.body if isinstance(body, cst.IndentedBlock) else [body]) if not is_docstring(line)]
    if len(lines) != 1 or not isinstance(lines[0], (cst.SimpleStatementLine, cst.SimpleStatementSuite)) \
            or len(lines[0].body) != 1:
        return False
    small = lines[0].body[0]
    if isinstance(small, cst.Expr):
        return isinstance(small.value, cst.Ellipsis)
    return isinstance(small, cst.Raise) and small.exc is not None \
        and (dotted_name(getattr(small.exc, "func", small.exc)) or "").endswith("NotImplementedError")


def is_star_import(node: cst.CSTNode) -> bool:
    """``from module import *``."""
    return isinstance(node, cst.ImportFrom) and isinstance(node.names, cst.ImportStar)


def _constant_binding(block: cst.BaseSuite, name: str) -> bool:
    lines = block.body if isinstance(block, cst.IndentedBlock) else ()
    return len(lines) == 1 and (bound := assigned_value(lines[0])) is not None and bound[0] == name \
        and is_false_or_none(bound[1])


def scoped_statements(body: Sequence[cst.CSTNode], functions: tuple[cst.FunctionDef, ...] = ()
                      ) -> Iterator[tuple[cst.CSTNode, tuple[cst.FunctionDef, ...]]]:
    """Every statement of ``body`` as :func:`iter_statements` gives them, each with the functions
    it sits in, outermost first: where its names are bound."""
    for stmt in body:
        yield stmt, functions
        inner = (*functions, stmt) if isinstance(stmt, cst.FunctionDef) else functions
        for block in blocks_of(stmt):
            yield from scoped_statements(block, inner)


def named_parameters(func: cst.FunctionDef) -> tuple[cst.Param, ...]:
    """The parameters of ``func`` that take a name (positional or keyword)."""
    return (*func.params.params, *func.params.kwonly_params)


def binding_scope(name: str, functions: tuple[cst.FunctionDef, ...], module: cst.Module) -> cst.CSTNode:
    """The scope a read of ``name`` in ``functions`` (outermost first) resolves to: the innermost
    of them that binds it, else the module."""
    for function in reversed(functions):
        if binding_counts(function, (name,), own_scope=True)[name]:
            return function
    return module
