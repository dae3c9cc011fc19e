"""GPU-specific IPython lines of a notebook cell (``!nvidia-smi``, ``%env CUDA_VISIBLE_DEVICES=0``,
``!CUDA_VISIBLE_DEVICES=0 tune run ...``, ``!pip install flash-attn``), which the notebook reader
masks so that no rule sees them.

Pure: (line, text) pairs in, (line, rule id, message) out. The findings are filed under the rule
that owns the same thing in Python code (NRN903 for GPU tools and CUDA-only packages, NRN911 for
environment variables), so enabling, disabling and reporting treat them alike.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable, Iterator

from neuronize.analysis.cuda_packages import NEURON_TOOLS, PACKAGES, distribution_package
from neuronize.analysis.cuda_env_vars import CPU_ONLY, HIDE_ALL, advice_for

#: command-line tools that talk to NVIDIA GPUs
GPU_TOOLS = frozenset({"nvidia-smi", "nvcc", "gpustat", "nvtop", "nvitop", "deviceQuery", "nvidia-debugdump",
                       "ncu", "nsys"})
_INSTALLERS = (("pip", "install"), ("pip3", "install"), ("uv", "pip", "install"), ("conda", "install"),
               ("mamba", "install"), ("python", "-m", "pip", "install"))
_SHELL = re.compile(r"^(?:[\w.]+\s*=\s*)?(?:!!?|%sx\s+|%system\s+|%pip\s+|%conda\s+)(?P<cmd>.*)$", re.DOTALL)
_ENV = re.compile(r"^%(?:set_)?env\s+(?P<key>[A-Za-z_]\w*)")
_EXPORT = re.compile(r"\bexport\s+(?P<key>[A-Za-z_]\w*)=")
_CUDA_WHEELS = re.compile(r"download\.pytorch\.org/whl/cu\d+")
#: a variable set for one command (`CUDA_VISIBLE_DEVICES=0 tune run ...`)
_ASSIGNMENT = re.compile(r"^(?P<key>[A-Za-z_]\w*)=(?P<value>.*)$", re.DOTALL)


def _words(command: str) -> list[str]:
    try:
        return shlex.split(command, comments=True)
    except ValueError:  # an unbalanced quote: IPython would pass it on to the shell anyway
        return command.split()


def _installed(words: list[str]) -> Iterator[str]:
    """The project names a `pip install ...` (or conda) command line installs."""
    for installer in _INSTALLERS:
        if tuple(words[:len(installer)]) == installer:
            for word in words[len(installer):]:
                if not word.startswith("-") and "/" not in word:
                    yield re.split(r"[\[<>=!~;@ ]", word, maxsplit=1)[0]
            return


def gpu_magics(magics: Iterable[tuple[int, str]]) -> list[tuple[int, str, str]]:
    """(line, rule id, message) for each GPU-specific thing in a cell's IPython lines."""
    found: list[tuple[int, str, str]] = []
    for line, text in magics:
        env = _ENV.match(text)
        keys = [env.group("key")] if env else []
        shell = _SHELL.match(text)
        command = shell.group("cmd").strip() if shell else ""
        if text.startswith("%pip"):
            command = "pip " + command
        elif text.startswith("%conda"):
            command = "conda " + command
        keys += [m.group("key") for m in _EXPORT.finditer(command)]
        for key in keys:
            advice = advice_for(key)
            if advice is not None:
                found.append((line, "NRN911", f"`{text}` sets `{key}`: {advice[0]}"))
        for part in re.split(r"&&|\|\||;|\|", command):
            words = _words(part.strip())
            while words and _ASSIGNMENT.match(words[0]):
                key, value = _ASSIGNMENT.match(words.pop(0)).group("key", "value")  # type: ignore[union-attr]
                advice = advice_for(key)
                if advice is not None:
                    said = CPU_ONLY if key == "CUDA_VISIBLE_DEVICES" and value in HIDE_ALL else advice[0]
                    found.append((line, "NRN911", f"`{text}` sets `{key}` for the command: {said}"))
            if not words:
                continue
            tool = words[0].rsplit("/", 1)[-1]
            if tool in GPU_TOOLS:
                found.append((line, "NRN903", f"`{text}` runs `{tool}`, an NVIDIA GPU tool, which does not exist "
                              f"on Trainium; {NEURON_TOOLS}"))
            for project in _installed(words):
                package = distribution_package(project)
                if package is not None:
                    entry = PACKAGES[package]
                    found.append((line, "NRN903", f"`{text}` installs `{project}` ({entry.what}), which "
                                  f"{entry.verdict}; {entry.instead}"))
            if _CUDA_WHEELS.search(part):
                found.append((line, "NRN903", f"`{text}` installs CUDA builds of PyTorch; on Trainium install "
                              "torch-neuronx with the PyTorch it supports"))
    return found
