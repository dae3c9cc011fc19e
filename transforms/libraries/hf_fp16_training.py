"""NRN501: Hugging Face ``TrainingArguments(fp16=True)`` -> ``bf16=True``."""

from __future__ import annotations

import libcst as cst

from neuronize.transforms._helpers import per_target
from neuronize.transform import Evidence, Example, ImportRequest, Safety, Target, Transform
from neuronize.analysis.context import FileContext
from neuronize.transforms._helpers.calls import index_of, insert_args, keyword, new_keyword, replace_value, without_args
from neuronize.transforms._helpers.device_choice import says_only_neuron
from neuronize.transforms._helpers.device_model import keeps_cuda_hosts
from neuronize.transforms._helpers.nodes import parenthesized
from neuronize.transforms._helpers.hf import deepspeed_fp16_section, training_arguments_class
from neuronize.analysis.syntax import is_false_or_none, without_not
from neuronize.transforms._helpers.literals import is_true, make_string, string_value

_NEURON = ("hasattr(torch, 'accelerator') and torch.accelerator.is_available() and "
           "torch.accelerator.current_accelerator().type == 'neuron'")
_PAIRS = (("fp16", "bf16"), ("fp16_full_eval", "bf16_full_eval"))
_BACKENDS = ("half_precision_backend", "fp16_backend")


class HfFp16Training(Transform):
    """Finds Hugging Face training configured for fp16 mixed precision.

    What it does:
        In `TrainingArguments(...)`, `Seq2SeqTrainingArguments(...)` and the classes built on
        them (TRL's `SFTConfig`, `DPOConfig`, `GRPOConfig`..., Sentence Transformers'
        `SentenceTransformerTrainingArguments`), makes `fp16=True` per host: `fp16=not
        <Neuron is here>, bf16=<Neuron is here>` (and so `fp16_full_eval=True`), so CUDA hosts keep
        fp16 (GPUs before Ampere refuse bf16) and Trainium trains in bf16. It drops
        `half_precision_backend=` / `fp16_backend=` set to `"cuda_amp"` or `"amp"` (what `"auto"`
        chooses on CUDA anyway); `"apex"` stays for the CUDA hosts (`"auto"` on Neuron:
        transformers refuses Apex beside bf16). `--target accelerator` and
        `--target cpu` write `bf16=True` for every host (an existing `bf16=` is set to `True` and
        `fp16=` dropped) and drop `"apex"` too. An fp16 flag taken from a variable
        (`fp16=args.fp16`) is reported. `fp16_opt_level` is left alone (only Apex reads it).
        Also reports, without a fix, fp16 with loss scaling configured elsewhere:
        `Accelerator(mixed_precision="fp16")` and the `"fp16"` section of a DeepSpeed config dict
        (`{"fp16": {"enabled": True, "loss_scale": 0}, "zero_optimization": {...}}`), and
        `tf32=True` in those argument classes: transformers raises at construction when no
        Ampere-or-newer CUDA GPU is present, so the script stops before training on Trainium.

    Why on TorchNeuron:
        Trainium training runs in bf16; no Neuron gradient scaler for fp16 is documented, and
        Hugging Face's own Neuron reference script for TRL passes `--bf16 --fp16 false`.

    Example:
        args = TrainingArguments("out", fp16=True, half_precision_backend="apex")

    Use instead:
        args = TrainingArguments(
            "out", fp16=not on_neuron(), bf16=on_neuron(),
            half_precision_backend="auto" if on_neuron() else "apex",
        )

    Fix safety:
        Unsafe: bf16 has a wider range and less precision than fp16, so losses and metrics can
        differ slightly; the Neuron side rests on a Hugging Face pull request, not AWS documentation.

    Evidence:
        3P: huggingface/trl PR #5125; transformers' `TrainingArguments` checks for TF32 support
        (source). INF: no Neuron fp16 loss scaling.
    """

    id = "NRN501"
    name = "hf-fp16-training"
    safety = Safety.UNSAFE
    evidence = Evidence.THIRD_PARTY
    section = "hf"
    references = (
        "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/tutorials/tutorial-hf-inference-torch-compile.html",
        "https://github.com/huggingface/trl/pull/5125",
    )
    tokens = (b"fp16", b"tf32")
    #: the same edit on every `--target` (it names no device)
    targets = per_target.ALL
    examples = (
        Example(
            "import torch\nfrom transformers import TrainingArguments\nargs = TrainingArguments('out', fp16=True)\n",
            "import torch\nfrom transformers import TrainingArguments\nargs = TrainingArguments('out', fp16=not "
            f"({_NEURON}), bf16={_NEURON})\n",
        ),
        Example(
            "import torch\nfrom trl import SFTConfig\ncfg = SFTConfig(output_dir='o', fp16=True, bf16=False)\n",
            f"import torch\nfrom trl import SFTConfig\ncfg = SFTConfig(output_dir='o', fp16=not ({_NEURON}), bf16={_NEURON})\n",
        ),
        Example(
            "from transformers import TrainingArguments\nargs = TrainingArguments('out', fp16=True)\n",
            "from transformers import TrainingArguments\nargs = TrainingArguments('out', bf16=True)\n",
            target=Target.ACCELERATOR,
        ),
        Example("import transformers\nargs = transformers.TrainingArguments('out', fp16=opts.fp16)\n"),
    )

    def visit_Dict(self, node: cst.Dict) -> None:
        section = deepspeed_fp16_section(node)
        if section is not None:
            self.report(section, "DeepSpeed `\"fp16\"` section: fp16 with dynamic loss scaling, which has no "
                        "documented Neuron counterpart; Trainium trains in bf16: use `\"bf16\": {\"enabled\": true}`"
                        " (and FSDP2 or DDP instead of DeepSpeed, see NRN903)", evidence=Evidence.INF)

    def visit_Call(self, node: cst.Call) -> None:
        if self.ctx.qualify(node.func) == "accelerate.Accelerator":
            precision = keyword(node, "mixed_precision")
            if precision is not None and string_value(precision.value) == "fp16":
                self.report(precision, '`Accelerator(mixed_precision="fp16")` scales the loss with a CUDA '
                            'GradScaler; Trainium trains in bf16: use `mixed_precision="bf16"` (on GPUs older '
                            "than Ampere bf16 is slow or missing: check your fleet)", evidence=Evidence.INF)
            return
        cls = training_arguments_class(self.ctx, node)
        if cls is None:
            return
        tf32 = keyword(node, "tf32")
        if tf32 is not None and is_true(tf32.value):
            self.report(tf32, f"`tf32=True` in `{cls}`: transformers raises when the host has no Ampere-or-newer "
                        "CUDA GPU, so this stops on Trainium (and on CPU); drop it, or pass it only where CUDA runs "
                        "(TF32 is an NVIDIA matmul mode; Neuron precision follows the dtype and autocast)",
                        evidence=Evidence.THIRD_PARTY)
        new = node
        changes: list[str] = []
        imports: tuple[ImportRequest, ...] = ()
        for fp16_name, bf16_name in _PAIRS:
            fp16 = keyword(new, fp16_name)
            if fp16 is None or is_false_or_none(fp16.value) or _elsewhere(fp16.value):
                continue
            if not is_true(fp16.value):
                code = cst.Module([]).code_for_node(fp16.value)
                self.report(fp16, f"`{fp16_name}={code}` in `{cls}`: fp16 training is not a documented "
                            f"Neuron path; pass `{bf16_name}=` instead (Trainium trains in bf16)",
                            evidence=Evidence.THIRD_PARTY)
                continue
            bf16 = keyword(new, bf16_name)
            if keeps_cuda_hosts(self.ctx):
                new, more = _per_host(self.ctx, new, fp16, bf16, bf16_name)
                imports += more
                changes.append(f"`{fp16_name}=True` -> `{bf16_name}=True` on Neuron")
                continue
            if bf16 is None:
                new = new.with_changes(args=[
                    a.with_changes(keyword=cst.Name(bf16_name)) if a is fp16 else a for a in new.args])
            else:
                new = without_args(new.with_changes(args=[
                    a.with_changes(value=cst.Name("True")) if a is bf16 else a for a in new.args]), fp16)
            changes.append(f"`{fp16_name}=True` -> `{bf16_name}=True`")
        for name in _BACKENDS:
            backend = keyword(new, name)
            if backend is None:
                continue
            value = string_value(backend.value)
            if value == "apex" and keeps_cuda_hosts(self.ctx):
                # CUDA hosts keep their fp16 engine; transformers refuses apex beside bf16
                per_host, more = per_target.neuron_only(self.ctx, make_string("auto", backend.value), backend.value)
                new, imports = replace_value(new, backend, per_host), imports + more
                changes.append(f'`{name}="apex"` on CUDA only')
                continue
            if value in ("apex", "cuda_amp", "amp"):
                new = without_args(new, backend)
                changes.append(f'drops `{name}="{value}"` (GPU-only)')
        if changes:
            self.fix(node, new, f"{cls}: {'; '.join(changes)}: Trainium trains in bf16, with no fp16 "
                     "loss scaling documented", imports=imports)


def _per_host(ctx: FileContext, call: cst.Call, fp16: cst.Arg, bf16: cst.Arg | None,
              bf16_name: str) -> tuple[cst.Call, tuple[ImportRequest, ...]]:
    """``fp16=not <Neuron>, bf16=<Neuron>``: the CUDA hosts keep fp16 (GPUs before Ampere refuse
    bf16, and their runs keep their numbers), Neuron trains in bf16."""
    test, imports = per_target.neuron_present(ctx)
    position = index_of(call, fp16)
    call = replace_value(call, fp16, cst.UnaryOperation(cst.Not(), parenthesized(test)))
    if bf16 is not None:
        return replace_value(call, bf16, test), imports
    return insert_args(call, position + 1, [new_keyword(bf16_name, test)]), imports


def _elsewhere(value: cst.BaseExpression) -> bool:
    """``not <Neuron>``: the per-host value :func:`_per_host` wrote."""
    test, negated = without_not(value)
    return negated and says_only_neuron(test)
