"""What `neuronize verify` and `fix --verify` do with their command line (neuronize/cli.py parses
it and prints through ``say`` and ``warn``)."""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence

from neuronize.audit.child.hosts import HOSTS

#: seconds one run of the command may take before it is stopped
MAX_SECONDS = 1800.0


def split_command(args: Sequence[str], argv: Sequence[str] | None = None) -> tuple[list[str], list[str]]:
    """PATHS and COMMAND from click's arguments: COMMAND is what follows ``--`` on the command
    line (click drops the ``--`` itself)."""
    argv = list(sys.argv if argv is None else argv)
    if "--" not in argv:
        return [], list(args)
    command = argv[argv.index("--") + 1:]
    return list(args[:len(args) - len(command)]), command


def run_command(args: Sequence[str], *, write: bool, target: str | None, unsafe_fixes: bool,
                say: Callable[[str], None], warn: Callable[[str], None], hosts: str = ",".join(HOSTS),
                max_seconds: float = MAX_SECONDS, output_format: str = "text", keep: bool = False) -> int:
    """`verify [PATHS] -- COMMAND` (``write``: `fix [PATHS] --verify -- COMMAND`, which writes
    only the edits no regression points to); the exit code."""
    from neuronize.verify.session import EXIT_ERROR, parse_hosts, run_verify

    paths, command = split_command(args)
    if not command:
        warn("neuronize verify: error: give the command after `--` (neuronize verify -- python -m pytest)")
        return EXIT_ERROR
    try:
        chosen = parse_hosts(hosts)
    except ValueError as exc:
        warn(f"neuronize verify: error: {exc}")
        return EXIT_ERROR
    return run_verify(command, paths, target=target, unsafe_fixes=unsafe_fixes, hosts=chosen,
                      max_seconds=max_seconds, output_format=output_format, keep=keep, write=write,
                      say=say, warn=warn)
