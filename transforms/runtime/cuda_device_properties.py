"""NRN115: ``torch.cuda.get_device_name`` / ``get_device_properties`` / ``is_bf16_supported`` / ``get_device_capability``."""

from __future__ import annotations

import libcst as cst

from neuronize.transforms._helpers import hosts, per_target
from neuronize.transform import Evidence, Example, ImportRequest, Safety
from neuronize.transforms._helpers.cuda_runtime import NEURON, CudaRef, _CudaApiRule, capability_probe, probe_kept, spelled
from neuronize.transforms._helpers.cuda_guard import memory_read_nearby
from neuronize.transforms._helpers.device_model import bf16_choice
from neuronize.transforms._helpers.literals import cuda_literal
from neuronize.transforms._helpers.names import qualified_expr

PROPERTIES = "torch_neuronx.get_device_properties"
#: the device name asked on every host (NRN115's first example)
NAME_KEPT_FOR_CUDA = (f"import torch\nif {NEURON}:\n    import torch_neuronx\n    print(torch_neuronx.get_device_properties(0)"
                      ".name)\nelse:\n    print(torch.cuda.get_device_name(0))\n")
#: attributes of the Neuron device-properties object (reference D12)
KNOWN_ATTRIBUTES = frozenset({"name", "total_memory"})


class CudaDeviceProperties(_CudaApiRule):
    """Finds CUDA device introspection (`torch.cuda.get_device_name`, `get_device_properties`, `is_bf16_supported`, `get_device_capability`).

    What it does:
        - `torch.cuda.get_device_properties(i)` -> `torch_neuronx.get_device_properties(i)`
          (adds `import torch_neuronx`); reported instead when an attribute other than `.name`
          or `.total_memory` is read from the result (`.major`, `.multi_processor_count`).
        - `torch.cuda.get_device_name(i)` -> `torch_neuronx.get_device_properties(i).name`.
          `torch_neuronx` is imported just before the statement (inside the function), never at
          the top of a module that others import; a call on an explicit CUDA device
          (`torch.device("cuda")`) is kept and reported; so is one that is part of a capability
          probe with `torch.cuda.is_available()`.
        - Without a device argument, `torch.accelerator.current_device_index()` is passed.
        - A choice of bf16 that asks CUDA (`"bfloat16" if torch.cuda.is_available() and
          torch.cuda.is_bf16_supported() else "float16"`, `if torch.cuda.is_bf16_supported():
          dtype = torch.bfloat16`) gains Neuron in front, the CUDA probe kept whole:
          `<the accelerator is Neuron> or (<the original test>)`. So does the answer of a
          function that asks whether bf16 can be used (`def verify_bf16_support(): ... return
          cuda_ok or mps_ok`, one `return` at its end): `return <Neuron> or cuda_ok or mps_ok`.
        - Elsewhere `torch.cuda.is_bf16_supported()` -> `torch.neuron.is_bf16_supported()`.
        - `torch.cuda.get_device_capability()` is reported: Neuron has no compute capability.
          (What the capability gates - FlashAttention, FP8, Triton - is reported by NRN9xx.)

    Why on TorchNeuron:
        Without CUDA these calls raise, and `is_bf16_supported()` returns False, which turns a
        bf16 run into an fp32 or fp16 one. TorchNeuron exposes device properties (name, total
        memory) from `torch_neuronx` and a bf16 check on `torch.neuron`; Trainium computes in
        bf16 natively.

    Example:
        print(torch.cuda.get_device_name(0))
        dtype = torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16

    Use instead:
        import torch_neuronx
        print(torch_neuronx.get_device_properties(0).name)
        dtype = torch.bfloat16 if on_neuron() or torch.cuda.is_bf16_supported() else torch.float16

    Fix safety:
        Unsafe: `torch_neuronx.get_device_properties` is known from a pre-release source drop
        (whether `torch.neuron` re-exports it is unconfirmed) and `torch.neuron.is_bf16_supported`
        from Hugging Face's code, not from AWS documentation.

    Evidence:
        SRC: the torch-neuronx device module. 3P: no capability equivalent; `is_bf16_supported`.
    """

    id = "NRN115"
    name = "cuda-device-properties"
    safety = Safety.UNSAFE
    evidence = Evidence.SRC
    section = "device"
    effort = "low"
    references = ("https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/index.html",)
    tokens = (b"cuda",)
    #: cpu / accelerator: `is_bf16_supported` behind an availability check is rewritten, the
    #: rest is reported (`torch.cpu` has no device properties)
    targets = per_target.ALL
    FUNCTIONS = frozenset({"get_device_name", "get_device_properties", "is_bf16_supported", "get_device_capability"})
    examples = (
        Example(
            "import torch\nprint(torch.cuda.get_device_name(0))\n",
            NAME_KEPT_FOR_CUDA,
        ),
        Example(
            "import torch\nprint(torch.cuda.is_bf16_supported())\n",
            "import torch\nprint(torch.neuron.is_bf16_supported())\n",
        ),
        Example("import torch\nif torch.cuda.get_device_capability()[0] >= 8:\n    use_flash = True\n", None),
        Example(
            'import torch\ndtype = "bfloat16" if torch.cuda.is_available() and torch.cuda.is_bf16_supported() else "float16"\n',
            'import torch\ndtype = "bfloat16" if hasattr(torch, "accelerator") and torch.accelerator.is_available() and torch.accelerator.current_accelerator().type == \"neuron\" or (torch.cuda.is_available() and '
            'torch.cuda.is_bf16_supported()) else "float16"\n',
        ),
        Example("import torch\nsms = torch.cuda.get_device_properties(0).multi_processor_count\n", None),
    )

    def target_for(self, ref: CudaRef) -> str | None:
        return {
            "get_device_properties": PROPERTIES,
            "is_bf16_supported": "torch.neuron.is_bf16_supported",
        }.get(ref.fn)

    def on_ref(self, ref: CudaRef) -> None:
        bf16 = bf16_choice(self.ctx) if ref.fn == "is_bf16_supported" else None
        if bf16 is not None:
            if bf16.replacement is not None:  # None: Neuron is in front already
                self.fix(bf16.test, bf16.replacement, bf16.message, imports=bf16.imports, evidence=Evidence.INF)
            return
        probe = capability_probe(self.ctx, ref)
        if probe is not None and ref.fn != "get_device_capability":
            self.report(ref.outer, probe_kept(ref, probe),
                        evidence=Evidence.INF)
            return
        if ref.fn == "get_device_capability":
            self.report(ref.outer, f"{spelled(ref)}: Neuron has no compute capability; decide by hand what the "
                                   "code it feeds should do on Trainium", evidence=Evidence.THIRD_PARTY)
        elif ref.fn == "is_bf16_supported":
            self._bf16(ref)
        else:
            self._properties(ref)

    def _guarded_by_availability(self, ref: CudaRef) -> bool:
        """``torch.accelerator.is_available() and torch.cuda.is_bf16_supported()``: the check only
        runs where an accelerator (or CUDA) is present."""
        child: cst.CSTNode = ref.outer
        for anc in self.ctx.ancestors():
            if anc is ref.outer or anc is ref.call or anc is ref.node:
                continue
            if isinstance(anc, cst.BooleanOperation) and isinstance(anc.operator, cst.And):
                if anc.right is child or any(n is child for n in (anc.right,)):
                    code = self.ctx.module.code_for_node(anc.left)
                    if ".is_available()" in code and (".accelerator." in code or ".cuda." in code):
                        return True
                child = anc
                continue
            return False
        return False

    def _bf16(self, ref: CudaRef) -> None:
        if per_target.target(self.ctx) != per_target.NEURON:
            portable = "torch.get_device_module().is_bf16_supported"
            if ref.call is None or ref.call.args or not self._guarded_by_availability(ref):
                self.report(ref.outer, f"{spelled(ref)}: `torch.cpu` has no `is_bf16_supported`; call "
                                       f"`{portable}()` only where an accelerator is present "
                                       "(`torch.accelerator.is_available() and ...`), by hand")
                return
            self.rewrite(ref, portable, f"{spelled(ref)} -> `{portable}()`: the current accelerator's "
                                        "check (the availability check before it keeps it off a CPU-only machine)",
                         evidence=Evidence.THIRD_PARTY)
            return
        target = "torch.neuron.is_bf16_supported"
        if ref.call is not None and ref.call.args:
            self.report(ref.outer, f"{spelled(ref)} with arguments: `{target}()` is not known to take any; "
                                   "migrate by hand", evidence=Evidence.THIRD_PARTY)
            return
        shown = f"`{target}()`" if ref.call is not None else f"`{target}`"
        self.rewrite(ref, target, f"{spelled(ref)} -> {shown}", evidence=Evidence.THIRD_PARTY,
                     group=hosts.same_device_group(self.ctx))

    def _read_attribute(self, ref: CudaRef) -> str | None:
        """The attribute read directly from the call's result (``get_device_properties(0).major``)."""
        assert ref.call is not None
        for anc in self.ctx.ancestors():
            if anc is ref.call:
                continue
            if isinstance(anc, cst.Attribute) and anc.value is ref.call:
                return anc.attr.value
            return None
        return None

    def _properties(self, ref: CudaRef) -> None:
        if per_target.target(self.ctx) != per_target.NEURON:
            self.report(ref.outer, f"{spelled(ref)}: no device-generic equivalent (`torch.cpu` has none; "
                                   f"on Neuron it is `{PROPERTIES}`): guard it with "
                                   "`if torch.cuda.is_available():` or migrate by hand")
            return
        call = ref.call
        if call is None:
            if ref.fn == "get_device_name":
                self.report(ref.outer, f"{spelled(ref)} used as a function: use "
                                       f"`lambda i: {PROPERTIES}(i).name`")
            else:
                self.rewrite(ref, PROPERTIES, f"{spelled(ref)} -> `{PROPERTIES}`", group=hosts.same_device_group(self.ctx))
            return
        if any(cuda_literal(a.value) is not None or (
                isinstance(a.value, cst.Call) and self.ctx.qualify(a.value.func) == "torch.device"
                and any(cuda_literal(b.value) is not None for b in a.value.args)) for a in call.args):
            self.report(ref.outer, f"{spelled(ref)} on an explicit CUDA device: kept (the code asks about CUDA); "
                                   f"ask `{PROPERTIES}` about the Neuron device by hand if that is meant")
            return
        if any(a.star for a in call.args) or len(call.args) > 1:
            self.report(ref.outer, f"{spelled(ref)} with unusual arguments: migrate to `{PROPERTIES}` by hand")
            return
        if (read := memory_read_nearby(self.ctx)) is not None:
            self.report(ref.outer, f"{spelled(ref)}: kept, this function also reads `{read}()`, which stays CUDA: "
                                   "Neuron's total memory would be set against CUDA's usage (zero there); migrate "
                                   "the memory readings together, by hand", evidence=Evidence.SRC)
            return
        if ref.fn == "get_device_properties":
            attr = self._read_attribute(ref)
            if attr is not None and attr not in KNOWN_ATTRIBUTES:
                self.report(ref.outer, f"`torch.cuda.{ref.fn}(...).{attr}`: the Neuron device properties have only `.name` and "
                                       "`.total_memory`; decide by hand what this should be on Trainium")
                return
        func = cst.parse_expression(PROPERTIES).with_changes(lpar=ref.node.lpar, rpar=ref.node.rpar)
        imports: tuple[ImportRequest, ...] = ()
        args = list(call.args)
        note = ""
        if not args:
            index, more = qualified_expr(self.ctx, "torch.accelerator.current_device_index")
            args = [cst.Arg(value=cst.Call(func=index))]
            imports += more
            note = " (current device passed explicitly)"
        elif args[0].keyword is not None:
            args[0] = args[0].with_changes(keyword=None, equal=cst.MaybeSentinel.DEFAULT)
        new: cst.BaseExpression = call.with_changes(func=func, args=args)
        if ref.fn == "get_device_name":
            new = cst.Attribute(value=new.with_changes(lpar=(), rpar=()), attr=cst.Name("name"),
                                lpar=call.lpar, rpar=call.rpar)
            message = f"{spelled(ref)} -> `{PROPERTIES}(...).name`{note}"
        else:
            message = f"{spelled(ref)} -> `{PROPERTIES}()`{note}; only `.name` and `.total_memory` are known"
        self.fix_with_local_import(ref, new, message, imports=imports, group=hosts.same_device_group(self.ctx))
