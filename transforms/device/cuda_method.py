"""NRN102: ``x.cuda()`` -> ``x.to("neuron")``."""

from __future__ import annotations

from itertools import pairwise

import libcst as cst

from neuronize.analysis.context import FileContext
from neuronize.transforms._helpers import hosts, per_target
from neuronize.transform import Evidence, Example, Safety, Transform
from neuronize.transforms._helpers.device_model import KeepsCudaBranches, keeps_cuda_hosts
from neuronize.transforms._helpers.device_variable import chosen_device
from neuronize.transforms._helpers.literals import make_string
from neuronize.transforms._helpers.calls import keyword, new_keyword
from neuronize.transforms._helpers.nodes import in_place


#: what dropping the device index means, per target
INDEX_NOTE = {
    per_target.NEURON: "each process sees one Neuron device; review single-process multi-device code",
    per_target.CPU: "the index is dropped (the CPU is one device)",
    per_target.ACCELERATOR: "the index is dropped (torchrun code selects its GPU with `torch.cuda.set_device`, "
                         "kept for CUDA); review single-process multi-device code",
}

#: what the messages say in a file that keeps its CUDA hosts (``device_model.keeps_cuda_hosts``)
KEPT_FOR_CUDA = {True: " on Neuron, `.cuda(i)` kept for CUDA hosts", False: ""}
AWARE = '`.cuda()` -> `.to("neuron" if <the accelerator is Neuron> else "cuda")`: CUDA hosts keep CUDA, as the program\'s device choice does'


class CudaMethod(KeepsCudaBranches, Transform):
    """Finds `.cuda()` calls that place a tensor or module on a CUDA device.

    What it does:
        Rewrites `x.cuda()`, `x.cuda(i)` and `x.cuda(non_blocking=True)`, keeping
        `non_blocking=`. On the `neuron` target the move is host-aware, so that the CUDA box the
        code was written for keeps it (`.to("neuron" if <the accelerator is Neuron> else "cuda")`;
        with an index, `x.to("neuron") if <the accelerator is Neuron> else x.cuda(i)`), names the program's device
        variable where it can see one (`.to(device)`), or, in a method of a class that places its
        data with `.to(self.device)`, that attribute. A `.cuda()` in code only CUDA runs (under
        `with torch.cuda.device(i):`, a branch kept for CUDA) is reported, not moved.

    Why on TorchNeuron:
        There is no CUDA device on Trainium. The documented spelling of placement is
        `.to("neuron")`; under a `"neuron"` process group every process sees exactly one device,
        so a device index (`.cuda(local_rank)`) is dropped.

    Example:
        model = model.cuda()
        x = x.cuda(non_blocking=True)

    Use instead:
        model = model.to("neuron")
        x = x.to("neuron", non_blocking=True)

    Fix safety:
        Safe without an index. With an index (`.cuda(1)`) the fix is unsafe: single-process code
        that spreads work over several devices must be reviewed (`torch.neuron.set_device`).

    Evidence:
        DOC: the TorchNeuron index page ("change `.to('cuda')` to `.to('neuron')`"); the index
        policy is INF.
    """

    id = "NRN102"
    name = "cuda-method"
    safety = Safety.SAFE
    evidence = Evidence.DOC
    section = "device"
    references = (
        "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/index.html",
        "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/guides/torch-distributed.html",
        "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/setup/troubleshooting.html",
    )
    tokens = (b".cuda(",)
    targets = per_target.ALL
    examples = (
        Example("model = Net().cuda()\n", ('import torch\n'
                '\n'
                'model = Net().to("neuron" if hasattr(torch, "accelerator") and torch.accelerator.is_available() and torch.accelerator.current_accelerator().type == "neuron" else "cuda")\n')),
        Example("x = x.cuda(non_blocking=True)\n", ('import torch\n'
                '\n'
                'x = x.to("neuron" if hasattr(torch, "accelerator") and torch.accelerator.is_available() and torch.accelerator.current_accelerator().type == "neuron" else "cuda", non_blocking=True)\n')),
        Example("x = x.cuda(rank)\n", ('import torch\n'
                '\n'
                'x = x.to("neuron") if hasattr(torch, "accelerator") and torch.accelerator.is_available() and torch.accelerator.current_accelerator().type == "neuron" else x.cuda(rank)\n')),
    )

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if not (isinstance(func, cst.Attribute) and func.attr.value == "cuda"):
            return
        if self.ctx.qualify(func) is not None:
            return  # `torch.cuda(...)` is not a method call on a tensor
        if any(a.star for a in node.args):
            return
        device_arg = keyword(node, "device")
        positional = [a for a in node.args if a.keyword is None]
        unknown = [a for a in node.args if a.keyword is not None
                   and a.keyword.value not in ("device", "non_blocking", "memory_format")]
        if unknown or len(positional) > 1:
            self.report(node, "`.cuda(...)` with unusual arguments: move it to `.to(\"neuron\")` by hand")
            return
        indexed = bool(positional) or device_arg is not None
        keep = [a for a in node.args if a.keyword is not None and a.keyword.value != "device"]
        keeps_cuda = keeps_cuda_hosts(self.ctx)  # the CUDA box this file serves keeps its placements
        cuda, aware = make_string("cuda"), keeps_cuda and not indexed
        chosen = chosen_device(self.ctx, cuda) if aware else None  # the program's device variable, if it has one
        value, imports = ((chosen.replacement, chosen.imports) if chosen is not None
                          else hosts.host_aware(self.ctx, cuda) if aware else per_target.device(self.ctx))
        # a storage's `.to` takes its device by keyword only (a map_location's `storage.cuda()`)
        device = new_keyword("device", value) if _is_storage(self.ctx, func.value) else cst.Arg(value=value)
        args = [device, *keep]
        if keep:
            # In a multi-line call the new first argument gets a line of its own, like the rest.
            after: cst.BaseParenthesizableWhitespace = cst.SimpleWhitespace(" ")
            if isinstance(node.whitespace_before_args, cst.ParenthesizedWhitespace):
                after = node.whitespace_before_args
            args[0] = device.with_changes(comma=cst.Comma(whitespace_after=after))
            args[-1] = args[-1].with_changes(comma=node.args[-1].comma)
        replacement: cst.BaseExpression = node.with_changes(func=func.with_changes(attr=cst.Name("to")), args=args)
        if keeps_cuda and indexed:  # the CUDA box keeps its own index: `(x.to("neuron") if <Neuron> else x.cuda(i))`
            test, more = per_target.available(self.ctx)
            replacement = in_place(cst.IfExp(test=test, body=replacement, orelse=node), node, self.ctx.parent)
            imports = (*imports, *more)
        if indexed:
            self.fix(node, replacement, per_target.say(self.ctx, "`.cuda(i)` -> `.to({device})`{kept}: {note}",
                                                    kept=KEPT_FOR_CUDA[keeps_cuda], note=INDEX_NOTE[per_target.target(self.ctx)]),
                     safety=Safety.UNSAFE, evidence=Evidence.INF, imports=imports, group=hosts.same_device_group(self.ctx))
        else:
            message = (f"`.cuda()` -> `.to({per_target.spell(self.ctx, value)})`{chosen.note}" if chosen is not None
                       else AWARE if keeps_cuda else per_target.say(self.ctx, "`.cuda()` -> `.to({device})`"))
            self.fix(node, replacement, message,
                     imports=imports,
                     group=hosts.same_device_group(self.ctx))


_STORAGE_METHODS = frozenset({"storage", "untyped_storage", "_typed_storage"})


def _is_storage(ctx: FileContext, receiver: cst.BaseExpression) -> bool:
    """``receiver`` is a storage: a ``.storage()`` of a tensor, or the first parameter of the
    ``lambda storage, loc: ...`` that ``torch.load`` calls as its ``map_location``."""
    if isinstance(receiver, cst.Call) and isinstance(receiver.func, cst.Attribute):
        return receiver.func.attr.value in _STORAGE_METHODS
    if not isinstance(receiver, cst.Name):
        return False
    for anc, parent in pairwise(ctx.ancestors()):
        if isinstance(anc, cst.Lambda):
            params = anc.params.params
            return bool(params) and params[0].name.value == receiver.value and isinstance(parent, cst.Arg) \
                and parent.keyword is not None and parent.keyword.value == "map_location"
    return False
