"""Command line: argument parsing, output and exit codes only.

Exit codes (ruff's convention): 0 nothing pending; 1 edits or findings pending; 2 an error
(a file that could not be processed, a bad option, an internal error, an interrupt). Every other
file is still processed when one fails.
"""

from __future__ import annotations

import sys
from typing import Sequence

import click

from neuronize import __version__

EXIT_CLEAN, EXIT_PENDING, EXIT_ERROR = 0, 1, 2


def _split_codes(values: Sequence[str]) -> list[str]:
    return [code.strip() for value in values for code in value.split(",") if code.strip()]


def _common(func):  # type: ignore[no-untyped-def]
    options = [
        click.argument("paths", nargs=-1, type=click.Path()),
        click.option("--select", multiple=True, metavar="CODES",
                     help="Only these rules: ids, id prefixes (NRN1) or names, comma-separated."),
        click.option("--ignore", multiple=True, metavar="CODES", help="Skip these rules."),
        click.option("--output-format", type=click.Choice(["text", "json"]), default="text",
                     show_default=True, help="How findings are printed on stdout."),
        click.option("--unsafe-fixes", is_flag=True, help="Also apply fixes that can change behaviour."),
        click.option("--stdin-filename", metavar="NAME", help="Name to show for code read from '-'."),
        click.option("--jobs", "-j", type=click.IntRange(min=1), default=None,
                     help="Worker processes (default: all cores)."),
        click.option("--quiet", "-q", is_flag=True, help="No summary on stderr."),
    ]
    for option in reversed(options):
        func = option(func)
    return func


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", prog_name="neuronize")
def cli() -> None:
    """Migrate PyTorch code from NVIDIA CUDA to AWS Trainium (TorchNeuron).

    `neuronize check` reports, `neuronize fix --diff` shows the edits, `neuronize fix` makes them.
    """


@cli.command()
@_common
def check(**kwargs: object) -> None:
    """Report what needs to change for TorchNeuron. Never writes."""
    sys.exit(_run(mode="check", diff=False, **kwargs))


@cli.command()
@_common
@click.option("--diff", is_flag=True, help="Write nothing; print a unified diff that `git apply` accepts.")
def fix(**kwargs: object) -> None:
    """Apply the safe fixes (and unsafe ones with --unsafe-fixes); report the rest."""
    sys.exit(_run(mode="fix", **kwargs))


def _run(mode: str, paths: tuple[str, ...], select: tuple[str, ...], ignore: tuple[str, ...],
         output_format: str, unsafe_fixes: bool, stdin_filename: str | None, jobs: int | None,
         quiet: bool, diff: bool) -> int:
    try:
        return _run_inner(mode, paths, select, ignore, output_format, unsafe_fixes,
                          stdin_filename, jobs, quiet, diff)
    except KeyboardInterrupt:
        click.echo("neuronize: interrupted; files already written are complete, the rest untouched",
                   err=True)
        return EXIT_ERROR


def _run_inner(mode: str, paths: tuple[str, ...], select: tuple[str, ...], ignore: tuple[str, ...],
               output_format: str, unsafe_fixes: bool, stdin_filename: str | None,
               jobs: int | None, quiet: bool, diff: bool) -> int:
    from neuronize import api, report
    from neuronize.context import Options
    from neuronize.diff import unified_diff
    from neuronize.registry import SelectionError, select_rules

    try:
        rules = select_rules(_split_codes(select), _split_codes(ignore))
    except SelectionError as exc:
        click.echo(f"neuronize: error: {exc}", err=True)
        return EXIT_ERROR
    options = Options(unsafe_fixes=unsafe_fixes)
    from_stdin = paths == ("-",)
    if from_stdin:
        run = api.analyse_stdin(sys.stdin.buffer.read(), stdin_filename or "-", rules, options)
    else:
        run = api.analyse_paths(paths, rules, options, jobs=jobs)

    writing = mode == "fix" and not diff
    if writing and from_stdin:
        entry = run.files[0]
        sys.stdout.buffer.write(entry.result.output or entry.source or b"")
        sys.stdout.flush()
    elif writing:
        run = api.write_changes(run)

    stdout_is_data = diff or (writing and from_stdin)
    out = (lambda line: click.echo(line, err=True)) if stdout_is_data else click.echo
    if diff:
        for f in run.files:
            if f.result.changed and f.source is not None and f.result.output is not None:
                sys.stdout.write(unified_diff(f.display, f.source, f.result.output))
        sys.stdout.flush()
    include_applied = mode == "check" or diff
    if output_format == "json":
        out(report.to_json(run, include_applied=include_applied))
    else:
        for line in report.text_findings(run, include_applied=include_applied):
            out(line)
    for line in report.error_lines(run):
        click.echo(line, err=True)
    if not quiet:
        click.echo(report.summary_line(run, wrote=writing), err=True)

    if run.errors or any("no such" in s.reason for s in run.skipped):
        return EXIT_ERROR
    if mode == "check":
        pending = any(f.result.findings for f in run.files)
    elif diff:
        pending = any(f.result.changed for f in run.files) or any(
            not finding.applied for f in run.files for finding in f.result.findings)
    else:
        pending = any(
            not (finding.applied and (f.written or from_stdin))
            for f in run.files for finding in f.result.findings
        )
    return EXIT_PENDING if pending else EXIT_CLEAN


@cli.command()
@click.option("--format", "fmt", type=click.Choice(["text", "markdown", "json"]), default="text",
              show_default=True)
def rules(fmt: str) -> None:
    """List every rule."""
    from neuronize.docs import rules_json, rules_markdown, rules_text

    click.echo({"text": rules_text, "markdown": rules_markdown, "json": rules_json}[fmt]())


@cli.command()
@click.argument("code")
def explain(code: str) -> None:
    """Print a rule's documentation (by id or name)."""
    from neuronize.docs import explain_rule
    from neuronize.registry import rule_by_code

    rule = rule_by_code(code)
    if rule is None:
        click.echo(f"neuronize: error: no rule {code!r} (see `neuronize rules`)", err=True)
        sys.exit(EXIT_ERROR)
    click.echo(explain_rule(rule))


def main() -> None:
    try:
        cli(standalone_mode=False)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except click.ClickException as exc:
        exc.show()
        sys.exit(EXIT_ERROR)
    except click.exceptions.Abort:
        click.echo("neuronize: interrupted", err=True)
        sys.exit(EXIT_ERROR)
    except KeyboardInterrupt:
        click.echo("neuronize: interrupted", err=True)
        sys.exit(EXIT_ERROR)
