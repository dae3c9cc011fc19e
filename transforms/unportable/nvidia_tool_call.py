"""NRN913: NVIDIA command-line tools run from Python (``subprocess.run(["nvidia-smi", ...])``)."""

from __future__ import annotations

import libcst as cst

from neuronize.transforms._helpers.calls import keyword
from neuronize.transforms._helpers.literals import is_true, string_value
from neuronize.transforms._helpers.setup_files import NVIDIA_TOOL, NVIDIA_TOOL_INSTEAD, TROUBLESHOOTING_URL
from neuronize.transform import Evidence, Example, Safety, Transform

#: the runners that return the shell's status or output where the command is missing: the program
#: goes on there (``os.system("nvidia-smi")`` prints an error and returns 127)
_SHELL_RUNNERS = frozenset({"subprocess.getoutput", "subprocess.getstatusoutput", "os.system", "os.popen"})
#: the functions that run a command given as their first argument
RUNNERS = frozenset({
    "subprocess.run", "subprocess.call", "subprocess.check_call", "subprocess.check_output", "subprocess.Popen",
    "subprocess.getoutput", "subprocess.getstatusoutput", "os.system", "os.popen",
})


def _command(arg: cst.BaseExpression) -> str | None:
    """The command a runner's first argument names: a string, or the first string of a list or tuple."""
    if isinstance(arg, (cst.List, cst.Tuple)) and arg.elements:
        arg = arg.elements[0].value
    return string_value(arg) if isinstance(arg, (cst.SimpleString, cst.ConcatenatedString)) else None


class NvidiaToolCall(Transform):
    """Finds NVIDIA command-line tools run from Python (`subprocess.run(["nvidia-smi", ...])`).

    What it does:
        Reports a call of `subprocess.run`, `call`, `check_call`, `check_output`, `Popen`,
        `getoutput`, `getstatusoutput`, `os.system` or `os.popen` whose command (a string, or the
        first string of a list) runs `nvidia-smi`, `nvcc`, `nvidia-docker` or
        `nvidia-container-cli`, with the Neuron tool that does the job. The device edits of the
        code around it wait for it where the call raises without the tool (`subprocess.run([...])`,
        `check_output`, `Popen`, a `check=True`): on a Trainium host the program stops there. A
        command the shell runs (`os.system`, `os.popen`, `getoutput`, `shell=True` without
        `check=True`) only prints an error there, and the program goes on: it holds nothing.

    Why on TorchNeuron:
        A Trainium host has no NVIDIA driver or CUDA toolkit: the command is not found, and the
        call raises (`FileNotFoundError`) or its output is empty. The Neuron tools list devices
        and cores (`neuron-ls`) and show utilisation (`neuron-top`).

    Example:
        import subprocess
        result = subprocess.run(["nvidia-smi"], capture_output=True, text=True)

    Use instead:
        import subprocess
        result = subprocess.run(["neuron-ls"], capture_output=True, text=True)

    Fix safety:
        Report only: the tools' output differs, so whatever reads it must change too.

    Evidence:
        DOC: the TorchNeuron troubleshooting page uses `neuron-ls` to check devices
        (https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/troubleshooting.html).
    """

    id = "NRN913"
    name = "nvidia-tool-call"
    safety = Safety.REPORT_ONLY
    evidence = Evidence.DOC
    section = "setup"
    effort = "low"
    stops_without_cuda = True
    references = (TROUBLESHOOTING_URL,)
    tokens = (b"nvidia-smi", b"nvcc", b"nvidia-docker", b"nvidia-container-cli")
    examples = (
        Example('import subprocess\nresult = subprocess.run(["nvidia-smi"], capture_output=True, text=True)\n', None),
        Example('import os\nos.system("nvidia-smi --query-gpu=name --format=csv")\n', None),
        Example('import subprocess\nsubprocess.run(["neuron-ls"])\n', finds=False),
    )

    def visit_Call(self, node: cst.Call) -> None:
        runner = self.ctx.qualify(node.func)
        if not node.args or runner not in RUNNERS:
            return
        match = NVIDIA_TOOL.search(_command(node.args[0].value) or "")
        if match is not None:
            tool = match.group("tool")
            self.report(node, f"runs `{tool}`, an NVIDIA tool that a Trainium host does not have: the call "
                              f"fails there; {NVIDIA_TOOL_INSTEAD[tool]}", harmless=_goes_on(runner, node))


def _goes_on(runner: str, call: cst.Call) -> bool:
    """The program goes on where the command ``runner`` runs is missing: the shell runs it and no
    check raises."""
    if runner in _SHELL_RUNNERS:
        return True
    shell, check = keyword(call, "shell"), keyword(call, "check")
    return (runner in ("subprocess.run", "subprocess.call") and shell is not None and is_true(shell.value)
            and (check is None or not is_true(check.value)))
