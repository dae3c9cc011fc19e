"""The code a migration writes reads as a person would write it: the test "the accelerator is
Neuron" defined once per module (``neuronize/writing/neuron_test.py``), no device query in a parameter
default (``neuronize/writing/late_defaults.py``), lines within the project's length
(``neuronize/writing/wrapped.py``, ``neuronize/sources/line_length.py``). The migrated code still runs
on this CPU-only host, and a second run changes nothing."""

from __future__ import annotations

import json
import textwrap

import torch

from helpers import neuronize

from neuronize.analysis.context import Options
from neuronize.analysis.engine import run_source
from neuronize.registry import all_rules

TEST = 'torch.accelerator.current_accelerator().type == "neuron"'


def migrate(code: str, target: str = "neuron", path: str = "train.py", line_length: int | None = None) -> str:
    source = textwrap.dedent(code).encode()
    options = Options(target=target, unsafe_fixes=True, line_length=line_length)
    result = run_source(source, all_rules(), options, path=path)
    assert result.error is None, result.error
    assert result.output is not None
    again = run_source(result.output, all_rules(), options, path=path)
    assert again.error is None and again.output is None, "a second run changes the file again"
    return result.output.decode()


def run(code: str) -> dict[str, object]:
    namespace: dict[str, object] = {"__name__": "migrated"}
    exec(compile(code, "migrated.py", "exec"), namespace)
    return namespace


TRAINER = '''
    """A training step."""
    import torch


    def step(model, x):
        with torch.autocast("cuda", dtype=torch.float16):
            return model(x)


    compiled = torch.compile(torch.nn.Identity())
    '''


def test_defined_once_after_the_imports_and_called_where_it_was_written():
    out = migrate(TRAINER)
    assert out.count(TEST) == 1
    assert out.count("def on_neuron() -> bool:") == 1
    assert out.index("import torch") < out.index("def on_neuron()") < out.index("def step(")
    assert 'torch.autocast("neuron" if on_neuron() else "cuda"' in out
    assert 'backend="neuron" if on_neuron() else "inductor"' in out
    assert "\n\n\ndef on_neuron()" in out and ")\n\n\ndef step(" in out  # PEP 8's two blank lines
    namespace = run(out)
    assert namespace["on_neuron"]() is False  # this host has no Neuron device
    x = torch.ones(2)
    assert torch.equal(namespace["step"](torch.nn.Identity(), x), x)


def test_the_accelerator_target_calls_it_too():
    out = migrate(TRAINER, target="accelerator")
    assert out.count(TEST) == 1 and "on_neuron()" in out
    assert run(out)["on_neuron"]() is False


def test_a_name_the_module_uses_is_never_taken():
    out = migrate('''
        import torch

        on_neuron = "a flag of the program's own"
        model = torch.compile(torch.nn.Identity())
        ''')
    assert "def on_neuron_device() -> bool:" in out
    assert 'on_neuron = "a flag of the program\'s own"' in out
    assert run(out)["on_neuron"] == "a flag of the program's own"


def test_the_function_a_first_run_defined_is_used_and_none_is_added():
    out = migrate('''
        import torch


        def on_neuron() -> bool:
            return torch.accelerator.is_available() and torch.accelerator.current_accelerator().type == "neuron"


        model = torch.compile(torch.nn.Identity())
        ''')
    assert out.count("def on_neuron") == 1
    assert 'backend="neuron" if on_neuron() else "inductor"' in out


def test_torch_imported_in_a_function_only_keeps_the_test_written_out():
    out = migrate('''
        def build():
            import torch

            return torch.compile(torch.nn.Identity())
        ''')
    assert "def on_neuron" not in out and out.count(TEST) == 1


def test_a_module_level_use_comes_after_the_definition_and_imports_still_work():
    out = migrate('''
        import os
        os.environ.setdefault("OMP_NUM_THREADS", "1")
        import torch
        DEVICE = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        ''')
    assert out.index("def on_neuron()") < out.index("DEVICE =")
    assert out.index('os.environ.setdefault') < out.index("def on_neuron()")
    assert run(out)["DEVICE"] == torch.device("cpu")


def test_tabs_and_crlf_are_kept():
    source = b"import torch\r\n\r\nif True:\r\n\tm = torch.compile(torch.nn.Identity())\r\n"
    result = run_source(source, all_rules(), Options(unsafe_fixes=True), path="t.py")
    assert result.output is not None
    lines = result.output.split(b"\r\n")
    assert b"\n" not in b"".join(lines)  # every line ends in CRLF
    assert b"\treturn (" in result.output and b"\t\ttorch.accelerator.is_available()" in result.output


def test_a_notebook_cell_keeps_the_test_written_out(tmp_path):
    cell = {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
            "source": ["import torch\n", "m = torch.compile(torch.nn.Identity())\n"]}
    notebook = {"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    path = tmp_path / "nb.ipynb"
    path.write_text(json.dumps(notebook, indent=1))
    neuronize("fix", "--unsafe-fixes", str(path))
    written = "".join(json.loads(path.read_text())["cells"][0]["source"])
    assert "def on_neuron" not in written and TEST in written


def test_the_diff_says_what_the_definition_is_for(tmp_path):
    path = tmp_path / "train.py"
    path.write_text(textwrap.dedent(TRAINER))
    result = neuronize("fix", "--diff", "--unsafe-fixes", str(path))
    assert "[helper] defines `on_neuron` for the edits in this file" in result.stdout.decode()


# -- parameter defaults ---------------------------------------------------------------------------
def test_a_device_query_in_a_default_is_resolved_in_the_body():
    out = migrate('''
        import torch


        def load(path, device: str = "cuda"):
            """Load a checkpoint."""
            return torch.load(path, map_location=device)
        ''', target="accelerator")
    assert "def load(path, device: str | None = None):" in out
    body = out.split('"""Load a checkpoint."""\n')[1]
    assert body.startswith("    if device is None:\n        device = ")
    assert "current_accelerator" not in out.split("def load")[1].split(":\n")[0]  # nothing at import
    assert run(out)["load"].__defaults__ == (None,)


def test_a_plain_default_stays_a_constant():
    out = migrate('''
        import torch


        def run(x, device="cuda"):
            return x.to(device)
        ''')
    assert 'def run(x, device="neuron"):' in out


# -- line length ----------------------------------------------------------------------------------
def longest_added(before: str, after: str) -> int:
    old = set(textwrap.dedent(before).splitlines())
    return max(len(line) for line in after.splitlines() if line not in old)


def test_a_long_call_is_split_as_black_splits_it():
    code = '''
        import torch


        def main(model):
            model = torch.compile(model, fullgraph=True)
            with torch.autocast("cuda", dtype=torch.float16, cache_enabled=False):
                return model(torch.ones(2))
        '''
    out = migrate(code)
    assert longest_added(code, out) <= 88
    assert "    with torch.autocast(\n        " in out and "\n    ):\n" in out
    assert run(out)["main"](torch.nn.Identity()).shape == (2,)


def test_one_argument_a_line_when_the_arguments_do_not_fit_on_one():
    code = '''
        import torch


        def main(model):
            with torch.autocast("cuda"):
                return model(torch.ones(2))
        '''
    out = migrate(code, line_length=70)
    assert longest_added(code, out) <= 70
    assert '        "neuron" if on_neuron() else "cuda",\n' in out  # magic trailing comma after the last


def test_a_conditional_value_gets_parentheses_and_breaks_at_if_and_else():
    code = '''
        import torch


        def pick():
            device = "cuda"
            return torch.ones(1, device=device)
        '''
    out = migrate(code, target="accelerator", line_length=79)
    assert longest_added(code, out) <= 79
    assert "    device = (\n" in out and "\n        if torch.accelerator.is_available()\n        else " in out
    assert run(out)["pick"]().device.type == "cpu"


def test_the_project_line_length_is_read_from_its_settings(tmp_path):
    from neuronize.sources.line_length import line_length_for

    (tmp_path / ".git").mkdir()
    (tmp_path / "pyproject.toml").write_text("[tool.black]\nline-length = 100\n[tool.ruff]\nline-length = 79\n")
    sub = tmp_path / "pkg" / "sub"
    sub.mkdir(parents=True)
    assert line_length_for(str(sub)) == 79  # ruff's, the nearest setting above the file
    (tmp_path / "pkg" / "setup.cfg").write_text("[flake8]\nmax-line-length = 120\n")
    line_length_for.cache_clear()
    assert line_length_for(str(sub)) == 120
    other = tmp_path / "other"
    other.mkdir()
    assert line_length_for(str(other)) == 79


def test_a_command_line_run_keeps_added_lines_within_the_project_length(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[tool.ruff]\nline-length = 72\n")
    path = tmp_path / "train.py"
    code = textwrap.dedent(TRAINER)
    path.write_text(code)
    neuronize("fix", "--unsafe-fixes", "--no-cache", str(path))
    assert longest_added(code, path.read_text()) <= 72


# -- every fixture ---------------------------------------------------------------------------------
def _fixture_pairs():
    from fixture_cases import all_cases

    for case in all_cases():
        if case.before.suffix == ".py" and case.after.exists():
            yield case


def test_every_fixture_spells_the_neuron_test_once_and_keeps_its_line_length():
    """The two promises on every fixture's output: the test "the accelerator is Neuron" is written
    out at most once in a module, and an added line stays within the file's limit. Two kinds of
    line are the author's: an f-string (black never splits a string) and a line inside a statement
    the author already spread over several lines."""
    import re

    from neuronize.writing.wrapped import limit_for

    over = []
    for case in _fixture_pairs():
        before, after = case.before.read_bytes(), case.after.read_bytes()
        text = after.decode("utf-8", "replace")
        spelled = r"current_accelerator\(\)\.type == ['\"]neuron"  # by the migration, not by hand
        assert len(re.findall(spelled, text)) - len(re.findall(spelled, before.decode("utf-8", "replace"))) <= 1, \
            case.id
        limit = limit_for(before, None)
        old = set(before.decode("utf-8", "replace").splitlines())
        for line in text.splitlines():
            if line in old or len(line) <= limit or re.search(r"\bf['\"]", line):
                continue
            if "  # " in line:
                continue  # the author's comment on an argument of a call the author split
            over.append(f"{case.id}: {line.strip()[:80]}")
    assert not over, "\n".join(over)
