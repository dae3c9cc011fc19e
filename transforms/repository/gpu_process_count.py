"""NRN612: process counts sized in GPUs (``torchrun --nproc_per_node=8``, ``NGPU=8``)."""

from __future__ import annotations

import re

from neuronize.transforms._helpers.setup_files import CORES_PER_INSTANCE, DIST_TUTORIAL_URL, TORCH_INDEX_URL, code_lines

from neuronize.line_rule import LineRule, Span, TextDocument
from neuronize.sources.configs import yaml_entries
from neuronize.sources.kinds import SourceKind
from neuronize.sources.shell import CodeLine
from neuronize.transform import Evidence, Example, Safety

_COUNTS = re.compile(
    r"(?P<what>--nproc[_-]per[_-]node|--num[_-]gpus|--num[_-]processes|--gpus[_-]per[_-]node|--gres=gpu|"
    r"(?<![\w$])(?:NGPUS?|NUM_GPUS?|N_GPUS?|GPUS_PER_NODE|NPROC_PER_NODE|GPU_NUM|NUM_GPUS_PER_NODE))"
    r"(?:[ \t]*[= :][ \t]*)(?P<value>\$\{[^}]*\}|\$\(\([^)]*\)\)|\$\([^)]*\)|\"[^\"]*\"|'[^']*'|[^\s;&|]+)")


class GpuProcessCount(LineRule):
    """Finds process counts sized in GPUs: `torchrun --nproc_per_node`, `NGPU=8`, Accelerate's `num_processes`, Slurm's `#SBATCH --gres=gpu:N`.

    What it does:
        Reports each count with the figure that fits Trainium. It never changes a count: how many
        processes a job wants is the job's choice.

    Why on TorchNeuron:
        A TorchNeuron job runs one process per logical NeuronCore, not per GPU: the Neuron
        distributed tutorial runs 64 workers on a trn2.48xlarge (16 Trainium2 chips x 4 logical
        cores), and sharding degrees are counted in NeuronCores.

    Example:
        torchrun --nproc_per_node=8 train.py

    Use instead:
        torchrun --nproc_per_node=64 train.py  # trn2.48xlarge

    Fix safety:
        Report only: the right count depends on the instance type and on how the job shards
        its model.

    Evidence:
        DOC: the Neuron distributed training tutorial (64 workers per trn2.48xlarge). Not
        established here: the logical-core count of Trn3 instances, and Slurm settings for Trainium.
    """

    id = "NRN612"
    name = "gpu-process-count"
    kinds = (SourceKind.SHELL, SourceKind.MAKEFILE, SourceKind.DOCKERFILE, SourceKind.YAML_CONFIG)
    safety = Safety.REPORT_ONLY
    evidence = Evidence.DOC
    section = "setup"
    effort = "low"
    tokens = (b"nproc", b"gpus", b"GPU", b"gres=gpu", b"num_processes")
    references = (DIST_TUTORIAL_URL, TORCH_INDEX_URL)
    examples = (Example("torchrun --nproc_per_node=8 train.py\n"),)

    def check(self, doc: TextDocument) -> None:
        if doc.kind is SourceKind.YAML_CONFIG:
            for entry in yaml_entries(doc.lines):
                if entry.path == ("num_processes",):
                    self.flag(Span(entry.line, entry.key_start, entry.end),
                              f"`num_processes: {entry.value}` counts GPUs; on Trainium it is {CORES_PER_INSTANCE}")
            return
        # Slurm's `#SBATCH` directives are comments to the shell, and read all the same
        batch = [CodeLine(i, line.text) for i, line in enumerate(doc.lines) if line.text.startswith("#SBATCH")]
        for line in (*batch, *code_lines(doc)):
            for match in _COUNTS.finditer(line.code):
                if match.group("value").strip("\"'") == "1" or (
                        match.group("what") == "--num_gpus" and "deepspeed" not in line.code):
                    continue  # one process is one process on any device
                self.flag(Span(line.index, match.start(), match.end()),
                          f"`{match.group()}` sizes the job in GPUs; on Trainium it is {CORES_PER_INSTANCE}")
