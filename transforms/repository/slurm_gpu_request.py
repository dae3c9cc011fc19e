"""NRN616: Slurm jobs that ask for GPUs from Python (submitit's ``gpus_per_node=``)."""

from __future__ import annotations

import re

import libcst as cst

from neuronize.transform import Evidence, Example, Safety, Transform
from neuronize.transforms._helpers.literals import string_value
from neuronize.transforms._helpers.messages import short
from neuronize.transforms._helpers.setup_files import DIST_TUTORIAL_URL

#: the parameters of a Slurm launcher (submitit's executor, and the dicts handed to it) that
#: count GPUs
GPU_COUNTS = frozenset({"gpus_per_node", "slurm_gpus_per_node", "gpus_per_task", "slurm_gpus_per_task"})
#: the parameters that name generic resources (`gres="gpu:8"`)
GRES = frozenset({"gres", "slurm_gres"})


#: a shell script kept in a Python string: a Slurm batch header, a shebang, a launcher command
TEMPLATE = re.compile(r"^#SBATCH|^#!/|^\s*(?:srun|sbatch|torchrun|mpirun|deepspeed|accelerate launch)\b", re.MULTILINE)
#: what such a script asks of a GPU node
_GPU_REQUEST = re.compile(r"--(?:gres=gpu[\w:]*|gpus(?:-per-(?:node|task))?[= ]\S+)")
_GPU_TOOL = re.compile(r"^[^#\n]*?(?<![\w-])(nvidia-smi|nvcc)(?![\w-])", re.MULTILINE)


def template_needs(text: str) -> list[str]:
    """What a launcher template (a shell script in a Python string) needs of a GPU node."""
    if "\n" not in text or not TEMPLATE.search(text):
        return []
    needs = [f"`{m.group()}`" for m in _GPU_REQUEST.finditer(text)]
    return needs + [f"`{tool}`" for tool in dict.fromkeys(m.group(1) for m in _GPU_TOOL.finditer(text))]


def _leading_text(value: cst.BaseExpression) -> str:
    """The text a string starts with (``"gpu:8"``, ``f"gpu:{n}"``), or "" for any other value."""
    text = string_value(value)
    if text is None and isinstance(value, cst.FormattedString) and value.parts:
        first = value.parts[0]
        text = first.value if isinstance(first, cst.FormattedStringText) else None
    return text or ""


class SlurmGpuRequest(Transform):
    """Finds Slurm jobs that ask for GPUs from Python: submitit's `gpus_per_node=` and `gres="gpu:N"`.

    What it does:
        Reports the keyword arguments `gpus_per_node=`, `gpus_per_task=` (also with submitit's
        `slurm_` prefix) and a `gres=` / `slurm_gres=` whose value starts with `gpu`, in any call
        (`executor.update_parameters(gpus_per_node=8)`), and the same names as keys of a literal
        dict (the parameters a helper builds and hands on with `**`). Also reports launcher
        templates kept in Python strings (a `#SBATCH` header, a shebang or a `srun`/`torchrun`
        line) that ask for GPUs (`--gres=gpu:8`, `--gpus-per-node=8`) or run `nvidia-smi` /
        `nvcc`, one finding per template. It never changes them.

    Why on TorchNeuron:
        A Trainium node has no GPUs for Slurm to hand out, so a job that asks for them waits for
        resources that do not exist. A TorchNeuron job runs one process per logical NeuronCore (64
        workers on a trn2.48xlarge in the Neuron distributed tutorial), so the task count that
        usually equals the GPU count changes too.

    Example:
        executor.update_parameters(gpus_per_node=8, tasks_per_node=8, nodes=2)

    Use instead:
        executor.update_parameters(tasks_per_node=64, nodes=2)  # trn2.48xlarge: 64 NeuronCores

    Fix safety:
        Report only: how a cluster exposes Neuron devices to Slurm is the cluster's configuration.

    Evidence:
        DOC: one process per NeuronCore (Neuron distributed tutorial). Not established here: the
        Slurm resource names of Trainium clusters.
    """

    id = "NRN616"
    name = "slurm-gpu-request"
    safety = Safety.REPORT_ONLY
    evidence = Evidence.INF
    section = "setup"
    effort = "low"
    references = (DIST_TUTORIAL_URL,)
    tokens = (b"gpus_per_", b"gres", b"nvidia-smi", b"nvcc", b"--gpus")
    examples = (Example("executor.update_parameters(gpus_per_node=8, tasks_per_node=8)\n"),)

    def visit_SimpleString(self, node: cst.SimpleString) -> None:
        if "\n" in node.value or "\\n" in node.value:
            self._template(node, string_value(node) or "")

    def visit_FormattedString(self, node: cst.FormattedString) -> None:
        self._template(node, "".join(p.value if isinstance(p, cst.FormattedStringText) else "{}" for p in node.parts))

    def _template(self, node: cst.CSTNode, text: str) -> None:
        needs = template_needs(text)
        if needs and not isinstance(self.ctx.parent, cst.Expr):  # a docstring is no template
            self.report(node, f"launcher template in a Python string needs GPUs: {', '.join(needs)}; a Trainium "
                        "node has no GPUs for Slurm to hand out and no NVIDIA tools: request its Neuron devices "
                        "as your cluster defines them, size tasks in NeuronCores, and use `neuron-ls` / "
                        "`neuron-top` instead of `nvidia-smi`")

    def visit_Arg(self, node: cst.Arg) -> None:
        if node.keyword is not None:
            self._check(node.keyword.value, node.value, node)

    def visit_DictElement(self, node: cst.DictElement) -> None:
        key = string_value(node.key)
        if key is not None:
            self._check(key, node.value, node)

    def _check(self, name: str, value: cst.BaseExpression, node: cst.CSTNode) -> None:
        if name not in GPU_COUNTS and not (name in GRES and _leading_text(value).lower().startswith("gpu")):
            return
        self.report(node, f"`{name}={short(value, 30, tight=True)}` asks Slurm for GPUs, which a Trainium node "
                          "does not have: the job would wait for them; request the node's Neuron devices as "
                          "your cluster defines them, and size tasks in NeuronCores (one process each)")
