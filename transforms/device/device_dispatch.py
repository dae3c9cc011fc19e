"""NRN107: a device choice gains a Neuron branch; every other host keeps its own."""

from __future__ import annotations

import libcst as cst

from neuronize.transform import Evidence, Example, Safety, Transform
from neuronize.analysis.walk import iter_syntax
from neuronize.transforms._helpers import per_target
from neuronize.transforms._helpers.device_model import (
    DEVICE_CHOICE, HALF, choice_group, kept_for_consumer, model, neuron_first_detection, registry_hosts, table_entry,
    with_neuron_branch)
from neuronize.transforms._helpers.device_choice import INDEX_NOTE
from neuronize.transforms._helpers.messages import short


class DeviceDispatch(Transform):
    """Finds device choices without a Neuron branch: CUDA detections and dispatches over a device value.

    What it does:
        A detection (`if torch.cuda.is_available(): device = "cuda"` or `return "cuda"`, alone
        or in a chain with `elif torch.backends.mps.is_available(): ...`) gets a Neuron branch in
        front of its CUDA branch: `if <the accelerator is Neuron>: device = "neuron"`, the CUDA
        branch becoming its `elif`. So does any choice of a CUDA value under the check (simple
        statements only): `backend = "nccl"` (`"neuron"`), `model = model.cuda()`
        (`model.to("neuron")`), `dtype = torch.float16` (bf16); where the copy would still use
        CUDA (`x.cuda(1)`, `torch.cuda.*` beyond synchronize/empty_cache/device_count) it is not
        made (NRN110 reports the check). The check may be one of several conditions joined by
        `and` (kept in the Neuron branch's test, the user's own `args.cuda` / `not args.no_cuda`
        settings included), or stored once, earlier in the file, in a flag the `if` tests
        (`use_cuda = not args.no_cuda and torch.cuda.is_available()`, then `if use_cuda:` or
        `elif use_cuda:` after another host's flag: the
        Neuron branch asks `not args.no_cuda and <the accelerator is Neuron>`, the flag stays
        CUDA's; every test of the flag gains its branch, in loops too, or none does where one
        cannot; a conditional expression reading the flag, `model.cuda() if use_cuda else model`,
        gains a Neuron arm in front with them: `model.to("neuron") if <Neuron> else <it>`); in a
        chain whose every branch sets one variable to a device, the Neuron branch sets that
        variable only. A dispatch over a device value (`if device == "cpu": ... elif device ==
        "cuda": ... elif device == "mps": ... else: raise`, with `==`, `in (...)`,
        `.startswith(...)` or `"cuda" in device`, each perhaps joined by `and` to a setting of the
        user's, `args.use_gpu and args.gpu_type == "cuda"`, which the Neuron test keeps) gets `elif
        device == "neuron": ...` after its CUDA branch,
        modelled on it (where the CUDA branch does more that stays CUDA's, such as setting
        `CUDA_VISIBLE_DEVICES`, and every branch sets one variable to a device, the Neuron branch
        sets that variable alone): CUDA device strings become
        `"neuron"` and a half dtype (`torch.float16`) becomes `torch.bfloat16`. A dispatch over
        the process group's backend (`if backend == dist.Backend.NCCL: device = "cuda" elif
        backend == "gloo": ...`) gets `elif backend == "neuron": ...` the same way: on Trainium
        the backend is `"neuron"`, and `dist.Backend.NEURON` exists only once torch-neuronx has
        registered it, so the test compares with the string. A table keyed by
        device type (`{"cuda": torch.float16, "cpu": torch.float32}`) gets a `"neuron"` entry
        after CUDA's, modelled on it the same way; so does a class whose members are device rows
        (`class Host(Enum): CPU = ("cpu", "gloo")`, `CUDA = ("cuda", "nccl")`, or plain
        `cuda = "cuda"`, each member named for its device), which gains `NEURON = ("neuron",
        "neuron")` after CUDA's member. The branches and entries are one edit group
        with the file's device defaults: a default moves to `"neuron"` only together with the
        branches that accept it.
        Where the CUDA branch places a model on the GPUs through its loader's options
        (`device_map="auto"`, `max_memory=`, `load_in_8bit=`: on Neuron the model would land on
        the CPU), the Neuron branch is modelled on the MPS branch when that one places on the
        dispatched device without naming MPS. Where a dispatch that rejects unknown devices
        cannot be given a Neuron branch (its CUDA branch calls CUDA-only code), it is reported,
        and the device defaults of the file stay. A detection whose CUDA branch places the inputs
        of a module that the same code makes and never places (`model = Net()`, then `if
        torch.cuda.is_available(): x = x.cuda()` and `model(x)`) is reported: on CUDA the original
        meets CPU weights there, and every other host ran it on the CPU. A registry of hosts, a
        list of records one per
        device (`[DeviceSpec(name="cuda", ...), DeviceSpec(name="mps", ...)]`), is reported: a
        Neuron record needs its own availability test, counts and cache calls.

    Why on TorchNeuron:
        Code that already chooses among hosts must gain Neuron and keep every host it served:
        a migration that breaks the NVIDIA machine the code was written for cannot be merged.
        Rewriting the CUDA branch in place would take CUDA away; moving a default to `"neuron"`
        without a Neuron branch makes the dispatch raise on every host.

    Example:
        def pick():
            if torch.cuda.is_available():
                return "cuda"
            return "cpu"

    Use instead:
        def pick():
            if hasattr(torch, "accelerator") and torch.accelerator.is_available() and torch.accelerator.current_accelerator().type == "neuron":
                return "neuron"
            elif torch.cuda.is_available():
                return "cuda"
            return "cpu"

    Fix safety:
        Safe: the new branch is taken only where the device is Neuron (the test, or a value that
        says `"neuron"`); on CPU, CUDA and MPS the code runs as before. bf16 instead of fp16 is
        the documented Neuron precision. Unsafe where the CUDA branch names a device index
        (`f"cuda:{rank}"`): the Neuron branch says `"neuron"`, right under a `"neuron"` process
        group (each process sees one device), not for one process over several devices. Unsafe
        for a class's Neuron member: the class's other uses (labels shown to users, counts per
        node) are not followed, and the file's device choice waits for it.

    Evidence:
        DOC: the TorchNeuron index page (`"neuron"` device, `torch.autocast(device_type="neuron",
        dtype=torch.bfloat16)`, `torch.accelerator` detects the device). INF for a class's
        Neuron member.
    """

    id = "NRN107"
    name = "device-dispatch"
    safety = Safety.SAFE
    evidence = Evidence.DOC
    section = "device"
    references = ("https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/index.html",)
    tokens = (b"cuda",)
    targets = (per_target.NEURON, per_target.ACCELERATOR)
    examples = (
        Example('import torch\nif torch.cuda.is_available():\n    device = "cuda"\nelse:\n    device = "cpu"\n',
                'import torch\nif hasattr(torch, "accelerator") and '
                'torch.accelerator.is_available() and torch.accelerator.current_accelerator().type '
                '== "neuron":\n    device = "neuron"\nelif torch.cuda.is_available():\n    device = "cuda"\n'
                'else:\n    device = "cpu"\n'),
        Example('def f(device):\n    if device == "cpu":\n        return 1\n    elif device == "cuda":\n        return 2\n'
                '    raise ValueError(device)\n',
                'def f(device):\n    if device == "cpu":\n        return 1\n    elif device == "cuda":\n        return 2\n'
                '    elif device == "neuron":\n        return 2\n    raise ValueError(device)\n'),
    )

    def visit_Dict(self, node: cst.Dict) -> None:
        planned = table_entry(self.ctx, node) if per_target.target(self.ctx) in self.targets else None
        if planned is not None:
            new, value, imports = planned
            self.fix(node, new, f'table keyed by device gains `"neuron": {short(value)}`, modelled on CUDA\'s entry; '
                     "the other hosts keep theirs", imports=imports, group=DEVICE_CHOICE)

    def visit_List(self, node: cst.List) -> None:
        hosts = registry_hosts(node)
        if hosts is not None:
            self.report(node, f"device registry ({', '.join(hosts)}) has no Neuron record: a lookup of "
                        '`"neuron"` finds none and the program falls back or raises; add a record for Neuron '
                        "by hand, modelled on CUDA's (its availability test, device count and cache calls)",
                        evidence=Evidence.INF)

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        planned = model(self.ctx).tables.get(id(node)) if per_target.target(self.ctx) in self.targets else None
        if planned is not None:
            new, member = planned
            self.fix(node, new, f"device table `{node.name.value}` gains `{short(member)}`, modelled on CUDA's "
                     "member; the other hosts keep theirs (check what the table's other uses make of it)",
                     group=DEVICE_CHOICE, safety=Safety.UNSAFE, evidence=Evidence.INF)

    def leave_Module(self, original_node: cst.Module) -> None:
        if per_target.target(self.ctx) not in self.targets:
            return
        found = model(self.ctx)
        for link, chain in found.detections:
            new, imports, dropped = neuron_first_detection(self.ctx, link, chain)
            self.fix(link, new, f"choice `if {short(link.test)}:` gains a Neuron branch in front, modelled on its "
                     f"CUDA branch; CUDA and the other hosts keep theirs{_dropped(dropped)}", imports=imports,
                     group=choice_group(self.ctx, link, DEVICE_CHOICE), safety=Safety.UNSAFE if dropped else None)
        for link, consumer in found.unplaced:
            self.report(link.test, f"choice `if {short(link.test)}:` places the inputs of `{consumer}`, which this code "
                        f"makes and never places: on CUDA they meet its weights on the CPU, and every other host ran "
                        f"it on the CPU; a Neuron branch would bring that failure to Trainium, so the choice stays; "
                        f"place `{consumer}` with its inputs by hand", evidence=Evidence.INF)
        for link, consumer in found.refused:
            self.report(link.test, f"choice `if {short(link.test)}:` {kept_for_consumer(consumer)}",
                        evidence=Evidence.INF)
        for choice, arm, _ in found.flag_arms:
            assert arm.replacement is not None  # the model keeps the arms it could make
            self.fix(choice, arm.replacement, f"`{short(choice, 60)}` -> `{short(arm.replacement.body)} if <the "
                     "accelerator is Neuron> else <the original choice>`: a Neuron arm in front, as the flag's "
                     "other tests gain; CUDA and the other hosts keep theirs", imports=arm.imports,
                     group=choice_group(self.ctx, choice, DEVICE_CHOICE))
        for dispatch in found.dispatches:
            if dispatch.served:
                continue
            if dispatch.neuron is not None:
                halves = any(isinstance(n, cst.Attribute) and n.attr.value in HALF for n in iter_syntax(dispatch.model.body))  # type: ignore[union-attr]
                half = " (its half precision as bf16)" if halves else ""
                host = "CUDA" if dispatch.model is dispatch.cuda else "MPS"
                self.fix(dispatch.cuda, with_neuron_branch(dispatch),
                         f"dispatch over `{dispatch.subject}` ({', '.join(dispatch.devices)}) gains "
                         f"`elif {short(dispatch.neuron.test)}:`, modelled on its {host} branch{half}; the CUDA "
                         f"branch stays CUDA's{_dropped(dispatch.drops_index)}", imports=dispatch.imports,
                         group=DEVICE_CHOICE, safety=Safety.UNSAFE if dispatch.drops_index else None)
            elif dispatch.raises:
                self.report(dispatch.cuda.test, f"dispatch over `{dispatch.subject}` rejects devices it does not "
                            f"list and has no Neuron branch ({dispatch.blocked}): a `\"neuron\"` device raises "
                            "here, so the file's device defaults stay; add a Neuron branch by hand",
                            evidence=Evidence.INF)
            elif dispatch.blocked:
                self.report(dispatch.cuda.test, f"dispatch over `{dispatch.subject}` gains no Neuron branch "
                            f"({dispatch.blocked}): give Neuron one by hand", evidence=Evidence.INF)


def _dropped(dropped: bool) -> str:
    """The end of a message whose Neuron branch says ``"neuron"`` where CUDA's names an index."""
    return INDEX_NOTE if dropped else ""
