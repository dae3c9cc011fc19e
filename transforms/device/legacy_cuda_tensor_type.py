"""NRN105: legacy ``torch.cuda.FloatTensor``-style tensor types."""

from __future__ import annotations


import libcst as cst
from neuronize.transforms._helpers.calls import new_keyword
from neuronize.transforms._helpers.cuda_runtime import NEURON
from neuronize.transforms._helpers.imports import removal_of
from neuronize.transforms._helpers.literals import LEGACY_CUDA_TYPE, make_string, string_value
from neuronize.transforms._helpers.messages import short
from neuronize.transforms._helpers.names import qualified_expr
from neuronize.transforms._helpers import hosts, per_target
from neuronize.transforms._helpers.device_model import keeps_cuda_hosts
from neuronize.analysis.context import FileContext
from neuronize.decision.policy import DEFAULT_TYPE, LEGACY_TYPES
from neuronize.transform import Evidence, Example, ImportRequest, Safety, Transform

DTYPES = {
    "FloatTensor": "float32", "DoubleTensor": "float64", "HalfTensor": "float16",
    "BFloat16Tensor": "bfloat16", "ByteTensor": "uint8", "CharTensor": "int8",
    "ShortTensor": "int16", "IntTensor": "int32", "LongTensor": "int64", "BoolTensor": "bool",
}


def _size_like(node: cst.BaseExpression) -> bool:
    """A lone argument that is clearly a size: an int literal, ``len(...)``, ``x.size(...)``, ``x.shape``."""
    if isinstance(node, cst.Integer):
        return True
    if isinstance(node, cst.Call):
        func = node.func
        if isinstance(func, cst.Name) and func.value == "len":
            return True
        return isinstance(func, cst.Attribute) and func.attr.value in ("size", "numel")
    if isinstance(node, cst.Subscript):
        value = node.value
        return isinstance(value, cst.Attribute) and value.attr.value == "shape"
    if isinstance(node, cst.Attribute):
        return node.attr.value == "shape"
    return False


class LegacyCudaTensorType(Transform):
    """Finds the legacy CUDA tensor types (`torch.cuda.FloatTensor`, `torch.cuda.LongTensor`...).

    What it does:
        Constructor calls whose arguments are clear are rewritten: sizes (two or more arguments,
        or one int literal, `len()`, `x.size()`, `x.shape`) or no argument -> `torch.empty(..., dtype=..., device=...)`;
        one list or tuple literal (data) -> `torch.tensor(..., dtype=..., device=...)`.
        Casts `x.type(torch.cuda.FloatTensor)` and `x.type("torch.cuda.FloatTensor")` become
        `x.to(..., dtype=torch.float32)`. `torch.set_default_tensor_type(torch.cuda.FloatTensor)`
        (or its string) becomes `torch.set_default_device(...)`; the device edits of the program
        wait for it. The device is host-aware on the neuron target (`"neuron" if on_neuron() else
        "cuda"`: the CUDA box keeps the CUDA device the type meant), the target's device on the
        others. Every other use is reported with
        its replacement: constructor calls with variables (a size or data?), `isinstance(x,
        torch.cuda.FloatTensor)`, `x.type() == "torch.cuda.FloatTensor"`, other default types, and
        aliases such as `Tensor = torch.cuda.FloatTensor if cuda else torch.FloatTensor`.

    Why on TorchNeuron:
        The legacy typed constructors exist only for CPU and CUDA; there is no Neuron
        `FloatTensor` type. A dtype plus `device="neuron"` says the same thing.

    Example:
        buf = torch.cuda.FloatTensor(4, 16)
        idx = torch.cuda.LongTensor([0, 2, 3])
        y = x.type(torch.cuda.HalfTensor)

    Use instead:
        buf = torch.empty(4, 16, dtype=torch.float32, device="neuron" if on_neuron() else "cuda")
        idx = torch.tensor([0, 2, 3], dtype=torch.int64, device="neuron" if on_neuron() else "cuda")
        y = x.to("neuron" if on_neuron() else "cuda", dtype=torch.float16)

    Fix safety:
        Unsafe: the rewritten tensor is an ordinary `torch.Tensor` (type checks against the
        legacy class elsewhere no longer hold), and `torch.empty` memory is uninitialised just
        as with the legacy constructor.

    Evidence:
        INF: upstream PyTorch defines the typed constructors only for CPU and CUDA, and names
        `torch.set_default_device` as the replacement of `torch.set_default_tensor_type`
        (https://pytorch.org/docs/stable/generated/torch.set_default_tensor_type.html); the device
        name is DOC.
    """

    id = "NRN105"
    name = "legacy-cuda-tensor-type"
    safety = Safety.UNSAFE
    evidence = Evidence.INF
    section = "device"
    references = (
        "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/index.html",
        "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/guides/torch-distributed.html",
    )
    tokens = (b"cuda",)
    targets = per_target.ALL
    examples = (
        Example("import torch\nbuf = torch.cuda.FloatTensor(4, 16)\n",
                'import torch\nbuf = torch.empty(4, 16, dtype=torch.float32, device="neuron" if '
                f'{NEURON} else "cuda")\n'),
        Example("import torch\ny = x.type(torch.cuda.HalfTensor)\n",
                f'import torch\ny = x.to("neuron" if {NEURON} else "cuda", dtype=torch.float16)\n'),
        Example("import torch\nok = isinstance(x, torch.cuda.FloatTensor)\n", None),
    )

    # -- references to the type --------------------------------------------------------------
    def visit_Attribute(self, node: cst.Attribute) -> None:
        if node.attr.value in DTYPES:
            self._reference(node)

    def __init__(self, ctx: FileContext) -> None:
        super().__init__(ctx)
        # local names bound by `from torch.cuda import FloatTensor [as X]`
        self._local_types = {local for cls in DTYPES
                             for local in ctx.names.local_names_for(f"torch.cuda.{cls}")}

    def visit_Name(self, node: cst.Name) -> None:
        if node.value in self._local_types and self.ctx.is_name_reference(node):
            self._reference(node)

    def _reference(self, node: cst.BaseExpression) -> None:
        qualified = self.ctx.qualify(node)
        if qualified is None or not qualified.startswith("torch.cuda."):
            return
        cls = qualified.rsplit(".", 1)[1]
        if cls not in DTYPES or qualified != f"torch.cuda.{cls}":
            return
        dtype = DTYPES[cls]
        parent = self.ctx.parent
        if isinstance(parent, cst.Call) and parent.func is node:
            self._constructor(parent, cls, dtype)
            return
        if self._cast(node, dtype, cls) or self._default_type(node, dtype):
            return
        code = short(node)
        stack = list(self.ctx.ancestors())
        call = next((a for a in stack[:4] if isinstance(a, cst.Call)), None)
        callee = self.ctx.qualify(call.func) if call is not None else None
        if callee == "isinstance":
            advice = f'test `x.dtype == torch.{dtype} and x.device.type == "neuron"` instead'
        elif callee == "torch.set_default_tensor_type":
            advice = f'use `torch.set_default_device("neuron")` (and `torch.set_default_dtype(torch.{dtype})`)'
        else:
            advice = f'create tensors with `dtype=torch.{dtype}, device="neuron"` instead'
        self.report(node, f"`{code}` is a legacy CUDA tensor type with no Neuron equivalent: {advice}",
                    pins=LEGACY_TYPES)

    def _constructor(self, call: cst.Call, cls: str, dtype: str) -> None:
        code = short(call.func)
        args = list(call.args)
        if any(a.keyword is not None or a.star for a in args):
            factory = None
        elif not args:
            factory = "empty"
            args = [cst.Arg(value=cst.Integer("0"))]
        elif len(args) == 1 and isinstance(args[0].value, (cst.List, cst.Tuple)):
            factory = "tensor"
        elif len(args) > 1 or _size_like(args[0].value):
            factory = "empty"  # several arguments are always sizes
        else:
            factory = None
        if factory is None:
            self.report(call, f"`{code}(...)`: legacy CUDA tensor constructor; use `torch.tensor(data, "
                        f'dtype=torch.{dtype}, device="neuron")` for data or `torch.empty(*size, '
                        f'dtype=torch.{dtype}, device="neuron")` for a size')
            return
        func, imports = qualified_expr(self.ctx, f"torch.{factory}")
        dtype_expr, more = qualified_expr(self.ctx, f"torch.{dtype}")
        device, on, said = _device(self.ctx)
        last = args[-1]
        comma = cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
        new_args = [*args[:-1], last.with_changes(comma=comma),
                    new_keyword("dtype", dtype_expr).with_changes(comma=comma),
                    new_keyword("device", device).with_changes(comma=last.comma)]
        replacement = call.with_changes(func=func, args=new_args)
        if isinstance(call.func, cst.Name):  # `from torch.cuda import FloatTensor`: drop it once unused
            removal = removal_of(self.ctx, call.func.value, top_level=True)
            imports = imports + ((removal,) if removal is not None else ())
        self.fix(call, replacement, per_target.say(
                 self.ctx, "`{code}(...)` -> `torch.{factory}(..., dtype=torch.{dtype}, device={device})`: "
                 "no legacy tensor types on Neuron", code=code, factory=factory, dtype=dtype, **said),
                 imports=(*imports, *more, *on))

    def _cast(self, node: cst.BaseExpression, dtype: str, cls: str) -> bool:
        """``x.type(<type>)``: a cast to the dtype and a move to the device."""
        stack = list(self.ctx.ancestors())
        if len(stack) < 2 or not isinstance(stack[0], cst.Arg) or stack[0].keyword is not None:
            return False
        call = stack[1]
        if not (isinstance(call, cst.Call) and len(call.args) == 1 and call.args[0] is stack[0]):
            return False
        func = call.func
        if not (isinstance(func, cst.Attribute) and func.attr.value == "type"):
            return False
        if self.ctx.qualify(func) is not None:
            return False
        dtype_expr, imports = qualified_expr(self.ctx, f"torch.{dtype}")
        device, on, said = _device(self.ctx)
        replacement = call.with_changes(
            func=func.with_changes(attr=cst.Name("to")),
            args=[cst.Arg(value=device, comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))),
                  new_keyword("dtype", dtype_expr)])
        self.fix(call, replacement, per_target.say(
                 self.ctx, "`.type(torch.cuda.{cls})` -> `.to({device}, dtype=torch.{dtype})`: "
                 "no legacy tensor types on Neuron", cls=cls, dtype=dtype, **said), imports=(*imports, *on))
        return True

    def _default_type(self, node: cst.BaseExpression, dtype: str) -> bool:
        """``torch.set_default_tensor_type(torch.cuda.FloatTensor)``: the default device, which
        PyTorch names as its replacement. A dtype other than float32 would change the default dtype
        too, a second statement: reported."""
        stack = list(self.ctx.ancestors())
        if dtype != "float32" or len(stack) < 2 or not isinstance(stack[0], cst.Arg):
            return False
        call = stack[1]
        if not (isinstance(call, cst.Call) and len(call.args) == 1 and call.args[0] is stack[0]
                and self.ctx.qualify(call.func) == "torch.set_default_tensor_type"):
            return False
        func, imports = qualified_expr(self.ctx, "torch.set_default_device")
        device, on, said = _device(self.ctx, node if isinstance(node, cst.SimpleString) else None)
        self.fix(call, call.with_changes(func=func, args=[cst.Arg(value=device)]), per_target.say(
                 self.ctx, "`torch.set_default_tensor_type(torch.cuda.FloatTensor)` -> "
                 "`torch.set_default_device({device})`: no legacy tensor types on Neuron", **said),
                 imports=(*imports, *on), pins=DEFAULT_TYPE)
        return True

    # -- the type named in a string ----------------------------------------------------------
    def visit_SimpleString(self, node: cst.SimpleString) -> None:
        if "cuda." not in node.value:
            return
        m = LEGACY_CUDA_TYPE.match(string_value(node) or "")
        if m is None or m.group(1) not in DTYPES:
            return
        cls = m.group(1)
        dtype = DTYPES[cls]
        if self._cast(node, dtype, cls) or self._default_type(node, dtype):
            return
        self.report(node, f'`"torch.cuda.{cls}"` names a legacy CUDA tensor type: compare '
                    f'`x.dtype == torch.{dtype} and x.device.type == "neuron"`, or use '
                    f'`torch.set_default_device("neuron")` for a default tensor type')


def _device(ctx: FileContext, like: cst.SimpleString | None = None) -> tuple[cst.BaseExpression, tuple[ImportRequest, ...], dict[str, str]]:
    """The device a legacy CUDA type's tensors go to, its imports, and how a message names it:
    host-aware where the file keeps its CUDA hosts (the CUDA box keeps the current CUDA device the
    type meant), else the target's device."""
    if keeps_cuda_hosts(ctx):
        device, on = hosts.host_aware(ctx, make_string("cuda", like))
        return device, on, {"device": '"neuron" if <the accelerator is Neuron> else "cuda"'}
    device, on = per_target.device(ctx)
    return device, on, {}
