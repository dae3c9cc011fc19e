"""CUDA-only settings (cuDNN flags, CUDA backend flags, NVTX ranges, SDPA kernel contexts): the
rule skeleton of NRN350-NRN353, which delete setting statements and unwrap CUDA-only contexts."""

from __future__ import annotations

from typing import Any, ClassVar

import libcst as cst

from neuronize.context import FileContext
from neuronize.transform import Transform
from neuronize.transforms import _target
from neuronize.transforms._imports import removals_for
from neuronize.transforms._messages import short
from neuronize.transforms._names import last_name, local_names
from neuronize.transforms._nodes import assign_targets, has_call, is_expression_statement, unwrap_with

#: every settings namespace the NRN35x rules delete from; an assignment setting several is
#: handled by the rule owning its first target. Setting them is harmless on a Neuron host, so
#: it does not make guarded code CUDA-only either (reading them does: see ``_cuda_runtime``).
SETTING_PREFIXES = ("torch.backends.cudnn.", "torch.backends.cuda.")


class CudaOnlySettings(Transform):
    """Skeleton of the NRN35x rules: delete CUDA-only setting statements, unwrap CUDA-only contexts.

    Subclasses fill in the class attributes below and write the messages.
    """

    abstract = True

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
    #: why the setting means nothing on the target (ends the messages); a template of the
    #: target's vocabulary (``"... meaningless on {non_cuda}"``)
    why: ClassVar[str] = ""

    def __init__(self, ctx: FileContext) -> None:
        super().__init__(ctx)
        self._removed: set[int] = set()
        self.reason = _target.say(ctx, self.why)
        self._aliases = local_names(ctx, (*self.removable_calls, *self.contexts))
        cls = type(self)
        if "_last_names" not in cls.__dict__:
            cls._last_names = frozenset(  # type: ignore[attr-defined]
                q.rsplit(".", 1)[-1] for q in (*cls.removable_calls, *cls.contexts, *cls.report_calls)
            )

    #: every target: the settings are deleted (neuron, cpu) or kept for CUDA (accelerator)
    targets: ClassVar[tuple[str, ...]] = _target.ALL

    def _drop(self, statement: cst.CSTNode, what: str, reason: str, **kw: Any) -> None:
        """Delete the setting ``statement`` (``what`` it is, and why); under ``--target
        accelerator`` keep it for CUDA, guarded by ``if torch.cuda.is_available():``."""
        if _target.in_cuda_only_block(self.ctx):
            return  # already kept for CUDA under `if torch.cuda.is_available():`
        if _target.target(self.ctx) != _target.ACCELERATOR:
            self.remove(statement, f"{what} removed: {reason}", **kw)
            return
        line = self.ctx.statement_to_remove(statement)
        if not isinstance(line, cst.SimpleStatementLine):
            self.report(statement, f"{reason}: guard it with `if torch.cuda.is_available():` by hand")
            return
        new, imports = _target.guarded(self.ctx, line)
        self.fix(line, new, f"{what} kept for CUDA under `if torch.cuda.is_available():`: {reason}",
                 safety=kw.get("safety"), evidence=kw.get("evidence"), imports=imports)

    # -- hooks ----------------------------------------------------------------------------------
    def extra_note(self, qualified: str, node: cst.CSTNode) -> str:
        """More to say about one setting (appended to the message)."""
        return ""

    def keep_context(self, items: list[cst.WithItem]) -> str | None:
        """Why the context ``items`` (of the ``with`` being visited) must stay, if they must:
        the message of the report made instead."""
        return None

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
        flagged = [n for n in names if n is not None and n.startswith(SETTING_PREFIXES)]
        if not flagged or not self._own(flagged[0]):
            return  # not a setting, or another NRN35x rule owns the statement
        shown = ", ".join(f"`{short(t, 50)}`" for t, n in zip(targets, names, strict=False) if n in flagged)
        self._removed.add(id(node))
        if len(flagged) != len(targets):
            self.report(node, f"{shown}: {self.reason}; this assignment also sets something else, so remove "
                        "the CUDA part by hand")
            return
        reason = self.reason
        if has_call(node.value):
            reason += f" (`{short(node.value, 50)}` is no longer computed)"
        reason += self.extra_note(flagged[0], node)
        self._drop(node, f"`{short(node, 80)}`", reason, imports=removals_for(self.ctx, self.modules))

    def visit_Attribute(self, node: cst.Attribute) -> None:
        attr = node.attr.value
        if attr not in self.read_attrs and attr not in self._last_names:  # type: ignore[attr-defined]
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
            self.report(node, f"`{short(node, 50)}` is read here: {self.reason}; it keeps its default value there, "
                        "so review the code that depends on it")
        elif qualified in self.removable_calls or qualified in self.contexts:
            self.report(node, f"`{short(node, 50)}` is passed as a value: {self.reason}; remove its use by hand")

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
            self.report(node, f"`{node.value}` is passed as a value: {self.reason}; remove its use by hand")

    # -- calls ------------------------------------------------------------------------------------
    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if last_name(func) not in self._last_names:  # type: ignore[attr-defined]
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
                self._drop(self.ctx.parent, f"`{short(node.func, 50)}(...)`",  # type: ignore[arg-type]
                           f"{what}; {self.reason}" + self.extra_note(qualified, node),
                            imports=removals_for(self.ctx, (*self.modules, qualified)))
            else:
                self.report(node, f"`{short(node.func, 50)}(...)` is used as a value: {what}; {self.reason}; remove it "
                            "by hand")
        elif qualified in self.contexts:
            parent = self.ctx.parent
            if not isinstance(parent, cst.WithItem):
                self.report(node, f"`{short(node.func, 50)}(...)` outside a `with` statement: {self.contexts[qualified]}; "
                            f"{self.reason}; remove it by hand")

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
        kept = self.keep_context(drop)
        if kept is not None:
            self.report(node, kept)
            return
        inner = ", ".join(short(item.item, 50) for item in drop)
        shown = ", ".join(f"`{short(item.item, 50)}`" for item in drop)
        what = self.contexts[found[0]]
        result = unwrap_with(node, drop)
        if isinstance(result, str):
            self.report(node, f"{shown}: {what}; {self.reason}; unwrap it by hand: {result}")
            return
        if isinstance(result, cst.FlattenSentinel):
            message = f"`with {inner}:` removed, its body kept: {what}; {self.reason}"
        else:
            message = f"{shown} removed from the `with` statement: {what}; {self.reason}"
        self.fix(node, result, message + self.extra_note(found[0], node),
                 imports=removals_for(self.ctx, (*self.modules, *found)))

