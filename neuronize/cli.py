"""Command line: argument parsing, output and exit codes only.

Exit codes (ruff's convention): 0 nothing pending; 1 edits or findings pending; 2 an error
(a file that could not be processed, a bad option, an internal error, an interrupt). Every other
file is still processed when one fails.
"""

from __future__ import annotations

import signal
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import click

from neuronize import __version__
from neuronize.types import Target

EXIT_CLEAN, EXIT_PENDING, EXIT_ERROR = 0, 1, 2


def _split_codes(values: Sequence[str]) -> list[str]:
    return [code.strip() for value in values for code in value.split(",") if code.strip()]


def _with_options(func, options):  # type: ignore[no-untyped-def]
    """``func`` with click ``options`` applied, the first listed shown first in ``--help``."""
    for option in reversed(options):
        func = option(func)
    return func


def _common(func):  # type: ignore[no-untyped-def]
    options = [
        click.argument("paths", nargs=-1, type=click.Path()),
        click.option("--select", multiple=True, metavar="CODES",
                     help="Only these rules: ids, id prefixes (NRN1) or names, comma-separated."),
        click.option("--extend-select", multiple=True, metavar="CODES",
                     help="Add these rules to the configured selection."),
        click.option("--ignore", multiple=True, metavar="CODES", help="Skip these rules."),
        click.option("--output-format",
                     type=click.Choice(["full", "concise", "text", "json", "markdown", "sarif",
                                        "github"]), default=None,
                     help="How findings are printed on stdout. full: each with its source line and "
                          "a caret (the default on a terminal); concise (or text): one line each "
                          "(the default otherwise); markdown: the migration report; sarif: SARIF "
                          "2.1.0; github: workflow annotations."),
        click.option("--unsafe-fixes/--no-unsafe-fixes", default=None,
                     help="Also apply fixes that can change behaviour (default: the config's "
                          "unsafe-fixes, else no)."),
        click.option("--target", type=click.Choice([t.value for t in Target]), default=None,
                     help="What the rewritten code runs on: neuron (Trainium), accelerator "
                          "(torch.accelerator: CPU, CUDA or Neuron unchanged) or cpu (validate a "
                          "migration locally). Default: the config's target, else neuron."),
        click.option("--config", "config_file", type=click.Path(dir_okay=False), default=None,
                     help="One pyproject.toml or neuronize.toml for every file (default: each file "
                          "uses the nearest one above it)."),
        click.option("--show-settings", is_flag=True,
                     help="Print the settings the first path is checked with, and where each "
                          "came from; check nothing."),
        click.option("--show-files", is_flag=True,
                     help="List the files that would be checked, and their configuration; check "
                          "nothing."),
        click.option("--baseline", type=click.Path(dir_okay=False), default=None,
                     help="Report only findings not recorded in this baseline file."),
        click.option("--force-exclude", is_flag=True,
                     help="Apply excludes to files named explicitly too (for pre-commit)."),
        click.option("--unused-suppressions", is_flag=True,
                     help="Report `# neuronize: ignore` comments that silence nothing."),
        click.option("--stdin-filename", metavar="NAME", help="Name to show for code read from '-'."),
        click.option("--kinds", "kinds", multiple=True, metavar="KINDS",
                     help="Only these kinds of source, comma-separated: python, notebook, requirements, "
                          "pyproject, setup-cfg, conda, shell, makefile, dockerfile, yaml-config, json-config "
                          "(default: the config's "
                          "kinds, else all)."),
        click.option("--exclude-kinds", multiple=True, metavar="KINDS",
                     help="Leave these kinds of source out (added to the config's extend-exclude-kinds)."),
        click.option("--jobs", "-j", type=click.IntRange(min=1), default=None,
                     help="Worker processes (default: all cores)."),
        click.option("--quiet", "-q", is_flag=True, help="No summary or progress bar on stderr."),
        click.option("--verbose", "-v", is_flag=True,
                     help="Also say which configuration each file used, and the detailed summary."),
        click.option("--color", type=click.Choice(["auto", "always", "never"]), default="auto",
                     show_default=True,
                     help="ANSI colour; auto: on a terminal, unless NO_COLOR is set (FORCE_COLOR "
                          "forces it)."),
        click.option("--no-cache", is_flag=True,
                     help="Do not read or write the result cache ($NEURONIZE_CACHE_DIR, else "
                          "~/.cache/neuronize)."),
    ]
    return _with_options(func, options)


def _lint(func):  # type: ignore[no-untyped-def]
    """The options of the commands that judge the code (`check`, `fix`), as ruff spells them."""
    options = [
        click.option("--statistics", is_flag=True,
                     help="Print how many findings each rule has, instead of the findings."),
        click.option("--exit-zero", is_flag=True,
                     help="Exit 0 even when findings are left (errors still exit 2)."),
        click.option("--exit-non-zero-on-fix", is_flag=True,
                     help="Exit 1 when a file was (or, with --diff, would be) changed, even if "
                          "nothing is left."),
        click.option("--show-repeats", is_flag=True,
                     help="In the concise output, one line for every place of a repeated "
                          "report-only finding (default: one line naming the other places)."),
        click.option("--fix-only", is_flag=True,
                     help="Apply the fixes and do not list the findings left; exit 0 unless "
                          "--exit-non-zero-on-fix."),
    ]
    return _with_options(func, options)


def _link_base_option(func):  # type: ignore[no-untyped-def]
    return click.option(
        "--link-base", metavar="URL", default=None,
        help="Make the Markdown report's links absolute: URL + the path in the repository "
             "(default: the `origin` remote's web address at the commit read, or after `fix` at "
             "the current branch, when it is on GitHub, GitLab or Bitbucket; `none`: relative "
             "links).")(func)


def _links(kw: dict[str, Any], wrote: bool):  # type: ignore[no-untyped-def]
    """Where the Markdown report's links point (see neuronize.presenting.links)."""
    from neuronize.presenting.links import links_for

    paths = [p for p in kw["paths"] if p != "-"]
    return links_for(kw.get("link_base"), Path(paths[0]) if paths else Path.cwd(), wrote=wrote)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", prog_name="neuronize")
def cli() -> None:
    """Migrate PyTorch code from NVIDIA CUDA to AWS Trainium (TorchNeuron).

    `neuronize check` reports, `neuronize fix --diff` shows the edits, `neuronize fix` makes them.
    """


@cli.command()
@_common
@_lint
@_link_base_option
@click.option("--write-baseline", type=click.Path(dir_okay=False), default=None,
              help="Record every current finding in this file (then use --baseline FILE).")
@click.option("--fix", "apply_fixes", is_flag=True, help="The same as `neuronize fix` (as in ruff).")
@click.option("--diff", is_flag=True, help="The same as `neuronize fix --diff` (as in ruff).")
def check(apply_fixes: bool, **kwargs: Any) -> None:
    """Report what needs to change for TorchNeuron. Never writes (except --write-baseline, --fix)."""
    if apply_fixes or kwargs["diff"] or kwargs["fix_only"]:
        sys.exit(_run(mode="fix", **kwargs))
    sys.exit(_run(mode="check", **kwargs))


@cli.command()
@_common
@_lint
@_link_base_option
@click.option("--diff", is_flag=True, help="Write nothing; print a unified diff that `git apply` accepts.")
@click.option("--interactive", "-i", is_flag=True,
              help="Review the edits hunk by hunk (y/n/a/d/q/?) before writing. Needs a terminal.")
@click.option("--review", type=click.Choice(["all", "unsafe"]), default=None,
              help="With -i: which hunks to ask about. `unsafe` applies safe hunks without asking "
                   "and offers the unsafe fixes (implies -i and --unsafe-fixes).")
@click.option("--no-color", is_flag=True, help="The same as --color never.")
@click.option("--report", "report_file", type=click.Path(dir_okay=False), default=None,
              help="Also write this run's Markdown migration report to this file.")
@click.option("--verify", is_flag=True, help="`fix --verify -- COMMAND`: run COMMAND before and after on "
              "each simulated host (see `neuronize verify`); write only the files no regression points to.")
def fix(**kwargs: object) -> None:
    """Apply the safe fixes (and unsafe ones with --unsafe-fixes); report the rest."""
    if kwargs.pop("verify"):
        from neuronize.verify.command import fix_verify

        sys.exit(fix_verify(kwargs))
    if kwargs.get("review") is not None:
        kwargs["interactive"] = True
        if kwargs["review"] == "unsafe":
            kwargs["unsafe_fixes"] = True
    sys.exit(_run(mode="fix", **kwargs))


@cli.command()
@_common
@_link_base_option
@click.option("--output", "-o", "output_file", type=click.Path(dir_okay=False), default=None,
              help="Write the report to this file instead of stdout.")
def report(**kwargs: object) -> None:
    """Write the migration report: what `fix` would edit, and what is left, with the way forward.

    Markdown by default (--output-format sarif|github|json|text for the other renderings).
    Never changes a source file. Exit code 0, or 2 if a file could not be processed.
    """
    if kwargs["output_format"] is None:
        kwargs["output_format"] = "markdown"
    sys.exit(_run(mode="report", diff=False, **kwargs))


def _run(mode: str, **kw: Any) -> int:
    try:
        return _run_inner(mode, **kw)
    except KeyboardInterrupt:
        click.echo("neuronize: interrupted; files already written are complete, the rest untouched",
                   err=True)
        return EXIT_ERROR


def _resolver(kw: dict[str, Any]):  # type: ignore[no-untyped-def]
    """Settings per file: each file's nearest configuration, the command line on top.

    The settings of the first path (or the current directory) are resolved at once, so a bad
    option or configuration fails before any work (configurations met later fail when met).
    """
    from neuronize.sources.settings import Overrides, Resolver
    from neuronize.sources.kinds import parse_kinds

    overrides = Overrides(
        select=tuple(_split_codes(kw["select"])),
        extend_select=tuple(_split_codes(kw["extend_select"])),
        ignore=tuple(_split_codes(kw["ignore"])),
        unsafe_fixes=kw["unsafe_fixes"],
        target=kw.get("target"),
        config_file=Path(kw["config_file"]) if kw.get("config_file") else None,
        report_unused_suppressions=kw["unused_suppressions"],
        kinds=parse_kinds(kw.get("kinds") or ()),
        exclude_kinds=parse_kinds(kw.get("exclude_kinds") or ()),
    )
    resolver = Resolver(overrides)
    resolver.for_path(_first_file(kw))
    return resolver


def _first_file(kw: dict[str, Any]) -> Path:
    """The file whose settings stand for the run (``--show-settings``, standard input)."""
    paths = [p for p in kw["paths"] if p != "-"]
    if not paths:
        return Path(kw.get("stdin_filename") or "-")
    first = Path(paths[0])
    return first / "-" if first.is_dir() else first


def _run_inner(mode: str, **kw: Any) -> int:
    from neuronize import api
    from neuronize.presenting import output
    from neuronize.presenting import report
    from neuronize.decision.baseline import load_baseline, write_baseline
    from neuronize.sources.config import ConfigError
    from neuronize.presenting.diff import Style, unified_diff, wants_color
    from neuronize.registry import SelectionError
    from neuronize.sources.settings import describe

    if kw.get("no_color"):
        kw["color"] = "never"
    try:
        resolver = _resolver(kw)
        baseline = load_baseline(Path(kw["baseline"])) if kw.get("baseline") else None
    except (SelectionError, ConfigError, ValueError) as exc:
        click.echo(f"neuronize: error: {exc}", err=True)
        return EXIT_ERROR
    if kw["show_settings"]:
        click.echo(describe(resolver.for_path(_first_file(kw)), _first_file(kw)))
        return EXIT_CLEAN
    if kw["show_files"]:
        return _show_files(resolver, kw)
    diff = kw.get("diff", False)
    writing = mode == "fix" and not diff
    paths = kw["paths"]
    from_stdin = paths == ("-",)
    if kw.get("interactive"):
        problem = _interactive_problem(diff, from_stdin)
        if problem:
            click.echo(f"neuronize: error: {problem}", err=True)
            return EXIT_ERROR
    try:
        if from_stdin:
            name = Path(kw["stdin_filename"] or "-")
            settings = resolver.for_path(name)
            ids = settings.rule_ids(name)
            run = api.analyse_stdin(sys.stdin.buffer.read(), str(name),
                                    [r for r in settings.rules if r.id in ids], settings.options,
                                    fix=mode != "check")
        else:
            from neuronize.presenting.progress import Progress

            with Progress(0, enabled=not kw["quiet"]) as bar:
                run = api.analyse_paths(paths, (), jobs=kw["jobs"], fix=mode != "check",
                                        force_exclude=kw["force_exclude"], cache=not kw["no_cache"],
                                        progress=bar, resolver=resolver)
    except (SelectionError, ConfigError) as exc:
        click.echo(f"neuronize: error: {exc}", err=True)
        return EXIT_ERROR
    if kw["verbose"]:
        for line in output.verbose_lines(resolver, run):
            click.echo(f"neuronize: {line}", err=True)
    if not run.files and not run.skipped and not from_stdin:
        click.echo(f"neuronize: warning: {output.nothing_found(paths)}", err=True)

    if baseline is not None and mode == "fix":
        run = api.hold_back_baselined(run, baseline, Path(kw["baseline"]))
    proposed = None
    if writing and from_stdin:
        entry = run.files[0]
        sys.stdout.buffer.write(entry.result.output or entry.source or b"")
        sys.stdout.flush()
    elif writing and kw.get("interactive"):
        proposed, run = run, _review(run, kw)
    elif writing:
        run = api.write_changes(run)
        if run.stale_removed:
            click.echo(f"neuronize: removed {report.counted(len(run.stale_removed), 'temp file')} left by "
                       "an interrupted run", err=True)
    baselined = 0
    if kw.get("write_baseline"):
        target = Path(kw["write_baseline"])
        entries = api.baseline_entries(run, target)
        write_baseline(target, entries)
        click.echo(f"neuronize: wrote {report.counted(len(entries), 'finding')} to baseline {target}", err=True)
        return EXIT_ERROR if run.errors else EXIT_CLEAN
    if baseline is not None:
        run, baselined = api.apply_baseline(run, baseline, Path(kw["baseline"]))

    stdout_is_data = diff or (writing and from_stdin)
    if diff:
        style = Style(wants_color(sys.stdout, kw["color"]))
        for f in run.files:
            if f.result.changed and f.source is not None and f.result.output is not None:
                sys.stdout.write(unified_diff(f.display, f.source, f.result.output,
                                              findings=f.result.findings, style=style))
        sys.stdout.flush()
    include_applied = mode == "check" or diff
    unsafe = any(s.options.unsafe_fixes for s in resolver.used())
    if kw.get("report_file"):
        _write_output(kw["report_file"], report.to_markdown(run, command=_report_command(kw),
                                                            links=_links(kw, writing)))
    if mode == "report":
        return _write_report(run, kw)
    if not kw["fix_only"]:  # ruff's --fix-only lists nothing
        _print_findings(run, kw, mode, include_applied=include_applied, unsafe=unsafe,
                        err=stdout_is_data)
    for line in report.error_lines(run):
        click.echo(line, err=True)
    if not kw["quiet"] and (mode != "check" or run.files or run.skipped):
        click.echo(_summary(mode, run, kw, writing=writing, unsafe=unsafe, baselined=baselined,
                            proposed=proposed if writing and kw.get("interactive") else None), err=True)
    return _exit_code(mode, run, kw, writing=writing, from_stdin=from_stdin)


def _summary(mode: str, run, kw: dict[str, Any], *, writing: bool, unsafe: bool,  # type: ignore[no-untyped-def]
             baselined: int, proposed) -> str:
    """The run's one summary line, worded for its command: `check` says what it found (with
    -v, what would change), `fix` what it did (`fix -i`: what the review did)."""
    from neuronize.presenting import output
    from neuronize.presenting import report

    hidden = f"{report.counted(baselined, 'baselined finding')} not shown" if baselined else ""
    if mode == "check":
        found = output.found_line(run, unsafe).rstrip(".")
        if hidden and not any(f.result.findings for f in run.files):
            found = "No new findings"
        parts = [found, hidden, report.files_line(run, wrote=False) if kw["verbose"] else ""]
        return "; ".join(p for p in parts if p) + "."
    if proposed is not None:
        from neuronize.presenting.review import review_summary

        summary = review_summary(proposed, run)
    else:
        summary = report.summary_line(run, wrote=writing, unsafe_fixes=unsafe)
    return f"{summary}; {hidden}" if hidden else summary


def _print_findings(run, kw: dict[str, Any], mode: str, *,  # type: ignore[no-untyped-def]
                    include_applied: bool, unsafe: bool, err: bool) -> None:
    """The findings in the chosen ``--output-format`` (or ``--statistics``), on stdout (on
    stderr when stdout carries a diff or the fixed code)."""
    from neuronize.presenting import output
    from neuronize.presenting import report
    from neuronize.presenting.diff import Style, wants_color

    stream = sys.stderr if err else sys.stdout
    fmt = kw["output_format"] or output.default_format(stream)
    if kw["statistics"]:
        lines = output.statistics(run, unsafe, include_applied=include_applied)
    elif fmt == "json":
        lines = [report.to_json(run, include_applied=include_applied,
                                wrote=mode == "fix" and not kw.get("diff") and not err)]
    elif fmt == "markdown":
        lines = [report.to_markdown(run, command=_report_command(kw),
                                    links=_links(kw, mode == "fix" and not kw.get("diff")))]
    elif fmt == "sarif":
        lines = [report.to_sarif(run, include_applied=include_applied)]
    elif fmt == "github":
        lines = report.to_github(run, include_applied=include_applied)
    elif fmt == "full":
        style = Style(wants_color(stream, kw["color"]))
        for line in output.full_findings(run, style, include_applied=include_applied):
            click.echo(line, err=err, color=style.color)  # click strips ANSI off a terminal
        return
    else:
        style = Style(wants_color(stream, kw["color"]))
        lines = report.text_findings(run, include_applied=include_applied,
                                     show_repeats=kw.get("show_repeats", False), style=style)
        for line in lines:
            click.echo(line, err=err, color=style.color)  # click strips ANSI off a terminal
        return
    for line in lines:
        click.echo(line, err=err)


def _exit_code(mode: str, run, kw: dict[str, Any], *, writing: bool,  # type: ignore[no-untyped-def]
               from_stdin: bool) -> int:
    """0 / 1 / 2 as the README's table says, with ruff's --exit-zero, --fix-only and
    --exit-non-zero-on-fix."""
    if run.errors or run.missing:
        return EXIT_ERROR
    if kw.get("exit_non_zero_on_fix"):
        if any(f.written for f in run.files) or (not writing and mode == "fix"
                                                  and any(f.result.changed for f in run.files)):
            return EXIT_PENDING
    if kw.get("exit_zero") or kw.get("fix_only"):
        return EXIT_CLEAN
    if mode == "check":
        pending = any(f.result.findings for f in run.files)
    elif kw.get("diff"):
        pending = any(f.result.changed for f in run.files) or any(
            not finding.applied for f in run.files for finding in f.result.findings)
    else:
        pending = any(
            not (finding.applied and (f.written or from_stdin))
            for f in run.files for finding in f.result.findings
        )
    return EXIT_PENDING if pending else EXIT_CLEAN


def _show_files(resolver, kw: dict[str, Any]) -> int:  # type: ignore[no-untyped-def]
    """``--show-files``: every file a run would look at, with the configuration it uses."""
    from neuronize.api import discover_files
    from neuronize.presenting.output import nothing_found
    from neuronize.types import SkipReason

    files, skipped = discover_files(kw["paths"], resolver, kw["force_exclude"])
    for f in files:
        config = resolver.for_path(f.path).config.path
        click.echo(f"{f.display}" + (f"  ({config})" if kw["verbose"] and config else ""))
    for s in skipped:
        click.echo(f"neuronize: {s.display}: {s.reason}", err=True)
    if not files and not skipped:
        click.echo(f"neuronize: warning: {nothing_found(kw['paths'])}", err=True)
    return EXIT_ERROR if any(s.reason is SkipReason.NO_SUCH_FILE for s in skipped) else EXIT_CLEAN


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
    from neuronize.presenting.diff import Style, wants_color
    from neuronize.presenting.review import review_run
    from neuronize.types import RunResult, Safety

    style = Style(wants_color(sys.stdout, kw["color"]))

    def ask(prompt: str) -> str:
        click.echo(prompt, nl=False)
        line = sys.stdin.readline()
        if not line:
            raise EOFError
        return line

    prompt_for = (lambda hunk: hunk.safety is not Safety.SAFE) if kw.get("review") == "unsafe" else (
        lambda hunk: True)
    return review_run(run, ask=ask, say=click.echo, style=style, prompt_for=prompt_for,
                      write=lambda f: api.write_changes(RunResult(files=[f])).files[0],
                      safe=_safe_layers(run, kw))


def _safe_layers(run, kw: dict[str, Any]):  # type: ignore[no-untyped-def]
    """What plain `fix` (no unsafe fixes) makes of each changed file, when the run has unsafe
    fixes: the review asks about those edits first, and never in one hunk with an unsafe one."""
    from neuronize import api
    from neuronize.presenting.review import SafeLayer
    from neuronize.types import Safety

    if not any(x.applied and x.safety is Safety.UNSAFE for f in run.files for x in f.result.findings):
        return None
    safe = api.analyse_paths(kw["paths"], (), jobs=kw["jobs"], force_exclude=kw["force_exclude"],
                             cache=not kw["no_cache"], resolver=_resolver({**kw, "unsafe_fixes": False}))
    changed = {f.display for f in run.files if f.result.changed}
    return {f.display: SafeLayer(f.result.output, f.result.findings) for f in safe.files
            if f.error is None and f.display in changed}


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
    from neuronize.presenting import report

    fmt = kw["output_format"]
    if fmt == "markdown":
        text = report.to_markdown(run, command=_report_command(kw), links=_links(kw, False))
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
    from neuronize.presenting.docs import rules_json, rules_markdown, rules_text

    click.echo({"text": rules_text, "markdown": rules_markdown, "json": rules_json}[fmt]())


@cli.command()
@click.argument("code")
def explain(code: str) -> None:
    """Print a rule's documentation (by id or name), what an evidence mark (INF, 3P, SRC,
    DOC-old, DOC) means, or `packages`: the CUDA-only packages and the way forward for each."""
    from neuronize.decision.evidence import explain_evidence

    mark = explain_evidence(code)
    if mark is not None:
        click.echo(mark, nl=False)
        return
    from neuronize.presenting.docs import TOPICS, explain_rule
    from neuronize.registry import load_rule

    if code.lower() in TOPICS:
        click.echo(TOPICS[code.lower()](), nl=False)
        return
    rule = load_rule(code)
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


from neuronize.verify.command import verify  # noqa: E402

cli.add_command(verify)


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
