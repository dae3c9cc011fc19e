"""Command line: argument parsing, output and exit codes only.

Exit codes (ruff's convention): 0 nothing pending; 1 edits or findings pending; 2 an error
(a file that could not be processed, a bad option, an internal error, an interrupt). Every other
file is still processed when one fails.
"""

from __future__ import annotations

import signal
import sys
from pathlib import Path
from typing import Any
from collections.abc import Sequence

import click

from neuronize import __version__
from neuronize.types import Target

EXIT_CLEAN, EXIT_PENDING, EXIT_ERROR = 0, 1, 2


def _split_codes(values: Sequence[str]) -> list[str]:
    return [code.strip() for value in values for code in value.split(",") if code.strip()]


def _common(func):  # type: ignore[no-untyped-def]
    options = [
        click.argument("paths", nargs=-1, type=click.Path()),
        click.option("--select", multiple=True, metavar="CODES",
                     help="Only these rules: ids, id prefixes (NRN1) or names, comma-separated."),
        click.option("--ignore", multiple=True, metavar="CODES", help="Skip these rules."),
        click.option("--output-format",
                     type=click.Choice(["text", "json", "markdown", "sarif", "github"]), default="text",
                     show_default=True, help="How findings are printed on stdout (markdown: the "
                     "migration report; sarif: SARIF 2.1.0; github: workflow annotations)."),
        click.option("--unsafe-fixes/--no-unsafe-fixes", default=None,
                     help="Also apply fixes that can change behaviour (default: the config's "
                          "unsafe-fixes, else no)."),
        click.option("--target", type=click.Choice([t.value for t in Target]), default=None,
                     help="What the rewritten code runs on: neuron (Trainium), accelerator "
                          "(torch.accelerator: CPU, CUDA or Neuron unchanged) or cpu (validate a "
                          "migration locally). Default: the config's target, else neuron."),
        click.option("--config", "config_file", type=click.Path(dir_okay=False), default=None,
                     help="A pyproject.toml to read [tool.neuronize] from (default: the nearest "
                          "one above the first path)."),
        click.option("--baseline", type=click.Path(dir_okay=False), default=None,
                     help="Report only findings not recorded in this baseline file."),
        click.option("--force-exclude", is_flag=True,
                     help="Apply excludes to files named explicitly too (for pre-commit)."),
        click.option("--unused-suppressions", is_flag=True,
                     help="Report `# neuronize: ignore` comments that silence nothing."),
        click.option("--stdin-filename", metavar="NAME", help="Name to show for code read from '-'."),
        click.option("--jobs", "-j", type=click.IntRange(min=1), default=None,
                     help="Worker processes (default: all cores)."),
        click.option("--quiet", "-q", is_flag=True, help="No summary or progress bar on stderr."),
        click.option("--no-cache", is_flag=True,
                     help="Do not read or write the result cache ($NEURONIZE_CACHE_DIR, else "
                          "~/.cache/neuronize)."),
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
@click.option("--write-baseline", type=click.Path(dir_okay=False), default=None,
              help="Record every current finding in this file (then use --baseline FILE).")
def check(**kwargs: object) -> None:
    """Report what needs to change for TorchNeuron. Never writes (except --write-baseline)."""
    sys.exit(_run(mode="check", diff=False, **kwargs))


@cli.command()
@_common
@click.option("--diff", is_flag=True, help="Write nothing; print a unified diff that `git apply` accepts.")
@click.option("--interactive", "-i", is_flag=True,
              help="Review the edits hunk by hunk (y/n/a/d/q/?) before writing. Needs a terminal.")
@click.option("--review", type=click.Choice(["all", "unsafe"]), default=None,
              help="With -i: which hunks to ask about. `unsafe` applies safe hunks without asking "
                   "and offers the unsafe fixes (implies -i and --unsafe-fixes).")
@click.option("--no-color", is_flag=True, help="No ANSI colour (also: the NO_COLOR variable).")
@click.option("--report", "report_file", type=click.Path(dir_okay=False), default=None,
              help="Also write this run's Markdown migration report to this file.")
def fix(**kwargs: object) -> None:
    """Apply the safe fixes (and unsafe ones with --unsafe-fixes); report the rest."""
    if kwargs.get("review") is not None:
        kwargs["interactive"] = True
        if kwargs["review"] == "unsafe":
            kwargs["unsafe_fixes"] = True
    sys.exit(_run(mode="fix", **kwargs))


@cli.command()
@_common
@click.option("--output", "-o", "output_file", type=click.Path(dir_okay=False), default=None,
              help="Write the report to this file instead of stdout.")
@click.pass_context
def report(ctx: click.Context, **kwargs: object) -> None:
    """Write the migration report: what `fix` would edit, and what is left, with the way forward.

    Markdown by default (--output-format sarif|github|json|text for the other renderings).
    Never changes a source file. Exit code 0, or 2 if a file could not be processed.
    """
    if ctx.get_parameter_source("output_format") is click.core.ParameterSource.DEFAULT:
        kwargs["output_format"] = "markdown"
    sys.exit(_run(mode="report", diff=False, **kwargs))


def _run(mode: str, **kw: Any) -> int:
    try:
        return _run_inner(mode, **kw)
    except KeyboardInterrupt:
        click.echo("neuronize: interrupted; files already written are complete, the rest untouched",
                   err=True)
        return EXIT_ERROR


def _load_settings(kw: dict[str, Any]):  # type: ignore[no-untyped-def]
    """Rules, options and config from the command line over ``[tool.neuronize]``."""
    from neuronize.config import Config, find_config, load_config
    from neuronize.registry import select_rules
    from neuronize.types import Options

    paths = [p for p in kw["paths"] if p != "-"]
    if kw.get("config_file"):
        config = load_config(Path(kw["config_file"]))
    else:
        found = find_config(Path(paths[0]) if paths else Path.cwd())
        config = load_config(found) if found is not None else Config()
    select = _split_codes(kw["select"]) or list(config.select or ())
    ignore = [*config.ignore, *_split_codes(kw["ignore"])]
    rules = select_rules(select, ignore)
    unsafe = kw["unsafe_fixes"] if kw["unsafe_fixes"] is not None else bool(config.unsafe_fixes)
    target = Target(kw.get("target") or config.target or Target.NEURON)
    options = Options(target=target, unsafe_fixes=unsafe,
                      report_unused_suppressions=kw["unused_suppressions"])
    return rules, options, config


def _run_inner(mode: str, **kw: Any) -> int:
    from neuronize import api, report
    from neuronize.baseline import load_baseline, write_baseline
    from neuronize.config import ConfigError
    from neuronize.diff import Style, unified_diff, use_color
    from neuronize.registry import SelectionError

    try:
        rules, options, config = _load_settings(kw)
        baseline = load_baseline(Path(kw["baseline"])) if kw.get("baseline") else None
    except (SelectionError, ConfigError, ValueError) as exc:
        click.echo(f"neuronize: error: {exc}", err=True)
        return EXIT_ERROR
    diff = kw["diff"]
    writing = mode == "fix" and not diff
    paths = kw["paths"]
    from_stdin = paths == ("-",)
    if kw.get("interactive"):
        problem = _interactive_problem(diff, from_stdin)
        if problem:
            click.echo(f"neuronize: error: {problem}", err=True)
            return EXIT_ERROR
    if from_stdin:
        run = api.analyse_stdin(sys.stdin.buffer.read(), kw["stdin_filename"] or "-", rules, options,
                                fix=mode != "check")
    else:
        from neuronize.progress import Progress

        with Progress(0, enabled=not kw["quiet"]) as bar:
            run = api.analyse_paths(paths, rules, options, jobs=kw["jobs"], fix=mode != "check",
                                    config=config, force_exclude=kw["force_exclude"],
                                    cache=not kw["no_cache"], progress=bar)

    if writing and from_stdin:
        entry = run.files[0]
        sys.stdout.buffer.write(entry.result.output or entry.source or b"")
        sys.stdout.flush()
    elif writing and kw.get("interactive"):
        run = _review(run, kw)
    elif writing:
        run = api.write_changes(run)
        if run.stale_removed:
            click.echo(f"neuronize: removed {len(run.stale_removed)} temp file(s) left by an "
                       "interrupted run", err=True)
    baselined = 0
    if kw.get("write_baseline"):
        target = Path(kw["write_baseline"])
        entries = api.baseline_entries(run, target)
        write_baseline(target, entries)
        click.echo(f"neuronize: wrote {len(entries)} finding(s) to baseline {target}", err=True)
        return EXIT_ERROR if run.errors else EXIT_CLEAN
    if baseline is not None:
        run, baselined = api.apply_baseline(run, baseline, Path(kw["baseline"]))

    stdout_is_data = diff or (writing and from_stdin)
    out = (lambda line: click.echo(line, err=True)) if stdout_is_data else click.echo
    if diff:
        style = Style(use_color(sys.stdout, kw.get("no_color", False)))
        for f in run.files:
            if f.result.changed and f.source is not None and f.result.output is not None:
                sys.stdout.write(unified_diff(f.display, f.source, f.result.output,
                                              findings=f.result.findings, style=style))
        sys.stdout.flush()
    include_applied = mode == "check" or diff
    if kw.get("report_file"):
        _write_output(kw["report_file"], report.to_markdown(run, command=_report_command(kw)))
    if mode == "report":
        return _write_report(run, kw)
    if kw["output_format"] == "json":
        out(report.to_json(run, include_applied=include_applied))
    elif kw["output_format"] == "markdown":
        out(report.to_markdown(run, command=_report_command(kw)))
    elif kw["output_format"] == "sarif":
        out(report.to_sarif(run, include_applied=include_applied))
    elif kw["output_format"] == "github":
        for line in report.to_github(run, include_applied=include_applied):
            out(line)
    else:
        for line in report.text_findings(run, include_applied=include_applied):
            out(line)
    for line in report.error_lines(run):
        click.echo(line, err=True)
    if not kw["quiet"]:
        summary = report.summary_line(run, wrote=writing)
        if baselined:
            summary += f"; {baselined} baselined finding(s) not shown"
        click.echo(summary, err=True)

    if run.errors or run.missing:
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


def _interactive_problem(diff: bool, from_stdin: bool) -> str | None:
    if diff:
        return "-i/--interactive and --diff cannot be combined"
    if from_stdin:
        return "-i/--interactive cannot review code read from standard input"
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        return ("-i/--interactive needs a terminal (standard input and output must be a TTY); "
                "use `neuronize fix --diff` to review the edits without one")
    return None


def _review(run, kw: dict[str, Any]):  # type: ignore[no-untyped-def]
    """Hunk-by-hunk review in this (the parent) process; each file is written after its review."""
    from neuronize import api
    from neuronize.diff import Style, use_color
    from neuronize.review import review_run
    from neuronize.types import RunResult, Safety

    style = Style(use_color(sys.stdout, kw.get("no_color", False)))

    def ask(prompt: str) -> str:
        click.echo(prompt, nl=False)
        line = sys.stdin.readline()
        if not line:
            raise EOFError
        return line

    prompt_for = (lambda hunk: hunk.safety is not Safety.SAFE) if kw.get("review") == "unsafe" else (
        lambda hunk: True)
    return review_run(run, ask=ask, say=click.echo, style=style, prompt_for=prompt_for,
                      write=lambda f: api.write_changes(RunResult(files=[f])).files[0])


def _write_output(path: str, text: str) -> None:
    """A report file (``--report``, ``report --output``), written atomically like every file."""
    from neuronize.sources.write import write_bytes_atomic

    write_bytes_atomic(Path(path), text.encode("utf-8"))


def _report_command(kw: dict[str, Any]) -> str:
    parts = ["neuronize", "report"]
    if kw.get("unsafe_fixes"):
        parts.append("--unsafe-fixes")
    parts += [str(p) for p in kw["paths"]]
    return " ".join(parts)


def _write_report(run, kw: dict[str, Any]) -> int:  # type: ignore[no-untyped-def]
    """`neuronize report`: the rendering on stdout or in --output; 0, or 2 if a file failed."""
    from neuronize import report

    fmt = kw["output_format"]
    if fmt == "markdown":
        text = report.to_markdown(run, command=_report_command(kw))
    elif fmt == "sarif":
        text = report.to_sarif(run)
    elif fmt == "github":
        text = "\n".join(report.to_github(run))
    elif fmt == "json":
        text = report.to_json(run)
    else:
        text = "\n".join(report.text_findings(run))
    if kw.get("output_file"):
        _write_output(kw["output_file"], text if text.endswith("\n") else text + "\n")
    elif text:
        click.echo(text.rstrip("\n"))
    for line in report.error_lines(run):
        click.echo(line, err=True)
    if not kw["quiet"]:
        click.echo(report.summary_line(run, wrote=False), err=True)
    if run.errors or run.missing:
        return EXIT_ERROR
    return EXIT_CLEAN


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
    """Print a rule's documentation (by id or name), or `packages`: the CUDA-only packages."""
    from neuronize.docs import TOPICS, explain_rule
    from neuronize.registry import rule_by_code

    if code.lower() in TOPICS:
        click.echo(TOPICS[code.lower()](), nl=False)
        return
    rule = rule_by_code(code)
    if rule is None:
        click.echo(f"neuronize: error: no rule {code!r} (see `neuronize rules`)", err=True)
        sys.exit(EXIT_ERROR)
    click.echo(explain_rule(rule))


@cli.command(context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@click.option("--pretend-cuda", is_flag=True,
              help="Run the CUDA code paths on this CPU: CUDA reports one device, placements go to "
                   "the CPU, CUDA autocast becomes CPU autocast, NCCL becomes gloo (all recorded).")
@click.option("--strict", is_flag=True, help="Exit 1 if the program touches CUDA at all.")
@click.option("--max-seconds", type=click.FloatRange(min=0, min_open=True), default=None,
              help="Stop the program after this long (SIGTERM); what was recorded is kept.")
@click.option("--output", "-o", "output_file", type=click.Path(dir_okay=False), default=None,
              help="Also write the audit as JSON to this file.")
@click.option("--output-format", type=click.Choice(["text", "json", "markdown"]), default="text",
              show_default=True, help="How the audit is printed on stdout.")
@click.argument("command", nargs=-1, required=True, type=click.UNPROCESSED)
def audit(command: tuple[str, ...], pretend_cuda: bool, strict: bool, max_seconds: float | None,
          output_file: str | None, output_format: str) -> None:
    """Run COMMAND and show every CUDA call it makes, next to the static findings.

    `neuronize audit [--pretend-cuda] -- python train.py ...` (torchrun works too). Your files are
    never changed. Exit 1 with --strict if CUDA was touched; 2 if the program could not start or
    failed; else 0.
    """
    from neuronize.audit.session import run_audit

    sys.exit(run_audit(list(command), pretend_cuda=pretend_cuda, strict=strict,
                       max_seconds=max_seconds, output=output_file, output_format=output_format,
                       say=click.echo, warn=lambda line: click.echo(line, err=True)))


def main() -> None:
    try:
        cli(standalone_mode=False)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except click.ClickException as exc:
        exc.show()
        sys.exit(EXIT_ERROR)
    except (click.exceptions.Abort, KeyboardInterrupt):
        click.echo("neuronize: interrupted", err=True)
        sys.exit(EXIT_ERROR)
    finally:
        # The work is done and reported: a Ctrl-C arriving during interpreter shutdown must not
        # turn a finished run into a death by signal with no message.
        signal.signal(signal.SIGINT, signal.SIG_IGN)
