"""NRN103: comparisons of a device with ``"cuda"``."""

from __future__ import annotations

import libcst as cst

from neuronize.transforms import _host, _target
from neuronize.context import FileContext
from neuronize.transform import Evidence, Example, Safety, Transform
from neuronize.transforms._device_choice import has_cuda_comparison, validation_list, cuda_membership_list, device_named, idiom_branch, is_torch_device_call, rewrite_condition, rewrite_cuda_comparison, selection_if, selection_ifexp
from neuronize.transforms._literals import cuda_literal, string_like
from neuronize.transforms._messages import short
from neuronize.transforms._names import target_name
from neuronize.transforms._calls import is_cuda_available_call
from neuronize.transforms._cuda_guard import SAFE_FOLLOWING_CALLS, migrated_body_calls
from neuronize.transforms._nodes import iter_conditions

GUARD_ADVICE = ("keep it if it guards a CUDA-only feature (fused AdamW, DataParallel, pinned memory, "
                "bitsandbytes, CUDA kernels); add `\"neuron\"` if Neuron should take this path")


class CudaDeviceComparison(Transform):
    """Finds comparisons of a device with `"cuda"` (`device == "cuda"`, `"cuda" in device`).

    What it does:
        Looks at `d == "cuda"`, `d != "cuda:0"`, `d.type == "cuda"`, `"cuda" in d`,
        `str(d).startswith("cuda")` and membership tests such as `d in ("cuda", "mps")`.
        When the comparison chooses a device or a device type, it is rewritten together with
        the CUDA branches it chooses between:
        `device_type = "cuda" if "cuda" in device else "cpu"` becomes
        `device_type = "neuron" if "neuron" in device else "cpu"`, and
        `if device == "cuda": device_type = "cuda"` (a block that only assigns device settings)
        becomes `if device == "neuron": device_type = "neuron"`.
        A guard whose body the runtime rules migrate whole (`if device.type == "cuda":
        torch.cuda.synchronize()`, seeding, cache control) follows its body:
        `device.type == "neuron"` (the target's device on the other targets, for `synchronize`),
        or Neuron would never take it; safe when the body is only `synchronize`. A device's own
        validation (`assert device in ["cuda", "cpu"]`) is NRN101's (it adds `"neuron"`).
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

    Use instead:
        device_type = "neuron" if "neuron" in device else "cpu"
        use_fused = fused_available and device_type == "cuda"  # reported: review by hand

    Fix safety:
        Unsafe (safe for a guard around `synchronize` alone): the rewrite assumes the compared value now holds `"neuron"` (it does once the
        device setting is migrated by NRN101) and that nothing downstream needs `"cuda"`.

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
    targets = _target.ALL
    examples = (
        Example('device_type = "cuda" if "cuda" in device else "cpu"\n',
                'device_type = "neuron" if "neuron" in device else "cpu"\n'),
        Example('if device.type == "cuda":\n    model = nn.DataParallel(model)\n', None),
        Example('if args.device == "cuda":\n    device_type = "cuda"\nelse:\n    device_type = "cpu"\n',
                'if args.device == "neuron":\n    device_type = "neuron"\nelse:\n    device_type = "cpu"\n'),
    )

    def __init__(self, ctx: FileContext) -> None:
        super().__init__(ctx)
        self._covered: set[int] = set()  # IfExp / If nodes rewritten as a unit

    def _fix_choice(self, node: cst.CSTNode, neuron_form: cst.CSTNode, template: str, *,
                    quote_test: bool = False, safety: Safety | None = None,
                    evidence: Evidence | None = None, group: str | None = _host.DEVICE_CHOICE,
                    **fields: str) -> None:
        """Fix ``node`` with its Neuron rewrite carrying the target's device (``neuron_form`` with
        each ``"neuron"`` it wrote replaced), the message quoting the code written. A device choice
        moves with the device defaults it tests (:data:`_host.DEVICE_CHOICE`)."""
        replacement, imports = _target.retarget_literals(self.ctx, node, neuron_form)
        old, new = (node.test, neuron_form.test) if quote_test else (node, neuron_form)  # type: ignore[attr-defined]
        message = _target.say(self.ctx, template, new=_target.shown(self.ctx, old, new), **fields)
        if isinstance(node, cst.IfExp) and not isinstance(replacement, cst.IfExp):
            message = _target.say(self.ctx, "device choice `... if {old} else ...` -> `{new}`: both branches "
                                  "are {platform}", old=short(node.test), new=short(replacement))
        self.fix(node, replacement, message, imports=imports, safety=safety, evidence=evidence, group=group)

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
        if not selection_ifexp(self.ctx, node):
            return
        self._fix_choice(node, self._rewrite_choice(node), "device choice `... if {old} else ...` -> "
                         "`... if {new} else ...` with its CUDA branches on {platform}: otherwise the "
                         "{kind} device falls back to the CPU path", old=short(node.test), quote_test=True)

    def visit_If(self, node: cst.If) -> None:
        if self._follows_body(node):
            return
        if not selection_if(node):
            return
        self._covered.add(id(node))
        self._fix_choice(node.test, rewrite_condition(node.test), "device choice `if {old}:` -> `if {new}:`: "
                         "otherwise the {kind} device falls back to the CPU path", old=short(node.test))
        for block in (node.body, node.orelse.body if isinstance(node.orelse, cst.Else) else None):
            self._fix_block(block)

    def _follows_body(self, node: cst.If) -> bool:
        """``if device.type == "cuda": torch.cuda.synchronize()``: the runtime rules migrate every
        statement of the body, so the guard follows (``== "neuron"``; the target's device on the
        others, which migrate only ``synchronize`` this way) or Neuron would never be
        synchronised. Safe when the body is only ``synchronize`` (NRN111, safe); on the neuron
        target the other hosts skip the body as before."""
        if node.orelse is not None:
            return False
        if not has_cuda_comparison(node.test):
            return False
        if not all(rewrite_cuda_comparison(atom) is not None or is_cuda_available_call(self.ctx, atom)
                   for atom in iter_conditions(node.test)):
            return False
        calls = migrated_body_calls(self.ctx, node.body)
        if calls is None:
            return False
        if _target.target(self.ctx) != _target.NEURON and not set(calls) <= SAFE_FOLLOWING_CALLS:
            return False  # other targets migrate only `synchronize` the same way everywhere
        self._covered.add(id(node))
        safe = set(calls) <= SAFE_FOLLOWING_CALLS
        self._fix_choice(node.test, rewrite_condition(node.test), "guard `if {old}:` -> `if {new}:`: its body "
                         "({calls}) is migrated, so the guard follows or {kind} would never take it",
                         old=short(node.test), calls=", ".join(f"`torch.cuda.{c}()`" for c in calls),
                         safety=Safety.SAFE if safe else None, evidence=Evidence.DOC if safe else None, group=None)
        return True

    def _fix_block(self, block: cst.BaseSuite | None) -> None:
        if block is None:
            return
        lines = block.body if isinstance(block, cst.IndentedBlock) else [block]
        for line in lines:
            for small in getattr(line, "body", ()):
                if isinstance(small, (cst.Assign, cst.AnnAssign)) and small.value is not None:
                    value = small.value
                    if cuda_literal(value) is not None:
                        target = small.targets[0].target if isinstance(small, cst.Assign) else small.target
                        if device_named(target_name(target)):
                            self._fix_choice(value, string_like(value, "neuron"),
                                             "`{name}` chosen by a CUDA comparison: `{old}` -> `{new}`",
                                             name=short(target), old=short(value))

    # -- everything else: reported -------------------------------------------------------------
    def _owner_covered(self) -> bool:
        """Whether the comparison being visited is (part of) the test of a rewritten choice."""
        child = self.ctx.stack[-1]
        for anc in self.ctx.ancestors():
            if isinstance(anc, cst.BooleanOperation) or (
                    isinstance(anc, cst.UnaryOperation) and isinstance(anc.operator, cst.Not)):
                child = anc
                continue
            return isinstance(anc, (cst.IfExp, cst.If)) and anc.test is child and id(anc) in self._covered
        return False

    def _check(self, node: cst.BaseExpression) -> None:
        rewritten = rewrite_cuda_comparison(node)
        if rewritten is None and not cuda_membership_list(node):
            return
        if rewritten is not None and self._owner_covered():
            return
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
