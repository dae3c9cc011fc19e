"""The code a migration writes reads as a person would write it: the test "the accelerator is
Neuron" defined once per module (``neuronize/writing/neuron_test.py``), no device query in a parameter
default (``neuronize/writing/late_defaults.py``), lines within the project's length
(``neuronize/writing/wrapped.py``, ``neuronize/sources/line_length.py``). The migrated code still runs
on this CPU-only host, and a second run changes nothing."""

from __future__ import annotations

import json
import textwrap

import pytest
import torch

from helpers import neuronize

from neuronize.analysis.context import Options
from neuronize.analysis.engine import run_source
from neuronize.registry import all_rules

TEST = 'torch.accelerator.current_accelerator().type == "neuron"'
#: the test where it stays written out: behind the same hasattr as the function (torch < 2.6)
WRITTEN = f'hasattr(torch, "accelerator") and torch.accelerator.is_available() and {TEST}'


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


def test_defined_after_the_import_of_torch_where_other_code_comes_first():
    out = migrate('''
        import sys
        with open(sys.argv[0]) as f:
            code = f.read()  # the script logs its own source
        import os
        import torch
        import numpy as np

        model = torch.compile(torch.nn.Identity())
        ''')
    assert out.index("import numpy as np") < out.index("def on_neuron()") < out.index("model = torch.compile")
    assert out.index("with open(sys.argv[0])") < out.index("def on_neuron()")


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
    assert "def on_neuron" not in out and out.count(TEST) == 1 and WRITTEN in " ".join(out.split())


def test_a_test_an_older_version_wrote_out_is_still_recognised():
    # written without the hasattr: a second run (of this version) changes nothing
    source = textwrap.dedent('''
        def build():
            import torch

            return torch.compile(torch.nn.Identity(), backend="neuron" if torch.accelerator.is_available() and torch.accelerator.current_accelerator().type == "neuron" else "inductor")
        ''').encode()
    result = run_source(source, all_rules(), Options(unsafe_fixes=True), path="train.py")
    assert result.error is None and result.output is None


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


def test_a_module_that_still_runs_on_python_2_gets_no_return_annotation():
    # `from __future__ import print_function` keeps a module running on Python 2, where
    # `def on_neuron() -> bool:` does not parse
    out = migrate("""\
        from __future__ import print_function
        import torch
        model = torch.nn.Linear(2, 2).cuda()
    """)
    assert "def on_neuron():\n" in out and "-> bool" not in out
    assert "def on_neuron() -> bool:" in migrate("from __future__ import annotations\nimport torch\nx = torch.ones(1).cuda()\n")


def test_a_project_that_still_runs_on_python_2_gets_no_return_annotation_in_any_module(tmp_path):
    # one module's `from __future__ import division` says the project runs on Python 2: its
    # trainer, with no `__future__` line of its own, runs under the same interpreter
    (tmp_path / "utils.py").write_text("from __future__ import division\nimport torch\nx = torch.ones(1).cuda()\n")
    (tmp_path / "train.py").write_text("import torch\nmodel = torch.nn.Linear(2, 2).cuda()\n")
    neuronize("fix", "--unsafe-fixes", str(tmp_path))
    for name in ("utils.py", "train.py"):
        out = (tmp_path / name).read_text()
        assert "def on_neuron():\n" in out and "-> bool" not in out, name


@pytest.mark.parametrize("sign", ["notebook", "print statement"])
def test_a_project_whose_notebook_kernel_or_syntax_is_python_2_gets_no_return_annotation(tmp_path, sign):
    # no `__future__` line anywhere: a notebook run on the `python2` kernel, or a module written in
    # Python 2's syntax (which does not parse as Python 3, so only its bytes say it)
    if sign == "notebook":
        cell = {"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [],
                "source": ["import torch\n", "print('ready')\n"]}
        (tmp_path / "demo.ipynb").write_text(json.dumps({
            "cells": [cell], "nbformat": 4, "nbformat_minor": 2,
            "metadata": {"kernelspec": {"display_name": "Python 2", "language": "python", "name": "python2"}}}))
    else:
        (tmp_path / "eval.py").write_text('import torch\nprint "PSNR:", 31.2\n')
    (tmp_path / "train.py").write_text("import torch\nmodel = torch.nn.Linear(2, 2).cuda()\n")
    neuronize("fix", "--unsafe-fixes", str(tmp_path))
    out = (tmp_path / "train.py").read_text()
    assert "def on_neuron():\n" in out and "-> bool" not in out


def test_a_colab_notebook_recording_python_2_7_under_a_python_3_kernel_is_python_3(tmp_path):
    cell = {"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [], "source": ["import torch\n"]}
    (tmp_path / "tutorial.ipynb").write_text(json.dumps({
        "cells": [cell], "nbformat": 4, "nbformat_minor": 0,
        "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
                     "language_info": {"codemirror_mode": {"name": "ipython", "version": 2}, "name": "python",
                                       "pygments_lexer": "ipython2", "version": "2.7.6"}}}))
    (tmp_path / "train.py").write_text("import torch\nmodel = torch.nn.Linear(2, 2).cuda()\n")
    neuronize("fix", "--unsafe-fixes", str(tmp_path))
    assert "def on_neuron() -> bool:" in (tmp_path / "train.py").read_text()


def test_a_device_value_set_above_the_import_of_torch_is_left_as_it_is():
    # `RUN_DEVICE = "cuda"` read by modules the script imports later: the Neuron test needs torch,
    # which is not bound yet there (the module would raise NameError on every host)
    source = "import os\nos.environ['RUN_DEVICE'] = 'cuda'\nimport torch\nx = torch.ones(1).cuda()\n"
    result = run_source(source.encode(), all_rules(), Options(unsafe_fixes=True), path="verify.py")
    out = (result.output or b"").decode()
    assert "os.environ['RUN_DEVICE'] = 'cuda'\nimport torch\n" in out and "on_neuron() else" in out
    compile(out, "verify.py", "exec")


def test_tabs_and_crlf_are_kept():
    source = b"import torch\r\n\r\nif True:\r\n\tm = torch.compile(torch.nn.Identity())\r\n"
    result = run_source(source, all_rules(), Options(unsafe_fixes=True), path="t.py")
    assert result.output is not None
    lines = result.output.split(b"\r\n")
    assert b"\n" not in b"".join(lines)  # every line ends in CRLF
    assert b"\treturn (" in result.output and b"\t\thasattr(torch, \"accelerator\")\r\n\t\tand torch.accelerator.is_available()" in result.output


def test_a_notebook_defines_the_test_once_for_its_cells(tmp_path):
    cells = [{"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None, "source": source}
             for source in (["import torch\n", "\n", "width = 4\n", "depth = 2\n", "layers = []\n",
                             "m = torch.compile(torch.nn.Identity())\n"],
                            ["n = torch.compile(torch.nn.Identity())\n"])]
    path = tmp_path / "nb.ipynb"
    path.write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}, indent=1))
    # the diff of the notebook's JSON says what the definition is for, as a module's does
    assert "[helper] defines `on_neuron`" in neuronize("fix", "--diff", "--unsafe-fixes", str(path)).stdout.decode()
    neuronize("fix", "--unsafe-fixes", str(path))
    first, second = ("".join(c["source"]) for c in json.loads(path.read_text())["cells"])
    # the cells share one namespace: the first that needs the test defines it, the others call it
    assert first.count("def on_neuron") == 1 and "on_neuron()" in first
    assert "def on_neuron" not in second and "on_neuron()" in second and "import torch" not in second


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
    # a module-level def evaluates its annotations at import: `str | None` would need Python 3.10
    assert "def load(path, device: Optional[str] = None):" in out
    assert "from typing import Optional\n" in out
    body = out.split('"""Load a checkpoint."""\n')[1]
    assert body.startswith("    if device is None:\n        device = ")
    assert "current_accelerator" not in out.split("def load")[1].split(":\n")[0]  # nothing at import
    assert run(out)["load"].__defaults__ == (None,)


def test_a_default_annotated_with_a_union_admits_none_the_same_way():
    out = migrate('''
        import torch


        def load(path, device: str | torch.device = "cuda"):
            return torch.load(path, map_location=device)
        ''', target="accelerator")
    # the file's Python evaluates `|` between types already: no `typing` import for it
    assert "def load(path, device: str | torch.device | None = None):" in out
    assert "Optional" not in out


def test_a_file_that_postpones_its_annotations_gets_the_union_form():
    out = migrate('''
        from __future__ import annotations

        import torch


        def load(path, device: str = "cuda"):
            return torch.load(path, map_location=device)
        ''', target="accelerator")
    assert "def load(path, device: str | None = None):" in out
    assert "Optional" not in out


def test_a_scripts_device_parameter_keeps_the_cuda_box():
    # a device parameter is a choice its callers make: the CUDA box that called it keeps CUDA
    out = migrate('''
        import torch


        def run(x, device="cuda"):
            return x.to(device)


        run(torch.ones(1))
        ''')
    assert "def run(x, device=None):" in out and 'device = "neuron" if on_neuron() else "cuda"' in out


def test_a_library_default_keeps_the_cuda_box():
    out = migrate('''
        import torch


        def run(x, device="cuda"):
            return x.to(device)


        def _inner(x, device="cuda"):
            return x.to(device)
        ''')
    assert "def run(x, device=None):" in out and 'device = "neuron" if on_neuron() else "cuda"' in out
    assert "def _inner(x, device=None):" in out
    assert run(out)["run"].__defaults__ == (None,)


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
    line are the author's: an f-string (black never splits a string) and a line that carries the
    author's comment."""
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


# -- long lines in any statement ---------------------------------------------------------------------
def wrapped(before: str, after: str, limit: int) -> str:
    """``after`` (as if a run had rewritten ``before`` to it) with its long changed lines split."""
    import libcst as cst

    from neuronize.writing.wrapped import wrap_long_lines

    new = textwrap.dedent(after)
    out = wrap_long_lines(cst.parse_module(new), textwrap.dedent(before).encode(), limit).code
    compile(out, "wrapped.py", "exec")
    old = set(textwrap.dedent(before).splitlines())
    assert all(len(line) <= limit for line in out.splitlines() if line not in old), out
    return out


def test_a_def_whose_parameters_changed_gets_them_on_one_indented_line_or_one_a_line():
    before = '''
        class Sampler:
            def grid(self, size, level, dtype=float, place="gpu", strided=False):
                pass
        '''
    after = before.replace('place="gpu"', 'place="accelerator"')
    out = wrapped(before, after, 76)
    assert "    def grid(\n        self, size, level, dtype=float, place=" in out
    assert "strided=False\n    ):\n        pass" in out
    out = wrapped(before, after, 60)
    assert "    def grid(\n        self,\n        size,\n" in out
    assert "        strided=False,\n    ):\n" in out  # the magic trailing comma


def test_a_continuation_line_of_the_authors_split_splits_at_its_own_bracket():
    before = '''
        def build():
            return make(
                width=3,
                depth=2,
            ).place("gpu")
        '''
    after = before.replace('.place("gpu")', '.place(pick("an accelerator", fallback="the host processor"), eager=True)')
    out = wrapped(before, after, 70)
    assert '\n    ).place(\n        pick(' in out  # from the line's own indentation, one level deeper
    assert "        width=3,\n        depth=2,\n" in out  # the author's lines stay as they were
    assert out.rstrip().endswith("\n        eager=True,\n    )")


def test_an_argument_line_of_the_authors_split_splits_at_its_own_bracket_without_doubled_parentheses():
    before = '''
        def record(log):
            log.append(
                as_mib(used())
            )
        '''
    after = before.replace("as_mib(used())", "as_mib((used_by_accelerator() if have_accelerator() else used_by_gpu()))")
    out = wrapped(before, after, 60)
    assert "        as_mib(\n            used_by_accelerator()\n            if have_accelerator()\n" in out
    assert "((" not in out and "            else used_by_gpu()\n        )\n    )\n" in out


def test_an_argument_list_the_author_hung_after_the_bracket_goes_one_a_line():
    before = '''
        options.add('--transport', default='tcp', kind=str,
                    note='how the workers talk')
        '''
    after = before.replace("default='tcp'", "default=transport_for(current_device_kind() if has_device() else 'host')")
    out = wrapped(before, after, 79)
    assert out.startswith("\noptions.add(\n    '--transport',\n    default=transport_for(")
    assert "    kind=str,\n    note='how the workers talk',\n)\n" in out


def test_a_line_the_run_did_not_change_is_the_authors():
    before = '''
        value = first_function_with_a_long_name(argument_one, argument_two) + second_function(argument_three)
        other = 1
        '''
    after = before.replace("other = 1", "other = 2")
    assert wrapped(before, after, 79) == textwrap.dedent(after)


def test_a_comment_at_the_end_of_a_line_is_not_a_reason_to_split():
    before = "x = f(1)  # why\n"
    after = "x = f(2)  # a comment long enough to carry the line past the limit on its own\n"
    import libcst as cst

    from neuronize.writing.wrapped import wrap_long_lines

    assert wrap_long_lines(cst.parse_module(after), before.encode(), 40).code == after


def test_the_migrated_continuation_line_still_runs():
    code = '''
        import torch

        layer = torch.nn.Sequential(
            torch.nn.Linear(2, 2),
        ).cuda()
        '''
    out = migrate(code, target="accelerator", line_length=72)
    assert longest_added(code, out) <= 72
    assert "\n).to(\n    " in out
    assert run(out)["layer"][0].weight.device.type == "cpu"
