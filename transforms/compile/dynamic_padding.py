"""NRN305: tokenizer dynamic padding (``padding=True`` / ``"longest"``) feeding compiled code."""

from __future__ import annotations

import libcst as cst

from neuronize.analysis.context import FileContext
from neuronize.transform import Evidence, Example, Safety, Transform
from neuronize.transforms._helpers.calls import keyword
from neuronize.transforms._helpers.compile import call_name, compile_kind
from neuronize.transforms._helpers.literals import is_true, string_value
from neuronize.transforms._helpers.messages import short
from neuronize.transforms._helpers.names import local_names

#: callee names that are tokenizers, processors or collators
TOKENIZER_WORDS = ("token", "tok", "processor", "collat", "encode", "pad")
COLLATORS = frozenset({"DataCollatorWithPadding", "DataCollatorForSeq2Seq", "DataCollatorForTokenClassification"})


class DynamicPadding(Transform):
    """Finds tokenizer calls that pad to the longest sequence of each batch in a file that compiles.

    What it does:
        Reports, in a file that also compiles (`torch.compile`, `model.compile(...)`,
        `torch_compile=True` or `cache_implementation="static"`), tokenizer, processor and
        collator calls with `padding=True` or `padding="longest"`, and Hugging Face padding
        collators left at their default (`DataCollatorWithPadding(tokenizer)` pads to the longest).
        Calls with `pad_to_multiple_of=` are not reported: they already bucket. Nothing is
        rewritten: the right fixed length is the user's choice.

    Why on TorchNeuron:
        Each new input shape makes the Neuron backend compile a new graph (minutes for a large
        model). Padding to the longest sequence of each batch gives almost every batch a new shape.

    Example:
        batch = tokenizer(texts, padding=True, return_tensors="pt")
        logits = compiled_model(**batch)

    Use instead:
        batch = tokenizer(texts, padding="max_length", max_length=512, truncation=True,
                          return_tensors="pt")

    Fix safety:
        Report only: padding to a fixed length costs compute on short batches, and the length (or a
        few buckets, with `pad_to_multiple_of=`) depends on the data.

    Evidence:
        DOC: every new shape recompiles (compile reference); padding to fixed lengths is INF/3P
        practice.
    """

    id = "NRN305"
    name = "dynamic-padding"
    safety = Safety.REPORT_ONLY
    evidence = Evidence.DOC
    section = "compile"
    effort = "low"
    references = ("https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/compile/reference-torch-compile.html",)
    tokens = (b"padding=True", b"padding = True", b"longest", b"WithPadding")
    examples = (
        Example(
            "import torch\nmodel = torch.compile(model)\n"
            'batch = tokenizer(texts, padding=True, return_tensors="pt")\n'
        ),
    )

    def __init__(self, ctx: FileContext) -> None:
        super().__init__(ctx)
        self._compiles = False
        self._pending: list[tuple[cst.Call, str]] = []
        self._aliases = local_names(ctx, ("torch.compile",))

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        name = call_name(func, self._aliases)
        if name == "compile" and compile_kind(self.ctx, node) is not None:
            self._compiles = True
        for arg in node.args:
            if arg.keyword is None:
                continue
            key = arg.keyword.value
            if key == "torch_compile" and is_true(arg.value):
                self._compiles = True
            elif key == "cache_implementation" and string_value(arg.value) == "static":
                self._compiles = True
        if name in COLLATORS:
            padding = keyword(node, "padding")
            if padding is None and keyword(node, "pad_to_multiple_of") is None:
                self._pending.append((node, f"`{name}(...)` pads each batch to its longest sequence by default"))
                return
        padding = keyword(node, "padding")
        if padding is None or keyword(node, "pad_to_multiple_of") is not None:
            return
        if not (is_true(padding.value) or string_value(padding.value) == "longest"):
            return
        callee = short(func, 200).lower()
        if not (any(w in callee for w in TOKENIZER_WORDS) or name in COLLATORS
                or keyword(node, "return_tensors") is not None):
            return
        self._pending.append((node, f"`padding={short(padding.value, 50)}` pads each batch to its longest sequence"))

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if node.attr.value == "compile" and self.ctx.qualify(node) == "torch.compile":
            self._compiles = True  # also `@torch.compile` and `partial(torch.compile, ...)`

    def visit_Name(self, node: cst.Name) -> None:
        if node.value in self._aliases:
            self._compiles = True

    def leave_Module(self, original_node: cst.Module) -> None:
        if not self._compiles:
            return
        for node, what in self._pending:
            self.report(node, f"{what}, so compiled code sees a new shape (and recompiles) for most batches: "
                        'pad to a fixed length (`padding="max_length", max_length=N`) or to a few buckets '
                        "(`pad_to_multiple_of=`)")
