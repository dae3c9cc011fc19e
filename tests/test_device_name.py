"""``--target accelerator`` names the device it detects once per scope
(``neuronize.writing.device_name``): the edits read the name, the migrated code still runs on
this CPU-only host, and a second run changes and reports nothing."""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap

import pytest
import torch

from helpers import neuronize

from neuronize.analysis.context import Options
from neuronize.analysis.engine import run_source
from neuronize.presenting.hunks import split_hunks
from neuronize.registry import all_rules

ACC = 'torch.accelerator.current_accelerator().type if torch.accelerator.is_available() else "cpu"'


def migrate(code: str, unsafe: bool = True) -> str:
    source = textwrap.dedent(code).encode()
    # the naming, each statement on one line (how long lines are split: tests/test_written_code.py)
    options = Options(target="accelerator", unsafe_fixes=unsafe, line_length=1000)
    result = run_source(source, all_rules(), options, path="train.py")
    assert result.error is None, result.error
    output = result.output if result.output is not None else source
    again = run_source(output, all_rules(), options, path="train.py")
    assert again.error is None and again.output is None, "a second run changes the file again"
    left = [f for f in again.findings if f.rule in ("NRN101", "NRN301", "NRN999")]
    assert not left, f"a second run reports {left}"
    return output.decode()


def run(code: str) -> dict[str, object]:
    namespace: dict[str, object] = {"__name__": "migrated"}
    exec(compile(code, "migrated.py", "exec"), namespace)
    return namespace


def test_a_function_names_its_device_once_before_the_first_use():
    out = migrate('''
        import os
        import torch


        def train(model, gpus):
            os.environ["CUDA_VISIBLE_DEVICES"] = gpus
            model = model.to("cuda")
            x = torch.ones(2, device="cuda")
            return model(x).to("cuda")
        ''')
    assert out.count(ACC) == 1
    assert f'os.environ["CUDA_VISIBLE_DEVICES"] = gpus\n    device = {ACC}\n    model = model.to(device)\n' in out
    assert 'x = torch.ones(2, device=device)' in out and 'return model(x).to(device)' in out
    assert run(out)["train"](torch.nn.Identity(), "0").device.type == "cpu"


def test_one_use_stays_written_out():
    out = migrate('''
        import torch

        def f(x):
            return x.to("cuda")
        ''')
    assert f"return x.to({ACC})" in out


def test_a_name_the_module_uses_is_never_taken():
    out = migrate('''
        import torch

        def f(x, device=None):
            y = x.to("cuda")
            return y, torch.zeros(1, device="cuda"), device
        ''')
    assert f"accelerator_device = {ACC}" in out
    assert "y = x.to(accelerator_device)" in out
    assert run(out)["f"](torch.ones(1))[2] is None


def test_the_definition_goes_in_the_deepest_block_holding_every_use():
    out = migrate('''
        import torch

        def f(x, on_gpu):
            if on_gpu:
                x = x.to("cuda")
                x = x + torch.ones(1, device="cuda")
            return x
        ''')
    assert f"    if on_gpu:\n        device = {ACC}\n        x = x.to(device)\n" in out
    assert run(out)["f"](torch.zeros(1), True).tolist() == [1.0]


def test_module_level_before_a_decorated_function_keeps_its_blank_lines():
    out = migrate('''
        import torch


        @torch.compile
        def f(x):
            return x


        @torch.compile(mode="default")
        def g(x):
            return x
        ''')
    assert f'import torch\n\n\nDEVICE = {ACC}\n\n\n@torch.compile(backend="neuron" if DEVICE == "neuron" else "inductor"' in out
    assert run(out)["DEVICE"] == "cpu"


def test_an_assignment_of_its_own_is_the_name_when_nothing_else_binds_it():
    out = migrate('''
        import torch

        def main():
            device = "cuda"
            model = torch.nn.Linear(1, 1).to(device)
            return model(torch.ones(1).to("cuda"))
        ''')
    assert f"    device = {ACC}\n" in out and "model(torch.ones(1).to(device))" in out and out.count(ACC) == 1
    assert run(out)["main"]().device.type == "cpu"
    twice = migrate('''
        import torch

        def main(rank):
            device = "cuda"
            if rank:
                device = "cpu"
            model = torch.nn.Linear(1, 1).to(device)
            return model(torch.ones(1).to("cuda"))
        ''')
    assert f"    accelerator_device = {ACC}\n    device = accelerator_device\n" in twice
    assert "model(torch.ones(1).to(accelerator_device))" in twice


def test_class_bodies_and_hand_written_expressions_are_left_as_they_are():
    hand = f'''
        import torch

        WANTED = {ACC}

        class Config:
            a = torch.device("cuda")
            b = torch.device("cuda")

        def f(x):
            return x.to("cuda"), x.to(WANTED)
        '''
    out = migrate(hand)
    assert out.count(ACC) == 4  # the hand-written one, two in the class body, one in f
    assert "DEVICE" not in out and "device =" not in out


def test_autocast_and_compile_read_the_name():
    out = migrate('''
        import torch

        def step(model, batch):
            model = torch.compile(model)
            with torch.autocast("cuda", dtype=torch.bfloat16):
                return model(batch.to("cuda"))
        ''')
    assert 'backend="neuron" if device == "neuron" else "inductor"' in out
    assert 'torch.autocast(device, dtype=torch.bfloat16)' in out
    assert run(out)["step"](torch.nn.Identity(), torch.ones(1)).tolist() == [1.0]


def test_a_definition_far_from_its_use_is_a_hunk_that_follows_the_edits():
    source = textwrap.dedent('''
        import torch


        def train(loader, model):
            for batch in loader:
                a = 1
                b = 2
                c = 3
                d = 4
                e = 5
                f = 6
                g = 7
                model(batch.to("cuda"))
            return torch.zeros(1, device="cuda")
        ''').encode()
    result = run_source(source, all_rules(), Options(target="accelerator", unsafe_fixes=True, line_length=1000),
                        path="t.py")
    assert result.output is not None
    hunks = split_hunks(source, result.output, result.findings)
    definition, *edits = hunks
    assert definition.findings == () and definition.serves == tuple(range(1, len(edits) + 1)) != ()
    assert any("assigns `device`" in note for note in definition.notes)


@pytest.mark.execution
def test_fix_then_check_from_the_command_line(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(textwrap.dedent('''\
        import torch


        def main():
            model = torch.nn.Linear(4, 4).to("cuda")
            batch = torch.randn(2, 4, device="cuda")
            return model(batch).to("cuda")


        if __name__ == "__main__":
            print(main().device.type)
        '''))
    fixed = neuronize("fix", "--target", "accelerator", "train.py", cwd=tmp_path)
    assert fixed.returncode == 0, fixed.stderr
    # the assignment is split over several lines, as black would: read it as one line
    written = re.sub(r"\(\s+", "(", re.sub(r"\s+\)", ")", re.sub(r"\n\s*", " ", script.read_text())))
    assert written.count(ACC) == 1 and "model = torch.nn.Linear(4, 4).to(device)" in written
    checked = neuronize("check", "--target", "accelerator", "train.py", cwd=tmp_path)
    assert checked.returncode == 0, checked.stdout.decode()
    ran = subprocess.run([sys.executable, "train.py"], cwd=tmp_path, capture_output=True, text=True, check=True)
    assert ran.stdout.strip() == "cpu"
