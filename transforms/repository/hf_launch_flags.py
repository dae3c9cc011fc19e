"""NRN617: GPU-only training flags in launch scripts (``--tf32 True``, ``--fp16``, bitsandbytes ``--optim``)."""

from __future__ import annotations

import re

from neuronize.transforms._helpers.setup_files import COMMAND_KINDS, TORCH_INDEX_URL, code_lines

from neuronize.line_rule import LineRule, Span, TextDocument
from neuronize.transform import Evidence, Example, Safety

#: `--tf32 True`, `--fp16=true`, a bare `--fp16` (a boolean flag of Hugging Face's argument parser)
_PRECISION = re.compile(r"(?<![\w-])--(?P<flag>tf32|fp16)(?![\w-])(?:[ \t]*=[ \t]*|[ \t]+)?(?P<value>[^\s;&|\\]*)")
#: `--optim paged_adamw_32bit`, `--optim=adamw_bnb_8bit`: optimizers that load bitsandbytes
_OPTIM = re.compile(r"(?<![\w-])--optim(?:[ \t]*=[ \t]*|[ \t]+)[\"']?(?P<name>paged_\w+|\w*bnb\w*|\w+_8bit)\b")
_TRUE = frozenset({"", "true", "1", "yes"})
_ADVICE = {
    "tf32": "transformers raises when the host has no Ampere-or-newer CUDA GPU, so the job stops on Trainium; drop "
            "it there (TF32 is an NVIDIA matmul mode; Neuron precision follows the dtype and autocast)",
    "fp16": "fp16 training scales the loss with a CUDA GradScaler, with no Neuron counterpart documented; "
            "Trainium trains in bf16: pass `--bf16 True --fp16 False`",
}


class HfLaunchFlags(LineRule):
    """Finds GPU-only training flags in launch scripts: `--tf32 True`, `--fp16`, bitsandbytes optimizers (`--optim paged_adamw_32bit`).

    What it does:
        Reports, in shell scripts, Makefiles and Dockerfiles, the command-line flags a Hugging
        Face training script (or any script parsing the same `TrainingArguments`) reads as GPU
        settings: `--tf32 True`, `--fp16` / `--fp16 True`, and `--optim` naming a bitsandbytes
        optimizer (`paged_adamw_32bit`, `adamw_bnb_8bit`, `lion_8bit`...). A flag set to
        `False` passes.

    Why on TorchNeuron:
        `tf32=True` makes transformers raise at start-up on a host without an Ampere-or-newer
        CUDA GPU; bitsandbytes optimizers run CUDA kernels only; fp16 training needs a loss
        scaler, and Trainium trains in bf16 (Hugging Face's Neuron reference script for TRL
        passes `--bf16 --fp16 false`).

    Example:
        torchrun --nproc_per_node 8 finetune.py --tf32 True --fp16 --optim paged_adamw_32bit

    Use instead:
        torchrun --nproc_per_node 64 finetune.py --bf16 True --optim adamw_torch

    Fix safety:
        Report only: the script may also run on GPUs, where these flags are what it wants; a
        Trainium launch needs its own line or a variable.

    Evidence:
        3P: transformers' `TrainingArguments` checks for TF32 support (source); huggingface/trl
        PR #5125 (bf16 on Neuron). INF: bitsandbytes ships CUDA kernels only; no Neuron fp16 loss
        scaling is documented.
    """

    id = "NRN617"
    name = "hf-launch-flags"
    kinds = COMMAND_KINDS
    safety = Safety.REPORT_ONLY
    evidence = Evidence.THIRD_PARTY
    section = "setup"
    effort = "low"
    tokens = (b"--tf32", b"--fp16", b"--optim")
    references = (TORCH_INDEX_URL, "https://github.com/huggingface/trl/pull/5125")
    examples = (
        Example("python train.py --tf32 True --bf16 True\n"),
        Example("accelerate launch sft.py --optim paged_adamw_8bit\n"),
    )

    def check(self, doc: TextDocument) -> None:
        for line in code_lines(doc):
            for match in _PRECISION.finditer(line.code):
                value = match.group("value").strip("\"'").lower()
                if value.startswith("-"):
                    value = ""  # a bare boolean flag, then the next option
                if value not in _TRUE:
                    continue
                end = match.end() if value else match.end("flag")
                self.flag(Span(line.index, match.start(), end),
                          f"`{line.code[match.start():end]}`: {_ADVICE[match.group('flag')]}")
            for match in _OPTIM.finditer(line.code):
                self.flag(Span(line.index, match.start(), match.end()),
                          f"`--optim {match.group('name')}` is a bitsandbytes optimizer (CUDA kernels only); on "
                          "Trainium pass `--optim adamw_torch`", evidence=Evidence.INF)
