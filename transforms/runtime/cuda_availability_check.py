"""NRN110: ``torch.cuda.is_available()`` / ``device_count()`` / ``current_device()`` -> ``torch.accelerator``."""

from __future__ import annotations

from typing import Any

from neuronize.analysis.context import FileContext, dotted_name
from neuronize.analysis.syntax import ends_early, iter_statements
from neuronize.analysis.walk import iter_syntax
from neuronize.transforms._helpers import hosts, per_target
from neuronize.transform import Evidence, Example, Safety
import libcst as cst

from neuronize.transforms._helpers.names import last_name, qualified_expr
from neuronize.transforms._helpers.nodes import assigned_names, enclosing_body, following_statements, parenthesized
from neuronize.transforms._helpers.cuda_guard import (
    Verdict, flag_marker, flag_uses, guarded_after, guarded_code, named_cuda_device, scan, switched_flags,
)
from neuronize.transforms._helpers.cuda_runtime import (
    Context, CudaRef, _CudaApiRule, capability_probe, classify, cuda_named_answer, printed, probe_kept, spelled,
    unused_import,
)
from neuronize.transforms._helpers.literals import LEGACY_CUDA_TYPE, branches_mention_cuda, string_like, string_value
from neuronize.transforms._helpers.cpu_target import cpu_answer
from neuronize.transforms._helpers.compile import in_compile_setting
from neuronize.transforms._helpers.distributed import worker_spawn
from neuronize.decision.policy import BRANCH_ASSERT, DATA_CHOICE, REQUIRED_CUDA
from neuronize.transforms._helpers.device_model import (
    bf16_choice, choice_group, cuda_device_context, feeds_detection, handed_on_flag, in_detection, in_fallback_test, reads_itself, unmoved_fallback,
    unserved_cuda_value, value_choice)
from neuronize.transforms._helpers.device_choice import (
    available_polarities, available_side, extended_check, idiom_branch, rebound_check, says_only_neuron)
from neuronize.transforms._helpers.messages import short

_TARGETS = {
    "is_available": "torch.accelerator.is_available",
    "device_count": "torch.accelerator.device_count",
    "current_device": "torch.accelerator.current_device_index",
}



class CudaAvailabilityCheck(_CudaApiRule):
    """Finds CUDA availability and device-count queries (`torch.cuda.is_available()` and friends).

    What it does:
        Extends `torch.cuda.is_available()`, never replaces it: on the neuron target it becomes
        `<the accelerator is Neuron> or torch.cuda.is_available()` (the check kept as written,
        aliases included; `hasattr(torch, "accelerator") and torch.accelerator.is_available() and
        torch.accelerator.current_accelerator().type == "neuron"`, or the file's `on_neuron()`),
        so every host it was true on keeps its path and Neuron gains it; on the other targets
        `torch.accelerator.is_available()`. `torch.cuda.device_count()` becomes
        `torch.accelerator.device_count()` (on the neuron target `torch.accelerator.device_count()
        if <the accelerator is Neuron> else torch.cuda.device_count()`: CUDA keeps its count) and
        `torch.cuda.current_device()` `torch.accelerator.current_device_index()` (on the neuron
        target likewise with CUDA's index kept elsewhere: `current_device_index` is new in torch
        2.7, older CUDA hosts lack it), in every spelling (`import torch as T`, `from torch import cuda`, `from torch.cuda import
        is_available`, a function reference that is not called).

        Where the check decides something, the rule looks at what it decides first:

        - the guarded code (the `if` body and `else`; the arm of a conditional expression taken
          where CUDA is, as the other arm is what Neuron ran already: `torch.bfloat16 if
          torch.cuda.is_available() else torch.float16` gains Neuron; the code after `if not ...:
          raise/return` or an `assert`, every use of a flag the result is stored in, or of a
          switch the check sets: `if not torch.cuda.is_available(): fp16 = False`) uses a
          CUDA-only path - flash-attn, xformers, bitsandbytes, apex, Triton,
          DeepSpeed, cuDNN or `torch.backends.cuda` flags, `DataParallel`, `GradScaler`, fp16
          (`.half()`, `torch.float16`), CUDA-only `torch.cuda` APIs: the check is kept and
          reported, because a Neuron-aware check would switch that path on (a memory statistic
          read after an `assert` the program starts with, for a log line, is none: it reads 0
          without CUDA, and the assert would keep the whole program off Neuron);
        - the `if` branches or the flag's uses name a CUDA value the placement rules would move
          to Neuron (`x.cuda(1)`, `"cuda:1"`, `"nccl"`) and no Neuron branch can be modelled on
          them: kept and reported (an extended check would send CUDA to Neuron's device);
          `if torch.cuda.is_available(): backend = "nccl"` whose copy can be (`.cuda()`, device
          strings, `"nccl"`, a half dtype as bf16) gets a Neuron branch in front from NRN107;
        - a flag handed on to code of the project (`detect(net, frame, use_cuda)`, returned, or
          stored in an attribute): its tests in the file are not the whole choice, so no Neuron
          branch in front of them would reach that code. The stored check itself is extended
          (unsafe: the finding names where the flag goes, to check what it switches on there),
          and the plain moves it guards (`.cuda()`, `.to("cuda")`, `device="cuda"`) become
          host-aware, `"neuron" if <the accelerator is Neuron> else "cuda"`, made with it;
        - a conditional expression choosing a CUDA value (`"nccl" if torch.cuda.is_available()
          else "gloo"`, `torch.float16 if ... else torch.float32`) gains a Neuron arm in front,
          the original kept whole: `"neuron" if <the accelerator is Neuron> else "nccl" if
          torch.cuda.is_available() else "gloo"` (one edit; a backend moves with the file's
          process-group edits); device strings are NRN101's idiom, the same construction;
        - a test skip marker (`pytest.mark.skipif(not torch.cuda.is_available(), ...)`,
          `unittest.skipUnless`, `if not ...: pytest.skip()`): kept and reported. A CUDA test
          usually exercises CUDA behaviour; mark the device-agnostic ones for Neuron by hand;
        - a capability probe (`torch.cuda.is_available() and torch.cuda.get_device_capability()
          >= (8, 0)`, `... and torch.cuda.is_bf16_supported()`, `torch.version.cuda`): the whole
          probe stays CUDA (no operand rewritten), reported; in a choice of bf16 NRN115 puts
          Neuron in front of the whole probe instead;
        - a CPU fallback for a device the user asked for (`args.device if torch.cuda.is_available()
          else "cpu"`): the asked device passes on Neuron only when it is Neuron,
          `(args.device == "neuron" and <the accelerator is Neuron>) or torch.cuda.is_available()`,
          so an asked `"cuda"` (a documented `--device cuda`) still falls back to the CPU there;
        - `map_location="cpu" if not torch.cuda.is_available() else None`: left alone, it is right
          as it is (False on Neuron loads CUDA-saved checkpoints onto the host);
        - a CPU fallback (`if not torch.cuda.is_available(): cfg.init_device = "cpu"`) for a
          device this file gives no CUDA value (it comes from a config or another module): kept
          and reported, so Neuron falls back to the CPU as before rather than meeting a CUDA
          device nothing moved. The check and the code past an early exit
          (`if not torch.cuda.is_available(): return`) move together, or not at all;
        - a fallback of a setting that needs CUDA (`if not torch.cuda.is_available() and backend
          != "torch": backend = "torch"`): kept and reported, so Neuron falls back as the CPU does;
        - `torch.cuda.device_count()` counting a loop over the devices whose body enters
          `torch.cuda.device(i)` (kept for CUDA): kept and reported;
        - `torch.cuda.device_count()` in a function (or the module) that starts workers by
          index, itself or through a function of the file it calls (`mp.spawn(worker,
          nprocs=n)`, `torch.multiprocessing.start_processes`): kept and reported. Each Neuron worker needs a NeuronCore of its own, which the Neuron process
          group pins from `LOCAL_RANK`: torchrun sets it, a spawn does not;
        - a kept check that makes a tensor of a legacy CUDA type, else the same on the CPU, holds
          the device edits of its file: on Neuron it makes the CPU's, which the moved model meets;
        - the answer of a function whose name says CUDA (`def is_cuda_available(): return
          torch.cuda.is_available()`): kept and reported. Its callers read it as "CUDA is here"
          (an environment report's "CUDA available", a choice of CUDA values), so widened it
          would say yes on Neuron to code that then takes its CUDA path.

    Why on TorchNeuron:
        On Trainium `torch.cuda.is_available()` is False and `torch.cuda.device_count()` is 0, so
        every "use the GPU if there is one" branch silently falls back to the CPU. The
        `torch.accelerator` API sees the Neuron device and still works on CUDA machines. On a
        Mac it sees MPS, where the original code took its CPU path: so on the neuron target the
        test also asks that the accelerator be Neuron, and a device count is 0 elsewhere.

    Example:
        if torch.cuda.is_available():
            torch.cuda.synchronize()
        backend = "nccl" if torch.cuda.is_available() else "gloo"
        n_dev = torch.cuda.device_count()

    Use instead:
        if on_neuron() or torch.cuda.is_available():
            torch.cuda.synchronize()  # NRN111 makes it torch.accelerator.synchronize()
        backend = "neuron" if on_neuron() else "nccl" if torch.cuda.is_available() else "gloo"
        n_dev = torch.accelerator.device_count() if on_neuron() else torch.cuda.device_count()

        (`on_neuron()`: `hasattr(torch, "accelerator") and torch.accelerator.is_available() and
        torch.accelerator.current_accelerator().type == "neuron"`, defined once in the file.)

    Fix safety:
        Every edit is additive: CPU, MPS and CUDA hosts take the path they took before. The
        extended check is safe where the guarded code is device-agnostic after the migration
        (seeding, synchronisation, cache control, logging, a device chosen elsewhere); unsafe
        where it calls code the rule cannot judge on Neuron, after an `assert`, where the result
        is stored in a flag, returned or passed on. An `assert` in one branch of a device helper
        (`elif device: assert torch.cuda.is_available()`) whose function then chooses the device
        with a choice that gains a Neuron arm (`torch.device("cuda:0" if cuda else "cpu")`) is
        widened safely: Neuron passes it to that arm, every other host meets it as before. A
        check that stops the program where CUDA is missing (`if not torch.cuda.is_available(): raise ...` in `main()` or at the module
        level) holds every device edit of its file: they are made with its widening (unsafe), or
        wait, since no code of the program reaches Neuron before it. A Neuron arm is safe. A
        check tested with a flag that says a CUDA-only library imported (`has_apex = True` in a
        `try:` importing apex, `False` in its `except`) is kept: the two decide that library's
        path. The CUDA-only markers are a heuristic: review unsafe fixes. `device_count()` and
        `current_device()` are always unsafe: Neuron counts logical NeuronCores, and under
        `torchrun` with the `neuron` process group each process sees exactly one.

    Evidence:
        DOC: `torch.accelerator` code needs no change on Neuron. SRC: what the count and index mean.
        DOC and SRC: the Neuron process group sets `NEURON_RT_VISIBLE_CORES` from `LOCAL_RANK`
        (https://awsdocs-neuron.readthedocs-hosted.com/en/latest/neuron-runtime/api/nrt-env-var-reference.html).
        INF: which guarded code is device-agnostic.
    """

    id = "NRN110"
    targets = per_target.ALL  # torch.accelerator.* runs on every target
    name = "cuda-availability-check"
    safety = Safety.SAFE
    evidence = Evidence.DOC
    section = "review"
    effort = "low"
    references = (
        "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/index.html",
        "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/about-pytorch-neuron.html",
    )
    tokens = (b"cuda",)
    FUNCTIONS = frozenset(_TARGETS)
    examples = (
        Example(
            "import torch\nif torch.cuda.is_available():\n    torch.cuda.synchronize()\n",
            "import torch\nif hasattr(torch, \"accelerator\") and "
            "torch.accelerator.is_available() and torch.accelerator.current_accelerator().type "
            "== \"neuron\" or torch.cuda.is_available():\n    torch.cuda.synchronize()\n",
        ),
        Example(
            "import torch\ndtype = torch.float16 if torch.cuda.is_available() else torch.float32\n",
            "import torch\ndtype = torch.bfloat16 if hasattr(torch, \"accelerator\") and "
            "torch.accelerator.is_available() and "
            "torch.accelerator.current_accelerator().type == \"neuron\" else torch.float16 if "
            "torch.cuda.is_available() else torch.float32\n",
        ),
        Example(
            "import torch\nif torch.cuda.device_count() > 1:\n    model = torch.nn.DataParallel(model)\n",
            None,
        ),
        Example(
            "import pytest\nimport torch\n\n"
            "@pytest.mark.skipif(not torch.cuda.is_available(), reason=\"needs a GPU\")\n"
            "def test_kernel():\n    pass\n",
            None,
        ),
        # a device index: to `pipeline(device=...)` and the like, 0 is `cuda:0`
        Example("import torch\nindex = 0 if torch.cuda.is_available() else -1\n", None),
        Example(
            "from torch import cuda\nn = cuda.device_count()\n",
            "from torch import cuda\nimport torch\n\nn = torch.accelerator.device_count() if hasattr(torch, \"accelerator\") and "
            "torch.accelerator.is_available() and "
            "torch.accelerator.current_accelerator().type == \"neuron\" else cuda.device_count()\n",
        ),
    )

    def target_for(self, ref: CudaRef) -> str | None:
        return _TARGETS[ref.fn] + ("()" if ref.call is not None else "")

    def rewrite(self, ref: CudaRef, qualified: str, message: str, **kwargs: Any) -> None:
        """``is_available()`` becomes the target's test (``per_target.available``: on the neuron target
        "the accelerator is Neuron", false on a Mac's MPS); on the neuron target ``device_count()`` and
        ``current_device()`` ask the accelerator only where it is Neuron, CUDA's call kept elsewhere
        (a Mac's MPS device is no CUDA device either); on the other targets they are renamed."""
        neuron = per_target.target(self.ctx) == per_target.NEURON
        if ref.call is None or (ref.fn != "is_available" and not neuron):
            super().rewrite(ref, qualified, message, **kwargs)
            return
        if any(isinstance(anc, cst.FormattedString) for anc in self.ctx.ancestors()):
            # the test holds a string literal, which an f-string's quotes may not allow
            self.report(ref.outer, f"{message}; inside an f-string: rewrite it by hand", evidence=Evidence.INF)
            return
        if ref.fn != "is_available":
            # CUDA's count and index stay where the accelerator is not Neuron (a count is 0 without
            # CUDA, as before; `current_device_index` is new in torch 2.7)
            count, imports = qualified_expr(self.ctx, qualified)
            new, more = per_target.neuron_only(self.ctx, cst.Call(func=count, args=ref.call.args),
                                               ref.call.with_changes(lpar=(), rpar=()))
            self.fix(ref.call, new.with_changes(lpar=ref.call.lpar, rpar=ref.call.rpar) if ref.call.lpar else (
                new if isinstance(_call_parent(self.ctx, ref), (cst.Assign, cst.AnnAssign, cst.Return, cst.Arg)) else parenthesized(new)),
                message, imports=(*imports, *more), **kwargs)
            return
        available, imports = per_target.available(self.ctx)
        available, note = _only_if_asked(self.ctx, ref, available) if neuron else (available, "")
        message += note
        new = extended_check(available, ref.call) if neuron else available
        parent = _call_parent(self.ctx, ref)
        if ref.call.lpar:
            new = new.with_changes(lpar=ref.call.lpar, rpar=ref.call.rpar)
        elif not isinstance(parent, (cst.If, cst.While, cst.IfExp, cst.Assign, cst.AnnAssign, cst.Return, cst.Arg,
                                     cst.Expr, cst.Assert)) and not (neuron and isinstance(parent, cst.BooleanOperation)
                                                                     and isinstance(parent.operator, cst.Or)):
            new = parenthesized(new)  # an operand of `or` needs none around `<Neuron> or <check>`
        self.fix(ref.call, new, message, imports=(*imports, *unused_import(self.ctx, ref)), **kwargs)

    def on_ref(self, ref: CudaRef) -> None:
        if in_detection(self.ctx) or in_fallback_test(self.ctx) or _is_extension(self.ctx, ref) \
                or in_compile_setting(self.ctx):  # NRN301 gives a compile backend chosen by it a Neuron arm
            return  # `if torch.cuda.is_available(): device = "cuda"`: NRN107 puts Neuron in front;
            # `if device == "cuda" and not torch.cuda.is_available(): device = "cpu"` stays;
            # `<Neuron> or torch.cuda.is_available()` is what this rule writes
        target = _TARGETS[ref.fn]
        if ref.fn in ("is_available", "device_count") and _in_map_location(self.ctx):
            return
        answered = cpu_answer(self.ctx, ref.call, ref.fn)
        if answered is not None:
            self.fix(*answered, safety=Safety.UNSAFE, evidence=Evidence.INF)
            return
        probe = capability_probe(self.ctx, ref)
        if probe is not None:
            if bf16_choice(self.ctx) is None:  # else NRN115 puts Neuron in front of the whole probe
                self.report(ref.outer, probe_kept(ref, probe), evidence=Evidence.INF)
            return
        named = named_cuda_device(self.ctx, ref.outer) if ref.fn in ("is_available", "device_count") else None
        if named is not None:
            self.report(ref.outer, f"{spelled(ref)} checks a device this code already named CUDA (`{named}`): "
                                   "kept, that test is False on Neuron whatever the check says; give Neuron "
                                   "a path of its own by hand", evidence=Evidence.INF)
            return
        shown = f"`{target}()`" if ref.call is not None else f"`{target}`"
        if ref.call is not None and per_target.target(self.ctx) == per_target.NEURON:
            # per_target.available(): false on a Mac's MPS; or-ed with the original, CUDA keeps its path
            shown = f"`<the accelerator is Neuron> or {spelled(ref).strip('`')}`"
            if ref.fn != "is_available":
                shown = f"`{target}() if <the accelerator is Neuron> else {spelled(ref).strip('`')}`"
        head = f"{spelled(ref)} -> {shown}"
        if ref.fn == "current_device":
            self.rewrite(ref, target, f"{head}: under torchrun each process sees one NeuronCore, index 0",
                         safety=Safety.UNSAFE, evidence=Evidence.SRC)
            return
        fact = _fact_about_cuda(self.ctx, ref)
        if fact is not None:
            self.report(ref.outer, fact, evidence=Evidence.INF)
            return
        kind, where = classify(self.ctx, ref)
        if _answered_elsewhere(self.ctx, kind, where):
            return
        if kind is Context.SKIP:
            self.report(ref.outer, f"test skip marker on {spelled(ref)}: kept (CUDA tests usually test "
                                   "CUDA behaviour); enable device-agnostic tests on Neuron by hand",
                        evidence=Evidence.INF)
            return
        if kind is Context.IFEXP and ref.fn == "is_available" and _choice(self, ref, where):  # type: ignore[arg-type]
            return
        verdict, flag = _verdict(self.ctx, kind, where)
        kept = _kept(self.ctx, ref, kind, where, verdict)
        if kept is not None:
            self.report(ref.outer, kept, evidence=Evidence.INF, pins=verdict.pins)
            return
        if ref.fn == "device_count":
            self.rewrite(ref, target, f"{head}: {_count_detail(flag, verdict)}", safety=Safety.UNSAFE,
                         evidence=Evidence.SRC)
            return
        if flag:
            now = "is now true on Neuron" if ref.call is not None else "now checks for any accelerator"
            handed = handed_on_flag(self.ctx, where) if kind is Context.FLAG and where is not None else None
            there = f" here and {handed}" if handed else ""
            self.rewrite(ref, target, f"{head}: {flag} {now}; check what it switches on{there}",
                         safety=Safety.UNSAFE, evidence=Evidence.INF)
        elif verdict.opaque is not None:
            self.rewrite(ref, target, f"{head}: check that the guarded code ({verdict.opaque}) runs on Neuron",
                         safety=Safety.UNSAFE, evidence=Evidence.INF, pins=_widened_pins(kind, verdict))
        elif kind is Context.ASSERT:  # its pins are made with it (see _choice_follows)
            self.rewrite(ref, target, f"{head}: {_ASSERT_WIDENED}", pins=verdict.pins)
        else:
            self.rewrite(ref, target, f"{head}: the guarded code is device-agnostic once migrated")


def _fact_about_cuda(ctx: FileContext, ref: CudaRef) -> str | None:
    """Why the reference stays, where it is a fact about CUDA: printed or logged, or the answer of
    a function whose name says CUDA (:func:`cuda_named_answer`)."""
    if printed(ctx, ref):
        return (f"{spelled(ref)} is printed or logged as a fact about CUDA: kept (a Neuron check would print False "
                "on a CUDA host under a CUDA label); report the Neuron device by hand if wanted")
    named = cuda_named_answer(ctx, ref) if ref.fn in ("is_available", "device_count") else None
    if named is None:
        return None
    return (f"{spelled(ref)} is what `{named}()` answers, and its name says CUDA: kept (widened, it would answer yes "
            "on Neuron to callers that then take their CUDA path or report CUDA); give Neuron a check of its own "
            "where they choose")


def _answered_elsewhere(ctx: FileContext, kind: Context, where: cst.CSTNode | None) -> bool:
    """Nothing for this rule to do: NRN107 / NRN101 put a Neuron branch in front of the choices
    that test the stored flag; or the guarded code only seeds CUDA with what ``torch.manual_seed``
    beside it gave Neuron already."""
    if kind is Context.FLAG and where is not None:
        return feeds_detection(ctx, where) or _feeds_choices(ctx, where)
    return kind is Context.IF and isinstance(where, cst.If) and _seeds_what_torch_seeded(ctx, where)


def _seeds_what_torch_seeded(ctx: FileContext, guard: cst.If) -> bool:
    """``if torch.cuda.is_available(): torch.cuda.manual_seed_all(s)`` beside ``torch.manual_seed(s)``,
    with no ``else``: widened, the check would only run a CUDA call that does nothing on Neuron."""
    if guard.orelse is not None or not isinstance(guard.body, cst.IndentedBlock):
        return False
    smalls = [small for line in guard.body.body if isinstance(line, cst.SimpleStatementLine) for small in line.body]
    return len(smalls) == len(guard.body.body) and all(
        isinstance(small, cst.Expr) and isinstance(small.value, cst.Call)
        and hosts.seeded_by_torch(ctx, small.value, ctx.ancestors()) for small in smalls)


def _feeds_choices(ctx: FileContext, stored: cst.CSTNode) -> bool:
    """Every test of the flag ``stored`` (``has_gpu = torch.cuda.is_available()``) is a device
    choice that gains Neuron in front (``"cuda" if has_gpu else "cpu"``, :func:`flag_side`): the
    flag stays CUDA's, and Neuron has its path without it."""
    uses = flag_uses(ctx, assigned_names(stored), stored)
    return bool(uses) and all(isinstance(use, cst.IfExp) and (
        idiom_branch(ctx, use) is not None or (rebound_check(ctx, use) or (None, False))[1]) for use in uses)


def _in_map_location(ctx: FileContext) -> bool:
    """``map_location="cpu" if not torch.cuda.is_available() else None``: false on Neuron gives
    ``"cpu"``, which keeps loading CUDA-saved checkpoints onto the host: right as it is."""
    return any(isinstance(anc, cst.Arg) and anc.keyword is not None and anc.keyword.value == "map_location"
               for anc in ctx.ancestors())


def _call_parent(ctx: FileContext, ref: CudaRef) -> cst.CSTNode | None:
    ancestors = ctx.ancestors()
    for anc in ancestors:
        if anc is ref.call:
            return next(ancestors, None)
    return None


def _asked_device(ctx: FileContext, ref: CudaRef) -> tuple[cst.BaseExpression, cst.SimpleString] | None:
    """The device the user asked for (``args.device``, ``device``) and the ``"cpu"`` it falls back
    to, when the check is the test of a fallback to the CPU for it (``args.device if torch.cuda.is_available() else "cpu"``): a check
    extended to Neuron would let any asked device through there, a documented ``--device cuda``
    included; None for any other check."""
    child: cst.CSTNode | None = None
    for anc in ctx.ancestors():
        if child is None:  # still inside the reference itself
            child = anc if anc is ref.outer else None
            continue
        if isinstance(anc, cst.IfExp):
            asked, cpu = anc.body, anc.orelse
            if anc.test is not child or not isinstance(cpu, cst.SimpleString) or string_value(cpu) != "cpu":
                return None
            return (asked, cpu) if isinstance(asked, (cst.Name, cst.Attribute)) and dotted_name(asked) else None
        if not isinstance(anc, cst.BooleanOperation):
            return None
        child = anc
    return None


def _only_if_asked(ctx: FileContext, ref: CudaRef, available: cst.BaseExpression) -> tuple[cst.BaseExpression, str]:
    """In a CPU fallback for an asked device (:func:`_asked_device`), ``(<device> == "neuron" and
    <Neuron is here>)``: the asked device passes on Neuron only when it is Neuron; and what that
    means, for the message. Elsewhere ``available`` as it is."""
    asked = _asked_device(ctx, ref)
    if asked is None:
        return available, ""
    device, cpu = asked
    is_neuron = cst.Comparison(device.with_changes(lpar=(), rpar=()),
                               [cst.ComparisonTarget(cst.Equal(), string_like(cpu, "neuron"))])
    test = cst.BooleanOperation(left=is_neuron, operator=cst.And(), right=available,
                                lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
    return test, (f"; the device asked for (`{dotted_name(device)}`) passes on Neuron only when it is "
                  '`"neuron"`: an asked `"cuda"` falls back to the CPU there, as before')


def _is_extension(ctx: FileContext, ref: CudaRef) -> bool:
    """``ref`` is the kept check of ``<Neuron is here> or torch.cuda.is_available()`` (written by
    :func:`extended_check` in an earlier run)."""
    parent = ctx.parent
    if isinstance(parent, cst.Call) and parent is ref.call:
        parent = next((a for a in ctx.ancestors() if a is not ref.call and a is not ref.node), None)
    if not (isinstance(parent, cst.BooleanOperation) and isinstance(parent.operator, cst.Or)
            and parent.right is ref.outer):
        return False
    left = parent.left
    while isinstance(left, cst.BooleanOperation) and isinstance(left.operator, cst.Or) and not left.lpar:
        left = left.right  # `x or <Neuron> or <check>`: the operand just before the check
    if isinstance(left, cst.BooleanOperation) and isinstance(left.operator, cst.And) and left.lpar \
            and not says_only_neuron(left):
        left = left.right  # `(<asked> == "neuron" and <Neuron>) or <check>` (see _asked_device)
    return says_only_neuron(left)


def _choice(rule: CudaAvailabilityCheck, ref: CudaRef, choice: cst.IfExp) -> bool:
    """A conditional expression choosing a CUDA value: done here (True), or left to the device
    idiom (``"cuda" if torch.cuda.is_available() else "cpu"``: NRN101 gives it its Neuron arm).
    On the neuron target any other CUDA value (``torch.float16 if torch.cuda.is_available() else
    ...``, ``"nccl" if ... else "gloo"``) gains a Neuron arm in front, the original kept whole for
    CUDA and the other hosts: one edit (a process-group backend moves with its process group)."""
    if branches_mention_cuda(choice):
        return True
    if {_index(choice.body), _index(choice.orelse)} == {"index", "-1"}:
        rule.report(ref.outer, f"{spelled(ref)} chooses a device index (`{short(choice, 50)}`): kept, an index "
                               "names a CUDA device to the APIs that take one (`pipeline(device=0)` is "
                               "`cuda:0`); give Neuron its device by hand", evidence=Evidence.INF)
        return True
    arm = value_choice(rule.ctx, choice) if ref.call is not None else None
    if arm is None:
        return False  # no CUDA value: the check is extended
    if per_target.target(rule.ctx) != per_target.NEURON:
        # "an accelerator is here" would hand the CUDA value to MPS (or the CPU target's host)
        rule.report(ref.outer, f"{spelled(ref)} chooses a CUDA value (`{short(choice, 50)}`): kept, every host "
                               "keeps its choice; choose the current device's value by hand", evidence=Evidence.INF)
        return True
    if arm.replacement is None:
        rule.report(ref.outer, f"{spelled(ref)} chooses a CUDA value (`{short(choice, 50)}`) and {arm.why}: kept; "
                               "give Neuron an arm of its own by hand", evidence=Evidence.INF)
        return True
    group = choice_group(rule.ctx, choice, None)
    rule.fix(choice, arm.replacement, f"`{short(choice, 60)}` -> `{short(arm.replacement.body)} if <the accelerator "
                                      "is Neuron> else <the original choice>`: a Neuron arm in front, CUDA and "
                                      "the other hosts keep theirs", imports=arm.imports, group=group)
    return True


def _index(expr: cst.BaseExpression) -> str | None:
    """``"-1"`` for ``-1`` or ``"cpu"`` (no device, in the convention of the APIs that take an
    index), ``"index"`` for a non-negative integer literal or a string of them (``"0"``, ``"0,1"``:
    CUDA devices by number): with both arms, a device index (a count, ``4 if ... else 0``, has no
    ``-1``)."""
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Minus):
        return "-1" if isinstance(expr.expression, cst.Integer) and expr.expression.value == "1" else None
    text = string_value(expr) if isinstance(expr, cst.SimpleString) else None
    if text is not None:  # the string form (`select_device("0" if ... else "cpu")`): "cpu" is no device index
        return "-1" if text == "cpu" else "index" if text and text.replace(",", "").isdigit() else None
    return "index" if isinstance(expr, cst.Integer) else None


def _kept(ctx: FileContext, ref: CudaRef, kind: Context, where: cst.CSTNode | None, verdict: Verdict) -> str | None:
    """Why the check stays as it is, if it does: it counts the workers a spawn starts, it guards a
    CUDA-only path (a Neuron-aware check would switch it on), or code naming a CUDA value the
    placement rules move to the target's device (an extended check would send CUDA there too; "an
    accelerator is here" would send MPS to CUDA's value)."""
    spawn = worker_spawn(ctx) if ref.fn == "device_count" else None
    if spawn is not None:
        return (f"{spelled(ref)} counts devices for the workers `{short(spawn.func)}` starts: kept, as each Neuron worker needs a "
                "NeuronCore of its own, which the Neuron process group pins by `LOCAL_RANK`, set by torchrun and "
                "not by a spawn; launch the workers with torchrun there (one per NeuronCore)")
    if verdict.marker is not None:
        return (f"{spelled(ref)} guards a CUDA-only path ({verdict.marker}): kept, a Neuron-aware check would "
                "switch it on; migrate that path first")
    if kind is Context.IF and isinstance(where, cst.If) and _advice_only(ctx, where):
        return (f"{spelled(ref)} guards only a message for CUDA hosts (advice on CUDA kernels, GPU details): "
                "kept, it does not apply to Neuron; say what Neuron should hear by hand if anything")
    settled = _settles_tested(ctx, where) if kind is Context.IF and isinstance(where, cst.If) else None
    if settled is not None:
        return (f"{spelled(ref)} decides a fallback of `{settled}` for hosts without CUDA (`if not <CUDA> and "
                f"<{settled} needs it>: {settled} = ...`): kept, so Neuron falls back as the CPU does; give Neuron "
                "its own value by hand if it has one")
    fallback = unmoved_fallback(ctx, where) if kind is Context.IF and isinstance(where, cst.If) else None
    if fallback is not None and ref.fn == "is_available":
        return (f"{spelled(ref)} decides a CPU fallback for `{fallback}`, whose CUDA value stays (set elsewhere, a "
                "config or another module, or kept for a library that rejects \"neuron\"): kept, so Neuron falls "
                f"back to the CPU here as before; give Neuron its own value of `{fallback}` by hand")
    value = _cuda_value(ctx, kind, where) if ref.fn == "is_available" else None
    if value is None:
        return None
    return (f"{spelled(ref)} guards code that names CUDA (`{value}`), which the migration would move to Neuron: "
            "kept, as extending the check to Neuron would take CUDA off its path; give Neuron a branch of its "
            "own (`if <the accelerator is Neuron>: ... elif torch.cuda.is_available(): ...`) by hand")


#: calls that only say something: a warning, a print, a logger's message
_MESSAGE_CALLS = frozenset({"warnings.warn", "print", "logging.info", "logging.warning", "logging.debug"})
_LOGGER_METHODS = frozenset({"info", "warning", "warn", "debug"})


def _advice_only(ctx: FileContext, guard: cst.If) -> bool:
    """``if torch.cuda.is_available(): warnings.warn("...")`` with no ``else``: the body, run where
    CUDA is, only says something (a message for CUDA hosts); widened, it would say it on Neuron."""
    if guard.orelse is not None or available_polarities(ctx, guard.test) != {False} or not isinstance(
            guard.body, cst.IndentedBlock) or not all(isinstance(s, cst.SimpleStatementLine) for s in guard.body.body):
        return False
    smalls = [small for stmt in guard.body.body if isinstance(stmt, cst.SimpleStatementLine) for small in stmt.body]
    return bool(smalls) and all(
        isinstance(small, cst.Expr) and isinstance(small.value, cst.Call) and (
            ctx.qualify(small.value.func) in _MESSAGE_CALLS or last_name(small.value.func) == "print"
            or isinstance(small.value.func, cst.Attribute) and small.value.func.attr.value in _LOGGER_METHODS
            and "log" in cst.Module([]).code_for_node(small.value.func.value).lower())
        for small in smalls)


def _cuda_value(ctx: FileContext, kind: Context, where: cst.CSTNode | None) -> str | None:
    """A CUDA value (device string, ``.cuda()``, ``"nccl"``) in the branches a check decides, or in
    the uses of the flag it is stored in: the placement rules move it to Neuron, so a check
    extended to Neuron would send CUDA there too (``_device_model.unserved_cuda_value``)."""
    if kind is Context.IF and isinstance(where, (cst.If, cst.While)):
        return unserved_cuda_value(ctx, [where.body, where.orelse])
    if kind is Context.FLAG and where is not None:
        # the flag is handed on to code of the project (`predict(model, x, use_cuda)`), or reads
        # its own earlier value: no Neuron branch in front of its tests would reach that code, so
        # the flag itself widens, and the plain `.cuda()` moves it guards become host-aware with it
        return unserved_cuda_value(ctx, list(flag_uses(ctx, assigned_names(where), where)),
                                   aware=handed_on_flag(ctx, where) is not None or reads_itself(where))
    return None


#: the edit group of the device edits beside an ``assert torch.cuda.is_available()`` kept for CUDA
ASSERTED_CUDA = "devices past an assert that CUDA is available"


def _verdict(ctx: FileContext, kind: Context, where: cst.CSTNode | None) -> tuple[Verdict, str]:
    """What the code a check decides holds (:func:`scan`), by where the check sits; and, for a
    stored check, the names that hold it (``"`use_gpu`"``), else ``""``."""
    if kind is Context.IFEXP:
        # widened, the check takes Neuron to the arm CUDA takes; the other arm (`... else
        # torch.float16`) is what Neuron ran before, and leaves no code of its own on Neuron
        side = available_side(ctx, where)  # type: ignore[arg-type]
        return scan(ctx, [where] if side is None else [where.test, getattr(where, side)]), ""  # type: ignore[union-attr]
    if kind is Context.IF:
        # the switches it sets are read elsewhere: what they switch on is what it decides too
        switches = flag_uses(ctx, switched_flags(where), where)  # type: ignore[arg-type]
        verdict = scan(ctx, [*guarded_code(ctx, where), *switches])  # type: ignore[arg-type]
        if verdict.marker is not None and _makes_data_either_way(ctx, where):  # type: ignore[arg-type]
            verdict.pins = verdict.pins or DATA_CHOICE
        if _entry_requires_cuda(ctx, where):  # type: ignore[arg-type]
            verdict.pins = verdict.pins or REQUIRED_CUDA
        return verdict, ""
    if kind is Context.FLAG:
        names = assigned_names(where)  # type: ignore[arg-type]
        return (scan(ctx, [where, *flag_uses(ctx, names, where)]),  # type: ignore[arg-type]
                ", ".join(f"`{n}`" for n in names) or "the stored value")
    if kind is Context.ASSERT:
        program = not any(isinstance(anc, (cst.FunctionDef, cst.Lambda)) for anc in ctx.ancestors())
        verdict = scan(ctx, guarded_after(ctx, where), rest_of_program=program)  # type: ignore[arg-type]
        # the assert's other conditions decide too (`assert has_apex and torch.cuda.is_available()`)
        verdict.marker = verdict.marker or flag_marker(ctx, where.test)  # type: ignore[union-attr]
        # kept, an assert in the body of its function (or at the module level: the whole program)
        # stops Neuron before any device edit there could run: they wait for it
        opens_body = isinstance(enclosing_body(list(ctx.ancestors()))[1], cst.SimpleStatementLine)
        if opens_body or verdict.opaque or verdict.marker or not _choice_follows(ctx):
            verdict.opaque = verdict.opaque or "the code after the assert"
        verdict.pins = verdict.pins or (ASSERTED_CUDA if opens_body else BRANCH_ASSERT)  # a branch: its block waits
        return verdict, ""
    if kind is Context.OTHER and isinstance(where, cst.For):  # a loop over the devices counted
        verdict = scan(ctx, [where.body])
        entered = next((found for node in iter_syntax(where.body) if isinstance(node, cst.With)
                        and (found := cuda_device_context(ctx, node))), None)
        verdict.marker = verdict.marker or (f"`{entered}`, kept for CUDA" if entered else None)
        return verdict, ""
    return Verdict(opaque="the value is used elsewhere"), ""


#: why an assert widened before its function's device choice is safe (:func:`_choice_follows`)
_ASSERT_WIDENED = "the function then chooses the device, Neuron first; every other host meets the assert as before"


def _count_detail(flag: str, verdict: Verdict) -> str:
    """What a device count rewritten to the accelerator's says: what it counts on Neuron, and what
    to check of what it decides (the flag it is stored in, or the code it guards)."""
    detail = "counts visible NeuronCores (1 per process under torchrun)"
    if flag:
        return f"{detail}; check what {flag} decides"
    return f"{detail}; check what it decides ({verdict.opaque})" if verdict.opaque else detail


def _choice_follows(ctx: FileContext) -> bool:
    """The assert checks the device a branch was asked for (``elif device: assert
    torch.cuda.is_available()``), and its function then chooses the device with a choice that
    gains a Neuron arm (``torch.device("cuda:0" if cuda else "cpu")``): widened, the assert lets
    Neuron through to that arm, and every other host meets the assert it met before."""
    for anc in ctx.ancestors():
        if isinstance(anc, (cst.FunctionDef, cst.ClassDef, cst.Lambda, cst.Module)):
            return False
        rest = following_statements(ctx, anc) if isinstance(anc, cst.If) else []
        if rest:
            return any(isinstance(node, cst.IfExp) and idiom_branch(ctx, node) is not None
                       for stmt in rest for node in iter_syntax(stmt))
    return False


def _widened_pins(kind: Context, verdict: Verdict) -> str | None:
    """The pins a widened check takes with it: an assert's, or a program's that stops where CUDA
    is missing (the device edits it holds are made with the widening)."""
    return verdict.pins if kind is Context.ASSERT or verdict.pins == REQUIRED_CUDA else None


def _entry_requires_cuda(ctx: FileContext, node: cst.If) -> bool:
    """``node`` stops the program where CUDA is missing (``if not torch.cuda.is_available(): raise
    ...``) at the module level or in the body of its ``main()``: no code of the file reaches Neuron
    before it lets Neuron through, so the file's device edits are made with it, or wait."""
    if not (isinstance(node, cst.If) and available_polarities(ctx, node.test) == {True}
            and ends_early(node.body, stops_only=True)):
        return False
    functions = [anc for anc in ctx.ancestors() if isinstance(anc, (cst.FunctionDef, cst.Lambda, cst.ClassDef))]
    if not functions:
        return True
    main = functions[0]
    return len(functions) == 1 and isinstance(main, cst.FunctionDef) and main.name.value == "main" \
        and isinstance(main.body, cst.IndentedBlock) and node in main.body.body


def _makes_data_either_way(ctx: FileContext, node: cst.If) -> bool:
    """``node`` makes a tensor of a legacy CUDA type (``torch.cuda.FloatTensor(n)``) in its body and
    assigns the same name in its ``else``: a choice of where data is made, CUDA or the CPU."""
    if not isinstance(node, cst.If) or not isinstance(node.orelse, cst.Else):
        return False
    if not _assigned_in(node.body) & _assigned_in(node.orelse.body):
        return False
    return any(isinstance(n, cst.Call) and LEGACY_CUDA_TYPE.match(ctx.qualify(n.func) or "") is not None
               for n in iter_syntax(node.body))


def _assigned_in(block: cst.BaseSuite) -> set[str]:
    return {name for line in iter_statements(getattr(block, "body", ())) if isinstance(line, cst.SimpleStatementLine)
            for small in line.body for name in assigned_names(small)}



def _settles_tested(ctx: FileContext, node: cst.If) -> str | None:
    """``if not torch.cuda.is_available() and backend != "torch": backend = "torch"``: a test
    that CUDA is missing, joined by ``and`` to a condition on a name the body then sets, a fallback
    of that setting (a kernel backend, an implementation) for hosts without CUDA. The name, or None."""
    test = node.test
    if available_polarities(ctx, test) != {True} or not isinstance(test, cst.BooleanOperation) \
            or not isinstance(test.operator, cst.And):
        return None
    read = {dotted_name(n) for n in iter_syntax(test) if isinstance(n, (cst.Name, cst.Attribute))} - {None}
    return next((name for name in sorted(_assigned_in(node.body)) if name in read), None)
