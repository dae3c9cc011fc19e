"""The planning functions rules are built from, tested on their own (pure: values in, values out)."""

from __future__ import annotations

import libcst as cst
import pytest

from neuronize.analysis.context import FileContext, Options, collect_imports
from neuronize.registry import all_rules
from neuronize.analysis.walk import walk
from neuronize.transforms._helpers import per_target
from neuronize.transforms._helpers.amp import custom_device, followed_device, followed_enabled, plan_autocast
from neuronize.transforms._helpers.compile import plan_compile
from neuronize.transforms._helpers.cuda_runtime import _CudaApiRule, owned
from neuronize.transforms._helpers.hosts import has_cpu_path
from neuronize.transforms._helpers.imports import bindings, removal_of, removals_for
from neuronize.transforms._helpers.leftovers import (
    branches, cuda_value, gpu_index, gpu_indexed_device, in_message, index_message, is_neuron_check, leftover_message,
    list_message, listed, required, site, validates,
)
from neuronize.transforms._helpers.messages import short
from neuronize.transforms._helpers.literals import string_value
from neuronize.transforms._helpers.value_flow import Assignments, assigned, carried, follow, option_dest, option_names, resolve

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


#: a host-aware backend, as `hosts.host_compile_backend` builds it (its test: `on_neuron()`)
HOST_AWARE = cst.parse_expression('"neuron" if on_neuron() else "inductor"')


def test_host_aware_compile_plan_keeps_what_the_other_hosts_read():
    call = _call('torch.compile(m, mode="max-autotune", options={"epilogue_fusion": True})')
    plan = plan_compile(call, "`torch.compile(...)`", "neuron", HOST_AWARE)
    assert plan.new is not None and not plan.reports
    assert short(plan.new, None) == ('torch.compile(m, mode="max-autotune", options=None if on_neuron() else '
                                     '{"epilogue_fusion": True}, backend="neuron" if on_neuron() else "inductor")')
    assert isinstance(HOST_AWARE, cst.IfExp)
    options = next(a.value for a in plan.new.args if a.keyword is not None and a.keyword.value == "options")
    assert isinstance(options, cst.IfExp) and options.test is HOST_AWARE.test  # one test, named once
    assert any("`mode=\"max-autotune\"` kept" in e for e in plan.edits)


@pytest.mark.parametrize(("options", "new", "reported"), [
    ('{"fallback_execution": True}', '{"fallback_execution": True}', None),  # Neuron's own: left
    ('{"fallback_execution": True, "max_autotune": True}', None, "mixes Neuron keys with Inductor ones"),
    ("opts", None, "the other hosts' backend reads the Inductor keys"),
])
def test_host_aware_compile_plan_leaves_neuron_keys_and_reports_mixed_ones(options, new, reported):
    plan = plan_compile(_call(f"torch.compile(m, options={options})"), "c", "neuron", HOST_AWARE)
    assert plan.new is not None  # the backend is added all the same
    written = next(a.value for a in plan.new.args if a.keyword is not None and a.keyword.value == "options")
    assert short(written, None) == (new or options)
    assert any(reported in message for _, message, _ in plan.reports) if reported else not plan.reports


def test_host_aware_compile_backend_written_already_is_left():
    for backend in ('"neuron" if on_neuron() else "inductor"', '"neuron" if on_neuron() else "cudagraphs"'):
        call = _call(f'torch.compile(m, backend={backend}, mode="reduce-overhead")')
        plan = plan_compile(call, "c", "neuron", HOST_AWARE)
        assert plan.new is None and not plan.reports


@pytest.mark.parametrize(("code", "target", "expected"), [
    # the neuron target: every file keeps its CUDA hosts, so the backend is host-aware even where
    # the file hard-codes CUDA (it used to move to "neuron" outright there)
    ("import torch\nm = torch.compile(net.cuda())\n", "neuron", '"neuron" if {test} else {kept}'),
    ('import torch\nd = "cuda" if torch.cuda.is_available() else "cpu"\n', "neuron", '"neuron" if {test} else {kept}'),
    # accelerator: chosen from the detected device, Inductor elsewhere; cpu: none (Inductor compiles for the CPU)
    ("import torch\nm = torch.compile(net.cuda())\n", "accelerator",
     '"neuron" if torch.accelerator.is_available() and torch.accelerator.current_accelerator().type == "neuron" '
     'else "inductor"'),
    ("import torch\nm = torch.compile(net.cuda())\n", "cpu", None),
])
def test_compile_backend_keeps_other_hosts(code, target, expected):
    from neuronize.transforms._helpers.hosts import host_compile_backend

    module = cst.parse_module(code)
    ctx = FileContext(module=module, names=collect_imports(module), source=code.encode(),
                      options=Options(target=target))
    test = ('hasattr(torch, "accelerator") and torch.accelerator.is_available() and '
            'torch.accelerator.current_accelerator().type == "neuron"')
    for original, kept in ((None, '"inductor"'), (cst.SimpleString('"cudagraphs"'), '"cudagraphs"')):
        chosen = host_compile_backend(ctx, original)
        if expected is None:
            assert chosen is None
            continue
        assert chosen is not None
        want = expected.format(test=test, kept=kept) if target == "neuron" else expected
        assert short(chosen[0], None) == want


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
    assert set(per_target.VOCABULARY) == set(per_target.ALL)
    for target in per_target.ALL:
        assert per_target.fill(target, "{device} {platform}")
        ctx = _ctx("import torch\n", target)
        expr, _ = per_target.device(ctx)
        assert isinstance(expr, (cst.SimpleString, cst.IfExp))
        backend, _ = per_target.process_group_backend(ctx)
        assert short(backend)


# -- device choices (NRN101) and backends (NRN401) --------------------------------------------------
def _idiom(code: str, target: str):  # type: ignore[no-untyped-def]
    from neuronize.transforms._helpers.device_choice import idiom_branch, rewrite_idiom

    ctx = _ctx(code, target)
    node = ctx.module.body[-1].body[0].value  # type: ignore[attr-defined]
    found = idiom_branch(ctx, node)
    assert found is not None
    return rewrite_idiom(ctx, node, *found)


def test_the_idiom_per_target():
    code = 'import torch\ndevice = "cuda" if torch.cuda.is_available() else "cpu"\n'
    assert short(_idiom(code, "neuron").replacement, None) == (
        '"neuron" if hasattr(torch, "accelerator") and torch.accelerator.is_available() and '
        'torch.accelerator.current_accelerator().type == "neuron" else "cuda" if torch.cuda.is_available() else "cpu"')
    # the accelerator must be Neuron (on a Mac the idiom keeps its CPU fallback), and CUDA keeps its path
    assert short(_idiom(code, "cpu").replacement) == '"cpu"'  # both branches are the CPU: collapsed
    accelerator = _idiom(code, "accelerator")
    assert "current_accelerator().type" in short(accelerator.replacement)
    assert "current accelerator" in accelerator.message


def test_with_choice_adds_next_to_cuda_once():
    from neuronize.transforms._helpers.device_choice import with_choice

    choices = cst.parse_expression('["cpu", "cuda"]')
    assert isinstance(choices, cst.List)
    new = with_choice(choices, "neuron")
    assert new is not None and short(new) == '["cpu", "cuda", "neuron"]'
    assert with_choice(new, "neuron") is None


def test_backend_edit_and_table_entry():
    from neuronize.transforms._helpers.distributed import backend_edit, with_neuron_entry
    from neuronize.transform import Safety

    ctx = _ctx("import torch.distributed as dist\n")
    plain = backend_edit(ctx, cst.SimpleString("'nccl'"))
    # the neuron target keeps CUDA hosts: NCCL stays on them (the Neuron value takes the literal's quotes)
    assert short(plain.replacement, None) == (
        "'neuron' if hasattr(torch, \"accelerator\") and torch.accelerator.is_available() and "
        "torch.accelerator.current_accelerator().type == \"neuron\" else 'nccl'")
    assert plain.safety is Safety.SAFE and "CUDA hosts keep NCCL" in plain.message
    # `import torch.distributed as dist` binds no `torch`: the test's `torch` is imported
    assert [(i.module, i.obj) for i in plain.imports] == [("torch", None)]
    assert backend_edit(ctx, cst.SimpleString('"cpu:gloo,cuda:nccl"')).safety is Safety.UNSAFE
    assert short(backend_edit(_ctx("", "cpu"), cst.SimpleString('"nccl"')).replacement) == '"gloo"'
    table = cst.parse_expression('{"cuda": "nccl", "cpu": "gloo"}')
    assert isinstance(table, cst.Dict)
    entry = with_neuron_entry(table)
    assert entry is not None and short(entry) == '{"cuda": "nccl", "neuron": "neuron", "cpu": "gloo"}'


def test_optimize_plan_per_target():
    from neuronize.transforms._helpers.compile import plan_optimize

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


# -- value flow (_value_flow), shared by NRN401 and NRN101 ------------------------------------------
def _walk(code: str) -> tuple[FileContext, Assignments]:
    """The file's context and what a walk records (what NRN401's visitor feeds the flow)."""
    ctx = _ctx(code)
    seen = Assignments()

    class _Record(cst.CSTVisitor):
        def __init__(self) -> None:
            self.scopes: list[cst.CSTNode] = [ctx.module]

        def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
            self.scopes.append(node)

        def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
            self.scopes.pop()

        def visit_ClassDef(self, node: cst.ClassDef) -> None:
            self.scopes.append(node)

        def leave_ClassDef(self, node: cst.ClassDef) -> None:
            self.scopes.pop()

        def visit_Assign(self, node: cst.Assign) -> None:
            seen.statement(self.scopes[-1], node)

        def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
            seen.statement(self.scopes[-1], node)

        def visit_Call(self, node: cst.Call) -> None:
            seen.call(node, ctx.qualify)

    ctx.module.visit(_Record())
    return ctx, seen


def _nccl(expr: cst.BaseExpression) -> bool:
    return string_value(expr) == "nccl"


@pytest.mark.parametrize(("code", "use", "via"), [
    ('class Cfg:\n    comm: str = "nccl"\n', "cfg.comm", "cfg.comm"),  # a class default
    ('from dataclasses import field\nclass Cfg:\n    comm: str = field(default="nccl")\n', "cfg.comm", "cfg.comm"),
    ('args = object()\nargs.comm = "nccl"\n', "args.comm", "args.comm"),  # an attribute set after parsing
    ('import argparse\np = argparse.ArgumentParser()\np.add_argument("--comm", default="nccl")\n', "args.comm", None),
    ('comm = "nccl"\n', "comm", None),
])
def test_follow_reaches_literals_through_names_attributes_and_defaults(code, use, via):
    ctx, seen = _walk(code)
    followed = follow(cst.parse_expression(use), ctx.module, ctx.module, seen, _nccl, ctx.qualify)
    assert [r.via for r in followed.reached] == [via] and not followed.unresolved


def test_follow_reports_what_it_cannot_follow_and_cuda_only_uses():
    ctx, seen = _walk("import torch\nargs.comm = pick()\ntorch.cuda.set_device(args.rank)\n")
    assert follow(cst.parse_expression("args.comm"), ctx.module, ctx.module, seen, _nccl, ctx.qualify).unresolved
    assert follow(cst.parse_expression("args.other"), ctx.module, ctx.module, seen, _nccl, ctx.qualify).unresolved
    rank = follow(cst.parse_expression("cfg.rank"), ctx.module, ctx.module, seen, _nccl, ctx.qualify)
    assert rank.cuda_only == "torch.cuda.set_device"


def test_assigned_and_option_names():
    stmt = cst.parse_statement('device: str = field(default="cuda")\n')
    assert isinstance(stmt, cst.SimpleStatementLine) and isinstance(stmt.body[0], cst.AnnAssign)
    assert [short(v) for _, v in assigned(stmt.body[0])] == ['"cuda"']
    call = _call('p.add_argument("-b", "--dist-backend", dest="backend")')
    assert option_names(call) == ["-b", "--dist-backend", "backend"] and option_dest(call) == "backend"


def test_backend_plan_keeps_what_also_reaches_cuda_only_code_or_deepspeed():
    from neuronize.transforms._helpers.distributed import BackendUse, plan_backends

    code = ('import torch\nimport torch.distributed as dist\nimport deepspeed\n'
            'cfg.comm = "nccl"\ntorch.cuda.nccl_tuning(cfg.comm)\nSHARED = "nccl"\nLOCAL = "nccl"\n')
    ctx, seen = _walk(code)

    def use(expr: str, kind: str = "init_process_group") -> BackendUse:
        return BackendUse(_call("f()"), kind, cst.parse_expression(expr), ctx.module)

    plan = plan_backends(ctx, [use("cfg.comm"), use("SHARED"), use("SHARED", "deepspeed"), use("LOCAL")], seen, set())
    kept = sorted(why.split(" ")[0] for _, why in plan.kept)
    assert kept == ["`cfg.comm`", "it"]  # the CUDA-only use, and DeepSpeed
    assert len(plan.edits) == 1 and plan.edits[0].safety.value == "safe"


@pytest.mark.parametrize(("code", "named"), [
    ('dist.init_process_group("nccl")', "`init_process_group`"),
    ('dist.init_process_group(backend="gloo")', None),  # a CPU group
    ('deepspeed.init_distributed(dist_backend="nccl")', "`deepspeed.init_distributed`"),
    ("deepspeed.init_distributed()", "`deepspeed.init_distributed`"),
    ("dist.new_group([0, 1])", None),
])
def test_process_group_creation_that_needs_an_untouched_runtime(code, named):
    from neuronize.transforms.distributed.runtime_before_process_group import creation

    ctx = _ctx("import deepspeed\nimport torch.distributed as dist\n")
    assert creation(ctx, _call(code)) == named


# -- the device positions of NRN101 (_device_choice) -----------------------------------------------
@pytest.mark.parametrize(("code", "expected"), [
    ('torch.zeros(2, device="cuda")', [('"cuda"', "`device=` argument")]),
    ('torch.load(f, map_location="cuda:0")', [('"cuda:0"', "`map_location=` argument")]),
    ('torch.autocast(device="cuda")', []),  # NRN2xx's
    ('x.to("cuda")', [('"cuda"', "`.to()`")]),
    ('torch.set_default_device("cuda")', [('"cuda"', "`torch.set_default_device`")]),
    ('cfg.get("device", "cuda")', [('cfg.get("device", "cuda")', "default of `device`")]),
    ('cfg.get("name", "cuda")', []),
])
def test_call_device_positions(code, expected):
    from neuronize.transforms._helpers.device_choice import call_device_positions

    ctx = _ctx("import torch\n")
    assert [(short(e), w) for e, w in call_device_positions(ctx, _call(code))] == expected


def test_device_option_and_setting():
    from neuronize.transforms._helpers.device_choice import device_option, device_setting

    option = device_option(_call('p.add_argument("--device", default="cuda", choices=["cpu", "cuda"])'))
    assert option is not None and option[0] == "--device"
    assert option[1] is not None and short(option[1].value) == '"cuda"'
    assert option[2] is not None and short(option[2]) == '["cpu", "cuda"]'
    assert device_option(_call('p.add_argument("--lr", default=0.1)')) is None
    for code, value in [('self.device = "cuda"', '"cuda"'), ('device: str = field(default="cuda:0")', '"cuda:0"'),
                        ('cfg["device"] = d', "d"), ('name = "cuda"', None)]:
        stmt = cst.parse_statement(code + "\n")
        assert isinstance(stmt, cst.SimpleStatementLine)
        small = stmt.body[0]
        assert isinstance(small, (cst.Assign, cst.AnnAssign))
        found = device_setting(small)
        assert (short(found[0]) if found else None) == value


# -- the NRN35x skeleton (_cuda_settings) ----------------------------------------------------------
def test_setting_targets_and_unwrap_plan():
    from neuronize.transforms._helpers.cuda_settings import context_items, plan_unwrap, setting_targets

    ctx = _ctx("import torch\n")
    stmt = cst.parse_statement("torch.backends.cudnn.benchmark = other = True\n")
    assert isinstance(stmt, cst.SimpleStatementLine) and isinstance(stmt.body[0], cst.Assign)
    flagged, shown, mixed = setting_targets(ctx, stmt.body[0])
    assert flagged == ["torch.backends.cudnn.benchmark"] and mixed and shown == "`torch.backends.cudnn.benchmark`"
    with_stmt = cst.parse_statement("with torch.cuda.nvtx.range('step'), open(f) as h:\n    run(h)\n")
    assert isinstance(with_stmt, cst.With)
    found = context_items(ctx, with_stmt, {"torch.cuda.nvtx.range": "marks a range"})
    assert [q for _, q in found] == ["torch.cuda.nvtx.range"]
    result, message = plan_unwrap(with_stmt, [found[0][0]], "marks a range", "meaningless on Neuron")
    assert result is not None and message.startswith("`torch.cuda.nvtx.range('step')` removed from the `with`")


# -- XLA-era code (_xla) ---------------------------------------------------------------------------
def test_xla_plans():
    from neuronize.transforms._helpers.xla import import_removals, imports_xla, optimizer_step, xla_backend_plan

    ctx = _ctx("import torch.distributed as dist\nimport torch_xla.core.xla_model as xm\n")
    plan = xla_backend_plan(ctx, _call('dist.init_process_group("xla", init_method="xla://")'))
    assert plan is not None and short(plan[0]) == 'dist.init_process_group("neuron")'
    assert "init_method" in plan[1]
    assert xla_backend_plan(ctx, _call('dist.init_process_group("gloo")')) is None
    step = optimizer_step(_call("xm.optimizer_step(opt, barrier=True)"))
    assert step is not None and short(step) == "opt.step()"
    assert optimizer_step(_call("xm.optimizer_step(opt, optimizer_args={})")) is None
    assert [r.module for r in import_removals(ctx, cst.parse_expression("xm.mark_step"))] == [
        "torch_xla.core.xla_model", "torch_xla.core"]
    stmt = cst.parse_statement("from torch_xla.core import xla_model\n")
    assert isinstance(stmt, cst.SimpleStatementLine) and imports_xla(stmt.body[0])


# -- leftovers (NRN999) ----------------------------------------------------------------------------
def _stack_to(code: str, found) -> list[cst.CSTNode]:
    """The walk's stack from the module down to the first node for which ``found`` holds."""
    stack: list[cst.CSTNode] = []
    hit: list[list[cst.CSTNode]] = []

    def enter(node: cst.CSTNode) -> None:
        stack.append(node)
        if not hit and found(node):
            hit.append(list(stack))

    walk(cst.parse_module(code), enter, lambda node: stack.pop())
    assert hit, f"nothing found in {code!r}"
    return hit[0]


def _string(value: str):
    return lambda node: isinstance(node, (cst.SimpleString, cst.FormattedString)) and short(node) == value


@pytest.mark.parametrize(("code", "expected"), [
    ('"cuda"', "device"), ('"cuda:3"', "device"), ('f"cuda:{rank}"', "device"), ('"cuda:{}".format(i)', "device"),
    ('"nccl"', "backend"), ('"cpu:gloo,cuda:nccl"', "backend"),
    ('"cpu"', None), ('"using cuda"', None), ('f"on cuda:{rank} now"', None), ('"neuron"', None),
])
def test_cuda_value(code, expected):
    assert cuda_value(cst.parse_expression(code)) == expected


@pytest.mark.parametrize(("values", "expected"), [
    (["cpu", "cuda"], "device"), (["cuda", "xpu", "neuron"], "device"), (["cuda", "rocm"], "device"),
    (["nccl", "gloo"], "backend"), (["cuda:0"], None), (["cuda:0", "cuda:1"], None),
    (["cuda", "nccl"], None), (["cpu:gloo", "cuda:nccl"], None), (["cuda", None, "x"], None),
])
def test_listed(values, expected):
    assert listed(values) == expected


@pytest.mark.parametrize(("code", "expected"), [
    ('p.add_argument("--d", choices=["cpu", "cuda"])\n', True),
    ('ok = d in ("cpu", "cuda")\n', True),
    ('SUPPORTED_DEVICES = ("cpu", "cuda")\n', True),
    ('for d in ["cpu", "cuda"]:\n    pass\n', False),
    ('devices = ["cpu", "cuda"]\n', False),
    ('f(["cpu", "cuda"])\n', False),
])
def test_validates(code, expected):
    stack = _stack_to(code, lambda node: isinstance(node, (cst.List, cst.Tuple)))
    assert validates(stack[-1], stack) is expected


@pytest.mark.parametrize(("code", "expected"), [
    ("local_rank", True), ("args.gpu", True), ("self.gpu_id", True), ("rank % 8", True), ("3", True),
    ('int(os.environ["LOCAL_RANK"])', True), ("dist.get_rank()", True), ("device_idx", True),
    ("0", False), ("device", False), ("dtype", False), ("self.device", False), ("num_gpus", False),
    ("world_size", False),
])
def test_gpu_index(code, expected):
    assert gpu_index(cst.parse_expression(code)) is expected


def test_gpu_indexed_device():
    found = gpu_indexed_device(cst.parse_expression('f"{device.type}:{args.gpu}"'))  # type: ignore[arg-type]
    assert found is not None and short(found) == "args.gpu"
    assert gpu_indexed_device(cst.parse_expression('f"{device.type}:{n}"')) is None  # type: ignore[arg-type]
    assert gpu_indexed_device(cst.parse_expression('f"{acc}:1"')) is None  # type: ignore[arg-type]


def test_in_message_and_site():
    assert in_message(_stack_to('print("cuda")\n', _string('"cuda"')))
    assert not in_message(_stack_to('run("cuda")\n', _string('"cuda"')))
    assert site(_stack_to('loc = f"cuda:{r}"\n', _string('f"cuda:{r}"'))) == ("assigned to `loc`", None)
    assert site(_stack_to('torch.load(p, map_location={"cuda:0": "cuda:1"})\n', _string('"cuda:1"'))) == (
        "`map_location=` argument", "map_location")
    assert site(_stack_to('def f(backend="nccl"):\n    pass\n', _string('"nccl"'))) == ("default of `backend`", None)
    assert site(_stack_to('f(("cuda:0",) + args)\n', _string('"cuda:0"'))) == ("a call argument", None)
    assert site(_stack_to('"cuda"\n', _string('"cuda"'))) == ("", None)


def test_branches_and_required_checks():
    code = 'x = ("neuron" if ok and t == "neuron" else "cuda") if a else b\n'
    stack = _stack_to(code, _string('"cuda"'))
    tests = [(short(test), in_body) for test, in_body in branches(stack)]
    assert tests == [('ok and t == "neuron"', False), ("a", True)]
    assert required(cst.parse_expression('ok and t == "neuron"'), is_neuron_check)
    assert not required(cst.parse_expression('ok or t == "neuron"'), is_neuron_check)
    assert not is_neuron_check(cst.parse_expression('t != "neuron"'))


def test_leftover_messages_say_what_to_do():
    node = cst.parse_expression('f"cuda:{rank}"')
    assert "load onto `\"cpu\"`" in leftover_message("device", node, "`map_location=` argument", "map_location")
    assert "(assigned to `loc`)" in leftover_message("device", node, "assigned to `loc`")
    assert "NKI kernel" in leftover_message("device", node, "`device_types=` argument", "device_types")
    assert "make it `\"neuron\"`" in leftover_message("backend", cst.parse_expression('"nccl"'), "", "map_location")
    assert 'add it' in list_message("device", cst.parse_expression('["cpu", "cuda"]'))
    assert "delete the call" in index_message("`set_device_index()`", cst.parse_expression("rank"), selects=True)
    assert "pass the device" in index_message("`to()`", cst.parse_expression("rank"))


# -- NRN6xx: requirements, launchers, containers and configs ---------------------------------------
def test_torch_neuronx_family_follows_the_torch_minor_version():
    from neuronize.transforms._helpers.setup_files import is_cuda_index, is_cuda_local_version, neuronx_family

    assert neuronx_family("2.13.0") == "2.13.*" and neuronx_family("2.14.*") == "2.14.*"
    assert neuronx_family("2.13.0+cu121") == "2.13.*"
    assert neuronx_family("2.12.1") is None and neuronx_family("2.1") is None and neuronx_family(None) is None
    assert is_cuda_local_version("cu121") and not is_cuda_local_version("cpu") and not is_cuda_local_version("rocm6.1")
    assert is_cuda_index("https://download.pytorch.org/whl/cu118") and is_cuda_index("https://x/whl/nightly/cu126/")
    assert not is_cuda_index("https://download.pytorch.org/whl/cpu") and not is_cuda_index("https://pypi.org/simple")


def test_requirement_specifiers_keep_their_offsets():
    from neuronize.sources.requirements import parse_specifier

    req = parse_specifier('Torch == 2.13.0+cu121 ; python_version >= "3.10"', 4, 10)
    assert req is not None and req.key == "torch" and req.version == "2.13.0+cu121" and req.local == "cu121"
    assert (req.line, req.start, req.name_end, req.local_start) == (4, 10, 15, 25)
    for not_a_requirement in ("-r base.txt", "./local/pkg", "git+https://x/y.git", "pkg @ https://x/y.whl", ""):
        assert parse_specifier(not_a_requirement, 0, 0) is None, not_a_requirement


def test_cuda_only_packages_come_from_the_python_rules_table():
    from neuronize.analysis.cuda_packages import PACKAGES
    from neuronize.transforms._helpers.setup_files import cuda_only_package

    assert cuda_only_package("flash-attn")[1] == PACKAGES["flash_attn"].instead
    assert cuda_only_package("cupy-cuda12x")[1] == PACKAGES["cupy"].instead
    assert cuda_only_package("nvidia-cublas-cu12") is not None
    assert cuda_only_package("nvidia-ml-py")[1] == PACKAGES["pynvml"].instead
    assert cuda_only_package("numpy") is None and cuda_only_package("triton") is None  # triton: NRN902's


def test_dependency_messages_shared_by_requirements_files_and_setup_py():
    from neuronize.transforms._helpers.setup_files import cuda_build_message, cuda_only_message, torch_family_advice
    from neuronize.transforms.repository.setup_py_requirement import declared_requirements

    call = cst.parse_expression('setup(install_requires=["torch==2.13.0+cu121", "numpy", deps], '
                                'extras_require={"gpu": ["nvidia-nccl-cu12"], **more}, tests_require=["flash-attn"])')
    found = {req.name: req for _, req in declared_requirements(call)}
    assert list(found) == ["torch", "numpy", "nvidia-nccl-cu12"]  # only literals, only these two keywords
    assert "`+cu121`" in cuda_build_message(found["torch"]) and cuda_build_message(found["numpy"]) is None
    assert "NVIDIA CUDA runtime wheel" in cuda_only_message(found["nvidia-nccl-cu12"])
    assert cuda_only_message(found["numpy"]) is None
    assert torch_family_advice("2.13.0")[0] == "2.13.*"
    assert torch_family_advice("2.12.0")[0] is None and "no TorchNeuron family" in torch_family_advice("2.12.0")[1]
    assert torch_family_advice(None)[0] is None and "not pinned" in torch_family_advice(None)[1]


def test_config_values_planned_by_key_and_value():
    from neuronize.sources.configs import Entry
    from neuronize.transforms.repository.config_cuda_value import plan

    def entry(key: str, value: str) -> Entry:
        return Entry((key,), value, 0, 0, len(value))

    # every one stays, with what the Trainium run needs: the config is read on the CUDA hosts too
    assert "`device: neuron`" in plan(entry("device", "cuda:1"))
    assert "`backend: neuron`" in plan(entry("backend", "nccl"))
    assert "`precision: bf16-mixed`" in plan(entry("precision", "16-mixed"))
    assert "`precision: bf16-true`" in plan(entry("precision", "16-true"))
    assert "Lightning accelerator for Trainium" in plan(entry("accelerator", "gpu"))
    for fine in (entry("device", "cpu"), entry("name", "cuda"), entry("precision", "32"), entry("backend", "gloo")):
        assert plan(fine) is None


@pytest.mark.parametrize(("code", "expected"), [
    # a file with a CPU path: the device is host-aware, and bf16 only on the Neuron branch
    ('import torch\nd = "cpu"\nwith torch.autocast("cuda"):\n    pass\n',
     ['torch.autocast("neuron" if N else "cuda", dtype=torch.bfloat16 if N else torch.float16)',
      'torch.autocast("neuron" if N else "cuda")']),
    # the device follows `enabled=`: bf16 goes with it (the other hosts run autocast disabled)
    ('import torch\nwith torch.autocast("cuda", enabled=device == "cuda"):\n    pass\n',
     ['torch.autocast(torch.device(device).type, dtype=torch.bfloat16, enabled=device == "neuron")',
      'torch.autocast(torch.device(device).type, enabled=device == "neuron")']),
    # hard-coded CUDA: host-aware all the same (the neuron target keeps CUDA hosts); an explicit
    # dtype is kept, with no bf16 fix
    ('import torch\nx = torch.ones(1).cuda()\nwith torch.autocast("cuda", dtype=torch.float16):\n    pass\n',
     ['torch.autocast("neuron" if N else "cuda", dtype=torch.float16)']),
])
def test_autocast_plan(code, expected):
    ctx = FileContext(module=cst.parse_module(code), names=collect_imports(cst.parse_module(code)),
                      source=code.encode())
    call = next(n for n in _calls_in(ctx.module) if getattr(n.func, "attr", None) is not None
                and n.func.attr.value == "autocast")
    plan = plan_autocast(ctx, call, "autocast")
    neuron = ('hasattr(torch, "accelerator") and torch.accelerator.is_available() and '
              'torch.accelerator.current_accelerator().type == "neuron"')
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
