"""Interactive review (``neuronize fix -i``): the pure hunk logic, the prompt loop with injected
input/output, and the real command driven in a pseudo-terminal the way a person uses it."""

from __future__ import annotations

import ast
import dataclasses
import itertools
import os
import re
import sys
from pathlib import Path

import pytest

from helpers import neuronize, pipeline_repo
from neuronize import api
from neuronize.analysis.context import Options
from neuronize.presenting.diff import Style
from neuronize.registry import all_rules
from neuronize.presenting.review import (
    check_rebuilt,
    line_map,
    rebuild,
    SafeLayer,
    review_file,
    review_layered,
    split_by_safety,
    split_hunks,
)
from neuronize.sources.lines import byte_lines
from neuronize.analysis.positions import position_map
from neuronize.types import Finding, Target

pexpect = pytest.importorskip("pexpect")

#: one import hunk serving two edits: `cudnn` is no longer imported, `torch` is
AMP = b"""import torch.nn as nn
from torch.backends import cudnn


def train(model, batch):
    cudnn.benchmark = True
    loss = model(batch)
    a0 = 0
    a1 = 1
    a2 = 2
    a3 = 3
    a4 = 4
    a5 = 5
    a6 = 6
    return loss.half()
"""
AMP_HUNKS = 3  # the imports, the cuDNN flag deletion, the .half() call
#: the AMP tests are about import hunks, not the device policy: on the neuron target the cuDNN flag
#: is kept for CUDA hosts (and reported), so no import is removed there; the CPU target deletes it
AMP_TARGET = ["--target", "cpu"]

#: two safe edits and one unsafe one, far apart
MIXED = (b"import torch\n" + b"model = Net().cuda()\n" + b"".join(b"a%d = %d\n" % (i, i) for i in range(10))
         + b"if resume:\n    batch = batch.cuda(3)\n" + b"".join(b"b%d = %d\n" % (i, i) for i in range(10))
         + b"torch.cuda.synchronize()\n")

PROMPT = re.compile(r"\((\d+)/(\d+)\) Apply this hunk to (\S+) \[y,n,a,d,(?:s,)?q,\?\]\? ")
AGAIN = re.compile(r"Review (\S+) again \(r\) or leave it unchanged \(s\) \[r,s\]\? ")


def _analyse(path: Path, unsafe: bool = True, target: Target = Target.NEURON):  # type: ignore[no-untyped-def]
    run = api.analyse_paths([str(path)], all_rules(), Options(unsafe_fixes=unsafe, target=target), jobs=1)
    [f] = run.files
    return f.source, f.result.output, f.result.findings


# -- the pure part -----------------------------------------------------------------------------
def test_byte_lines_keep_every_byte():
    for data in (b"", b"a", b"a\n", b"a\r\nb", b"a\rb\r\n\r\nc\n", b"\xef\xbb\xbfx\n"):
        assert b"".join(byte_lines(data)) == data
    assert byte_lines(b"a\r\nb\rc\nd") == [b"a\r\n", b"b\r", b"c\n", b"d"]


def test_hunks_carry_their_findings_and_imports_are_linked(tmp_path):
    (tmp_path / "a.py").write_bytes(AMP)
    before, after, findings = _analyse(tmp_path / "a.py", target=Target.CPU)  # see AMP_TARGET
    hunks = split_hunks(before, after, findings)
    assert len(hunks) == AMP_HUNKS
    imports, flag, half = hunks
    assert imports.findings == () and imports.serves == (1, 2)
    assert any("`torch`" in n and "hunk 3 (NRN205)" in n for n in imports.notes)
    assert any("`cudnn`" in n and "hunk 2 (NRN350)" in n for n in imports.notes)
    assert {f.rule for f in flag.findings} == {"NRN350"}
    assert [f.rule for f in half.findings] == ["NRN205"]
    assert imports.safety.value == "unsafe"  # it goes with unsafe edits


@pytest.mark.parametrize("newline", [b"\n", b"\r\n"], ids=["lf", "crlf"])
@pytest.mark.parametrize("final_newline", [True, False], ids=["final-newline", "no-final-newline"])
@pytest.mark.parametrize("bom", [b"", b"\xef\xbb\xbf"], ids=["no-bom", "bom"])
def test_rebuild_is_byte_exact_for_every_subset(tmp_path, newline, final_newline, bom):
    source = bom + MIXED.replace(b"\n", newline)
    if not final_newline:
        source = source[: -len(newline)]
    (tmp_path / "m.py").write_bytes(source)
    # the CPU target: the subject is bytes; on the neuron target hunk 1 also defines `on_neuron`,
    # which hunk 2 calls, so not every subset would be a valid file
    before, after, findings = _analyse(tmp_path / "m.py", target=Target.CPU)
    hunks = split_hunks(before, after, findings)
    assert len(hunks) == 3
    assert rebuild(before, after, hunks, {h.index for h in hunks}) == after
    assert rebuild(before, after, hunks, ()) == before
    for size in range(len(hunks) + 1):
        for accepted in itertools.combinations(range(len(hunks)), size):
            out = rebuild(before, after, hunks, accepted)
            assert out.startswith(bom) and out.endswith(newline) == final_newline
            assert (b"\r\n" in out) == (newline == b"\r\n")
            assert check_rebuilt(before, after, out, hunks, accepted) == []
            ast.parse(out)
            assert (b'Net().to("cpu")' in out) == (0 in accepted)
            assert (b'batch.to("cpu")' in out) == (1 in accepted)


def test_check_finds_a_use_whose_import_was_removed_and_a_dangling_name(tmp_path):
    (tmp_path / "a.py").write_bytes(AMP)
    before, after, findings = _analyse(tmp_path / "a.py", target=Target.CPU)  # see AMP_TARGET
    hunks = split_hunks(before, after, findings)
    problems = check_rebuilt(before, after, rebuild(before, after, hunks, {0, 2}), hunks, {0, 2})
    assert problems == ["line 6: `cudnn` would be used but not defined: hunk 1, which removes its "
                        "import, was accepted"]
    problems = check_rebuilt(before, after, rebuild(before, after, hunks, {1, 2}), hunks, {1, 2})
    assert problems == ["line 14: `torch` would be used but not defined: hunk 1, which adds its "
                        "import, was rejected"]
    assert check_rebuilt(before, after, rebuild(before, after, hunks, {0, 1}), hunks, {0, 1}) == []
    assert check_rebuilt(before, after, b"def f(:\n") == ["line 1: the file would not parse (invalid syntax)"]


def test_line_map():
    before = b"a\nb\nc\nd\n"
    after = b"a\nnew\nb\nC1\nC2\nd\n"
    assert [line_map(before, after)(n) for n in (1, 2, 3, 4)] == [1, 3, 4, 6]


def test_names_undefined_before_are_not_blamed_on_the_review():
    before = b"x = undefined_thing\ny = 1\n"
    after = b"x = undefined_thing\ny = 2\n"
    hunks = split_hunks(before, after)
    assert check_rebuilt(before, after, rebuild(before, after, hunks, {0}), hunks, {0}) == []


def _script(*answers: str):  # type: ignore[no-untyped-def]
    queue = list(answers)
    prompts: list[str] = []

    def ask(prompt: str) -> str:
        prompts.append(prompt)
        if not queue:
            raise EOFError
        return queue.pop(0)

    return ask, prompts


def test_prompt_loop_keys(tmp_path):
    (tmp_path / "m.py").write_bytes(MIXED)
    # the CPU target: the subject is the keys; on the neuron target refusing hunk 1 (which also
    # defines `on_neuron`) would leave hunk 2's call to it undefined
    before, after, findings = _analyse(tmp_path / "m.py", target=Target.CPU)
    said: list[str] = []
    outcomes = {}
    for answers in (("y", "n", "y"), ("?", "x", "n", "a"), ("d",), ("y", "q"), ()):
        ask, prompts = _script(*answers)
        outcomes[answers] = review_file("m.py", before, after, findings, ask=ask, say=said.append, style=Style())
    assert outcomes[("y", "n", "y")].accepted == {0, 2}
    assert outcomes[("?", "x", "n", "a")].accepted == {1, 2}  # ? and an unknown key print help, ask again
    assert any("a - apply this hunk and all later hunks in this file" in s for s in said)
    assert outcomes[("d",)].accepted == set() and outcomes[("d",)].output is None
    quit_ = outcomes[("y", "q")]
    assert quit_.quit and quit_.accepted == {0}
    assert quit_.output == rebuild(before, after, quit_.hunks, {0})
    assert outcomes[()].quit and outcomes[()].output is None  # end of input is q


def test_prompt_loop_asks_only_for_the_chosen_class(tmp_path):
    (tmp_path / "m.py").write_bytes(MIXED)
    before, after, findings = _analyse(tmp_path / "m.py")
    ask, prompts = _script("n")
    said: list[str] = []
    outcome = review_file("m.py", before, after, findings, ask=ask, say=said.append, style=Style(),
                          prompt_for=lambda h: h.safety.value != "safe")
    # hunk 0 defines `on_neuron` for the safe edits (1, 3) and goes in with them; 2 is refused
    assert len(prompts) == 1 and outcome.accepted == {0, 1, 3}
    assert sum("applied without asking" in s for s in said) == 2


def test_a_broken_choice_is_explained_and_never_returned(tmp_path):
    (tmp_path / "a.py").write_bytes(AMP)
    before, after, findings = _analyse(tmp_path / "a.py", target=Target.CPU)  # see AMP_TARGET
    said: list[str] = []
    # skip the cuDNN flag, keep the .half() edit: the import hunk both adds `torch` (needed) and
    # removes `cudnn` (still used), so it is put to the reviewer, after the edits it serves
    ask, prompts = _script("n", "y", "y", "r", "a")
    outcome = review_file("a.py", before, after, findings, ask=ask, say=said.append, style=Style())
    assert prompts[2].startswith("(1/3) Apply this hunk")
    assert any("still uses a name it removes: decide" in s for s in said)
    assert any("`cudnn` would be used but not defined" in s for s in said)
    assert outcome.output == after and outcome.accepted == {0, 1, 2}
    ask, prompts = _script("n", "y", "y", "s")
    outcome = review_file("a.py", before, after, findings, ask=ask, say=said.append, style=Style())
    assert outcome.output is None and outcome.problems


# -- the real command in a pseudo-terminal ------------------------------------------------------
def _spawn(args: list[str], cwd: Path, env: dict[str, str] | None = None):  # type: ignore[no-untyped-def]
    full_env = {**os.environ, "NO_COLOR": "1", **(env or {})}
    return pexpect.spawn(sys.executable, ["-m", "neuronize", *args], cwd=str(cwd), env=full_env,
                         encoding="utf-8", timeout=60, dimensions=(200, 500))


def _drive(child, answer):  # type: ignore[no-untyped-def]
    """Answer every prompt with ``answer(file, index, total, shown)``; returns the answers given."""
    given: list[tuple[str, int, str]] = []
    while True:
        which = child.expect([PROMPT, AGAIN, pexpect.EOF])
        if which == 2:
            break
        shown = child.before
        if which == 0:
            index, total, name = int(child.match.group(1)), int(child.match.group(2)), child.match.group(3)
            key = answer(name, index, total, shown)
            given.append((name, index, key))
        else:
            key = answer(child.match.group(1), 0, 0, shown)
            given.append((child.match.group(1), 0, key))
        child.sendline(key)
    child.close()
    return given


def test_pty_an_import_hunk_follows_the_edits_it_serves(tmp_path):
    (tmp_path / "a.py").write_bytes(AMP)
    child = _spawn(["fix", "-i", "--unsafe-fixes", *AMP_TARGET, "a.py"], tmp_path)
    transcript: list[str] = []
    given = _drive(child, lambda name, index, total, shown: transcript.append(shown) or "y")
    # asked about the two edits only, in file order; the imports follow them without a question
    assert [(g[1], g[2]) for g in given] == [(2, "y"), (3, "y")]
    rest = child.before or ""
    assert "a.py: hunk 1/3 (imports) applied, following hunks 2, 3" in "".join(transcript) + rest
    (tmp_path / "orig.py").write_bytes(AMP)
    assert (tmp_path / "a.py").read_bytes() == _analyse(tmp_path / "orig.py", target=Target.CPU)[1]  # fully migrated


def test_pty_a_conflicting_import_hunk_is_asked_and_checked(tmp_path):
    (tmp_path / "a.py").write_bytes(AMP)
    # skip the cuDNN flag, keep .half(): the imports add `torch` (needed) and remove `cudnn`
    # (still used): asked after the edits; accepting it breaks the file, which is not written
    answers = iter(["n", "y", "y", "s"])
    child = _spawn(["fix", "-i", "--unsafe-fixes", *AMP_TARGET, "a.py"], tmp_path)
    transcript: list[str] = []

    def answer(name, index, total, shown):  # type: ignore[no-untyped-def]
        transcript.append(shown)
        return next(answers)

    given = _drive(child, answer)
    assert [(g[1], g[2]) for g in given] == [(2, "n"), (3, "y"), (1, "y"), (0, "s")]
    text = "".join(transcript)
    assert "a.py: hunk 1/3, line 2 [unsafe]" in text
    assert "removes the import of `cudnn`" in text and "[NRN205 unsafe]" in text
    assert "still uses a name it removes: decide" in text
    assert "`cudnn` would be used but not defined: hunk 1, which removes its import, was accepted" in text
    assert (tmp_path / "a.py").read_bytes() == AMP  # nothing invalid written
    assert child.exitstatus == 1


def test_pty_reject_the_conflicting_import_then_review_again(tmp_path):
    (tmp_path / "a.py").write_bytes(AMP)
    answers = iter(["n", "y", "n", "r", "y", "n"])
    child = _spawn(["fix", "-i", "--unsafe-fixes", *AMP_TARGET, "a.py"], tmp_path)
    seen: list[str] = []

    def answer(name, index, total, shown):  # type: ignore[no-untyped-def]
        seen.append(shown)
        return next(answers)

    _drive(child, answer)
    assert "`torch` would be used but not defined: hunk 1, which adds its import, was rejected" in \
        "".join(seen)
    (tmp_path / "orig.py").write_bytes(AMP)
    before, after, findings = _analyse(tmp_path / "orig.py", target=Target.CPU)
    hunks = split_hunks(before, after, findings)
    on_disk = (tmp_path / "a.py").read_bytes()
    # second pass: the flag edit kept, .half() skipped; the imports follow the flag edit
    assert on_disk == rebuild(before, after, hunks, {0, 1})
    ast.parse(on_disk)
    assert b"cudnn" not in on_disk and b"return loss.half()" in on_disk


#: a safe fix and an unsafe one on neighbouring lines (in a branch of its own, where its tensors
#: meet no others), and a safe fix spanning two lines around an unsafe one
NEIGHBOURS = b"""import torch
model = Net().cuda()
if resume: batch = batch.cuda(3)
y = model(batch)
"""
#: a project whose lines may run to 120: the author's layout of STRADDLE stays as it is, so its
#: edits stay on the lines they straddle (a longer line would be split one argument a line)
WIDE = "line-length = 120\n"
#: the STRADDLE tests are about hunks, not the device policy: on the neuron target the host-aware
#: forms make the lines longer than 120, so the `with` is split one argument a line and nothing
#: straddles; the CPU target's one-line `.to("cpu")` keeps the author's layout
STRADDLE_TARGET = ["--target", "cpu"]
STRADDLE = b"""import torch
with torch.autocast("cuda",
                    dtype=torch.float16, enabled=x.cuda().is_cuda):
    y = model(x)
"""


def test_neighbouring_safe_and_unsafe_fixes_are_two_hunks(tmp_path):
    (tmp_path / "n.py").write_bytes(NEIGHBOURS)
    # the CPU target: on the neuron target the `on_neuron` helper inserted above them makes the two
    # one-line edits one block of the diff, so one hunk
    before, after, findings = _analyse(tmp_path / "n.py", target=Target.CPU)
    hunks = split_hunks(before, after, findings)
    assert [h.safety.value for h in hunks] == ["safe", "unsafe"]
    assert [h.ops for h in hunks] == [(("replace", 1, 2, 1, 2),), (("replace", 2, 3, 2, 3),)]


def test_pty_review_unsafe_keeps_the_safe_neighbour(tmp_path):
    (tmp_path / "n.py").write_bytes(NEIGHBOURS)
    child = _spawn(["fix", "--review", "unsafe", "n.py"], tmp_path)
    given = _drive(child, lambda *a: "n")
    assert len(given) == 1
    out = (tmp_path / "n.py").read_bytes()
    assert b'model = Net().to("neuron" if on_neuron() else "cuda")\nif resume: batch = batch.cuda(3)\n' in out
    ast.parse(out)


def test_pty_split_a_hunk_like_git_add_p(tmp_path):
    (tmp_path / "s.py").write_bytes(STRADDLE)
    (tmp_path / "ruff.toml").write_text(WIDE)
    answers = iter(["s", "y", "n"])
    child = _spawn(["fix", "-i", "--unsafe-fixes", *STRADDLE_TARGET, "s.py"], tmp_path)
    prompts: list[tuple[int, int]] = []

    def answer(name, index, total, shown):  # type: ignore[no-untyped-def]
        prompts.append((index, total))
        return next(answers)

    given = _drive(child, answer)
    assert [g[2] for g in given] == ["s", "y", "n"]
    assert prompts == [(1, 1), (1, 2), (2, 2)]
    out = (tmp_path / "s.py").read_bytes()
    assert b'torch.autocast("cpu",' in out and b"enabled=x.cuda().is_cuda" in out
    ast.parse(out)


def test_pty_review_unsafe_splits_a_mixed_hunk_without_asking(tmp_path):
    # the safe autocast finding spans the line of the unsafe `.is_cuda` edit: one hunk, which
    # `--review unsafe` splits itself; only the unsafe line is asked, and refusing it keeps the
    # safe edit
    (tmp_path / "s.py").write_bytes(STRADDLE)
    (tmp_path / "ruff.toml").write_text(WIDE)
    child = _spawn(["fix", "--review", "unsafe", *STRADDLE_TARGET, "s.py"], tmp_path)
    shown: list[str] = []
    given = _drive(child, lambda name, index, total, before: shown.append(before) or "n")
    assert [(g[1], g[2]) for g in given] == [(1, "n")]
    said = "".join(shown)
    assert "s.py: hunk 1/1 (NRN201, NRN102, safe) applied without asking" in said
    assert "s.py: the unsafe fixes (--unsafe-fixes), on top of the safe ones" in said
    assert "s.py: hunk 1/1, line 3 [unsafe]" in said and "[NRN104 unsafe]" in said
    assert "[NRN201 safe]" not in said.split("on top of the safe ones")[-1]
    out = (tmp_path / "s.py").read_bytes()  # what plain `fix` writes
    assert b'with torch.autocast("cpu",\n' in out and b'enabled=x.to("cpu").is_cuda):' in out
    ast.parse(out)


def test_split_by_safety_keeps_a_hunk_of_one_safety_whole(tmp_path):
    (tmp_path / "s.py").write_bytes(STRADDLE)
    (tmp_path / "ruff.toml").write_text(WIDE)
    before, after, findings = _analyse(tmp_path / "s.py", target=Target.CPU)  # see STRADDLE_TARGET
    (mixed,) = split_hunks(before, after, findings)
    parts = split_by_safety(mixed, mixed.findings)
    assert [p.safety.value for p in parts] == ["safe", "unsafe"]
    assert rebuild(before, after, [dataclasses.replace(p, index=i) for i, p in enumerate(parts)], {0, 1}) == after
    for one in parts:
        assert split_by_safety(one, one.findings) == [one]


def test_pty_summary_counts_the_reviewed_files_only(tmp_path):
    (tmp_path / "m.py").write_bytes(MIXED)
    (tmp_path / "clean.py").write_bytes(b"import torch\nx = torch.zeros(2)\n")
    (tmp_path / "left.py").write_bytes(b"import pycuda.autoinit\n")
    answers = iter(["y", "y", "n"])  # the two safe edits first, then the unsafe one
    child = _spawn(["fix", "-i", "--unsafe-fixes", "."], tmp_path)
    _drive(child, lambda *a: next(answers))
    tail = child.before or ""
    assert "1 file reviewed, 1 written: 2 fixes applied, 1 skipped (NRN102: 1)" in tail, tail


def test_pty_quit_keeps_accepted_hunks_and_touches_nothing_else(tmp_path):
    (tmp_path / "a_first.py").write_bytes(MIXED)
    (tmp_path / "b_second.py").write_bytes(MIXED)
    answers = iter(["y", "q"])
    child = _spawn(["fix", "-i", "--unsafe-fixes", "."], tmp_path)
    given = _drive(child, lambda *a: next(answers))
    assert [(g[0], g[2]) for g in given] == [("a_first.py", "y"), ("a_first.py", "q")]
    (tmp_path / "orig.py").write_bytes(MIXED)
    before, after, findings = _analyse(tmp_path / "orig.py")
    hunks = split_hunks(before, after, findings)
    # the accepted edit (hunk 1) takes the helper it calls (hunk 0) with it
    assert (tmp_path / "a_first.py").read_bytes() == rebuild(before, after, hunks, {0, 1})
    assert (tmp_path / "b_second.py").read_bytes() == MIXED
    assert child.exitstatus == 1


def test_pty_review_unsafe_asks_only_for_unsafe_hunks(tmp_path):
    (tmp_path / "m.py").write_bytes(MIXED)
    child = _spawn(["fix", "--review", "unsafe", "m.py"], tmp_path)
    given = _drive(child, lambda *a: "n")
    assert len(given) == 1  # the .cuda(3) edit; the two safe ones are applied without asking
    out = (tmp_path / "m.py").read_bytes()
    assert b'model = Net().to("neuron" if on_neuron() else "cuda")\n' in out and b"batch = batch.cuda(3)\n" in out
    assert b"def on_neuron() -> bool:" in out
    # no torch requirement in the folder: an older torch is admitted, where torch.cuda serves
    assert b'getattr(torch, "accelerator", torch.cuda).synchronize()' in out


def test_pty_colour_on_a_terminal_unless_no_color(tmp_path):
    (tmp_path / "m.py").write_bytes(MIXED)
    for env, args, coloured in (({"NO_COLOR": ""}, [], True), ({"NO_COLOR": "1"}, [], False),
                                ({"NO_COLOR": ""}, ["--no-color"], False)):
        child = _spawn(["fix", "-i", *args, "m.py"], tmp_path, env=env)
        shown: list[str] = []
        _drive(child, lambda name, i, t, s: shown.append(s) or "q")
        assert ("\x1b[" in "".join(shown)) == coloured, (env, args)
        assert (tmp_path / "m.py").read_bytes() == MIXED


def test_interactive_without_a_terminal_exits_2(tmp_path):
    (tmp_path / "m.py").write_bytes(MIXED)
    proc = neuronize("fix", "-i", "m.py", cwd=tmp_path)
    assert proc.returncode == 2
    assert b"needs a terminal" in proc.stderr
    assert (tmp_path / "m.py").read_bytes() == MIXED
    assert neuronize("fix", "-i", "--diff", "m.py", cwd=tmp_path).returncode == 2
    assert neuronize("fix", "--review", "unsafe", "-", stdin=MIXED).returncode == 2


# -- done when: a whole repository through fix -i, then its report -------------------------------
def test_migrate_a_repository_through_fix_i_and_report_it(tmp_path):
    repo = pipeline_repo(tmp_path)
    originals = {p.name: p.read_bytes() for p in repo.glob("*.py")}
    expected = {name: _analyse(repo / name) for name in originals}
    counter = itertools.count()

    again: set[str] = set()

    def answer(name, index, total, shown):  # type: ignore[no-untyped-def]
        if index == 0:  # "review again?": yes, and this time accept every hunk of the file
            again.add(name)
            return "r"
        if name in again:
            return "y"
        return "n" if next(counter) % 3 == 2 else "y"

    child = _spawn(["fix", "-i", "--unsafe-fixes", "--report", "MIGRATION.md", "."], repo)
    given = _drive(child, answer)
    assert given, "no prompt"
    assert child.exitstatus in (0, 1)
    # replaying each file's answers through the review (the safe edits first, then the unsafe
    # ones) gives what is on disk, and the report lists each fix where it is in the file written
    asked: dict[str, list[str]] = {}
    for name, _, key in given:
        asked.setdefault(name, []).append(key)
    report = (repo / "MIGRATION.md").read_text()
    for name, original in originals.items():
        before, after, findings = expected[name]
        on_disk = (repo / name).read_bytes()
        ast.parse(on_disk)
        if after is None:
            assert on_disk == original
            continue
        (tmp_path / "safe").mkdir(exist_ok=True)
        (tmp_path / "safe" / name).write_bytes(original)
        _, safe_after, safe_findings = _analyse(tmp_path / "safe" / name, unsafe=False)
        ask, _ = _script(*asked.get(name, []))
        outcome = review_layered(name, before, after, findings, SafeLayer(safe_after, safe_findings), ask=ask,
                                 say=lambda s: None, style=Style())
        assert on_disk == (outcome.output if outcome.output is not None else original), name
        decided = outcome.findings if outcome.output is not None else tuple(
            dataclasses.replace(f, applied=False) for f in findings)
        moved = position_map(before, on_disk)  # an edit laid out over lines: where its own text went

        def now(f: Finding) -> int:
            return moved(f.line, f.column)[0]

        for f in decided:
            link = f"[{name}:{now(f)}]({name}#L{now(f)})"
            if f.applied:
                assert f"- {link} {f.rule} ({f.safety.value}): " in report, (name, f)
            elif f.fixable:
                assert f"| {link} | {f.rule} `{f.name}` | {f.safety.value} fix not applied |" in report, (name, f)
        for f in findings:
            if not f.fixable:  # a row of its own, or one of the places of a repeated finding's row
                link = f"[{name}:{now(f)}]({name}#L{now(f)})"
                assert f"| {link} | {f.rule} `{f.name}` | report-only |" in report \
                    or f"| {link} (and " in report or f"like it: {link}" in report or f", {link}" in report, (name, f)
        for f in findings:
            assert " ".join(f.message.split()).replace("|", "\\|") in report
    assert "| files edited |" in report


def test_a_notebook_is_one_hunk_and_must_stay_json():
    before = b'{\n "cells": [\n  "x = y.cuda()\\n",\n  "z = 1\\n",\n  "w = v.cuda()\\n"\n ]\n}\n'
    after = before.replace(b".cuda()", b'.to(\\"neuron\\")')
    ask, prompts = _script("y")
    outcome = review_file("nb.ipynb", before, after, (), ask=ask, say=lambda s: None, style=Style())
    assert len(outcome.hunks) == 1 and len(prompts) == 1 and outcome.output == after
    assert check_rebuilt(before, after, b'{"cells": [') != []


#: a device move and, further down the same function, the device's name: one edit group
#: (`same-device main()`) in two hunks (the constants keep them apart from the hunk that defines
#: `on_neuron`, which the name's host-aware form calls)
PAIR = b"""import torch

STEPS = 1
LR = 0.1
SEED = 0
WIDTH = 8


def main():
    device = torch.device("cuda")
    a = 1
    b = 2
    c = 3
    d = 4
    print(torch.cuda.get_device_name(0))
    return torch.ones(2).to(device)
"""


@pytest.mark.parametrize("key", ["y", "n"])
def test_pty_the_hunks_of_an_edit_group_follow_one_answer(tmp_path, key):
    (tmp_path / "p.py").write_bytes(PAIR)
    child = _spawn(["fix", "-i", "--unsafe-fixes", "p.py"], tmp_path)
    shown: list[str] = []
    given = _drive(child, lambda name, index, total, before: shown.append(before) or key)
    said = "".join(shown) + (child.before or "")
    assert [(g[1], g[2]) for g in given] == [(2, key)]  # hunk 1 defines `on_neuron`; hunk 3 is not asked
    assert "one edit group with hunk 3 (`same-device main()`): your answer applies to them too" in said
    verb = "applied" if key == "y" else "not applied"
    assert f"p.py: hunk 3/3 (NRN115) {verb}, like the hunk already decided in its edit group" in said
    out = (tmp_path / "p.py").read_bytes()
    if key == "y":
        assert b'    device = torch.device("neuron" if on_neuron() else "cuda")\n' in out
        assert (b"    if on_neuron():\n        import torch_neuronx\n"
                b"        print(torch_neuronx.get_device_properties(0).name)\n"
                b"    else:\n        print(torch.cuda.get_device_name(0))\n") in out
        ast.parse(out)
    else:
        assert out == PAIR
