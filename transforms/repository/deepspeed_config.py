"""NRN632: DeepSpeed configs (``"fp16": {"enabled": true}``, CPU offload of the optimizer)."""

from __future__ import annotations

from neuronize.transforms._helpers.setup_files import TORCH_INDEX_URL

from neuronize.line_rule import LineRule, Span, TextDocument
from neuronize.sources.configs import json_entries, yaml_entries
from neuronize.sources.kinds import SourceKind
from neuronize.transform import Evidence, Example, Safety

_DEEPSPEED_KEYS = frozenset({"zero_optimization", "train_micro_batch_size_per_gpu", "train_batch_size",
                             "gradient_accumulation_steps", "zero_allow_untested_optimizer"})
_PATH = "use FSDP2 (`fully_shard`) or DDP with the `\"neuron\"` process group"


class DeepspeedConfig(LineRule):
    """Finds DeepSpeed config settings that need CUDA: `fp16.enabled`, optimizer/parameter offload, fused optimizers.

    What it does:
        Reports `"fp16": {"enabled": true}`, `offload_optimizer` / `offload_param` devices and
        DeepSpeed's fused optimizer types in DeepSpeed configs (JSON or YAML), each with the
        TorchNeuron path forward.

    Why on TorchNeuron:
        DeepSpeed has no documented TorchNeuron support: its engine, fused optimizers and CPU
        Adam are CUDA or compiled extensions. TorchNeuron supports DDP and FSDP2 (`fully_shard`),
        with bf16 autocast and no loss scaling.

    Example:
        {"train_batch_size": 32, "fp16": {"enabled": true}}

    Use instead:
        FSDP2 (`fully_shard`) with `torch.autocast("neuron", dtype=torch.bfloat16)`

    Fix safety:
        Report only: the training script's DeepSpeed calls move first; the config goes with them.

    Evidence:
        DOC for the supported parallelism (TorchNeuron overview); INF that DeepSpeed does not
        run (no Neuron page mentions it).
    """

    id = "NRN632"
    name = "deepspeed-config"
    kinds = (SourceKind.JSON_CONFIG, SourceKind.YAML_CONFIG)  # JSON first: its examples are JSON
    safety = Safety.REPORT_ONLY
    evidence = Evidence.INF
    section = "setup"
    effort = "high"
    tokens = (b"fp16", b"offload_", b"Adam", b"Lamb")
    references = (TORCH_INDEX_URL,)
    examples = (Example('{"train_batch_size": 32, "fp16": {"enabled": true}}\n'),)

    def check(self, doc: TextDocument) -> None:
        entries = list(json_entries(doc.lines) if doc.kind is SourceKind.JSON_CONFIG else yaml_entries(doc.lines))
        keys = {e.path[0] for e in entries if e.path}
        if not keys & _DEEPSPEED_KEYS:
            return  # not a DeepSpeed config
        for entry in entries:
            span = Span(entry.line, entry.start, entry.end)
            tail = entry.path[-2:]
            if tail == ("fp16", "enabled") and entry.value.lower() in ("true", "auto"):
                self.flag(span, f"DeepSpeed fp16 training; on Trainium train in bf16 (no loss scaling) and {_PATH}")
            elif len(tail) == 2 and tail[0] in ("offload_optimizer", "offload_param") and tail[1] == "device" \
                    and entry.value.lower() not in ("none", ""):
                self.flag(span, f"DeepSpeed `{tail[0]}` to {entry.value} runs DeepSpeed's compiled CPU/NVMe "
                          f"kernels; {_PATH}")
            elif tail == ("optimizer", "type") and entry.value in ("FusedAdam", "OneBitAdam", "OneBitLamb",
                                                                   "Lamb", "FusedLamb", "ZeroOneAdam", "CPUAdam"):
                self.flag(span, f"DeepSpeed optimizer `{entry.value}` is a CUDA kernel; use `torch.optim.AdamW` "
                          f"and {_PATH}")
