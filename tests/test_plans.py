"""The planning functions rules are built from, tested on their own (pure: values in, values out)."""

from __future__ import annotations

import libcst as cst
import pytest

from neuronize.context import FileContext, Options, collect_imports
from neuronize.registry import all_rules
from neuronize.transforms import _target
from neuronize.transforms._amp import custom_device, followed_device, followed_enabled, plan_autocast
from neuronize.transforms._compile import plan_compile
from neuronize.transforms._cuda_runtime import _CudaApiRule, owned
from neuronize.transforms._host import has_cpu_path
from neuronize.transforms._imports import bindings, removal_of, removals_for
from neuronize.transforms._messages import short
from neuronize.transforms._value_flow import Assignments, carried, option_dest, resolve

NEURON = cst.SimpleString('"neuron"')


def _call(code: str) -> cst.Call:
    node = cst.parse_expression(code)
    assert isinstance(node, cst.Call)
    return node


def _ctx(code: str, target: str = "neuron") -> FileContext:
    module = cst.parse_module(code)
    return FileContext(module=module, names=collect_imports(module), options=Options(target=target))


# -- the compile-call plan (NRN301) ---------------------------------------------------------------
def test_compile_plan_sets_the_backend_and_static_shapes():
    plan = plan_compile(_call("torch.compile(model)"), "`torch.compile(...)`", "neuron", NEURON)
    assert not plan.reports
    assert plan.new is not None and short(plan.new) == 'torch.compile(model, backend="neuron", dynamic=False)'
    assert plan.edits[0].startswith('`backend="neuron"` added')


def test_compile_plan_drops_cuda_modes_and_inductor_options():
    call = _call('torch.compile(m, backend="inductor", mode="max-autotune", '
                 'options={"triton.cudagraphs": True, "fallback_execution": True})')
    plan = plan_compile(call, "`torch.compile(...)`", "neuron", NEURON)
    assert plan.new is not None
    assert short(plan.new, None) == ('torch.compile(m, backend="neuron", options={"fallback_execution": True}, '
                                     "dynamic=False)")
    assert any("max-autotune" in e for e in plan.edits) and any("triton.cudagraphs" in e for e in plan.edits)


@pytest.mark.parametrize("code, reported", [
    ("torch.compile(m, backend=args.backend)", "picks its backend at run time"),
    ('torch.compile(m, backend="eager")', "debugging backend"),
    ('torch.compile(m, backend="tvm")', "not available on Trainium"),
    ("torch.compile(m, **settings)", "takes its settings from"),
])
def test_compile_plan_reports_what_it_cannot_decide(code, reported):
    plan = plan_compile(_call(code), "`torch.compile(...)`", "neuron", NEURON)
    assert any(reported in message for _, message, _ in plan.reports)


def test_compile_plan_leaves_a_neuron_backend_alone_and_keeps_inductor_on_the_cpu():
    assert plan_compile(_call('torch.compile(m, backend="neuron")'), "c", "neuron", NEURON).new is None
    plan = plan_compile(_call('torch.compile(m, backend="inductor")'), "c", "cpu", None)
    assert plan.new is not None and short(plan.new) == 'torch.compile(m, backend="inductor", dynamic=False)'


# -- value flow (NRN401) --------------------------------------------------------------------------
def _nccl(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.SimpleString) and expr.evaluated_value == "nccl"


def test_carried_follows_branches_or_and_environment_defaults():
    expr = cst.parse_expression('os.environ.get("BACKEND", "nccl") if dist else ("gloo" or "nccl")')
    found = carried(expr, _nccl, lambda n: "os.environ.get" if short(n) == "os.environ.get" else None)
    assert len(found.literals) == 2 and found.opaque  # the environment is unknowable
    assert not carried(cst.parse_expression("choose()"), _nccl, lambda n: None).literals


def test_resolve_reads_locals_parameters_module_names_and_argparse_options():
    module = cst.parse_module('B = "nccl"\ndef f(backend="nccl"):\n    pass\n')
    func = module.body[1]
    seen = Assignments()
    seen.assign(module, cst.Name("B"), cst.SimpleString('"nccl"'))
    option = _call('p.add_argument("--dist-backend", default="nccl")')
    seen.option(option)
    assert option_dest(option) == "dist_backend"
    assert len(resolve(cst.Name("B"), module, module, seen).values) == 1
    assert len(resolve(cst.Name("backend"), func, module, seen).values) == 1  # the parameter default
    assert resolve(cst.Name("missing"), module, module, seen).unresolved
    by_option = resolve(cst.parse_expression("args.dist_backend"), module, module, seen)
    assert by_option.options == (option,) and not by_option.unresolved


# -- the torch.cuda runtime table -----------------------------------------------------------------
def test_the_runtime_table_is_the_rules_functions_with_no_overlap():
    rules = [r for r in all_rules() if issubclass(r, _CudaApiRule)]
    claimed = [fn for r in rules for fn in r.FUNCTIONS]
    assert len(claimed) == len(set(claimed)), "two runtime rules claim the same torch.cuda function"
    assert owned() == frozenset(claimed)


# -- imports: one table of which statement bound each name -----------------------------------------
def test_bindings_know_the_statement_and_build_removals():
    ctx = _ctx("import torch.cuda as tc\nfrom torch.cuda import amp as A\ndef f():\n    from torch import cuda\n")
    found = {b.local: b for b in bindings(ctx.module)}
    assert found["tc"].qualified == "torch.cuda" and found["tc"].top_level
    assert found["A"].removal().obj == "amp" and found["A"].removal().asname == "A"
    assert not found["cuda"].top_level
    assert removal_of(ctx, "cuda", top_level=True) is None and removal_of(ctx, "cuda") is not None
    assert {r.asname for r in removals_for(ctx, ["torch.cuda", "torch.cuda.amp"])} == {"tc", "A", None}


# -- the target vocabulary ------------------------------------------------------------------------
def test_every_target_has_a_vocabulary_and_builders():
    assert set(_target.VOCABULARY) == set(_target.ALL)
    for target in _target.ALL:
        assert _target.fill(target, "{device} {platform}")
        ctx = _ctx("import torch\n", target)
        expr, _ = _target.device(ctx)
        assert isinstance(expr, (cst.SimpleString, cst.IfExp))
        backend, _ = _target.process_group_backend(ctx)
        assert short(backend)


# -- device choices (NRN101) and backends (NRN401) --------------------------------------------------
def _idiom(code: str, target: str):  # type: ignore[no-untyped-def]
    from neuronize.transforms._device_choice import idiom_branch, rewrite_idiom

    ctx = _ctx(code, target)
    node = ctx.module.body[-1].body[0].value  # type: ignore[attr-defined]
    found = idiom_branch(ctx, node)
    assert found is not None
    return rewrite_idiom(ctx, node, *found)


def test_the_idiom_per_target():
    code = 'import torch\ndevice = "cuda" if torch.cuda.is_available() else "cpu"\n'
    assert short(_idiom(code, "neuron").replacement, None) == (
        '"neuron" if torch.accelerator.is_available() and torch.accelerator.current_accelerator().type == "neuron" '
        'else "cpu"')  # the accelerator must be Neuron: on a Mac (MPS) the idiom keeps its CPU fallback
    assert short(_idiom(code, "cpu").replacement) == '"cpu"'  # both branches are the CPU: collapsed
    accelerator = _idiom(code, "accelerator")
    assert "current_accelerator().type" in short(accelerator.replacement)
    assert "current accelerator" in accelerator.message


def test_with_choice_adds_next_to_cuda_once():
    from neuronize.transforms._device_choice import with_choice

    choices = cst.parse_expression('["cpu", "cuda"]')
    assert isinstance(choices, cst.List)
    new = with_choice(choices, "neuron")
    assert new is not None and short(new) == '["cpu", "cuda", "neuron"]'
    assert with_choice(new, "neuron") is None


def test_backend_edit_and_table_entry():
    from neuronize.transforms._distributed import backend_edit, with_neuron_entry
    from neuronize.transform import Safety

    ctx = _ctx("import torch.distributed as dist\n")
    plain = backend_edit(ctx, cst.SimpleString("'nccl'"))
    assert short(plain.replacement) == "'neuron'" and plain.safety is Safety.SAFE
    assert backend_edit(ctx, cst.SimpleString('"cpu:gloo,cuda:nccl"')).safety is Safety.UNSAFE
    assert short(backend_edit(_ctx("", "cpu"), cst.SimpleString('"nccl"')).replacement) == '"gloo"'
    table = cst.parse_expression('{"cuda": "nccl", "cpu": "gloo"}')
    assert isinstance(table, cst.Dict)
    entry = with_neuron_entry(table)
    assert entry is not None and short(entry) == '{"cuda": "nccl", "neuron": "neuron", "cpu": "gloo"}'


def test_optimize_plan_per_target():
    from neuronize.transforms._compile import plan_optimize

    plan = plan_optimize(_call('torch._dynamo.optimize("inductor")'), "neuron", NEURON)
    assert plan.fix is not None and short(plan.fix[1]) == '"neuron"' and not plan.reports
    assert plan_optimize(_call('torch._dynamo.optimize("neuron")'), "neuron", NEURON).fix is None
    kept = plan_optimize(_call('torch._dynamo.optimize("inductor")'), "cpu", None)
    assert kept.fix is None and not kept.reports  # Inductor is the CPU's compiler
    assert plan_optimize(_call("torch._dynamo.optimize(b)"), "cpu", None).reports


# -- host facts (_host) and the autocast device (_amp) ---------------------------------------------
@pytest.mark.parametrize(("code", "expected"), [
    ("import torch\nx = torch.ones(2).cuda()\n", False),  # hard-codes CUDA
    ('import torch\nd = "cuda" if torch.cuda.is_available() else "cpu"\n', True),
    ("import torch\ndef f(x, device):\n    return x.cuda()\n", True),  # a device parameter
    ("import torch\ndef f(x, args):\n    return x.to(args.device).cuda()\n", True),
    ("import torch\nx = torch.ones(2)\n", True),  # names no CUDA at all
])
def test_has_cpu_path(code, expected):
    source = code.encode()
    module = cst.parse_module(code)
    ctx = FileContext(module=module, names=collect_imports(module), source=source)
    assert has_cpu_path(ctx) is expected


def test_followed_device_and_enabled():
    ctx = _ctx("import torch\n")
    enabled = cst.parse_expression('device == "cuda"')
    assert short(followed_device(ctx, enabled)) == "torch.device(device).type"
    assert short(followed_enabled(ctx, enabled)) == 'device == "neuron"'
    assert short(followed_device(ctx, cst.parse_expression('x.device.type == "cuda"'))) == "x.device.type"
    assert followed_device(ctx, cst.parse_expression("use_amp")) is None


@pytest.mark.parametrize(("code", "expected"), [
    # a file with a CPU path: the device is host-aware, and bf16 only on the Neuron branch
    ('import torch\nd = "cpu"\nwith torch.autocast("cuda"):\n    pass\n',
     ['torch.autocast("neuron" if N else "cuda", dtype=torch.bfloat16 if N else None)',
      'torch.autocast("neuron" if N else "cuda")']),
    # the device follows `enabled=`: bf16 goes with it (the other hosts run autocast disabled)
    ('import torch\nwith torch.autocast("cuda", enabled=device == "cuda"):\n    pass\n',
     ['torch.autocast(torch.device(device).type, dtype=torch.bfloat16, enabled=device == "neuron")',
      'torch.autocast(torch.device(device).type, enabled=device == "neuron")']),
    # hard-coded CUDA: the plain device; an explicit dtype is kept, with no bf16 fix
    ('import torch\nx = torch.ones(1).cuda()\nwith torch.autocast("cuda", dtype=torch.float16):\n    pass\n',
     ['torch.autocast("neuron", dtype=torch.float16)']),
])
def test_autocast_plan(code, expected):
    ctx = FileContext(module=cst.parse_module(code), names=collect_imports(cst.parse_module(code)),
                      source=code.encode())
    call = next(n for n in _calls_in(ctx.module) if getattr(n.func, "attr", None) is not None
                and n.func.attr.value == "autocast")
    plan = plan_autocast(ctx, call, "autocast")
    neuron = 'torch.accelerator.is_available() and torch.accelerator.current_accelerator().type == "neuron"'
    assert [ctx.module.code_for_node(f.call).replace(neuron, "N") for f in plan] == expected
    assert [f.bf16 for f in plan] == ["bfloat16" in e for e in expected]


def _calls_in(module: cst.Module) -> list[cst.Call]:
    found: list[cst.Call] = []

    class Calls(cst.CSTVisitor):
        def visit_Call(self, node: cst.Call) -> None:
            found.append(node)

    module.visit(Calls())
    return found


def test_custom_fwd_device_is_host_aware_even_where_cuda_is_hard_coded():
    code = "import torch\nx = torch.ones(1).cuda()\n"
    ctx = FileContext(module=cst.parse_module(code), names=collect_imports(cst.parse_module(code)),
                      source=code.encode())
    assert short(custom_device(ctx, cst.SimpleString('"cuda"')).expr, 200).endswith('else "cuda"')
    assert short(custom_device(_ctx(code, "cpu"), cst.SimpleString('"cuda"')).expr) == '"cpu"'
