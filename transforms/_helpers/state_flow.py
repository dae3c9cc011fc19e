"""Where a loaded checkpoint's tensors go: only into ``load_state_dict``, whatever the way.

Loading a pretrained backbone rarely hands the checkpoint straight to ``load_state_dict``: its keys
are renamed in place (``state[new] = state.pop(old)``), a filtered copy is made (``{k: v for k, v in
state.items() if k in own}``, ``OrderedDict([...])``), merged into the model's own state
(``own.update(state)``), or its shapes are read to build the model (``state["fc.weight"].size(0)``).
None of these keeps a tensor anywhere but in the dictionary that ``load_state_dict`` then copies
onto the parameters' device, so the tensors may be loaded on the CPU on every host.
"""

from __future__ import annotations

from collections.abc import Sequence

import libcst as cst

from neuronize.transforms._helpers.literals import is_false
from neuronize.transforms._helpers.nodes import read_paths

#: what a value may be read through on its way into ``load_state_dict`` (``ckpt["model"]``, ``.get(...)``)
_CARRIERS = (cst.Subscript, cst.SubscriptElement, cst.Index, cst.Arg, cst.Attribute, cst.Call)
#: what reads a tensor's or a dictionary's shape and keys, not its data
_SHAPES = frozenset({"size", "shape", "dim", "ndim", "numel", "dtype", "keys"})
_KEY_READERS = frozenset({"len", "list", "sorted", "set", "tuple"})
#: the methods that change a dictionary in place
_MUTATORS = frozenset({"update", "pop", "popitem", "setdefault", "__setitem__", "__delitem__"})
#: the comprehensions and containers a filtered copy of a state is built with
_BUILDERS = (cst.ListComp, cst.DictComp, cst.GeneratorExp, cst.SetComp, cst.Arg, cst.Call, cst.List, cst.Element,
             cst.Tuple)


def into_load_state_dict(path: Sequence[cst.CSTNode]) -> bool:
    """The value at the end of ``path`` (its ancestors, outermost first) is an argument of a
    ``load_state_dict(...)`` call, taken as it is or through subscripts and ``.get(...)``."""
    for node, child in zip(reversed(path[:-1]), reversed(path[1:]), strict=True):
        if isinstance(node, cst.Call) and child is not node.func:
            name = node.func.attr.value if isinstance(node.func, cst.Attribute) else None
            if name == "load_state_dict":  # `assign=True` keeps the loaded tensors where they are
                return not any(a.keyword is not None and a.keyword.value == "assign" and not is_false(a.value)
                               for a in node.args)
            if name != "get":
                return False
        elif not isinstance(node, _CARRIERS):
            return False
    return False


def state_only(scope: cst.CSTNode, name: str, assign: cst.CSTNode | None, seen: frozenset[str] = frozenset()) -> bool:
    """Every read of the variable ``name`` in ``scope`` (outside ``assign``, its assignment) keeps
    what it holds on its way into ``load_state_dict`` (see the module); a name being asked about
    already (``seen``) counts as such, which closes the loops of a merge (``own.update(state)``
    after ``state = {... zip(state.items(), own)}``)."""
    if name in seen:
        return True
    reads = read_paths(scope, name, assign)
    return bool(reads) and all(_keeps_state(scope, path, seen | {name}) for path in reads)


def _keeps_state(scope: cst.CSTNode, path: list[cst.CSTNode], seen: frozenset[str]) -> bool:
    if into_load_state_dict(path):
        return True
    read = path[-1]
    up = len(path) - 2
    while up >= 0 and isinstance(path[up], (cst.Subscript, cst.SubscriptElement, cst.Index)):
        read, up = path[up], up - 1  # `state["fc.weight"]`: an entry of it
    parent = path[up] if up >= 0 else None
    if isinstance(parent, cst.Attribute) and parent.value is read:
        method = parent.attr.value
        call = path[up - 1] if up >= 1 else None
        if method in _SHAPES:
            return True
        if method in _MUTATORS and isinstance(call, cst.Call) and call.func is parent:
            return method != "pop" or _stored_back(path[: up - 1], seen)
        if method in ("items", "values") and isinstance(call, cst.Call):
            return _copied_into_state(scope, path[: up - 1], seen)
    if isinstance(parent, cst.Arg) and up >= 1 and isinstance(call := path[up - 1], cst.Call):
        func = call.func
        if isinstance(func, cst.Name) and func.value in _KEY_READERS:
            return True
        if isinstance(func, cst.Attribute) and func.attr.value == "update" and isinstance(func.value, cst.Name):
            return state_only(scope, func.value.value, None, seen)
        return _copied_into_state(scope, path[: up - 1], seen)
    if isinstance(parent, cst.AssignTarget) or isinstance(parent, cst.Del):
        return True  # `state[new] = ...`, `del state[old]`: a change of the dictionary itself
    return isinstance(parent, cst.ComparisonTarget) and isinstance(parent.operator, (cst.In, cst.NotIn))


def _stored_back(path: list[cst.CSTNode], seen: frozenset[str]) -> bool:
    """``path`` ends at a ``state.pop(key)`` whose value is stored into a state again
    (``state[new] = state.pop(old)``)."""
    assign = next((node for node in reversed(path) if isinstance(node, cst.Assign)), None)
    return assign is not None and all(
        isinstance(t.target, cst.Subscript) and isinstance(t.target.value, cst.Name) and t.target.value.value in seen
        for t in assign.targets)


def _copied_into_state(scope: cst.CSTNode, path: list[cst.CSTNode], seen: frozenset[str]) -> bool:
    """``path`` ends inside a comprehension or container (``{k: v for k, v in state.items()}``,
    ``OrderedDict([...])``) whose value a name takes that :func:`state_only` keeps."""
    index = len(path) - 1
    while index >= 0 and isinstance(path[index], (*_BUILDERS, cst.CompFor, cst.Attribute)):
        index -= 1
    assign = path[index] if index >= 0 else None
    if not (isinstance(assign, cst.Assign) and len(assign.targets) == 1
            and isinstance(target := assign.targets[0].target, cst.Name)
            and any(isinstance(node, (cst.CompFor, cst.ListComp, cst.DictComp, cst.GeneratorExp))
                    for node in path[index + 1:])):
        return False
    return target.value in seen or state_only(scope, target.value, assign, seen)
