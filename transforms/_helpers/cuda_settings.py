"""CUDA-only settings (cuDNN flags, CUDA backend flags, NVTX ranges, SDPA kernel contexts): the
rule skeleton of NRN350-NRN353, which delete setting statements and unwrap CUDA-only contexts."""

from __future__ import annotations

from typing import Any, ClassVar

import libcst as cst

from neuronize.analysis.context import FileContext
from neuronize.transform import Transform
from neuronize.types import Target
from neuronize.transforms._helpers import per_target
from neuronize.transforms._helpers.device_model import KeepsCudaBranches, cuda_keeping, keeps_cuda_hosts, kept_for_cuda
from neuronize.transforms._helpers.imports import removals_for
from neuronize.transforms._helpers.messages import short
from neuronize.transforms._helpers.names import last_name, local_names
from neuronize.analysis.subtrees import has_call
from neuronize.transforms._helpers.nodes import assign_targets, is_expression_statement, unwrap_with

#: every settings namespace the NRN35x rules delete from; an assignment setting several is
#: handled by the rule owning its first target. Setting them is harmless on a Neuron host, so
#: it does not make guarded code CUDA-only either (reading them does: see ``_cuda_runtime``).
SETTING_PREFIXES = ("torch.backends.cudnn.", "torch.backends.cuda.")


def setting_targets(ctx: FileContext, node: cst.Assign | cst.AugAssign) -> tuple[list[str], str, bool]:
    """What an assignment sets among the CUDA-only settings (:data:`SETTING_PREFIXES`): their
    qualified names (first target first), how a message shows them, and whether the assignment
    sets something else too (then the CUDA part is removed by hand)."""
    targets = assign_targets(node)
    names = [ctx.qualify(t) if isinstance(t, cst.Attribute) else None for t in targets]
    flagged = [n for n in names if n is not None and n.startswith(SETTING_PREFIXES)]
    shown = ", ".join(f"`{short(t, 50)}`" for t, n in zip(targets, names, strict=False) if n in flagged)
    return flagged, shown, len(flagged) != len(targets)


def context_items(ctx: FileContext, node: cst.With, contexts: dict[str, str]) -> list[tuple[cst.WithItem, str]]:
    """The items of a ``with`` statement that enter one of ``contexts``, with its qualified name."""
    found: list[tuple[cst.WithItem, str]] = []
    for item in node.items:
        call = item.item
        qualified = ctx.qualify(call.func) if isinstance(call, cst.Call) else None
        if qualified is not None and qualified in contexts:
            found.append((item, qualified))
    return found


def plan_unwrap(node: cst.With, drop: list[cst.WithItem], what: str,
                reason: str) -> tuple[cst.CSTNode | cst.FlattenSentinel[cst.BaseStatement] | None, str]:
    """The ``with`` statement without the items ``drop`` (its body kept where no item is left),
    and the message of the fix; no statement, and the message of a report, where that cannot be
    done mechanically."""
    inner = ", ".join(short(item.item, 50) for item in drop)
    shown = ", ".join(f"`{short(item.item, 50)}`" for item in drop)
    result = unwrap_with(node, drop)
    if isinstance(result, str):
        return None, f"{shown}: {what}; {reason}; unwrap it by hand: {result}"
    if isinstance(result, cst.FlattenSentinel):
        return result, f"`with {inner}:` removed, its body kept: {what}; {reason}"
    return result, f"{shown} removed from the `with` statement: {what}; {reason}"


def used_as_value(ctx: FileContext, node: cst.Name | cst.Attribute) -> bool:
    """The name or attribute being visited is used as a value: not called, assigned, deleted,
    imported, nor the base of a longer attribute."""
    parent = ctx.parent
    if isinstance(parent, cst.Call) and parent.func is node:
        return False
    if isinstance(node, cst.Name) and isinstance(parent, (cst.ImportAlias, cst.AsName)):
        return False
    return not isinstance(parent, (cst.AssignTarget, cst.AugAssign, cst.Del, cst.Attribute, cst.ImportFrom))


def read_back(node: cst.Assign | cst.AugAssign) -> bool:
    """``cudnn.benchmark = self.saved``: the setting takes a value read back (restored state, a
    user's option), not a literal; deleted, the state it restores is lost."""
    value = node.value
    return isinstance(node, cst.Assign) and isinstance(value, (cst.Name, cst.Attribute)) and not (
        isinstance(value, cst.Name) and value.value in ("True", "False", "None"))


class CudaOnlySettings(KeepsCudaBranches, Transform):
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
    #: setting them is harmless where CUDA is absent (a plain attribute or flag nobody reads), so
    #: a file that keeps its CUDA hosts keeps them for CUDA instead of deleting them
    harmless_elsewhere: ClassVar[bool] = False

    def __init__(self, ctx: FileContext) -> None:
        super().__init__(ctx)
        self._removed: set[int] = set()
        self.reason = per_target.say(ctx, self.why)
        self._aliases = local_names(ctx, (*self.removable_calls, *self.contexts))
        cls = type(self)
        if "_last_names" not in cls.__dict__:
            cls._last_names = frozenset(  # type: ignore[attr-defined]
                q.rsplit(".", 1)[-1] for q in (*cls.removable_calls, *cls.contexts, *cls.report_calls)
            )

    #: every target: the settings are deleted (neuron, cpu) or kept for CUDA (accelerator)
    targets: ClassVar[tuple[Target, ...]] = per_target.ALL

    def _drop(self, statement: cst.CSTNode, what: str, reason: str, **kw: Any) -> None:
        """Delete the setting ``statement`` (``what`` it is, and why); under ``--target
        accelerator`` keep it for CUDA, guarded by ``if torch.cuda.is_available():``; in a file
        that keeps its CUDA hosts, keep a setting harmless elsewhere as it is (reported)."""
        if per_target.in_cuda_only_block(self.ctx) or _kept_for_cuda_hosts(self, statement, what, reason, kw.get("evidence")):
            return  # already kept for CUDA under `if torch.cuda.is_available():`, or harmless: kept
        line = self.ctx.statement_to_remove(statement)
        if keeps_cuda_hosts(self.ctx) and not self.harmless_elsewhere and isinstance(line, cst.SimpleStatementLine):
            # the CUDA box keeps its path: the call stays there, Neuron skips it
            new, imports = kept_for_cuda(self.ctx, line)
            self.fix(line, new, f"{what} kept for every host but Neuron: {reason}", safety=kw.get("safety"),
                     evidence=kw.get("evidence"), imports=(*imports, *kw.get("imports", ())))
            return
        if per_target.target(self.ctx) != per_target.ACCELERATOR:
            self.remove(statement, f"{what} removed: {reason}", **kw)
            return
        if not isinstance(line, cst.SimpleStatementLine):
            self.report(statement, f"{reason}: guard it with `if torch.cuda.is_available():` by hand")
            return
        early = per_target.guard_too_early(self.ctx)
        if early is not None:
            self.report(statement, f"{what} kept as it is: {reason}, and harmless there; an `if "
                        f"torch.cuda.is_available():` guard would query CUDA at import, and {early}")
            return
        new, imports = per_target.guarded(self.ctx, line)
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
        flagged, shown, mixed = setting_targets(self.ctx, node)
        if not flagged or not self._own(flagged[0]):
            return  # not a setting, or another NRN35x rule owns the statement
        self._removed.add(id(node))
        if mixed:
            self.report(node, f"{shown}: {self.reason}; this assignment also sets something else, so remove "
                        "the CUDA part by hand")
            return
        reason = self.reason
        if self.harmless_elsewhere and read_back(node) and not per_target.in_cuda_only_block(self.ctx):
            self.report(node, f"`{short(node, 80)}` kept: {reason}, but it sets a value the code read or was "
                        "given (restored state, an option), harmless on every host", harmless=True)
            return
        if has_call(node.value):
            reason += f" (`{short(node.value, 50)}` is no longer computed)"
        reason += self.extra_note(flagged[0], node)
        self._drop(node, f"`{short(node, 80)}`", reason, imports=removals_for(self.ctx, self.modules))

    def visit_Attribute(self, node: cst.Attribute) -> None:
        attr = node.attr.value
        if attr not in self.read_attrs and attr not in self._last_names:  # type: ignore[attr-defined]
            return
        qualified = self.ctx.qualify(node)
        if qualified is None or not used_as_value(self.ctx, node):
            return
        if any(id(a) in self._removed for a in self.ctx.ancestors()):
            return
        if attr in self.read_attrs and self._own(qualified):
            self.report(node, f"`{short(node, 50)}` is read here: {self.reason}; it keeps its default value there, "
                        "so review the code that depends on it")
        elif qualified in self.removable_calls or qualified in self.contexts:
            self.report(node, f"`{short(node, 50)}` is passed as a value: {self.reason}; remove its use by hand")

    def visit_Name(self, node: cst.Name) -> None:
        if node.value not in self._aliases or not used_as_value(self.ctx, node):
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
        found = context_items(self.ctx, node, self.contexts)
        if not found:
            return
        drop = [item for item, _ in found]
        kept = self.keep_context(drop)
        if kept is not None:
            self.report(node, kept)
            return
        first = found[0][1]
        if _kept_for_cuda_hosts(self, node, f"`with {short(drop[0].item, 50)}:`", self.reason):
            return
        result, message = plan_unwrap(node, drop, self.contexts[first], self.reason)
        if result is None:
            self.report(node, message)
            return
        self.fix(node, result, message + self.extra_note(first, node),
                 imports=removals_for(self.ctx, (*self.modules, *(q for _, q in found))))


def _kept_for_cuda_hosts(rule: CudaOnlySettings, node: cst.CSTNode, what: str, reason: str, evidence: Any = None) -> bool:
    """A setting harmless where CUDA is absent stays as it is in a file that keeps its CUDA hosts:
    the CUDA box keeps what it set, and Neuron ignores it. A setting statement is reported; a
    context (``with sdpa_kernel(...):``) is left silently, as its block is code Neuron runs too
    (a report would hold back the guard around it)."""
    if not (rule.harmless_elsewhere and keeps_cuda_hosts(rule.ctx)):
        return False
    if cuda_keeping(rule.ctx) != "" and not isinstance(node, cst.With):  # "": a CUDA branch with a Neuron sibling
        rule.report(node, f"{what} kept for CUDA hosts: {reason}, but harmless there, and this file "
                    "keeps CUDA on its path (its device choice is host-aware), where it still applies",
                    evidence=evidence)
    return True
