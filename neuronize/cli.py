"""Command line: the options become a :class:`neuronize.api.RunRequest`, :func:`neuronize.api.run`
does the run, and this module renders what it returns (through neuronize/presenting) and chooses
the exit code. The interactive review, which talks to the terminal, is the run's write step here.

Exit codes (ruff's convention): 0 nothing pending; 1 edits or findings pending; 2 an error
(a file that could not be processed, a bad option, an internal error, an interrupt). Every other
file is still processed when one fails.
"""

from __future__ import annotations

import dataclasses
import os
import signal
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from neuronize import __version__
from neuronize.audit.child.hosts import HOSTS
from neuronize.types import RunResult, Safety, Target
from neuronize.verify.command import MAX_SECONDS

if TYPE_CHECKING:
    from neuronize.api import Mode, RunRequest
    from neuronize.presenting.links import Links
    from neuronize.presenting.review import SafeLayer

EXIT_CLEAN, EXIT_PENDING, EXIT_ERROR = 0, 1, 2

F = TypeVar("F", bound=Callable[..., Any])


def _with_options(func: F, options: Sequence[Callable[[F], F]]) -> F:
    """``func`` with click ``options`` applied, the first listed shown first in ``--help``."""
    for option in reversed(options):
        func = option(func)
    return func


def _common(func: F) -> F:
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


def _lint(func: F) -> F:
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


def _link_base_option(func: F) -> F:
    return click.option(
        "--link-base", metavar="URL", default=None,
        help="Make the Markdown report's links absolute: URL + the path in the repository "
             "(default: the `origin` remote's web address at the commit read, or after `fix` at "
             "the current branch, when it is on GitHub, GitLab or Bitbucket; `none`: relative "
             "links).")(func)


def _links(kw: dict[str, Any], wrote: bool) -> Links:
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
def fix(**kwargs: Any) -> None:
    """Apply the safe fixes (and unsafe ones with --unsafe-fixes); report the rest."""
    if kwargs.pop("verify"):
        from neuronize.verify.command import run_command

        sys.exit(run_command(kwargs["paths"], write=True, target=kwargs.get("target"),
                             unsafe_fixes=bool(kwargs.get("unsafe_fixes")), say=click.echo, warn=_warn))
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


def _run(mode: Mode, **kw: Any) -> int:
    try:
        return _run_inner(mode, kw)
    except KeyboardInterrupt:
        click.echo("neuronize: interrupted; files already written are complete, the rest untouched",
                   err=True)
        # every write finished or was undone while the interrupt unwound; leave at once: the
        # interpreter's shutdown would wait for the workers, and a parse the interrupt abandoned
        # on the deep-stack thread can abort the process while the interpreter tears down
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(EXIT_ERROR)


def _run_inner(mode: Mode, kw: dict[str, Any]) -> int:
    from neuronize import api
    from neuronize.presenting.progress import Progress

    if kw.get("no_color"):
        kw["color"] = "never"
    problem = _interactive_problem(kw) if kw.get("interactive") else None
    if problem:
        click.echo(f"neuronize: error: {problem}", err=True)
        return EXIT_ERROR
    request = _request(mode, kw)
    review = _Review(request, kw) if kw.get("interactive") else None
    with Progress(0, enabled=not kw["quiet"]) as bar:
        run = api.run(request, progress=bar, writer=review)
    return _render(request, run, kw, review.proposed if review is not None else None)


def _request(mode: Mode, kw: dict[str, Any]) -> RunRequest:
    """The run the options ask for (standard input is read here, unless nothing is looked at)."""
    from neuronize.api import RunRequest

    inspect = kw["show_settings"] or kw["show_files"]
    return RunRequest(
        paths=tuple(kw["paths"]), mode=mode, write=not kw.get("diff"),
        stdin=sys.stdin.buffer.read() if kw["paths"] == ("-",) and not inspect else None,
        stdin_filename=kw["stdin_filename"], select=kw["select"], extend_select=kw["extend_select"],
        ignore=kw["ignore"], unsafe_fixes=kw["unsafe_fixes"], target=kw.get("target"),
        config_file=Path(kw["config_file"]) if kw.get("config_file") else None,
        unused_suppressions=kw["unused_suppressions"], kinds=kw["kinds"], exclude_kinds=kw["exclude_kinds"],
        force_exclude=kw["force_exclude"], jobs=kw["jobs"], cache=not kw["no_cache"],
        baseline=Path(kw["baseline"]) if kw.get("baseline") else None,
        write_baseline=Path(kw["write_baseline"]) if kw.get("write_baseline") else None,
        show_settings=kw["show_settings"], show_files=kw["show_files"],
    )


def _render(request: RunRequest, run: RunResult, kw: dict[str, Any], proposed: RunResult | None) -> int:
    """What the run came to, on stdout and stderr; the exit code."""
    from neuronize.presenting.report import counted, to_markdown
    if run.error is not None:
        click.echo(f"neuronize: error: {run.error}", err=True)
        return EXIT_ERROR
    if run.settings is not None:
        click.echo(run.settings)
        return EXIT_CLEAN
    if request.show_files:
        return _show_files(run, kw)
    _render_run_notes(request, run, kw)
    if run.baseline_written is not None:
        click.echo(f"neuronize: wrote {counted(run.baseline_written, 'finding')} to baseline "
                   f"{request.write_baseline}", err=True)
        return EXIT_ERROR if run.errors else EXIT_CLEAN
    if not request.write:
        _print_diffs(run, kw)
    if kw.get("report_file"):
        _write_output(kw["report_file"], to_markdown(run, command=_report_command(kw),
                                                     links=_links(kw, _fixing(request))))
    if request.mode == "report":
        return _write_report(request, run, kw)
    return _render_findings(request, run, kw, proposed)


def _render_run_notes(request: RunRequest, run: RunResult, kw: dict[str, Any]) -> None:
    """-v's lines, a warning when nothing was found, the fixed code of standard input (on stdout),
    the temp files removed."""
    from neuronize.presenting import output
    from neuronize.presenting.report import counted

    if kw["verbose"] and not kw.get("interactive"):  # the review said them before its questions
        _print_verbose(run)
    if not run.files and not run.skipped and request.stdin is None:
        click.echo(f"neuronize: warning: {output.nothing_found(request.paths)}", err=True)
    if _fixes_stdin(request):
        entry = run.files[0]
        sys.stdout.buffer.write(entry.result.output or entry.source or b"")
        sys.stdout.flush()
    if run.stale_removed:
        click.echo(f"neuronize: removed {counted(len(run.stale_removed), 'temp file')} left by "
                   "an interrupted run", err=True)


def _print_verbose(run: RunResult) -> None:
    from neuronize.presenting.output import verbose_lines

    for line in verbose_lines(run):
        click.echo(f"neuronize: {line}", err=True)


def _fixing(request: RunRequest) -> bool:
    """`fix` without --diff: the files are written (standard input's code goes to stdout)."""
    return request.mode == "fix" and request.write


def _fixes_stdin(request: RunRequest) -> bool:
    """`fix -`: the fixed code goes to stdout (the findings to stderr)."""
    return request.stdin is not None and _fixing(request)


def _print_diffs(run: RunResult, kw: dict[str, Any]) -> None:
    from neuronize.presenting.diff import Style, unified_diff, wants_color

    style = Style(wants_color(sys.stdout, kw["color"]))
    for f in run.files:
        if f.result.changed and f.source is not None and f.result.output is not None:
            sys.stdout.write(unified_diff(f.display, f.source, f.result.output,
                                          findings=f.result.findings, style=style))
    sys.stdout.flush()


def _render_findings(request: RunRequest, run: RunResult, kw: dict[str, Any], proposed: RunResult | None) -> int:
    """`check` and `fix`: the findings, the files that failed, the summary; the exit code."""
    from neuronize.presenting.report import error_lines

    if not kw["fix_only"]:  # ruff's --fix-only lists nothing
        _print_findings(run, kw, request, err=not request.write or _fixes_stdin(request))
    for line in error_lines(run):
        click.echo(line, err=True)
    if not kw["quiet"] and (request.mode != "check" or run.files or run.skipped):
        click.echo(_summary(request, run, kw, proposed), err=True)
    return _exit_code(request, run, kw)


def _summary(request: RunRequest, run: RunResult, kw: dict[str, Any], proposed: RunResult | None) -> str:
    """The run's one summary line, worded for its command: `check` says what it found (with
    -v, what would change), `fix` what it did (`fix -i`: what the review did)."""
    from neuronize.presenting import output
    from neuronize.presenting import report

    hidden = f"{report.counted(run.baselined, 'baselined finding')} not shown" if run.baselined else ""
    if request.mode == "check":
        found = output.found_line(run, run.unsafe_fixes).rstrip(".")
        if hidden and not any(f.result.findings for f in run.files):
            found = "No new findings"
        parts = [found, hidden, report.files_line(run, wrote=False) if kw["verbose"] else ""]
        return "; ".join(p for p in parts if p) + "."
    if proposed is not None:
        from neuronize.presenting.review import review_summary

        summary = review_summary(proposed, run)
    else:
        summary = report.summary_line(run, wrote=_fixing(request), unsafe_fixes=run.unsafe_fixes)
    return f"{summary}; {hidden}" if hidden else summary


def _print_findings(run: RunResult, kw: dict[str, Any], request: RunRequest, *, err: bool) -> None:
    """The findings in the chosen ``--output-format`` (or ``--statistics``), on stdout (on
    stderr when stdout carries a diff or the fixed code)."""
    from neuronize.presenting import output

    stream = sys.stderr if err else sys.stdout
    fmt = kw["output_format"] or output.default_format(stream)
    include_applied = request.mode == "check" or not request.write
    if kw["statistics"]:
        lines = output.statistics(run, run.unsafe_fixes, include_applied=include_applied)
    elif fmt in ("full", "concise", "text"):
        _print_styled(run, kw, fmt, include_applied=include_applied, err=err)
        return
    else:
        lines = _rendered(run, kw, fmt, request, include_applied=include_applied)
    for line in lines:
        click.echo(line, err=err)


def _rendered(run: RunResult, kw: dict[str, Any], fmt: str, request: RunRequest, *,
              include_applied: bool) -> list[str]:
    """The findings in a machine format (json, markdown, sarif, github)."""
    from neuronize.presenting import report

    if fmt == "json":
        return [report.to_json(run, include_applied=include_applied, wrote=request.writes)]
    if fmt == "markdown":
        return [report.to_markdown(run, command=_report_command(kw), links=_links(kw, _fixing(request)))]
    if fmt == "sarif":
        return [report.to_sarif(run, include_applied=include_applied)]
    return report.to_github(run, include_applied=include_applied)


def _print_styled(run: RunResult, kw: dict[str, Any], fmt: str, *, include_applied: bool, err: bool) -> None:
    """The findings for a person: ``full`` (with the source line) or ``concise``."""
    from neuronize.presenting import output
    from neuronize.presenting.diff import Style, wants_color
    from neuronize.presenting.report import text_findings

    style = Style(wants_color(sys.stderr if err else sys.stdout, kw["color"]))
    if fmt == "full":
        lines = output.full_findings(run, style, include_applied=include_applied)
    else:
        lines = text_findings(run, include_applied=include_applied, show_repeats=kw.get("show_repeats", False),
                              style=style)
    for line in lines:
        click.echo(line, err=err, color=style.color)  # click strips ANSI off a terminal


def _exit_code(request: RunRequest, run: RunResult, kw: dict[str, Any]) -> int:
    """0 / 1 / 2 as the README's table says, with ruff's --exit-zero, --fix-only and
    --exit-non-zero-on-fix."""
    if run.errors or run.missing:
        return EXIT_ERROR
    if kw.get("exit_non_zero_on_fix") and _changed_any(request, run):
        return EXIT_PENDING
    if kw.get("exit_zero") or kw.get("fix_only"):
        return EXIT_CLEAN
    return EXIT_PENDING if _pending(request, run) else EXIT_CLEAN


def _changed_any(request: RunRequest, run: RunResult) -> bool:
    """Whether a file was changed (or, with --diff, would be)."""
    would = request.mode == "fix" and not request.write  # --diff
    return any(f.written or (would and f.result.changed) for f in run.files)


def _pending(request: RunRequest, run: RunResult) -> bool:
    """Whether something is left to do: a finding (`check`), an edit or a finding not applied
    (`fix --diff`), a finding not fixed in a file written (`fix`)."""
    if request.mode == "check":
        return any(f.result.findings for f in run.files)
    if not request.write:
        return any(f.result.changed for f in run.files) or any(
            not finding.applied for f in run.files for finding in f.result.findings)
    return any(not (finding.applied and (f.written or request.stdin is not None))
               for f in run.files for finding in f.result.findings)


def _show_files(run: RunResult, kw: dict[str, Any]) -> int:
    """``--show-files``: every file a run would look at, with the configuration it uses."""
    from neuronize.presenting.output import nothing_found

    for f in run.files:
        config = run.configs.get(f.path) if f.path is not None else None
        click.echo(f"{f.display}" + (f"  ({config})" if kw["verbose"] and config else ""))
    for s in run.skipped:
        click.echo(f"neuronize: {s.display}: {s.reason}", err=True)
    if not run.files and not run.skipped:
        click.echo(f"neuronize: warning: {nothing_found(kw['paths'])}", err=True)
    return EXIT_ERROR if run.missing else EXIT_CLEAN


def _interactive_problem(kw: dict[str, Any]) -> str | None:
    if kw.get("diff"):
        return "-i/--interactive and --diff cannot be combined"
    if kw["paths"] == ("-",):
        return "-i/--interactive cannot review code read from standard input"
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        return ("-i/--interactive needs a terminal (standard input and output must be a TTY); "
                "use `neuronize fix --diff` to review the edits without one")
    return None


class _Review:
    """`fix -i`, the run's write step: a hunk-by-hunk review in this (the parent) process, each
    file written after its review. Keeps the run as proposed, for the summary."""

    def __init__(self, request: RunRequest, kw: dict[str, Any]) -> None:
        self.request = request
        self.kw = kw
        self.proposed: RunResult | None = None

    def __call__(self, run: RunResult) -> RunResult:
        from neuronize import api
        from neuronize.presenting.diff import Style, wants_color
        from neuronize.presenting.review import review_run

        self.proposed = run
        if self.kw["verbose"]:
            _print_verbose(run)
        style = Style(wants_color(sys.stdout, self.kw["color"]))
        unsafe_only = self.kw.get("review") == "unsafe"
        return review_run(run, ask=_ask, say=click.echo, style=style,
                          prompt_for=lambda hunk: not unsafe_only or hunk.safety is not Safety.SAFE,
                          write=lambda f: api.write_changes(RunResult(files=[f])).files[0],
                          safe=self._safe_layers(run))

    def _safe_layers(self, run: RunResult) -> dict[str, SafeLayer] | None:
        """What plain `fix` (no unsafe fixes) makes of each changed file, when the run has unsafe
        fixes: the review asks about those edits first, and never in one hunk with an unsafe one."""
        from neuronize import api
        from neuronize.presenting.review import SafeLayer

        if not any(x.applied and x.safety is Safety.UNSAFE for f in run.files for x in f.result.findings):
            return None
        safe = api.run(dataclasses.replace(self.request, unsafe_fixes=False, write=False, baseline=None,
                                           write_baseline=None))
        changed = {f.display for f in run.files if f.result.changed}
        return {f.display: SafeLayer(f.result.output, f.result.findings) for f in safe.files
                if f.error is None and f.display in changed}


def _ask(prompt: str) -> str:
    click.echo(prompt, nl=False)
    line = sys.stdin.readline()
    if not line:
        raise EOFError
    return line


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


def _write_report(request: RunRequest, run: RunResult, kw: dict[str, Any]) -> int:
    """`neuronize report`: the rendering on stdout or in --output; 0, or 2 if a file failed."""
    from neuronize.presenting import report

    fmt = kw["output_format"]
    if fmt in ("markdown", "sarif", "github", "json"):
        text = "\n".join(_rendered(run, kw, fmt, request, include_applied=True))
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


@cli.command(context_settings={"ignore_unknown_options": True})
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
    from neuronize.verify.command import run_command

    sys.exit(run_command(args, write=False, say=click.echo, warn=_warn, **options))


def _warn(line: str) -> None:
    click.echo(line, err=True)


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
