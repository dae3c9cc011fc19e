"""The engine's block pruning (emptied guards go), edit groups and import safety, with tiny rules
defined here (names starting with ``_``: not registered, not validated)."""

from __future__ import annotations

import textwrap

import libcst as cst

from neuronize.analysis.engine import run_source
from neuronize.transform import Evidence, Safety, Transform
from neuronize.types import Options

UNSAFE = Options(unsafe_fixes=True)


class _Drop(Transform):
    """Deletes every ``drop()`` statement (unsafe)."""

    id, name, safety, evidence, tokens = "NRN999", "drop", Safety.UNSAFE, Evidence.DOC, (b"drop",)

    def visit_Call(self, node: cst.Call) -> None:
        if isinstance(node.func, cst.Name) and node.func.value == "drop":
            self.remove(self.ctx.parent, "drop() deleted")  # the Expr statement around it


def _fix(code: str, rules=(_Drop,), options: Options = UNSAFE) -> str:
    source = textwrap.dedent(code).encode()
    result = run_source(source, list(rules), options)
    assert result.error is None, result.error
    return (result.output or source).decode()


def test_an_emptied_if_with_a_pure_test_goes_with_its_comments() -> None:
    out = _fix("""
        import torch
        # before
        if args.x and torch.cuda.is_available():  # header
            # inside
            drop()
        y = 1
    """)
    assert out == textwrap.dedent("""
        import torch
        # before
        # header
        y = 1
    """)  # "# inside" was drop()'s own comment, and went with it


def test_an_emptied_if_whose_test_has_side_effects_keeps_pass() -> None:
    assert "if probe():\n    pass" in _fix("if probe():\n    drop()\n")
    assert "if name.startswith(probe()):" in _fix("if name.startswith(probe()):\n    drop()\n")


def test_an_emptied_if_testing_a_string_method_goes() -> None:
    assert _fix("x = 1\nif device.lower().startswith('cuda:'):\n    drop()\n") == "x = 1\n"


def test_an_emptied_if_with_an_else_keeps_pass_and_an_emptied_else_goes() -> None:
    assert _fix("if a:\n    drop()\nelse:\n    b()\n") == "if a:\n    pass\nelse:\n    b()\n"
    assert _fix("if a:\n    b()\nelse:\n    drop()\n") == "if a:\n    b()\n"
    assert _fix("if a:\n    b()\nelif c:\n    drop()\n") == "if a:\n    b()\n"


def test_nested_emptied_blocks_go_outward() -> None:
    out = _fix("def f():\n    for i in range(3):\n        if i == 1:\n            drop()\n    return 1\n")
    assert out == "def f():\n    return 1\n"


def test_with_finally_and_one_line_suites() -> None:
    assert _fix("import torch\nwith torch.no_grad():\n    drop()\nx = 1\n") == "import torch\nx = 1\n"
    assert _fix("with open(p):\n    drop()\n") == "with open(p):\n    pass\n"
    assert _fix("try:\n    a()\nexcept E:\n    b()\nfinally:\n    drop()\n") == "try:\n    a()\nexcept E:\n    b()\n"
    assert _fix("def f():\n    try:\n        a()\n    finally:\n        drop()\n") == "def f():\n    a()\n"
    assert _fix("if a: drop()\nx = 1\n") == "x = 1\n"


def test_a_while_true_loop_is_pure_only_when_its_test_is() -> None:
    assert _fix("while busy():\n    drop()\n") == "while busy():\n    pass\n"


class _Grouped(Transform):
    """``a()`` -> ``b()`` (safe) and ``c()`` -> ``d()`` (unsafe), one edit group; ``e()`` is a
    member that cannot be fixed."""

    id, name, safety, evidence, tokens = "NRN998", "grouped", Safety.SAFE, Evidence.DOC, (b"(",)
    section = "runtime"

    def visit_Call(self, node: cst.Call) -> None:
        name = node.func.value if isinstance(node.func, cst.Name) else None
        if name == "a":
            self.fix(node, node.with_changes(func=cst.Name("b")), "a -> b", group="g")
        elif name == "c":
            self.fix(node, node.with_changes(func=cst.Name("d")), "c -> d", safety=Safety.UNSAFE, group="g")
        elif name == "e":
            self.report(node, "e stays", group="g")


HEAD = "from m import a, b, c, d, e\n"


def _run(code: str, options: Options):
    return run_source((HEAD + code).encode(), [_Grouped], options)


def test_a_group_takes_its_weakest_safety() -> None:
    assert _run("a()\nc()\n", Options()).output is None  # safe-only: the unsafe member holds the safe one
    result = _run("a()\nc()\n", UNSAFE)
    assert result.output == (HEAD + "b()\nd()\n").encode()
    assert all(f.safety is Safety.UNSAFE and "edit group `g`" in f.text for f in result.findings)
    assert _run("a()\n", Options()).output == (HEAD + "b()\n").encode()


def test_a_member_without_fix_or_suppressed_holds_the_group() -> None:
    assert _run("a()\nc()\ne()\n", UNSAFE).output is None
    assert _run("a()\nc()  # neuronize: ignore[NRN998]\n", UNSAFE).output is None
    held = _run("a()\nc()\ne()\n", UNSAFE).findings
    assert not any(f.fixable for f in held) and "not applied" in held[0].text


def test_fixes_that_would_break_import_become_findings() -> None:
    code = ("import torch\nimport torch.distributed as dist\n\n\nclass M:\n"
            "    def stream(self) -> torch.cuda.Stream:\n        return torch.cuda.current_stream()\n\n\n"
            "def peak():\n    return torch.cuda.max_memory_allocated()\n\n\n"
            "_fn = torch.compile(lambda x: x)\n_properties = torch.cuda.get_device_properties\n")
    from neuronize.registry import all_rules

    result = run_source(code.encode(), all_rules(), UNSAFE, path="lib.py")
    out = (result.output or b"").decode()
    assert "torch.neuron.current_stream()" in out  # the body runs later
    # the annotation stays: the CUDA class exists on every host (only creating one needs CUDA)
    assert "-> torch.cuda.Stream:" in out and "torch.neuron.Stream" not in out
    assert "import torch_neuronx" not in out and "_properties = torch.cuda.get_device_properties" in out
    # the compile at import gets a backend chosen on the host (NRN301 itself), never a bare "neuron"
    assert 'backend="neuron",' not in out and 'backend="neuron" if on_neuron()' in out
    held = [f for f in result.findings if "import safety" in f.text]
    assert {f.rule for f in held} == {"NRN115"}


def test_no_unguarded_torch_neuronx_import_in_a_library_module() -> None:
    from neuronize.analysis.import_safety import hazards
    import ast

    assert hazards(ast.parse("import torch_neuronx\nx = 1\n"))
    assert not hazards(ast.parse("try:\n    import torch_neuronx\nexcept ImportError:\n    pass\n"))
    assert not hazards(ast.parse("def f():\n    import torch_neuronx\n"))


class _Bare(Transform):
    """Writes ``torch.bfloat16`` for ``half`` without asking for ``import torch`` (a rule's bug)."""

    id, name, safety, evidence, tokens = "NRN997", "bare", Safety.SAFE, Evidence.DOC, (b"half",)

    def visit_Name(self, node: cst.Name) -> None:
        if node.value == "half":
            self.fix(node, cst.parse_expression("torch.bfloat16"), "half -> torch.bfloat16")


def test_a_fix_that_would_use_an_undefined_name_leaves_the_file_alone() -> None:
    result = run_source(b"x = half\n", [_Bare], UNSAFE)
    assert result.output is None and result.error is not None and "torch" in result.error.message
    assert run_source(b"import torch\nx = half\n", [_Bare], UNSAFE).output == b"import torch\nx = torch.bfloat16\n"


def test_added_imports_follow_environment_settings() -> None:
    out = _fix('import os\nos.environ["X"] = "1"\nimport numpy\n\n\ndef f(m):\n    return m.half()\n',
               rules=__import__("neuronize.registry", fromlist=["all_rules"]).all_rules())
    assert out.index('os.environ["X"]') < out.index("import torch")


def test_only_the_emptied_block_goes_in_a_long_loop() -> None:
    # A block judged 'emptied' by the id of a node that was garbage-collected once took a whole
    # loop body along (a diffusers denoising loop): only the emptied guard may go.
    body = "".join(f"        x{i} = step({i})\n        if x{i}:\n            y = [{i}]\n" for i in range(40))
    code = f"def run(steps):\n    for i, t in enumerate(steps):\n{body}        if FLAG:\n            drop()\n    return 1\n"
    out = _fix(code)
    assert out == code.replace("        if FLAG:\n            drop()\n", "")


class _Legacy(Transform):
    """Reports every ``legacy()`` call (a CUDA-only call no rule can migrate)."""

    id, name, safety, evidence, tokens = "NRN997", "legacy", Safety.REPORT_ONLY, Evidence.DOC, (b"legacy",)
    section = "unsupported"

    def visit_Call(self, node: cst.Call) -> None:
        if isinstance(node.func, cst.Name) and node.func.value == "legacy":
            self.report(node, "legacy() stays")


def test_a_conditional_expression_keeps_its_test_when_its_body_keeps_reported_code() -> None:
    from neuronize.transforms.runtime.cuda_availability_check import CudaAvailabilityCheck

    rules = (_Legacy, CudaAvailabilityCheck)
    kept = "import torch\nused = legacy() if torch.cuda.is_available() else 0\n"
    assert _fix(kept, rules) == kept
    moved = _fix("import torch\nused = later() if torch.cuda.is_available() else 0\n", rules)
    # nothing reported in the body: the test is extended to Neuron, CUDA's check kept beside it
    assert "if on_neuron() or torch.cuda.is_available() else 0" in moved


def test_synchronisations_move_with_the_cuda_event_timers_of_their_function():
    """Moved alone, the synchronisations around a CUDA event timer leave Neuron stopping at the
    timer: they share its edit group, so a safe-only run keeps both (the events are unsafe)."""
    from neuronize.registry import all_rules

    code = """
        import torch

        def timed(step):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            torch.cuda.synchronize()
            start.record()
            step()
            end.record()
            torch.cuda.synchronize()
            return start.elapsed_time(end)

        def settle():
            torch.cuda.synchronize()
        """
    safe_only = _fix(code, all_rules(), Options())
    assert safe_only.count("torch.cuda.synchronize()") == 2 and "torch.cuda.Event(" in safe_only
    assert "def settle():\n    torch.accelerator.synchronize()" in safe_only  # no timer in its function
    assert "torch.cuda.synchronize()" not in _fix(code, all_rules(), UNSAFE)
