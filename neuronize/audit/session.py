"""One `neuronize audit` run: the program, the join, the output and the exit code.

Exit codes: 1 with ``--strict`` when the program touched CUDA at all (whatever else happened);
otherwise 2 when the program could not be started, failed (non-zero exit, or a call
--pretend-cuda cannot emulate), or the static analysis failed; otherwise 0. A run stopped by
``--max-seconds`` counts as finished: what it recorded is the result.
"""

from __future__ import annotations

from pathlib import Path
from collections.abc import Callable, Sequence

from neuronize.audit import render
from neuronize.audit.join import Audit, join
from neuronize.audit.launch import run_command

EXIT_CLEAN, EXIT_PENDING, EXIT_ERROR = 0, 1, 2


def exit_code(audit: Audit, strict: bool) -> int:
    if strict and audit.touches:
        return EXIT_PENDING
    raw = audit.raw
    if raw.returncode is None or audit.errors or (raw.returncode != 0 and not raw.timed_out):
        return EXIT_ERROR
    return EXIT_CLEAN


def run_audit(command: Sequence[str], *, pretend_cuda: bool, strict: bool, max_seconds: float | None,
              output: str | None, output_format: str, say: Callable[[str], None],
              warn: Callable[[str], None]) -> int:
    root = Path.cwd().resolve()
    raw = run_command(command, pretend_cuda=pretend_cuda, max_seconds=max_seconds, root=root,
                      stdout_to_stderr=output_format != "text")
    if raw.returncode is None:
        warn(f"neuronize audit: error: {raw.start_error}")
        return EXIT_ERROR
    audit = join(raw, root, pretend_cuda)
    if output:
        Path(output).write_text(render.to_json(audit) + "\n", encoding="utf-8")
    if output_format == "json":
        say(render.to_json(audit))
    elif output_format == "markdown":
        from neuronize.presenting.report import audit_markdown

        say(audit_markdown(render.to_data(audit)))
    else:
        for line in render.to_text(audit):
            say(line)
    code = exit_code(audit, strict)
    if strict and audit.touches:
        warn(f"neuronize audit: --strict: the program touched CUDA at {len(audit.touches)} site(s)")
    elif code == EXIT_ERROR:
        warn(f"neuronize audit: the program {render.outcome(audit)}; the records up to then are shown")
    return code
