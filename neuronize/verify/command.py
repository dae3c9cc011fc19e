"""The `neuronize verify` command line, and `fix --verify`'s (neuronize/cli.py adds them)."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

import click

from neuronize.audit.child.hosts import HOSTS
from neuronize.types import Target

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


def _run(args: Sequence[str], write: bool, target: str | None, unsafe_fixes: bool, hosts: str,
         max_seconds: float, output_format: str, keep: bool) -> int:
    from neuronize.verify.session import EXIT_ERROR, parse_hosts, run_verify

    paths, command = split_command(args)
    warn = lambda line: click.echo(line, err=True)  # noqa: E731
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
                      say=click.echo, warn=warn)


@click.command(context_settings={"ignore_unknown_options": True})
@click.option("--target", type=click.Choice([t.value for t in Target]), default=None,
              help="The migration's target (default: the config's, else neuron).")
@click.option("--unsafe-fixes", is_flag=True, help="Migrate with the unsafe fixes too.")
@click.option("--hosts", default=",".join(HOSTS), show_default=True,
              help="Simulated hosts to run on: cpu (the real machine), cuda (CUDA paths on the CPU), "
                   "neuron (Neuron paths on the CPU), mps (a laptop's accelerator, CUDA absent).")
@click.option("--max-seconds", type=click.FloatRange(min=0, min_open=True), default=MAX_SECONDS,
              show_default=True, help="Stop one run of COMMAND after this long.")
@click.option("--output-format", type=click.Choice(["text", "json", "markdown"]), default="text",
              show_default=True, help="markdown: for the pull request.")
@click.option("--keep", is_flag=True, help="Keep the temporary trees (their path is printed).")
@click.argument("args", nargs=-1, required=True, type=click.UNPROCESSED)
def verify(args: tuple[str, ...], **options: Any) -> None:
    """Prove the migration with your own tests: `neuronize verify [PATHS] -- python -m pytest`.

    Copies the current directory twice (your files are never changed), migrates one copy (PATHS
    in it), and runs COMMAND in both on each simulated host, each run in a process of its own.
    With pytest, outcomes are compared test by test; otherwise by exit status and output. Lists
    the tests that passed before and fail after (regressions) with the hunks on their
    tracebacks, the tests fixed, and on the neuron host whether the Neuron path was taken.
    Exit 1 on any regression; 2 when the migration or a run could not start; else 0.
    """
    sys.exit(_run(args, write=False, **options))


def fix_verify(kwargs: dict[str, Any]) -> int:
    """`neuronize fix [PATHS] --verify -- COMMAND`: write only the edits no regression points to."""
    return _run(kwargs["paths"], True, kwargs.get("target"), bool(kwargs.get("unsafe_fixes")), ",".join(HOSTS),
                MAX_SECONDS, "text", False)
