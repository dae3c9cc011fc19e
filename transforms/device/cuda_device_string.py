"""NRN101: CUDA device strings where a device is meant -> ``"neuron"``."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import PurePosixPath

import libcst as cst

from neuronize.analysis.context import FileContext
from neuronize.analysis.syntax import without_not
from neuronize.transform import Evidence, Example, ImportRequest, Safety, Transform
from neuronize.transforms._helpers import hosts, per_target
from neuronize.transforms._helpers.calls import argument
from neuronize.transforms._helpers.device_choice import (
    OPTION_CALLS, call_devices, device_literals, device_named, device_option, device_setting,
    extended_check, has_is_available, idiom_branch, in_excluded_call, in_selection_if, in_test_file, index_note,
    default_serves_nothing, indexed_device, indexed_device_edit, is_torch_device_call, literal_edit,
    kept_parameter_default, parameter_default, rebound_check, rewrite_idiom, selection_ifexp, validation_list)
from neuronize.transforms._helpers.device_model import (
    KeepsCudaBranches, aware_edit, backend_key, choice_addition, default_plan, idiom_kept, kernel_export, in_detection, keeps_cuda_hosts,
    kept_argument, served_by_neuron_first)
from neuronize.transforms._helpers.literals import Kind, branches_mention_cuda, cuda_literal, string_value
from neuronize.transforms._helpers.leftovers import compared_device
from neuronize.transforms._helpers.messages import short
from neuronize.transforms._helpers.names import last_name, target_name
from neuronize.transforms._helpers.nodes import parenthesized
from neuronize.transforms._helpers.value_flow import assigned
from neuronize.analysis.walk import iter_syntax


#: ``kwargs["device_type"] = "cuda"`` next to ``custom_fwd``: the AMP device type, which the
#: precision rules make host-aware; a plain ``"neuron"`` would raise at every call elsewhere
_AMP_DEVICE_TYPE = ("is the device type of `custom_fwd`/`custom_bwd` here; kept: `\"neuron\"` would raise at "
                    "every call on a host without torch-neuronx; pass `device_type=\"neuron\"` only where Neuron "
                    "is present, by hand")


def _kept_literal(ctx: FileContext, node: cst.BaseExpression, kind: Kind) -> str | None:
    """Why the device literal ``node`` stays as it is, whatever its use: another device named on
    purpose in a test, a build target of the package's build script, or a device kernel code
    imports (:func:`device_model.kernel_export`)."""
    if kind is Kind.INDEXED and string_value(node) is not None and in_test_file(ctx.path):
        return ("names another device on purpose in a test (a cross-device case): kept; a Neuron process sees one "
                "device, port or skip the test by hand")
    if PurePosixPath(ctx.path.replace("\\", "/")).name == "setup.py" or ctx.names.imports_module("setuptools"):
        return ("kept: the build script picks what to build (extensions, requirement files) by this name, not where "
                "tensors run; add a Neuron build target by hand")
    return kernel_export(ctx)


class CudaDeviceString(KeepsCudaBranches, Transform):
    """Finds CUDA device strings (`"cuda"`, `"cuda:1"`, `f"cuda:{rank}"`) where a device is meant.

    What it does:
        Rewrites the device string to `"neuron"` where the code uses it as a device:
        `torch.device("cuda")` and `torch.device("cuda", i)`, the `device=` keyword of any call
        (and `map_location=` of `torch.load`), `.to("cuda")`, `torch.set_default_device("cuda")`,
        assignments to a name, attribute or key containing "device" (`device = "cuda"`,
        `self.device = "cuda:0"`, `cfg["device"] = ...`, dataclass fields such as
        `device: str = "cuda"` or `field(default="cuda")`), `{"device": "cuda"}`, defaults of
        parameters named like a device (`def f(device="cuda")`; not where the default does
        nothing: an abstract method, a stub raising `NotImplementedError`, a function that never
        reads the parameter), `.get("device", "cuda")`
        defaults, and argparse / click `--device` options (`default="cuda"`; `"neuron"` is added
        to a `choices=[...]` list next to `"cuda"`). The value in those places is followed the
        way NRN401 follows a backend: the branches of a conditional expression (`"cuda" if
        args.gpu else "cpu"`), either side of `or` (`opts.get("device") or "cuda"`) and the
        default of a lookup (`getenv("DEVICE", "cuda")`) are rewritten too.
        The idiom `"cuda" if torch.cuda.is_available() else "cpu"` (any alias, the reversed
        `"cpu" if not ... else "cuda"` form, `torch.device("cuda") if ... else ...`, `f"cuda"`,
        `f"cuda:{i}"`, `"cuda:" + str(i)`, a test of a flag stored once from the check, `has_cuda =
        torch.cuda.is_available()`, either way round) gains Neuron in front, as one unit:
        `"neuron" if hasattr(torch, "accelerator") and torch.accelerator.is_available() and
        torch.accelerator.current_accelerator().type == "neuron" else <the original idiom>`, so
        CUDA (with its device index) and the CPU fallback are kept. A device default moves to
        `"neuron"` only together with the Neuron branches NRN107 gives the dispatches of the file
        that consume it; where a dispatch would reject `"neuron"`, the default stays (reported).
        So do a default and the availability idiom of a file that hands its device to a library
        that parses it itself and rejects `"neuron"` (safetensors' `load_file` / `safe_open`,
        CTranslate2, Lightning's `Fabric` / `Trainer` accelerator), directly or through a project
        function that hands it on to one (in any module), or to a project function that asserts
        CUDA and counts CUDA devices for any device but the CPU (YOLOv5's `select_device`); a CUDA
        literal handed to such a call stays too. A choice stored in a variable read only under guards kept for CUDA stays. So
        does a device bound at a module's top level to a name that a GPU-kernel file of the
        project imports (`DEV = torch.device("cuda:0")`, read by `from utils import DEV` in a
        script built on Triton kernels), a parameter's default the object keeps and hands to CUDA
        plumbing (nvJPEG `decode_jpeg(device=self.device)`), a test case marked for GPUs
        (`pytest.param(torch.device("cuda"), marks=GPU_MARKS)`), and a default of a name the project
        checks against its own backends beside CUDA, in any module (`assert device_type in ["cuda",
        "ascend", "maca"]`, `--device` with `choices=["cuda", "ascend"]`): a key of the project's
        backend table, which has no Neuron entry (that list gains no `"neuron"` either). A build
        script's device names (`setup.py`, a file importing setuptools) pick what to build, and stay.
        Every other CUDA device is written host-aware, `"neuron" if <the accelerator is Neuron>
        else "cuda"`: the CUDA box the code was written for keeps its value, and so does every
        other host with the program's own fallback; Neuron gets `"neuron"`. A placement (`.to("cuda")`, `device="cuda"`) that can see the program's own device
        variable, bound once and earlier in its scope or in an earlier notebook cell to the
        availability idiom (`device = "cuda" if torch.cuda.is_available() else "cpu"`), names
        that variable instead (`.to(device)`). Device strings in a dispatch's CUDA branch stay
        CUDA's. A choice by a parameter its function rebinds from the check and the wish it was
        given (`def __init__(self, use_cuda=None): use_cuda = torch.cuda.is_available() and
        (use_cuda is None or use_cuda)`, then `"cuda" if use_cuda else "cpu"`), False on Neuron,
        gains its Neuron arm together with the check's widening, `(<the accelerator is Neuron> or
        torch.cuda.is_available()) and ...`, one edit group, where the flag decides only device
        choices: the wish still decides on every host. Where it decides more, the choice stays
        (reported): its Neuron arm could never run.
        Strings that are not a device are never touched: messages, docstrings, dict keys,
        capability lists such as `("cuda", "xpu")`, `accelerator="cuda"` (Lightning),
        `device_types="cuda"` (custom ops), `device_type=` of autocast (NRN2xx), the `device=` of
        `GradScaler`, `custom_fwd/bwd`, `init_device_mesh`, `DeviceMesh`, HF `device_map=`, and
        `torch.Generator(device=...)` (NRN106). Code on `"neuron"`, `torch.accelerator` or a
        device variable (`.to(device)`) is left alone.

    Why on TorchNeuron:
        Trainium has no CUDA device; TorchNeuron registers the device `"neuron"`. Most code
        chooses its device once (a setting, an argparse default, the is_available idiom) and
        passes a variable around, so rewriting where the string is chosen migrates the placement
        of the whole program. The test asks whether the accelerator is Neuron, not only whether
        there is one: `torch.accelerator.is_available()` alone is also true on a Mac (MPS), where
        the idiom used to fall back to the CPU and `"neuron"` would fail.

    Example:
        device = "cuda" if torch.cuda.is_available() else "cpu"
        parser.add_argument("--device", default="cuda:0", choices=["cpu", "cuda"])
        x = torch.zeros(4, device=f"cuda:{rank}")

    Use instead:
        device = "neuron" if hasattr(torch, "accelerator") and torch.accelerator.is_available() and torch.accelerator.current_accelerator().type == "neuron" else "cuda" if torch.cuda.is_available() else "cpu"
        parser.add_argument("--device", default="neuron" if hasattr(torch, "accelerator") and torch.accelerator.is_available() and torch.accelerator.current_accelerator().type == "neuron" else "cuda:0", choices=["cpu", "cuda", "neuron"])
        x = torch.zeros(4, device="neuron")

    Fix safety:
        Safe for `"cuda"`, `"cuda:0"` and `torch.device("cuda", 0)`. Unsafe when a non-zero or
        computed device index is dropped (`"cuda:1"`, `f"cuda:{rank}"`, `torch.device("cuda", i)`):
        under a `"neuron"` process group each process sees exactly one device, so dropping it is
        right for torchrun code, but single-process code that spreads work over several devices
        must be reviewed. `choices=` keeps `"cuda"` so existing launch commands still parse.
        A device's own validation (`assert device in ["cuda", "cpu"]`, `if device not in (...):
        raise`) gets the target's device next to `"cuda"`, like `choices=`, so the migrated
        default is accepted. Left alone: a non-zero index in a test module (`.to("cuda:1")` in a
        cross-device test: reported) and `init_process_group(device_id=...)` values (the
        distributed rules own them: PyTorch rejects a `device_id` without an index), and a CUDA
        device handed to a CUDA-only API (`torch.cuda.get_device_properties(torch.device("cuda"))`),
        and the device of a call that asks for Triton kernels (`load(..., device="cuda:0",
        use_triton=True)`: reported).

    Evidence:
        DOC: the TorchNeuron index page (`.to('cuda')` -> `.to('neuron')`, `torch.accelerator`
        detects the device), the troubleshooting and distributed guides (`torch.device("neuron")`).
        The index policy is INF. 3P: safetensors parses a device name itself and accepts only the
        ones it lists (https://huggingface.co/docs/safetensors/api/torch; `device neuron is
        invalid` from safetensors 0.8); CTranslate2 takes `"cpu"`, `"cuda"` or `"auto"`
        (https://opennmt.net/CTranslate2/python/ctranslate2.Generator.html); Lightning's accelerator
        names (https://lightning.ai/docs/fabric/stable/api/fabric_args.html#accelerator) have no
        `"neuron"`.
    """

    id = "NRN101"
    name = "cuda-device-string"
    safety = Safety.SAFE
    evidence = Evidence.DOC
    section = "device"
    references = (
        "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/index.html",
        "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/guides/torch-distributed.html",
        "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/setup/troubleshooting.html",
        "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/about-pytorch-neuron.html",
    )
    tokens = (b"cuda",)
    targets = per_target.ALL
    examples = (
        Example('import torch\ndevice = "cuda" if torch.cuda.is_available() else "cpu"\n',
                'import torch\ndevice = "neuron" if hasattr(torch, "accelerator") and torch.accelerator.is_available() and '
                'torch.accelerator.current_accelerator().type == "neuron" else "cuda" if torch.cuda.is_available() '
                'else "cpu"\n'),
        Example('x = torch.zeros(4, device="cuda")\n', ('import torch\n'
                '\n'
                'x = torch.zeros(4, device="neuron" if hasattr(torch, "accelerator") and torch.accelerator.is_available() and torch.accelerator.current_accelerator().type == "neuron" else "cuda")\n')),
        Example('import torch\ndef f(r):\n    return torch.device("cuda", r)\n', ('import torch\n'
                'def f(r):\n'
                '    return torch.device("neuron") if hasattr(torch, "accelerator") and torch.accelerator.is_available() and torch.accelerator.current_accelerator().type == "neuron" else torch.device("cuda", r)\n')),
        Example('p.add_argument("--device", default="cuda", choices=["cpu", "cuda"])\n',
                'import torch\n\np.add_argument("--device", default="neuron" if hasattr(torch, "accelerator") and torch.accelerator.is_available() and '
                'torch.accelerator.current_accelerator().type == "neuron" else "cuda", choices=["cpu", "cuda", "neuron"])\n'),
    )

    def __init__(self, ctx: FileContext) -> None:
        super().__init__(ctx)
        self._done: set[int] = set()  # literal nodes already reported (a node has one finding)

    # -- reporting ---------------------------------------------------------------------------
    def _fix_literal(self, node: cst.BaseExpression, kind: Kind, where: str, nested: bool = False,
                     group: str | None = None, placement: bool = False) -> None:
        if id(node) in self._done:
            return
        self._done.add(id(node))
        if (kept := _kept_literal(self.ctx, node, kind)) is not None:
            return self.report(node, f"{where}: `{short(node)}` {kept}", evidence=Evidence.INF)
        edit = literal_edit(self.ctx, node, kind, nested)
        if keeps_cuda_hosts(self.ctx):  # the original value stays on every host but Neuron
            edit = aware_edit(self.ctx, node, nested, edit, placement)
        self.fix(node, edit.replacement, f"{where}: `{short(node)}` -> `{edit.shown or per_target.spell(self.ctx, edit.replacement)}`{edit.note}",
                 imports=edit.imports, group=group, **_unsafe_if(edit.unsafe))

    def _fix_all(self, expr: cst.BaseExpression | None, where: str, group: str | None = None,
                 placement: bool = True) -> None:  # not a default other code reads
        group = group or hosts.same_device_group(self.ctx) or hosts.placement_group(self.ctx)
        for node, kind in device_literals(self.ctx, expr) if expr is not None else ():
            flag = _rebound_flag(self.ctx, expr, node, kind)  # type: ignore[arg-type]
            if flag is not None and flag.kept is not None:
                self._keep(node, where, flag.kept)
            elif flag is not None and id(flag.edit[0]) not in self._done:  # one serves every choice of the flag
                self._done.add(id(flag.edit[0]))
                self.fix(*flag.edit, imports=flag.imports, group=group or flag.group)
            self._fix_literal(node, kind, where, node is not expr, group or (flag.group if flag else None), placement)

    def _fix_default(self, expr: cst.BaseExpression | None, where: str, name: str | None = None) -> None:
        """A device default (option, parameter, setting: ``name``), as ``device_model.default_plan`` says."""
        plan = default_plan(self.ctx, name)
        if plan.kept is not None:
            self._keep(expr, where, plan.kept)
        self._fix_all(expr, where, group=plan.group, placement=False)

    def _keep(self, expr: cst.BaseExpression | None, where: str, why: str, pins: str | None = None,
              evidence: Evidence | None = Evidence.INF) -> None:
        for node, _ in device_literals(self.ctx, expr) if expr is not None else ():
            self._done.add(id(node))
            self.report(node, f"{where}: `{short(node)}` {why}", evidence=evidence, pins=pins)

    def _add_choice(self, container: cst.List | cst.Tuple, what: str) -> None:
        """The migrated default next to ``"cuda"`` in a list of accepted devices: the target's device
        (on the accelerator target, the default's own expression: it is ``"mps"`` on a Mac)."""
        planned = choice_addition(self.ctx, container)
        if planned is not None:
            new, shown, imports = planned
            self.fix(container, new, f'{what}: added `{shown}` next to `"cuda"` so the migrated default is accepted',
                     imports=imports, group=default_plan(self.ctx).group)

    # -- the idiom -----------------------------------------------------------------------------
    def visit_IfExp(self, node: cst.IfExp) -> None:
        if per_target.in_kept_cuda_index(self.ctx) or per_target.is_kept_cuda_index(self.ctx, node) \
                or served_by_neuron_first(self.ctx, node):
            return
        found = idiom_branch(self.ctx, node)
        if found is None:
            if has_is_available(self.ctx, node.test) and branches_mention_cuda(node):
                # NRN11x leaves every `torch.cuda.is_available()` choosing a CUDA device to us.
                self.report(node, f"device choice `{short(node)}`: choose `\"neuron\"` with "
                            "`torch.accelerator.is_available()` by hand (shape too unusual to rewrite)")
            return
        if in_excluded_call(self.ctx):
            return  # `torch.Generator(device=<idiom>)` is NRN106's; autocast/GradScaler are NRN2xx
        if (kept := idiom_kept(self.ctx, node)) is not None:
            return self._keep(found[1], f"device choice `{short(node)}`", kept)
        plan = rewrite_idiom(self.ctx, node, *found)
        self._done.update((id(plan.literal), id(plan.branch)))
        at, replacement, note = indexed_device(self.ctx, node, plan)  # `torch.device(<idiom>, local_rank)`
        self.fix(at, replacement, plan.message + (index_note(self.ctx) if plan.kind.drops_index else note),
                 imports=plan.imports, **_unsafe_if(plan.kind.drops_index))

    # -- calls ---------------------------------------------------------------------------------
    def visit_Call(self, node: cst.Call) -> None:
        name = last_name(node.func)
        if (positions := call_devices(self.ctx, node, name)) is None:
            return  # `device_id=` must keep its index; a `torch.cuda.*` API needs a CUDA device
        kept = kept_argument(self.ctx, node)  # Triton kernels run on it, or a library that rejects "neuron" parses it
        for expr, where in positions:
            if kept is not None:
                self._keep(expr, where, *kept)
            else:
                (self._fix_default if expr is node else self._fix_all)(expr, where)  # a lookup's default
        if name == "device" and is_torch_device_call(self.ctx, node) and id(node) not in self._done:
            parent = self.ctx.parent
            # `torch.device("cuda") if d == "cuda" else ...` is NRN103's to rewrite whole; a device
            # compared with is not one placed on
            if not (isinstance(parent, cst.IfExp) and selection_ifexp(self.ctx, parent) or compared_device(self.ctx.stack)):
                self._torch_device(node)
        elif name in OPTION_CALLS:
            if (option := device_option(node)) is not None:
                name = option[0].lstrip("-").replace("-", "_")
                self._fix_default(option[1].value if option[1] is not None else None, f"`{option[0]}` default", name)
                if option[2] is not None and backend_key(self.ctx, name) is None:
                    self._add_choice(option[2], f"`{option[0]}` choices")

    def _torch_device(self, node: cst.Call) -> None:
        first = argument(node, "type", 0)
        if first is None:
            return
        index = argument(node, "index", 1)
        if index is None or cuda_literal(first.value) is None:
            self._fix_all(first.value, "`torch.device`")
            return
        if string_value(first.value) == "cuda":  # torch.device("cuda:0", 1) is an error; left for the user
            self._done.add(id(first.value))
            edit = indexed_device_edit(self.ctx, node, first, index, keeps_cuda_hosts(self.ctx))
            self.fix(node, edit.replacement, f"`{short(node)}` -> `{edit.shown or per_target.spell(self.ctx, edit.replacement)}`"
                     f"{edit.note}", imports=edit.imports, group=hosts.same_device_group(self.ctx), **_unsafe_if(edit.unsafe))

    def visit_Comparison(self, node: cst.Comparison) -> None:
        """``assert device in ["cuda", "cpu"]`` accepts the migrated default too (like ``choices``)."""
        container = validation_list(self.ctx, node)
        if container is not None and backend_key(self.ctx, target_name(node.left)) is None:
            self._add_choice(container, f"device validation `{short(node)}`")

    # -- settings: assignments, parameters, dict entries --------------------------------------
    def visit_Assign(self, node: cst.Assign | cst.AnnAssign) -> None:
        found = device_setting(node)
        if found is None or in_selection_if(self.ctx) or in_detection(self.ctx):
            return
        if "device_type" in {target_name(t) for t, _ in assigned(node)} and hosts.uses_custom_amp(self.ctx):
            self._keep(*found, _AMP_DEVICE_TYPE, evidence=None)
        else:
            self._fix_default(*found, name=next((n for t, _ in assigned(node) if device_named(n := target_name(t))), None))

    visit_AnnAssign = visit_Assign

    def visit_Param(self, node: cst.Param) -> None:
        default = parameter_default(self.ctx, node)
        if default is not None and device_named(node.name.value) and not default_serves_nothing(self.ctx, node):
            kept = kept_parameter_default(self.ctx, node)
            (self.report(default, kept, evidence=Evidence.INF) if kept is not None
             else self._fix_default(default, f"default of parameter `{node.name.value}`", node.name.value))

    def visit_DictElement(self, node: cst.DictElement) -> None:
        key = string_value(node.key)
        if device_named(key):
            self._fix_default(node.value, f'`"{key}"` entry', key)


def _unsafe_if(unsafe: bool) -> dict[str, Safety | Evidence]:
    """The keywords of a fix that rests on inference, where it does."""
    return {"safety": Safety.UNSAFE, "evidence": Evidence.INF} if unsafe else {}


@dataclass(frozen=True)
class _ReboundFlag:
    """A choice by a flag rebound from the CUDA check: the check's widening (the check, what it
    becomes, and why), made with the choice's Neuron arm; or why the choice stays."""

    edit: tuple[cst.Call, cst.BaseExpression, str]
    imports: tuple[ImportRequest, ...] = ()
    group: str = ""
    kept: str | None = None


def _rebound_flag(ctx: FileContext, expr: cst.BaseExpression, literal: cst.BaseExpression,
                  kind: Kind) -> _ReboundFlag | None:
    """Where ``literal`` is the CUDA device of a choice in ``expr`` by a flag rebound from the CUDA
    check (``device_choice.rebound_check``) and gains its Neuron arm, the check's widening; where
    the flag is read elsewhere too, why the literal stays (its Neuron arm could never run)."""
    for choice in iter_syntax(expr):
        if isinstance(choice, cst.IfExp) and literal in (choice.body, choice.orelse) \
                and (found := rebound_check(ctx, choice)) is not None and _kept_literal(ctx, literal, kind) is None:
            (check, widens), name = found, cst.ensure_type(without_not(choice.test)[0], cst.Name).value
            if not widens:
                return _ReboundFlag((check, check, ""), kept=(
                    f"is chosen by `{name}`, rebound from `{short(check)}`, which is False on Neuron: kept, a Neuron "
                    f"arm could never run there, and `{name}` decides more than devices; widen the check with what it "
                    "decides by hand"))
            available, imports = per_target.available(ctx)
            return _ReboundFlag((check, parenthesized(extended_check(available, check)), (
                f"`{name}` is rebound from `{short(check)}` and the wish it was given: the check -> `<the accelerator "
                f"is Neuron> or {short(check)}`, with the Neuron arm of the choices the flag makes (every other host "
                "keeps its path, and the wish still decides)")), tuple(imports), f"{name} rebound from the CUDA check")
    return None
