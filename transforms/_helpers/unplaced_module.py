"""A detection that places a module's inputs while the module itself is never placed.

``model = handpose_model()`` then, in a loop, ``if torch.cuda.is_available(): data = data.cuda()``
and ``model(data)``: on CUDA the inputs meet CPU weights (a latent bug of the original), and on
every other host, Trainium included, the whole forward ran on the CPU. A Neuron branch in front
would copy the bug onto Trainium, where the CPU path worked, so such a choice stays, reported.
"""

from __future__ import annotations

from collections.abc import Sequence

import libcst as cst

from neuronize.analysis.context import FileContext, dotted_name
from neuronize.analysis.syntax import blocks_of
from neuronize.analysis.walk import iter_syntax
from neuronize.transforms._helpers.nodes import assigned_names, name_paths, small_statements

#: the methods that place a module (or make a placed copy of it)
_PLACING = frozenset({"cuda", "to", "to_empty", "half", "bfloat16", "type", "_apply", "apply", "share_memory"})


def unplaced_module(ctx: FileContext, head: cst.If, link: cst.If) -> str | None:
    """The name of the module that the statements after ``head`` (the chain ``link`` is in) call
    on what ``link``'s body places, where the same scope makes that module once and never places
    it nor hands it on (:func:`_never_placed`); None where there is none. A class of the file
    that makes no layer (a loss that builds its buffers on its input's device) is no such module."""
    placed = {name for small in small_statements(link.body) for name in assigned_names(small)}
    found = _position(ctx.module.body, head, ctx.module) if placed else None
    if found is None:
        return None
    after, scope = found
    for statement in after:
        for node in iter_syntax(statement):
            if isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and any(
                    isinstance(part, cst.Name) and part.value in placed
                    for arg in node.args for part in iter_syntax(arg.value)) \
                    and (made := _never_placed(scope, node.func.value)) is not None and _holds_layers(ctx, made):
                return node.func.value
    return None


def _position(body: Sequence[cst.CSTNode], head: cst.If, scope: cst.CSTNode
              ) -> tuple[Sequence[cst.CSTNode], cst.CSTNode] | None:
    """The statements after ``head`` in its block, and the function (or module) it runs in."""
    for index, statement in enumerate(body):
        if statement is head:
            return body[index + 1:], scope
        inner = statement if isinstance(statement, cst.FunctionDef) else scope
        for block in blocks_of(statement):
            if (found := _position(block, head, inner)) is not None:
                return found
    return None


def _never_placed(scope: cst.CSTNode, name: str) -> cst.BaseExpression | None:
    """What ``scope`` makes ``name`` with, where it binds ``name`` once, to what a call makes
    (``model = handpose_model()``), and every other use calls it or reads an attribute of it other
    than a placing method (``model.eval()``): nothing places it, nor gets it to place."""
    makers: list[cst.BaseExpression | None] = []  # what each binding of `name` makes it with
    for path in name_paths(scope, name):
        use, parent = path[-1], path[-2] if len(path) > 1 else None
        if isinstance(parent, cst.Attribute) and parent.attr is use or isinstance(parent, cst.Arg) and parent.keyword is use:
            continue  # `self.model`, `f(model=...)`: another name
        if isinstance(parent, cst.AssignTarget):
            assign = path[-3]
            single = isinstance(assign, cst.Assign) and len(assign.targets) == 1 and isinstance(assign.value, cst.Call)
            makers.append(assign.value.func if single else None)  # type: ignore[attr-defined]
            continue
        calls = isinstance(parent, cst.Call) and parent.func is use
        reads = isinstance(parent, cst.Attribute) and parent.value is use and parent.attr.value not in _PLACING
        if not (calls or reads or _into_own_state(path[:-1], name)):
            return None
    return makers[0] if len(makers) == 1 else None


def _holds_layers(ctx: FileContext, maker: cst.BaseExpression) -> bool:
    """``maker`` builds a module with weights: a class of the file that makes a layer or a parameter
    (``nn.Conv2d(...)``, ``nn.Parameter(...)``), or anything made elsewhere (a network imported
    from the project). A method of the object the code runs in (``self.get_gru_cell(self.rnn1)``)
    hands out what that object holds, placed with it: no new module."""
    if (dotted_name(maker) or "").split(".")[0] in ("", "self", "cls"):
        return False
    own = next((node for node in ctx.module.body if isinstance(node, cst.ClassDef) and isinstance(maker, cst.Name)
                and node.name.value == maker.value), None)
    if own is None:
        return True
    return any(isinstance(node, cst.Call) and (name := ctx.qualify(node.func) or "").startswith("torch.nn.")
               and name.rsplit(".", 1)[-1][:1].isupper() for node in iter_syntax(own))


def _into_own_state(path: Sequence[cst.CSTNode], name: str) -> bool:
    """The use at the end of ``path`` (its ancestors) is an argument of a call whose value the
    module loads as its state (``model.load_state_dict(transfer(model, weights))``): a helper
    that reads its keys, not one that places it."""
    return len(path) >= 4 and isinstance(path[-1], cst.Arg) and isinstance(path[-3], cst.Arg) \
        and isinstance(call := path[-4], cst.Call) and isinstance(call.func, cst.Attribute) \
        and call.func.attr.value == "load_state_dict" and isinstance(call.func.value, cst.Name) \
        and call.func.value.value == name

