"""NRN108: ``torch.load(path)`` with no ``map_location`` in code written for CUDA."""

from __future__ import annotations

import libcst as cst

from neuronize.analysis.context import FileContext
from neuronize.transform import Evidence, Example, Safety, Transform
from neuronize.transforms._helpers import per_target
from neuronize.transforms._helpers.calls import keyword, with_keyword
from neuronize.transforms._helpers.literals import make_string
from neuronize.transforms._helpers.state_flow import into_load_state_dict, state_only


class CheckpointLoadDevice(Transform):
    """Finds `torch.load(path)` with no `map_location` in a file written for CUDA.

    What it does:
        Adds `map_location="cpu"` where everything loaded goes into `load_state_dict(...)`
        (`model.load_state_dict(torch.load(path))`, or a checkpoint variable, or one entry of it
        (`state = torch.load(path)["model"]`), whose every read is an argument of one,
        `ckpt["model"]` included, or keeps its tensors in a dictionary that one takes: keys
        renamed or deleted in place, a filtered copy `{k: v for k, v in state.items() if ...}`,
        a merge `own.update(state)`, a shape read to build the model). Elsewhere (a whole pickled
        model, a tensor used as it is) it adds `map_location="cpu" if <the accelerator is Neuron>
        else None`: every other host loads the checkpoint where it did. A file that names no CUDA
        gets the fix only where everything loaded feeds `load_state_dict` and another file of the
        project chooses among hosts (its checkpoints are saved where the program ran, a CUDA GPU
        among them). A call that spreads arguments
        (`torch.load(path, **kw)`) is left alone: they may hold a `map_location` already.

    Why on TorchNeuron:
        `torch.load` puts each tensor back on the device it was saved from, and raises when that
        device is not there: a checkpoint saved on a CUDA GPU does not load on a Trainium host,
        which has no CUDA. Loaded on the CPU, `load_state_dict` copies it onto the model's device,
        whichever that is.

    Example:
        model.load_state_dict(torch.load("model.pt"))

    Use instead:
        model.load_state_dict(torch.load("model.pt", map_location="cpu"))

    Fix safety:
        Safe. Where the loaded tensors only feed `load_state_dict`, which copies them onto the
        parameters' device on every host (`Optimizer.load_state_dict` moves its state there too;
        not with `assign=True`, which keeps the loaded tensors), the CPU is right everywhere.
        Elsewhere only Neuron loads onto the CPU, where the original raised; a whole pickled model
        there needs a `.to(device)` (its parameters) and may keep plain tensor attributes on the
        CPU: review those on Trainium.

    Evidence:
        DOC: PyTorch's `torch.load` documentation (tensors are restored to the device they were
        saved from; a missing device raises).
    """

    id = "NRN108"
    name = "checkpoint-load-device"
    safety = Safety.SAFE
    evidence = Evidence.DOC
    section = "device"
    references = ("https://docs.pytorch.org/docs/stable/generated/torch.load.html",)
    tokens = (b"cuda", b"torch.load")
    targets = per_target.ALL
    examples = (
        Example('import torch\nmodel.load_state_dict(torch.load("model.pt"))\nmodel.cuda()\n',
                'import torch\nmodel.load_state_dict(torch.load("model.pt", map_location="cpu"))\nmodel.cuda()\n',
                unsafe_fixes=False),
        Example('import torch\nckpt = torch.load(path)\nnet.load_state_dict(ckpt["net"])\nopt.load_state_dict(ckpt["opt"])\n'
                'net.cuda()\n',
                'import torch\nckpt = torch.load(path, map_location="cpu")\nnet.load_state_dict(ckpt["net"])\n'
                'opt.load_state_dict(ckpt["opt"])\nnet.cuda()\n', unsafe_fixes=False),
        Example('import torch\nmodel = torch.load("model.pt")\nmodel.cuda()\n',
                'import torch\nmodel = torch.load("model.pt", map_location="cpu" if hasattr(torch, "accelerator") and '
                'torch.accelerator.is_available() and torch.accelerator.current_accelerator().type == "neuron" '
                'else None)\nmodel.cuda()\n'),
        Example('import torch\nstate = torch.load(path, "cpu")\nx.cuda()\n', finds=False),
    )

    def __init__(self, ctx: FileContext) -> None:
        super().__init__(ctx)
        self._loads = b"load" in ctx.source

    def visit_Call(self, node: cst.Call) -> None:
        if not self._loads or self.ctx.qualify(node.func) != "torch.load" or keyword(node, "map_location") is not None:
            return
        if sum(a.keyword is None and not a.star for a in node.args) != 1 or any(a.star for a in node.args):
            return  # `torch.load(f, "cpu")`: the location is the second positional argument; `**kw` may hold it
        feeds_state = into_load_state_dict(self.ctx.stack) or _stored_state(self.ctx, node)
        if b"cuda" not in self.ctx.source and not (feeds_state and self.ctx.options.project_checks_host):
            return  # a file that names no CUDA, in a project that chooses no host: nothing says CUDA saved it
        if feeds_state:
            self.fix(node, with_keyword(node, "map_location", make_string("cpu")),
                     '`torch.load(...)` -> `map_location="cpu"`: a checkpoint saved on CUDA raises on a host without '
                     "CUDA, Trainium's, and `load_state_dict` copies it onto the model's device", safety=Safety.SAFE)
            return
        # what it loads is used as it is (a pickled model, a tensor): every other host keeps
        # loading it where it was saved, as the code after it expects
        location, imports = per_target.neuron_only(self.ctx, make_string("cpu"), cst.Name("None"))
        if per_target.target(self.ctx) == per_target.CPU:
            said = ('`torch.load(...)` -> `map_location="cpu"`: a checkpoint saved on CUDA raises on a host without '
                    "CUDA; move what it loads onto the device with `.to(...)`")
        else:
            said = ('`torch.load(...)` -> `map_location="cpu" if <the accelerator is Neuron> else None`: a '
                    "checkpoint saved on CUDA raises on Trainium, which has no CUDA; every other host loads it "
                    "where it did. Move what it loads onto the Neuron device with `.to(...)`")
        self.fix(node, with_keyword(node, "map_location", location), said, safety=Safety.SAFE, imports=imports)


def _stored_state(ctx: FileContext, call: cst.Call) -> bool:
    """``call``, or an entry of what it loads (``torch.load(path)["model"]``), is the value of
    ``name = ...``, whose every read in its function (or module) keeps the tensors on their way
    into ``load_state_dict`` (:func:`state_flow.state_only`)."""
    value: cst.BaseExpression = call
    parent = None
    for parent in ctx.ancestors():
        if not (isinstance(parent, cst.Subscript) and parent.value is value):
            break
        value = parent
    if not (isinstance(parent, cst.Assign) and parent.value is value and len(parent.targets) == 1
            and isinstance(target := parent.targets[0].target, cst.Name)):
        return False
    scope = next((a for a in ctx.ancestors() if isinstance(a, cst.FunctionDef)), ctx.module)
    return state_only(scope, target.value, parent)
