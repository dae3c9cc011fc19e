"""NRN502: Hugging Face ``TrainingArguments`` torch.compile settings -> the Neuron backend."""

from __future__ import annotations

import libcst as cst

from neuronize.transform import Evidence, Example, Safety, Transform
from neuronize.transforms._calls import keyword, with_keyword, without_args
from neuronize.transforms._hf import training_arguments_class
from neuronize.transforms._literals import is_false_or_none, is_true, make_string, string_like, string_value

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
        3P: reference H2 (accelerate PR #4097); C1/C2 for the backend and mode (DOC).
    """

    id = "NRN502"
    name = "hf-compile-settings"
    safety = Safety.UNSAFE
    evidence = Evidence.THIRD_PARTY
    tokens = (b"torch_compile",)
    targets = ("neuron", "accelerator", "cpu")
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
        if backend is not None:
            value = string_value(backend.value)
            if value is None and "current_accelerator" in cst.Module([]).code_for_node(backend.value):
                pass  # chosen from the detected device (`--target accelerator`)
            elif value == "inductor" and self.ctx.options.target == "cpu":
                pass  # Inductor compiles for the CPU
            elif value is None:
                code = cst.Module([]).code_for_node(backend.value)
                self.report(backend, f"`torch_compile_backend={code}` in `{cls}`: make it `\"neuron\"` on "
                            "Trainium", evidence=Evidence.THIRD_PARTY)
            elif value not in _PORTABLE:
                new = new.with_changes(args=[
                    a.with_changes(value=string_like(a.value, "neuron")) if a is backend else a for a in new.args])
                changes.append(f'`torch_compile_backend="{value}"` -> `"neuron"`')
        if mode is not None:
            code = cst.Module([]).code_for_node(mode.value)
            current = keyword(new, "torch_compile_mode")
            assert current is not None
            if backend is None:
                # In place: a mode alone turns compilation on, and so does a backend.
                replacement = current.with_changes(keyword=cst.Name("torch_compile_backend"),
                                                   value=make_string("neuron", mode.value))
                new = new.with_changes(args=[replacement if a is current else a for a in new.args])
                changes.append(f'`torch_compile_mode={code}` -> `torch_compile_backend="neuron"` (the Neuron '
                               "backend honours only the default mode; the Trainer defaults to Inductor)")
            else:
                new = without_args(new, current)
                changes.append(f"drops `torch_compile_mode={code}` (the Neuron backend honours only the default)")
        elif backend is None:
            if switch is not None and is_true(switch.value):
                new = with_keyword(new, "torch_compile_backend", make_string("neuron"))
                changes.append('sets `torch_compile_backend="neuron"` (the Trainer defaults to Inductor)')
            elif switch is not None and not is_false_or_none(switch.value):
                code = cst.Module([]).code_for_node(switch.value)
                self.report(switch, f"`torch_compile={code}` in `{cls}`: when it is on, also pass "
                            '`torch_compile_backend="neuron"` (the Trainer defaults to Inductor)',
                            evidence=Evidence.THIRD_PARTY)
        if changes:
            self._fix(node, new, f"{cls}: {'; '.join(changes)}")

    def _fix(self, node: cst.Call, new: cst.Call, message: str) -> None:
        """``--target cpu``: `"inductor"` (the CPU's compiler) where Neuron gets `"neuron"`;
        ``accelerator``: `"neuron"` on a Neuron device, else `"inductor"`."""
        from neuronize.transforms import _target

        imports: tuple = ()
        if not _target.is_neuron(self.ctx):
            def value(like):  # type: ignore[no-untyped-def]
                chosen = _target.compile_backend_expr(self.ctx)
                if chosen is None:
                    return make_string("inductor", like), ()
                return chosen

            new, imports = _target.retarget_literals(self.ctx, node, new, value=value)
            if _target.target(self.ctx) == _target.CPU and cst.Module([]).code_for_node(new) == \
                    cst.Module([]).code_for_node(node):
                return
            message = message.replace('`"neuron"`', _target.compile_backend_text(self.ctx)).replace(
                '`torch_compile_backend="neuron"`', f"`torch_compile_backend` {_target.compile_backend_text(self.ctx)}"
                if _target.target(self.ctx) == _target.ACCELERATOR else '`torch_compile_backend="inductor"`')
            message = message.replace("the Neuron backend honours only the default", "as on Neuron, which "
                                      "honours only the default")
        self.fix(node, new, message, imports=imports)
