"""NRN502: Hugging Face ``TrainingArguments`` torch.compile settings -> the Neuron backend."""

from __future__ import annotations

import libcst as cst

from neuronize.transforms._helpers import per_target
from neuronize.transform import Evidence, ImportRequest, Example, Safety, Transform
from neuronize.transforms._helpers.calls import keyword, with_keyword, without_args
from neuronize.writing.device_name import chooses_neuron
from neuronize.transforms._helpers.hf import training_arguments_class
from neuronize.analysis.syntax import is_false_or_none
from neuronize.transforms._helpers.literals import is_true, string_value

# Dynamo backends that run anywhere (debugging aids): left alone.
_PORTABLE = ("neuron", "eager", "aot_eager", "aot_eager_decomp_partition")


class HfCompileSettings(Transform):
    """Finds Hugging Face Trainer compile settings that target Inductor.

    What it does:
        In `TrainingArguments(...)` and the TRL configs built on it, sets
        `torch_compile_backend="neuron"` (replacing `"inductor"`, `"cudagraphs"` and other GPU
        backends, or adding it next to `torch_compile=True`) and drops `torch_compile_mode=`.
        Setting a mode or a backend turns compilation on in transformers, so a dropped mode is
        replaced by the backend and compilation stays on. A backend or an on/off switch taken
        from a variable is reported.

    Why on TorchNeuron:
        The Trainer compiles through accelerate's dynamo plugin, which has a `neuron` backend;
        Inductor does not target Trainium, and compile modes other than the default are ignored
        by the Neuron backend (with a warning).

    Example:
        args = TrainingArguments("out", torch_compile=True, torch_compile_mode="max-autotune")

    Use instead:
        args = TrainingArguments("out", torch_compile=True, torch_compile_backend="neuron")

    Fix safety:
        Unsafe: the Trainer/accelerate Neuron backend comes from Hugging Face pull requests, not
        AWS documentation.

    Evidence:
        3P: accelerate PR #4097. DOC: the compile reference for the backend and the mode.
    """

    id = "NRN502"
    name = "hf-compile-settings"
    safety = Safety.UNSAFE
    evidence = Evidence.THIRD_PARTY
    section = "hf"
    references = (
        "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/index.html",
        "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/compile/reference-torch-compile.html",
        "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/compile/how-to-optimize-with-torch-compile.html",
        "https://github.com/huggingface/accelerate/pull/4097",
    )
    tokens = (b"torch_compile",)
    targets = per_target.ALL
    examples = (
        Example(
            "from transformers import TrainingArguments\n"
            "args = TrainingArguments('out', torch_compile=True, torch_compile_mode='max-autotune')\n",
            "from transformers import TrainingArguments\n"
            "args = TrainingArguments('out', torch_compile=True, torch_compile_backend='neuron')\n",
        ),
        Example(
            "from transformers import TrainingArguments\n"
            "args = TrainingArguments('out', torch_compile_backend=\"inductor\")\n",
            "from transformers import TrainingArguments\n"
            "args = TrainingArguments('out', torch_compile_backend=\"neuron\")\n",
        ),
    )

    def visit_Call(self, node: cst.Call) -> None:
        cls = training_arguments_class(self.ctx, node)
        if cls is None:
            return
        switch = keyword(node, "torch_compile")
        backend = keyword(node, "torch_compile_backend")
        mode = keyword(node, "torch_compile_mode")
        if mode is not None and is_false_or_none(mode.value):
            mode = None
        if backend is not None and is_false_or_none(backend.value):
            backend = None
        new = node
        changes: list[str] = []
        imports: tuple[ImportRequest, ...] = ()
        if backend is not None:
            value = string_value(backend.value)
            if value is None and chooses_neuron(backend.value):
                pass  # chosen from the detected device (`--target accelerator`)
            elif value == "inductor" and per_target.target(self.ctx) == per_target.CPU:
                pass  # Inductor compiles for the CPU
            elif value is None:
                code = cst.Module([]).code_for_node(backend.value)
                self.report(backend, f"`torch_compile_backend={code}` in `{cls}`: make it `\"neuron\"` on "
                            "Trainium", evidence=Evidence.THIRD_PARTY)
            elif value not in _PORTABLE:
                chosen, more = per_target.backend_name(self.ctx, backend.value)
                imports += more
                new = new.with_changes(args=[a.with_changes(value=chosen) if a is backend else a for a in new.args])
                changes.append(per_target.say(self.ctx, '`torch_compile_backend="{value}"` -> `{backend_name}`',
                                           value=value))
        if mode is not None:
            code = cst.Module([]).code_for_node(mode.value)
            current = keyword(new, "torch_compile_mode")
            assert current is not None
            if backend is None:
                # In place: a mode alone turns compilation on, and so does a backend.
                chosen, more = per_target.backend_name(self.ctx, mode.value)
                imports += more
                replacement = current.with_changes(keyword=cst.Name("torch_compile_backend"), value=chosen)
                new = new.with_changes(args=[replacement if a is current else a for a in new.args])
                changes.append(per_target.say(
                    self.ctx, "`torch_compile_mode={code}` -> `torch_compile_backend={backend_name}` (the Neuron "
                    "backend honours only the default mode; the Trainer defaults to Inductor)", code=code))
            else:
                new = without_args(new, current)
                changes.append(f"drops `torch_compile_mode={code}` (the Neuron backend honours only the default)")
        elif backend is None:
            if switch is not None and is_true(switch.value):
                chosen, more = per_target.backend_name(self.ctx)
                imports += more
                new = with_keyword(new, "torch_compile_backend", chosen)
                changes.append(per_target.say(self.ctx, "sets `torch_compile_backend={backend_name}` "
                                           "(the Trainer defaults to Inductor)"))
            elif switch is not None and not is_false_or_none(switch.value):
                code = cst.Module([]).code_for_node(switch.value)
                self.report(switch, f"`torch_compile={code}` in `{cls}`: when it is on, also pass "
                            '`torch_compile_backend="neuron"` (the Trainer defaults to Inductor)',
                            evidence=Evidence.THIRD_PARTY)
        if changes and not new.deep_equals(node):  # (`--target cpu` keeps `"inductor"` as it is)
            self.fix(node, new, f"{cls}: {'; '.join(changes)}", imports=imports)
