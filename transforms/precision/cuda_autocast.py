"""NRN201: CUDA autocast (``torch.cuda.amp.autocast``, ``torch.autocast("cuda")``) -> Neuron autocast."""

from __future__ import annotations

import libcst as cst

from neuronize.transform import Evidence, Example, ImportRequest, Safety
from neuronize.transforms._helpers import per_target
from neuronize.transforms._helpers.device_model import KeepsCudaBranches
from neuronize.transforms._helpers.amp import AUTOCAST, CUDA_AUTOCAST, CUDA_AUTOCAST_PARAMS, AmpFix, AmpRule, cuda_call_kept, in_fallback_branch, autocast_alias, plan_autocast, run_time_bf16
from neuronize.transforms._helpers.calls import argument, as_keyword, has_star, insert_args, keyword, new_keyword
from neuronize.transforms._helpers.imports import cuda_import_removals
from neuronize.transforms._helpers.literals import is_string_literal, make_string, string_value
from neuronize.transforms._helpers.names import is_reference, last_name, qualified_expr



def _names_device(value: cst.BaseExpression) -> bool:
    """A first argument that names a device (``"cuda"``, or the host-aware
    ``"neuron" if <Neuron is here> else "cuda"`` a fix wrote), not ``enabled``."""
    if isinstance(value, cst.IfExp):
        return is_string_literal(value.body) and is_string_literal(value.orelse)
    return is_string_literal(value)

class CudaAutocast(KeepsCudaBranches, AmpRule):
    """Finds autocast regions and decorators that run mixed precision on a CUDA device.

    What it does:
        Rewrites `torch.cuda.amp.autocast(...)`, `torch.autocast("cuda", ...)`,
        `torch.autocast(device_type="cuda", ...)` and `torch.amp.autocast("cuda")` - as calls,
        `with` items (also next to other items), decorators and branches of a
        `nullcontext() if ... else autocast(...)` switch - to autocast on `"neuron"`, in every
        spelling of the name (`import torch as T`, `from torch.cuda import amp`,
        `from torch.cuda.amp import autocast`). `torch.cuda.amp.autocast` becomes `torch.autocast`
        with `device_type="neuron"` (its positional `enabled`, `dtype`, `cache_enabled` become
        keywords) and the import it came from is dropped once nothing uses it. `enabled=`,
        `cache_enabled=` and an explicit `dtype=` are kept. Where no dtype is given, a second,
        unsafe fix also sets `dtype=torch.bfloat16`. `"cpu"` and `"neuron"` are left alone, and
        so is a device the program chose at run time (`torch.autocast(device.type)`: that
        value is the device rules' business), whose unsafe fix, where it has no dtype, sets
        `dtype=torch.bfloat16 if <Neuron is present> else None` (on a Neuron host the device is
        Neuron's, or the CPU's, whose default is bf16 already). Where
        `enabled=` tests the device the code chose (`enabled=device == "cuda"`,
        `enabled=x.device.type == "cuda"`), the autocast follows that device
        (`device_type=torch.device(device).type`, `enabled=device == "neuron"`). Elsewhere in a
        file with a CPU path (a `torch.cuda.is_available()` check, a `"cpu"` device, a device
        parameter or option, or no CUDA beyond autocast, a GradScaler, backend flags and seeds,
        which all run without CUDA), the device is host-aware, `"neuron" if <Neuron is present> else
        "cuda"`: `torch.autocast("neuron")` raises on a host without torch-neuronx even when
        disabled (and a decorator runs at import), while CUDA autocast was a harmless no-op
        there; its unsafe bf16 fix then writes `dtype=torch.bfloat16 if <Neuron is present> else
        torch.float16`, so that CUDA keeps its default, spelled out (`dtype=None` raises on torch
        1.10 and 1.11; a program that sets the default with `torch.set_autocast_gpu_dtype` gets
        `None`, which reads it). Where the project may run on a torch before 1.10 (it declares
        no torch of 2.6 or later), a host-aware `torch.cuda.amp.autocast(...)` is kept as it is
        for every host but Neuron: `torch.autocast(device_type="neuron", ...) if <Neuron is
        present> else torch.cuda.amp.autocast(...)` (a decorator keeps the host-aware device:
        a conditional expression there needs Python 3.9). The device is host-aware too in a file
        that keeps its CUDA hosts (it imports a CUDA-only library such as bitsandbytes, or
        chooses among hosts): its tensors keep CUDA there, and the autocast region agrees with
        them; on the `neuron` target every file keeps its CUDA hosts, so the device is host-aware
        wherever it does not follow a device the code chose. A
        `torch.cuda.amp.autocast` passed on without being called (`partial(autocast, ...)`) is
        reported, and so is one in the `except` branch of a `try` that uses `torch.autocast`
        (a fallback for old PyTorch).

    Why on TorchNeuron:
        Where CUDA is unavailable, CUDA autocast turns itself off with a warning, so the model
        silently trains in float32. TorchNeuron documents `torch.autocast(device_type="neuron")`.
        Neuron autocast follows CUDA conventions, so its default lower-precision type is float16,
        while every Neuron example uses bfloat16 (which also needs no loss scaling).

    Example:
        with torch.cuda.amp.autocast():
            loss = model(x)
        with torch.autocast("cuda", dtype=torch.float16):
            y = model(x)

    Use instead:
        with torch.autocast(device_type="neuron", dtype=torch.bfloat16):
            loss = model(x)
        with torch.autocast("neuron", dtype=torch.float16):  # consider torch.bfloat16
            y = model(x)

    Fix safety:
        The device change is safe: it is the documented Neuron spelling and keeps the dtype the
        code asked for (an explicit dtype, or the CUDA-convention default). Adding
        `dtype=torch.bfloat16` where none was given is a separate, unsafe fix on the same call
        (both are listed; with unsafe fixes on, the call gets both changes): it changes numerics
        from float16 to bfloat16, which is what Neuron code should run, and it rests on source
        and inference, not documentation. Review a `GradScaler` next to it (NRN202).
        `enabled=False` regions get no dtype. An explicit `dtype=torch.float16` is kept, with a
        note that fp16 is not the documented Neuron path.

    Evidence:
        DOC: `torch.autocast(device_type="neuron")`, TorchNeuron index page. SRC/INF: the Neuron
        autocast tests expect float16 under a bare `torch.autocast("neuron")`; bf16 is the
        Neuron-preferred type.
    """

    id = "NRN201"
    targets = per_target.ALL
    needs = (("torch", (1, 10)),)  # torch.autocast
    name = "cuda-autocast"
    safety = Safety.SAFE
    evidence = Evidence.DOC
    section = "precision"
    references = (
        "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/index.html",
        "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/frameworks/torch/pytorch-native-overview.html",
    )
    tokens = (b"autocast",)
    examples = (
        Example(
            "import torch\nmodel = model.cuda()\nwith torch.cuda.amp.autocast():\n    y = model(x)\n",
            ('import torch\n'
                'model = model.cuda()\n'
                'with torch.autocast(device_type="neuron" if hasattr(torch, "accelerator") and torch.accelerator.is_available() and torch.accelerator.current_accelerator().type == "neuron" else "cuda", dtype=torch.bfloat16 if hasattr(torch, "accelerator") and torch.accelerator.is_available() and torch.accelerator.current_accelerator().type == "neuron" else torch.float16):\n'
                '    y = model(x)\n'),
        ),
        Example(
            "import torch\nmodel = model.cuda()\nwith torch.cuda.amp.autocast():\n    y = model(x)\n",
            ('import torch\n'
                'model = model.cuda()\n'
                'with torch.autocast(device_type="neuron" if hasattr(torch, "accelerator") and torch.accelerator.is_available() and torch.accelerator.current_accelerator().type == "neuron" else "cuda"):\n'
                '    y = model(x)\n'),
            unsafe_fixes=False,
        ),
        Example(
            # a project that may run on a torch before 1.10, which has no torch.autocast
            "import torch\nmodel = model.cuda()\nwith torch.cuda.amp.autocast():\n    y = model(x)\n",
            ('import torch\n'
                'model = model.cuda()\n'
                'with (torch.autocast(device_type="neuron", dtype=torch.bfloat16) if hasattr(torch, "accelerator") and torch.accelerator.is_available() and torch.accelerator.current_accelerator().type == "neuron" else torch.cuda.amp.autocast()):\n'
                '    y = model(x)\n'),
            facts=(("old_torch", True),),
        ),
        Example(
            # nothing here needs CUDA, so it ran on the CPU: the device is host-aware
            'import torch\n\n\ndef context():\n    return torch.autocast(device_type="cuda", dtype=torch.bfloat16)\n',
            'import torch\n\n\ndef context():\n    return torch.autocast(device_type="neuron" if '
            'hasattr(torch, "accelerator") and '
            'torch.accelerator.is_available() and torch.accelerator.current_accelerator().type == "neuron" '
            'else "cuda", dtype=torch.bfloat16)\n',
            unsafe_fixes=False,
        ),
        Example(
            "import torch\nx = x.cuda()\nwith torch.autocast('cuda', enabled=False):\n    y = model(x)\n",
            ('import torch\n'
                'x = x.cuda()\n'
                "with torch.autocast('neuron' if hasattr(torch, 'accelerator') and torch.accelerator.is_available() and torch.accelerator.current_accelerator().type == 'neuron' else 'cuda', enabled=False):\n"
                '    y = model(x)\n'),
            unsafe_fixes=False,
        ),
    )

    QUALIFIED = AUTOCAST
    CUDA_QUALIFIED = CUDA_AUTOCAST
    BARE = frozenset({"autocast"})

    # -- calls ---------------------------------------------------------------------------------
    def visit_Call(self, node: cst.Call) -> None:
        name = last_name(node.func)
        alias = autocast_alias(self.ctx, node.func)
        if alias is not None:
            # a choice that may be `nullcontext` takes no `dtype=`: the device alone moves
            self._device_type_call(node, dtype_taken=alias == "autocast")
            return
        if name is None or name not in self.callable_names:
            return
        qualified = self.ctx.qualify(node.func)
        if qualified in AUTOCAST:
            self._device_type_call(node)
        elif qualified in CUDA_AUTOCAST:
            first = argument(node, "enabled", 0)
            if keyword(node, "device_type") is not None or (first is not None and _names_device(first.value)):
                # `torch.autocast` behind a fallback import (`except ImportError: from torch.cuda.amp
                # import autocast`): the call already has the device-generic signature.
                self._device_type_call(node)
            else:
                self._cuda_amp_call(node)

    def _device_type_call(self, node: cst.Call, dtype_taken: bool = True) -> None:
        """`torch.autocast("cuda", ...)`: swap the device, keep the function and the layout;
        ``dtype_taken``: the call may take a `dtype=` (bf16, unsafe)."""
        device = argument(node, "device_type", 0)
        if device is not None and not _names_device(device.value):  # the program's own choice of device
            fix = run_time_bf16(self.ctx, node) if dtype_taken else None
            self._apply(node, [fix] if fix is not None else [])
            return
        if device is None or string_value(device.value) != "cuda":
            return  # "cpu", "neuron", or not an autocast call we understand
        self._apply(node, plan_autocast(self.ctx, node, 'autocast on `"cuda"` -> `{device}`', dtype_taken))

    def _cuda_amp_call(self, node: cst.Call) -> None:
        """`torch.cuda.amp.autocast(...)` -> `torch.autocast(device_type="neuron", ...)`."""
        if in_fallback_branch(self.ctx, AUTOCAST):
            self.report(node, "`torch.cuda.amp.autocast` as the fallback for PyTorch without `torch.autocast`: "
                              "left as is; migrate the autocast of the `try` branch")
            return
        if has_star(node):
            self.report(node, "`torch.cuda.amp.autocast(*args/**kwargs)`: rewrite it by hand as "
                              '`torch.autocast(device_type="neuron", dtype=torch.bfloat16, ...)`')
            return
        if len([a for a in node.args if a.keyword is None]) > len(CUDA_AUTOCAST_PARAMS):
            self.report(node, "`torch.cuda.amp.autocast` with unexpected arguments: rewrite it by hand as "
                              '`torch.autocast(device_type="neuron", ...)`')
            return
        func, imports = qualified_expr(self.ctx, "torch.autocast")
        args = [as_keyword(a, CUDA_AUTOCAST_PARAMS[i]) if a.keyword is None else a for i, a in enumerate(node.args)]
        generic = insert_args(node.with_changes(func=func, args=args), 0, [new_keyword("device_type", make_string("cuda"))])
        plan = [cuda_call_kept(self.ctx, node, fix) for fix in plan_autocast(
            self.ctx, generic, "`torch.cuda.amp.autocast` -> `torch.autocast(device_type={device})`")]
        kept = any(isinstance(fix.call, cst.IfExp) for fix in plan)  # the CUDA call still uses its import
        self._apply(node, plan, (*imports, *(() if kept else cuda_import_removals(self.ctx, node.func))))

    def _apply(self, node: cst.Call, plan: list[AmpFix], imports: tuple[ImportRequest, ...] = ()) -> None:
        for fix in plan:
            extra = {"safety": Safety.UNSAFE, "evidence": Evidence.SRC} if fix.bf16 else {}
            self.fix(node, fix.call, fix.message, imports=(*imports, *fix.imports), **extra)

    # -- references that are not calls ----------------------------------------------------------
    def visit_Attribute(self, node: cst.Attribute) -> None:
        if node.attr.value == "autocast":
            self._reference(node)

    def visit_Name(self, node: cst.Name) -> None:
        if node.value in self.cuda_locals:
            self._reference(node)

    def _reference(self, node: cst.CSTNode) -> None:
        if self.ctx.qualify(node) in CUDA_AUTOCAST and is_reference(self.ctx, node):
            self.report(node, "`torch.cuda.amp.autocast` is passed on here, not called: replace it by hand "
                              'with `functools.partial(torch.autocast, "neuron", dtype=torch.bfloat16)`')
