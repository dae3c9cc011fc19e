"""Shell scripts, Dockerfiles and Makefiles as the rules read them: which lines hold shell code
(here-document bodies are data, not code), which Dockerfile instruction each line belongs to, and
which Makefile lines are recipes (shell) and which are make's own (variables, rules, directives)."""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from neuronize.sources.lines import Line, code_part

_HEREDOC = re.compile(r"<<(?P<dash>-?)[ \t]*(?P<q>[\"']?)(?P<word>[A-Za-z_][A-Za-z0-9_]*)(?P=q)")
#: the instruction of a Makefile line that is make's own: a variable assignment, a rule, a directive
MAKE = "MAKE"
_INSTRUCTION = re.compile(r"^[ \t]*(?P<word>[A-Za-z]+)\b")


@dataclass(frozen=True)
class CodeLine:
    """A line of shell code: ``index`` 0-based, ``code`` its text without the comment;
    ``instruction`` the Dockerfile instruction it belongs to (``RUN``, ``ENV``...; '' in scripts and
    Makefile recipes; :data:`MAKE` on a Makefile line make reads itself)."""

    index: int
    code: str
    instruction: str = ""


def shell_lines(lines: Sequence[Line]) -> Iterator[CodeLine]:
    """The lines of a shell script that are code (not comments, not here-document bodies)."""
    ending: tuple[str, bool] | None = None  # the here-document's end word, and whether tabs go
    for index, line in enumerate(lines):
        if ending is not None:
            word, dash = ending
            if (line.text.lstrip("\t") if dash else line.text) == word:
                ending = None
            continue
        code = code_part(line.text)
        heredoc = _HEREDOC.search(code)
        if heredoc is not None:
            ending = (heredoc.group("word"), bool(heredoc.group("dash")))
        if code.strip():
            yield CodeLine(index, code)


def dockerfile_lines(lines: Sequence[Line]) -> Iterator[CodeLine]:
    """The code lines of a Dockerfile, each with the instruction it continues (``\\`` at the end
    of a line continues the instruction; comment lines inside it are skipped)."""
    instruction = ""
    continued = False
    for index, line in enumerate(lines):
        text = line.text
        if text.lstrip().startswith("#"):
            continue  # a comment, also inside a continued instruction
        if not continued:
            match = _INSTRUCTION.match(text)
            instruction = match.group("word").upper() if match else ""
        code = code_part(text) if instruction == "RUN" else text
        continued = code.rstrip().endswith("\\")
        if code.strip():
            yield CodeLine(index, code, instruction)


def makefile_lines(lines: Sequence[Line]) -> Iterator[CodeLine]:
    """The code lines of a Makefile: recipe lines (starting with a tab, and the lines a ``\\``
    continues) are shell, with instruction ''; every other line is make's own (:data:`MAKE`):
    ``export NCCL_DEBUG=INFO``, ``GPUS ?= 0,1``, targets, directives and ``define`` bodies."""
    recipe = False
    continued = False
    for index, line in enumerate(lines):
        text = line.text
        if not continued:
            recipe = text.startswith("\t")
            if not recipe and text.lstrip().startswith("#"):
                continue  # a comment line of make's (a ``#`` in a recipe goes to the shell)
        code = code_part(text)
        continued = code.rstrip().endswith("\\")
        if code.strip():
            yield CodeLine(index, code, "" if recipe else MAKE)
