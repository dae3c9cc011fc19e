"""NRN103: comparisons of a device with ``"cuda"``."""

from __future__ import annotations

import libcst as cst

from neuronize.transforms._helpers import hosts, per_target
from neuronize.analysis.context import FileContext
from neuronize.transform import Evidence, Example, Safety, Transform
from neuronize.transforms._helpers.device_choice import device_settings, validation_chain, validation_list, cuda_membership_list, idiom_branch, is_torch_device_call, rewrite_condition, rewrite_cuda_comparison, selection_if, selection_ifexp
from neuronize.transforms._helpers.literals import cuda_literal, string_like
from neuronize.transforms._helpers.device_model import (
    after_neuron_choice, covered_calls, covered_side, covering, in_dispatch_test, is_fallback, neuron_first_choice, places_on_tested,
    widening_group)
from neuronize.transforms._helpers.messages import short

GUARD_ADVICE = ("keep it if it guards a CUDA-only feature (fused AdamW, DataParallel, pinned memory, "
                "bitsandbytes, CUDA kernels); add `\"neuron\"` if Neuron should take this path")


def _widened(node: cst.If | cst.IfExp, placing: bool) -> str:
    """The message template of a guard widened to cover both devices (``placing``: its body only
    moves values onto the device it tests)."""
    where = ("`if {old}:` -> `if {new}:`: its body only moves values onto the device it tests" if placing
             else "`if {old}:` -> `if {new}:`: its body ({calls}) is migrated to host-neutral calls"
             if isinstance(node, cst.If) else
             "`... if {old} else ...` -> `... if {new} else ...`: its CUDA arm ({calls}) is migrated to host-neutral calls")
    return f"guard {where}, so the guard takes {{kind}} too and CUDA keeps it"


class CudaDeviceComparison(Transform):
    """Finds comparisons of a device with `"cuda"` (`device == "cuda"`, `"cuda" in device`).

    What it does:
        Looks at `d == "cuda"`, `d != "cuda:0"`, `d.type == "cuda"`, `"cuda" in d`,
        `str(d).startswith("cuda")` and membership tests such as `d in ("cuda", "mps")`.
        When the comparison chooses a device or a device type, the choice gains a Neuron choice
        in front, modelled on it, and keeps every host's branch:
        `device_type = "cuda" if "cuda" in device else "cpu"` becomes
        `device_type = "neuron" if "neuron" in device else "cuda" if "cuda" in device else "cpu"`,
        and `if device == "cuda": device_type = "cuda"` (a block that only assigns device
        settings) gets `if device == "neuron": device_type = "neuron"` in front, the original
        becoming its `elif`. A fallback from CUDA (`if device == "cuda" and not
        torch.cuda.is_available(): device = "cpu"`) stays as it is: the device default it tests
        stays host-aware (NRN101), and a `"neuron"` value appears only where Neuron is. (The CPU
        target rewrites the choice to the CPU instead.)
        A guard with no `else` whose body the runtime rules migrate to host-neutral calls (`if
        device.type == "cuda": torch.cuda.synchronize()` or `empty_cache()`) covers both devices:
        `device.type in ("cuda", "neuron")`; CUDA keeps it and Neuron takes it too (the
        accelerator target writes the same `"neuron"` choices: a string compare runs anywhere).
        A conditional expression likewise, when its CUDA arm is such a call or function reference
        and its other arm only stands in (a constant, `None`, a `lambda` returning one): `sync =
        torch.cuda.synchronize if device_type == "cuda" else (lambda: None)`, or with `!=` and the
        arms swapped. The widened test and the host-neutral edit are one edit group: neither is
        made without the other (a test widened around a CUDA call would run it on Neuron). A
        guard whose body only moves values onto the device it tests (`if "cuda" in device: w =
        w.to(self.device)`) does nothing CUDA-specific and covers both devices the same way. A
        CUDA arm that cannot be made host-neutral (`torch.cuda.max_memory_allocated`, which moves
        to a Neuron-only API) is left whole, its comparison reported. A device's own
        validation (`assert device in ["cuda", "cpu"]`) is NRN101's (it adds `"neuron"`); one written
        as a test per device (`if "cpu" not in device and "cuda" not in device: raise ...`) gains
        Neuron's test (`and "neuron" not in device`) here; the
        tests of a dispatch over devices are NRN107's (it adds a Neuron branch).
        Every other comparison is reported and left as it is: on Neuron it is False.

    Why on TorchNeuron:
        Once the device is `"neuron"`, every comparison with `"cuda"` is False. Where the
        comparison picks the device type this silently falls back to the CPU path (autocast
        turns into `nullcontext()`, tensors go to the CPU). But comparisons just as often guard
        CUDA-only features (fused AdamW, `DataParallel`, pinned-memory copies, 8-bit optimisers)
        that must stay off on Neuron, so those are only reported.

    Example:
        device_type = "cuda" if "cuda" in device else "cpu"
        use_fused = fused_available and device_type == "cuda"
        sync = torch.cuda.synchronize if device_type == "cuda" else (lambda: None)

    Use instead:
        device_type = "neuron" if "neuron" in device else "cuda" if "cuda" in device else "cpu"
        use_fused = fused_available and device_type == "cuda"  # reported: review by hand
        sync = torch.accelerator.synchronize if device_type in ("cuda", "neuron") else (lambda: None)

    Fix safety:
        Safe for the additive forms (a Neuron choice in front, a guard covering both devices):
        every other host takes the branch it took before. A widened guard is as safe as the edits
        of the code it guards, and made only with them. Unsafe on the CPU target, whose rewrite
        assumes the compared value now holds `"cpu"`.

    Evidence:
        INF: follows from the device name `"neuron"` (DOC: the TorchNeuron index page) and from what
        the guarded code does on another device.
    """

    id = "NRN103"
    name = "cuda-device-comparison"
    safety = Safety.UNSAFE
    evidence = Evidence.INF
    section = "review"
    effort = "low"
    references = (
        "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/index.html",
        "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/guides/torch-distributed.html",
        "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/setup/troubleshooting.html",
    )
    tokens = (b"cuda",)
    targets = per_target.ALL
    examples = (
        Example('device_type = "cuda" if "cuda" in device else "cpu"\n',
                'device_type = "neuron" if "neuron" in device else "cuda" if "cuda" in device else "cpu"\n'),
        Example('if device.type == "cuda":\n    model = nn.DataParallel(model)\n', None),
        Example('if args.device == "cuda":\n    device_type = "cuda"\nelse:\n    device_type = "cpu"\n',
                'if args.device == "neuron":\n    device_type = "neuron"\nelif args.device == "cuda":\n'
                '    device_type = "cuda"\nelse:\n    device_type = "cpu"\n'),
    )

    def __init__(self, ctx: FileContext) -> None:
        super().__init__(ctx)
        self._covered: set[int] = set()  # IfExp / If nodes rewritten as a unit

    def _fix_choice(self, node: cst.CSTNode, neuron_form: cst.CSTNode, template: str, *,
                    quote_test: bool = False, safety: Safety | None = None,
                    evidence: Evidence | None = None, group: str | None = hosts.DEVICE_CHOICE,
                    guard: cst.CSTNode | None = None, **fields: str) -> None:
        """Fix ``node`` with its Neuron rewrite carrying the target's device (``neuron_form`` with
        each ``"neuron"`` it wrote replaced), the message quoting the code written. A device choice
        moves with the device defaults it tests (:data:`hosts.DEVICE_CHOICE`)."""
        replacement, imports = per_target.retarget_literals(self.ctx, node, neuron_form)
        old, new = (node.test, neuron_form.test) if quote_test else (node, neuron_form)  # type: ignore[attr-defined]
        message = per_target.say(self.ctx, template, new=per_target.shown(self.ctx, old, new), **fields)
        if isinstance(node, cst.IfExp) and not isinstance(replacement, cst.IfExp):
            message = per_target.say(self.ctx, "device choice `... if {old} else ...` -> `{new}`: both branches "
                                  "are {platform}", old=short(node.test), new=short(replacement))
        self.fix(node, replacement, message, imports=imports, safety=safety, evidence=evidence, group=group, guard=guard)

    # -- device choices: rewritten -----------------------------------------------------------
    def _rewrite_choice(self, node: cst.IfExp) -> cst.IfExp:
        self._covered.add(id(node))
        return node.with_changes(test=rewrite_condition(node.test),
                                 body=self._rewrite_branch(node.body),
                                 orelse=self._rewrite_branch(node.orelse))

    def _rewrite_branch(self, branch: cst.BaseExpression) -> cst.BaseExpression:
        if cuda_literal(branch) is not None:
            return string_like(branch, "neuron")
        if is_torch_device_call(self.ctx, branch):
            assert isinstance(branch, cst.Call)
            args = branch.args
            if len(args) == 1 and args[0].keyword is None and cuda_literal(args[0].value) is not None:
                return branch.with_changes(args=[args[0].with_changes(value=string_like(args[0].value, "neuron"))])
        if isinstance(branch, cst.IfExp) and idiom_branch(self.ctx, branch) is None:
            return self._rewrite_choice(branch)
        return branch

    def visit_IfExp(self, node: cst.IfExp) -> None:
        if any(id(a) in self._covered for a in self.ctx.ancestors()):
            return
        if self._follows_body(node) or not selection_ifexp(self.ctx, node) or self._neuron_first(node):
            return
        self._fix_choice(node, self._rewrite_choice(node), "device choice `... if {old} else ...` -> "
                         "`... if {new} else ...` with its CUDA branches on {platform}: otherwise the "
                         "{kind} device falls back to the CPU path", old=short(node.test), quote_test=True)

    def visit_If(self, node: cst.If) -> None:
        if self._validates(node) or self._follows_body(node) or not selection_if(node) or self._neuron_first(node):
            return
        self._covered.add(id(node))
        self._fix_choice(node.test, rewrite_condition(node.test), "device choice `if {old}:` -> `if {new}:`: "
                         "otherwise the {kind} device falls back to the CPU path", old=short(node.test))
        for block in (node.body, node.orelse.body if isinstance(node.orelse, cst.Else) else None):
            self._fix_block(block)

    def visit_Assert(self, node: cst.Assert) -> None:
        self._validates(node)

    def _validates(self, node: cst.If | cst.Assert) -> bool:
        """A device validation with one test per accepted device gains Neuron's test, as a list of
        accepted devices gains ``"neuron"`` (NRN101): a default moved to Neuron must pass it."""
        joined = validation_chain(self.ctx, node)
        if joined is not None:
            self._covered.add(id(node))
            self._fix_choice(node.test, joined, "device validation `{old}` accepts {kind} too: `{new}`",
                             old=short(node.test), safety=Safety.SAFE, evidence=Evidence.DOC)
        return joined is not None

    def _neuron_first(self, node: cst.If | cst.IfExp) -> bool:
        """Off the CPU target a choice gains Neuron in front and keeps every host's branch
        (``_device_model.neuron_first_choice``); a fallback from CUDA stays as it is (the device
        default it tests stays host-aware). The CPU target moves the choice to the CPU."""
        if per_target.target(self.ctx) == per_target.CPU:
            return False
        self._covered.add(id(node))
        if after_neuron_choice(self.ctx, node):
            return True
        new = None if is_fallback(node) else neuron_first_choice(node)
        if new is not None:  # `"neuron"` on every target: a string compare, portable as it is
            self.fix(node, new, f"device choice `{short(node.test)}` gains a Neuron choice in front "
                     f"(`{short(new.test)}`); CUDA and the other hosts keep theirs", safety=Safety.SAFE,
                     evidence=Evidence.DOC, group=hosts.DEVICE_CHOICE)
        elif not is_fallback(node):
            self.report(node.test, f"device choice on `{short(node.test)}` kept for CUDA: its test does not name "
                                   "CUDA plainly; add a Neuron choice by hand", evidence=Evidence.INF)
        return True

    def _follows_body(self, node: cst.If | cst.IfExp) -> bool:
        """``if device.type == "cuda": torch.cuda.synchronize()``, ``sync = torch.cuda.synchronize
        if device.type == "cuda" else (lambda: None)``: the runtime rules migrate the CUDA side to
        host-neutral calls (``torch.accelerator.*``), so the guard covers both devices
        (``device.type in ("cuda", "neuron")``): CUDA keeps its path and Neuron takes it too, in
        one edit group with those calls (``_device_model.widening_group``). A guard around anything
        else stays CUDA's (``_device_model.covers_both``)."""
        if covered_side(self.ctx, node) is None:
            return False
        self._covered.add(id(node))
        placing = isinstance(node, cst.If) and places_on_tested(node)  # no CUDA call to group with
        self._fix_choice(node.test, covering(node.test), _widened(node, placing), old=short(node.test),
                         calls="" if placing else covered_calls(self.ctx, node),
                         safety=Safety.SAFE, evidence=Evidence.DOC, guard=None if placing else node,
                         group=hosts.DEVICE_CHOICE if placing else widening_group(self.ctx, node))
        return True

    def _fix_block(self, block: cst.BaseSuite | None) -> None:
        for value, target in device_settings(block):
            self._fix_choice(value, string_like(value, "neuron"), "`{name}` chosen by a CUDA comparison: `{old}` -> "
                             "`{new}`", name=short(target), old=short(value))

    # -- everything else: reported -------------------------------------------------------------
    def _owner_covered(self) -> bool:
        """Whether the comparison being visited is (part of) the test of a rewritten choice."""
        child = self.ctx.stack[-1]
        for anc in self.ctx.ancestors():
            if isinstance(anc, cst.BooleanOperation) or (
                    isinstance(anc, cst.UnaryOperation) and isinstance(anc.operator, cst.Not)):
                child = anc
                continue
            return isinstance(anc, (cst.IfExp, cst.If, cst.Assert)) and anc.test is child and id(anc) in self._covered
        return False

    def _check(self, node: cst.BaseExpression) -> None:
        rewritten = rewrite_cuda_comparison(node)
        if rewritten is None and not cuda_membership_list(node):
            return
        if rewritten is not None and self._owner_covered() or in_dispatch_test(self.ctx):
            return  # a dispatch over devices gains a Neuron branch (NRN107)
        if isinstance(node, cst.Comparison) and validation_list(self.ctx, node) is not None:
            return  # NRN101 adds the target's device to the accepted names
        code = short(node)
        if rewritten is None:
            self.report(node, f"`{code}` lists CUDA but not Neuron: {GUARD_ADVICE}")
        else:
            self.report(node, f"`{code}` is False on Neuron: {GUARD_ADVICE}")

    def visit_Comparison(self, node: cst.Comparison) -> None:
        self._check(node)

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value == "startswith":
            self._check(node)
