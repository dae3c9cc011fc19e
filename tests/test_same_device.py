"""A hard-coded device move and the runtime calls about that device in the same scope are one edit
group (``_host.same_device_group``): a safe-only run moves neither, ``--unsafe-fixes`` both."""

from __future__ import annotations

import textwrap

from neuronize.analysis.engine import run_source
from neuronize.registry import all_rules
from neuronize.types import SourceResult, Options

RULES = all_rules()


def _run(code: str, unsafe: bool) -> tuple[str, SourceResult]:
    source = textwrap.dedent(code).encode()
    result = run_source(source, RULES, Options(unsafe_fixes=unsafe))
    assert result.error is None, result.error
    return (result.output or source).decode(), result


def _groups(result: SourceResult) -> dict[str, str]:
    """rule id -> the edit group its finding names ("" for none)."""
    out = {}
    for f in result.findings:
        assert (f.group is not None) == (f"[edit group `{f.group}`" in f.text)  # the message says it
        out[f.rule] = f.group or ""
    return out


SCRIPT = """\
    import torch
    device = "cuda"
    print(torch.cuda.get_device_name())
    x = torch.ones(2, device=device)
"""


def test_a_module_level_pair_moves_together() -> None:
    safe, result = _run(SCRIPT, unsafe=False)
    assert safe == textwrap.dedent(SCRIPT)  # the move waits for the unsafe call
    assert _groups(result) == {"NRN101": "same-device <module>", "NRN115": "same-device <module>"}
    full, _ = _run(SCRIPT, unsafe=True)
    assert 'device = "neuron"' in full and "torch_neuronx.get_device_properties(" in full


def test_a_move_in_another_function_is_free() -> None:
    code = """\
        import torch
        def name():
            return torch.cuda.get_device_name(0)
        def place(model):
            return model.cuda()
    """
    safe, result = _run(code, unsafe=False)
    # the move is host-aware (the neuron target keeps CUDA hosts), and free of the other function's call
    assert 'model.to("neuron" if on_neuron() else "cuda")' in safe and "torch.cuda.get_device_name(0)" in safe
    assert _groups(result) == {"NRN102": "", "NRN115": ""}


def test_compared_devices_and_keys_are_not_moves() -> None:
    code = """\
        import torch
        def pick(device, table):
            if device == "cuda":
                table["cuda"] = torch.cuda.get_device_name(0)
            return {"cuda": 1}
    """
    _, result = _run(code, unsafe=True)
    assert _groups(result).get("NRN115") == ""


def test_the_call_joins_the_process_group_its_placement_belongs_to() -> None:
    code = """\
        import torch
        import torch.distributed as dist
        def main():
            dist.init_process_group("nccl")
            model = Net().to("cuda")
            print(torch.cuda.get_device_name(0))
    """
    safe, result = _run(code, unsafe=False)
    groups = _groups(result)
    assert groups["NRN101"] == groups["NRN115"] == groups["NRN401"] == "process-group"
    assert safe == textwrap.dedent(code)  # backend, placement and the call move together
    full, _ = _run(code, unsafe=True)
    # all three host-aware: CUDA hosts keep NCCL, CUDA and the CUDA call
    assert 'init_process_group("neuron" if on_neuron() else "nccl")' in full
    assert 'Net().to("neuron" if on_neuron() else "cuda")' in full and "torch_neuronx" in full
    assert "else:\n        print(torch.cuda.get_device_name(0))" in full


def test_a_workers_device_that_cannot_move_safely_holds_its_host_aware_process_group() -> None:
    """A worker started per rank pins its GPU by index: dropping the index is unsafe. The process
    group and the device it places on move together: a safe-only run leaves both (a Neuron process
    group beside a CUDA device gains nothing); --unsafe-fixes moves both."""
    code = """\
        import torch
        import torch.distributed as dist
        def worker(rank, world_size):
            dist.init_process_group("nccl", rank=rank, world_size=world_size)
            device = torch.device("cuda", rank)
            return torch.ones(4, device=device)
    """
    safe, _ = _run(code, unsafe=False)
    assert 'dist.init_process_group("nccl", rank=rank' in safe
    assert 'device = torch.device("cuda", rank)' in safe
    full, _ = _run(code, unsafe=True)
    assert '"neuron" if on_neuron() else "nccl", rank=rank' in full
    assert 'device = torch.device("neuron") if on_neuron() else torch.device("cuda", rank)' in full


def test_a_suppressed_call_holds_the_move_back() -> None:
    code = """\
        import torch
        def resume(model, state):
            model = model.cuda()
            torch.cuda.set_rng_state(state["rng"])  # neuronize: ignore[NRN112]
            return model
    """
    full, _ = _run(code, unsafe=True)
    assert full == textwrap.dedent(code)


RESUME = """\
    import torch


    def save(model, path):
        torch.save({"w": model.state_dict(), "rng": torch.cuda.get_rng_state()}, path)


    def resume(model, path):
        state = torch.load(path)
        model.cuda()
        torch.cuda.set_rng_state(state["rng"])
"""


def test_a_checkpoints_save_and_load_are_one_group_with_the_move_beside_them() -> None:
    """Save in one function, load in another: one `rng-state` group, which the `.cuda()` of the
    function restoring the state joins; a safe-only run changes none of them."""
    safe, result = _run(RESUME, unsafe=False)
    assert "torch.neuron" not in safe and ".cuda()" in safe
    assert {f.group for f in result.findings if f.rule in ("NRN112", "NRN102")} == {"rng-state"}
    unsafe, _ = _run(RESUME, unsafe=True)
    assert "torch.neuron.get_rng_state() if on_neuron() else torch.cuda.get_rng_state()" in " ".join(unsafe.split())
    assert "torch.neuron.set_rng_state(" in unsafe and 'model.to("neuron" if on_neuron() else "cuda")' in unsafe


def test_one_rng_state_call_without_a_counterpart_holds_the_others_back() -> None:
    code = RESUME.replace('torch.cuda.set_rng_state(state["rng"])', 'torch.cuda.set_rng_state_all(state["rng"])')
    unsafe, result = _run(code, unsafe=True)
    assert "torch.neuron" not in unsafe and "torch.cuda.get_rng_state()" in unsafe
    assert all(not f.fixable for f in result.findings if f.group == "rng-state")


def test_only_a_test_that_holds_only_on_neuron_makes_a_neuron_branch() -> None:
    import libcst as cst

    from neuronize.transforms._helpers.device_choice import only_on_neuron

    def holds(code: str) -> bool:
        return only_on_neuron(cst.parse_expression(code))

    assert holds("on_neuron()") and holds('device.type == "neuron"') and holds('"neuron" in device')
    assert holds('torch.accelerator.is_available() and torch.accelerator.current_accelerator().type == "neuron"')
    assert holds('hasattr(torch, "accelerator") and torch.accelerator.is_available() '
                 'and torch.accelerator.current_accelerator().type == "neuron"')
    assert holds('on_neuron() and step % 10 == 0')
    assert not holds("not on_neuron()") and not holds('device.type != "neuron"')
    assert not holds('on_neuron() or device.type == "cuda"') and not holds('device.type == "cuda"')


def test_a_cuda_entry_of_a_list_of_devices_offered_holds_no_placement() -> None:
    """A list of the devices a function accepts offers CUDA; it places nothing: the fallback choice
    beside it gains Neuron in a safe-only run."""
    code = """\
        import torch
        def pick(device, gpus):
            offered = ["cpu", "cuda", "mps"] + [f"cuda:{i}" for i in range(gpus)]
            if device in offered:
                return torch.device(device)
            return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    """
    safe, _ = _run(code, unsafe=False)
    assert '"neuron" if on_neuron() else "cuda" if torch.cuda.is_available() else "cpu"' in " ".join(safe.split())


def test_an_unsafe_placement_in_a_conditional_expression_holds_only_its_choice() -> None:
    """A rank's GPU chosen when a process group runs (``cuda:<rank>`` if initialised) is a choice
    of its own: the autocast of the function beside it still gains Neuron in a safe-only run."""
    code = """\
        import torch
        import torch.distributed as dist
        def generate(model, batch):
            device = torch.device(f"cuda:{dist.get_rank()}") if dist.is_initialized() else model.device
            with torch.autocast("cuda", dtype=torch.bfloat16):
                return model(batch.to(device))
    """
    safe, _ = _run(code, unsafe=False)
    assert 'torch.autocast("neuron" if on_neuron() else "cuda", dtype=torch.bfloat16)' in safe
    assert 'torch.device(f"cuda:{dist.get_rank()}") if dist.is_initialized()' in safe


def test_a_constructor_that_asks_cuda_for_its_device_holds_its_class() -> None:
    """``torch.cuda.current_device()`` raises without CUDA: an object whose constructor asks it is
    not made on Neuron, so its methods' placements gain nothing there until that call moves too
    (unsafe): a safe-only run leaves the class as it is, --unsafe-fixes moves it whole."""
    code = """\
        import torch
        class Detector:
            def __init__(self, net):
                self.device = torch.cuda.current_device()
                self.net = net.cuda()
            def detect(self, image):
                return self.net(image.cuda())
    """
    safe, _ = _run(code, unsafe=False)
    assert "on_neuron" not in safe
    full, _ = _run(code, unsafe=True)
    assert "torch.accelerator.current_device_index()" in full
    assert full.count('.to("neuron" if on_neuron() else "cuda")') == 2
