"""Issue 8: ``--target neuron`` output differs from the ``cpu`` and ``accelerator`` outputs only in
the device choices.

For every whole-script fixture of fixtures/pipeline/, the three rewritten versions (all rules,
unsafe fixes on, as ``neuronize fix --unsafe-fixes --target T`` writes them) are compared line by
line after one normalisation, :func:`normalise`, applied alike to both sides. What it erases is the
exact criterion of "a device choice":

1. device values: ``"neuron"``, ``"cpu"``, the accelerator device
   (``torch.accelerator.current_accelerator().type if torch.accelerator.is_available() else "cpu"``,
   with or without parentheses, or just ``...current_accelerator().type``), and the accelerator's
   index-keeping form ``<CUDA device> if torch.cuda.is_available() else <device>``;
2. process-group and compile backends: ``"gloo"``, ``"inductor"``,
   ``torch.distributed.get_default_backend_for_device(<device>)`` and the compile-backend choice
   ``"neuron" if ... current_accelerator().type == "neuron" else "inductor"``; a ``backend=``
   argument of ``torch.compile`` may be absent (``--target cpu`` keeps PyTorch's default);
3. a conditional whose branches are both device values (``"cpu" if "cpu" in device else "cpu"``)
   is one device value;
4. runtime namespaces: ``torch.neuron.``, ``torch_neuronx.``, ``torch.accelerator.``,
   ``torch.get_device_module().``, ``torch.cpu.``, ``torch.cuda.`` name the same call;
5. the ``import torch_neuronx`` line (Neuron only: it registers the device and backend);
6. the accelerator's device named once per scope (``neuronize/writing/device_name.py``): a name the
   accelerator output assigns the device to reads as a device value, and ``name = <device>``
   lines are left out (on both sides, with the names found in the accelerator output).

7. the additive forms of issue 21, where the neuron target keeps the original next to its Neuron
   choice (:data:`ADDITIVE`, :func:`_drop_additive_blocks`): ``<D> if <Neuron> else <the
   original>`` is ``<D>``; ``x.device.type in ("cuda", <D>)`` is ``== <D>`` (``not in`` is
   ``!= <D>``); an ``else:`` block
   repeating the statement of its ``if`` goes; and NRN107's Neuron branches (``elif device ==
   <D>:`` in a dispatch, ``if <Neuron>: <device> = <D>`` in front of a detection) go; a bf16
   choice's ``<Neuron> or (<the original test>)`` is the original test; a Neuron arm in front of a
   choice by a flag (``x.to(<D>) if <Neuron> else x.cuda() if use_cuda else x``) goes; a load
   location Neuron alone is given where the original passed none (``map_location=<D> if <Neuron>
   else None``) is ``map_location=<D>``.
8. what a host-aware ``torch.compile`` keeps for the other hosts' Inductor (NRN301, NRN302),
   where ``--target cpu`` compiles for the CPU alone (:data:`HOST_AWARE_COMPILE`): a CUDA
   ``mode=`` (Neuron ignores it and uses the default mode; cpu drops it), ``options=None if
   <Neuron> else {...}`` (no options on Neuron; cpu drops Inductor's), ``dynamic=False if <Neuron>
   else True`` and ``dynamic=False`` (cpu adds it where the call says nothing; a host-aware call
   says nothing, which the Neuron docs allow as well); likewise DDP's and ``dist.barrier``'s
   ``device_ids=None if <Neuron> else [rank]`` (NRN403 keeps the CUDA box's device ids where the
   other targets drop them), and Hugging Face's ``fp16=not <Neuron>`` and ``half_precision_backend=
   "auto" if <Neuron> else "apex"`` (NRN501 keeps the CUDA box's fp16 where the other targets write
   ``bf16=True``, which its ``bf16=<Neuron>`` becomes): these arguments are left out, and a line
   left empty by that goes.
9. against ``--target cpu`` only: a ``"cuda"`` string is a device value, ``"nccl"`` a backend
   value, and ``.cuda()`` a move to the device (``.to(<D>)``). The CPU target moves
   every CUDA path to the CPU, the branches the neuron target keeps for CUDA (a dispatch's CUDA
   branch, a detection, a default a dispatch would reject) included; a list of device values
   holds each once (the CPU target adds no `"cpu"` next to a `"cpu"`).
10. the ``hasattr(torch, "accelerator") and`` in front of the neuron target's written-out Neuron
   test (torch before 2.6 has no ``torch.accelerator``; the other targets call it outside any
   test, so they need 2.6 anyway and write no such guard).

Justified exceptions (:data:`EXCEPTIONS`), also erased alike on both sides, each with its reason:
CUDA-only statements that ``--target accelerator`` keeps under ``if torch.cuda.is_available():``
while the other targets delete them (the guard is unwrapped, and the statements below go), and
requirements that the device be there, which ``--target cpu`` deletes. A CUDA kernel context
(``with sdpa_kernel(...)``, ``with torch.backends.cudnn.flags(...)``) is unwrapped alike: the
neuron target keeps it for the CUDA box (harmless on Neuron), the others unwrap it.
Comments are left out on both sides: a deleted statement takes its own comments with it, so
which comments remain follows what each target deletes.

After that the two outputs must be identical, line for line. The test prints the first line pair
that is not.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from neuronize.analysis.context import Options
from neuronize.analysis.engine import run_source
from neuronize.registry import all_rules

PIPELINE = Path(__file__).resolve().parent.parent / "fixtures" / "pipeline"
#: scripts whose edits differ between targets by design, with why
TARGET_SPECIFIC = {
    # an assert before a device choice made by a stored flag widens on neuron only, where that
    # choice gains Neuron in front (see flag_feeds_device_choice); the other targets keep both
    "asserted_request_then_choice": "a flag's device choice and its assert gain Neuron on neuron only",
    # a device chosen by a flag stored from the CUDA check gains Neuron in front on neuron only; the
    # other targets rewrite the check itself, which the flag hides
    "flag_feeds_device_choice": "a flag's device choice gains Neuron on neuron only",
    # a flag stored from the CUDA check and handed on to code of the project widens on neuron only,
    # where the `.cuda()` moves it guards become host-aware; the accelerator target keeps the flag
    "flag_handed_on": "a handed-on flag widens on neuron only",
    "flag_handed_on_safe": "a handed-on flag widens on neuron only",
    # the static KV cache on Neuron only (neuron) waits with the device edits beside a model its
    # loader places on GPUs; cpu's static cache names no device and is made
    "loader_placed_model_handed_on": "the host-aware static cache waits with the held device edits on neuron only",
    "loader_placed_model_on_instance": "the host-aware static cache waits with the held device edits on neuron only",
    "model_placed_by_loader": "the host-aware static cache waits with the held device edits on neuron only",
    "model_placed_by_loader_script": "the host-aware static cache waits with the held device edits on neuron only",
    "quantized_loader": "the host-aware static cache waits with the held device edits on neuron only",
    # likewise the Trainer's bf16 on Neuron only; cpu's `bf16=True` names no device and is made
    "trainer_precision_beside_a_quantized_model": "the host-aware Trainer precision waits with the held device "
                                                  "edits on neuron only",
    # a CUDA stream becomes a Neuron stream beside CUDA's on neuron, the current device's module's
    # stream on cpu and accelerator (`torch.get_device_module().stream`), in one statement or two
    "work_on_a_cuda_stream": "stream spelled per target",
    # a decorator's compile gains a backend on neuron (Inductor stays on cpu: `@torch.compile()`), and
    # the accelerator target parenthesises the peak-memory read it makes host-neutral
    "asserted_cuda_program": "compile decorator and memory read differ in form",
    # a device enum gains a Neuron member (an unsafe fix) on neuron only; the other targets have
    # no member of their own to add
    "device_enum_labels": "enum member on neuron only",
    # a CUDA string no rule migrates holds the moves beside it where they name one device (neuron,
    # cpu); the accelerator target's moves keep the CUDA box's device, so nothing waits there
    "handed_device": "held moves on neuron and cpu only",
    # likewise, a CUDA string left in the file holds a process group moved outright (neuron, cpu)
    "process_group_beside_cuda_setting": "held process group on neuron and cpu only",
    "leftover_claims": "held process group on neuron and cpu only",
    "script_keeps_cuda_for_its_functions": "held moves on neuron and cpu only",
    # the rank's CUDA device waits with its process group on neuron; the other targets move the
    # detection's index in their own way
    "process_group_with_rank_device": "a rank's device index differs per target",
    # a dispatch over hosts whose `else` is CUDA's: neuron gives Neuron its value beside CUDA's
    # there; the accelerator target keeps a dispatch's branches for the devices they serve
    "library_host_helpers": "Neuron beside CUDA in a dispatch's else on neuron only",
    # the device name has a Neuron rewrite (torch_neuronx) on neuron only; the other targets report it
    "guard_waits_for_arm_fix": "device name rewritten on neuron only",
    # a branch kept for CUDA on neuron and accelerator; the CPU target moves every CUDA path to the CPU
    "process_group_in_kept_branch": "NCCL kept in a CUDA branch except on cpu",
    # a device with a rank index is written host-aware on neuron (CUDA keeps its index); the other
    # targets write their own device
    "autocast_in_device_type_arm": "indexed CUDA device kept beside Neuron on neuron only",
    # every file keeps its CUDA hosts on neuron: a `.cuda(<rank>)` move keeps its index beside
    # Neuron's (`model.to("neuron") if <Neuron> else model.cuda(<rank>)`) and `backend="nccl"` stays
    # for CUDA (`"neuron" if <Neuron> else "nccl"`); the other targets move both outright
    "autocast_beside_process_group": "indexed CUDA move and NCCL backend kept beside Neuron on neuron only",
    "placements_beside_main_block_process_group": "indexed CUDA move and NCCL backend kept beside Neuron on neuron only",
    "placements_wait_in_their_branch": "indexed CUDA moves and NCCL backend kept beside Neuron on neuron only",
    # a class whose constructor asks CUDA for a stream: neuron writes a Neuron stream beside it (an
    # unsafe fix), so the class and the code that makes its objects move; the other targets report
    # the stream, and that code waits with it
    "maker_of_held_class": "moves beside a held class's maker on neuron only",
    # a flag stored from a check that reads itself widens on neuron, where the `.cuda()` moves it
    # guards become host-aware; the other targets move outright, so its check stays as the moves
    # it guards do (as for a flag handed on: `_CudaValueFinder`'s `aware`)
    "flag_updated_from_itself": "flag widened beside host-aware moves on neuron only",
    # as in autocast_beside_process_group: `.cuda(rank)` keeps its index beside Neuron's on neuron
    "gloo_group_beside_ddp": "indexed CUDA move kept beside Neuron on neuron only",
    # as in process_group_in_kept_branch: the `else`/`elif` side of `if not torch.cuda.is_available():`
    # stays CUDA's except on cpu, and an indexed move outside it keeps its index beside Neuron's
    "cpu_branch_first": "CUDA side of a kept negated check except on cpu; indexed move on neuron only",
    # a negated detection (`if not torch.cuda.is_available(): cpu else: cuda`): neuron puts a Neuron
    # branch in front of the whole chain, cpu moves its CUDA branch to the CPU (two CPU branches)
    "cpu_first_detection": "Neuron branch in front of a negated detection on neuron only",
}
SCRIPTS = sorted(p.name[: -len(".before.py")] for p in PIPELINE.glob("*.before.py")
                 if "_target-" not in p.name and p.name[: -len(".before.py")] not in TARGET_SPECIFIC)
OTHER_TARGETS = ("cpu", "accelerator")

D = "<D>"  # a device or backend value
RT = "<RT>"  # a runtime namespace

_ACC = (r'torch\.accelerator\.current_accelerator\(\)\.type if torch\.accelerator\.is_available\(\) '
        r'else (?:"cpu"|"cuda"|\'cuda\')')
#: (pattern, replacement), applied in order, the last group until nothing changes
_DEVICE_SUBS: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"""hasattr\(torch, (["'])accelerator\1\) and """), ""),  # item 10
    (re.compile(r'"neuron" if torch\.accelerator\.is_available\(\) and torch\.accelerator\.current_accelerator\(\)'
                r'\.type == "neuron" else (?:"inductor"|"cuda"|\'cuda\')'), D),
    (re.compile(r"(?<![\w)\]])\(" + _ACC + r"\)|" + _ACC), D),
    (re.compile(r"torch\.accelerator\.current_accelerator\(\)\.type"), D),
    (re.compile(r"""(?:f?"cuda:\{[^}]*\}"|"cuda:\d+") if torch\.cuda\.is_available\(\) else """ + re.escape(D)), D),
    (re.compile(r"""(["'])(?:neuron|cpu|gloo|inductor)\1"""), D),
    (re.compile(r"torch\.distributed\.get_default_backend_for_device\(" + re.escape(D) + r"\)"), D),
]
_FOLD = [
    # autocast's device through a named device: `<name> if torch.accelerator.is_available() else "cuda"`
    (re.compile(re.escape(D) + r" if " + re.escape(RT) + r"is_available\(\) else (['\"])cuda\1"), D),
    # a load location Neuron alone is given, where the original passed none (item 7)
    (re.compile(r"map_location=" + re.escape(D) + r" if " + re.escape(RT) + r"is_available\(\) else None"),
     "map_location=" + D),
    (re.compile(re.escape(D) + r" if (?:[^,()]|\(\))*? else " + re.escape(D)), D),
    (re.compile(r"(?<![\w)\]])\(" + re.escape(D) + r"\)"), D),
]
_RUNTIME = re.compile(r"\b(?:torch\.neuron|torch_neuronx|torch\.accelerator|torch\.get_device_module\(\)|torch\.cpu|"
                      r"torch\.cuda)\.|\btorch\.(?=(?:Stream|Event)\b)")
#: the neuron target's "the accelerator is Neuron" (``_target.available``): on the others, "an
#: accelerator is here"; a device count on the neuron target counts only a Neuron accelerator
_NEURON_CHECK = [
    (re.compile(r" and (?:" + re.escape(RT) + r"current_accelerator\(\)\.type|" + re.escape(D) + r") == "
                + re.escape(D)), ""),
    (re.compile(r"\((" + re.escape(RT) + r"is_available\(\))\)"), r"\1"),
    # the neuron target extends a CUDA check (`<Neuron> or torch.cuda.is_available()`) where the
    # others replace it with "an accelerator is here"
    (re.compile(r"\((" + re.escape(RT) + r"is_available\(\)) or " + re.escape(RT) + r"is_available\(\)\)"), r"\1"),
    (re.compile(r"(" + re.escape(RT) + r"is_available\(\)) or " + re.escape(RT) + r"is_available\(\)"), r"\1"),
    (re.compile(r"(" + re.escape(RT) + r"device_count\([^()]*\)) if " + re.escape(RT) + r"is_available\(\) else 0"),
     r"\1"),
]
_COMPILE_BACKEND = re.compile(r",\s*(?<!\w)backend=" + re.escape(D) + r"|(?<!\w)backend=" + re.escape(D) + r",\s*")
_NEURONX_IMPORT = re.compile(r"^\s*import torch_neuronx\b.*$")
#: the guarded import NRN401 adds to scripts on the neuron target (a block of four lines)
_GUARDED_NEURONX = re.compile(r"^try:\n\s+import torch_neuronx\b.*\nexcept ImportError:.*\n\s+pass\n", re.M)
_GUARD = re.compile(r"^(\s*)if " + re.escape(RT) + r"is_available\(\):\s*$")
_KERNEL_CONTEXT = re.compile(r"^(\s*)with (?:torch\.backends\.cuda\.sdp_kernel|torch\.backends\.cudnn\.flags|sdpa_kernel)"
                             r"\(.*\):\s*$")

#: statements that are CUDA-only, with why they may be on one side only
EXCEPTIONS: dict[str, re.Pattern[str]] = {
    # NRN350/NRN351: cuDNN / CUDA backend settings: deleted (neuron, cpu), kept for CUDA (accelerator)
    "CUDA backend setting": re.compile(r"^torch\.backends\.(?:cuda|cudnn)\.[\w.]+\s*=.*$"),
    # NRN116 (reference D8): under the neuron process group the backend pins each process to its core,
    # so neuron deletes set_device; cpu has one device; accelerator keeps it for CUDA (multi-GPU DDP)
    "set_device": re.compile(r"^" + re.escape(RT) + r"set_device\(.*\)$"),
    # NRN112: torch.manual_seed already seeds the CPU: cpu deletes the CUDA seeding, neuron translates
    # it, accelerator keeps it for CUDA
    "CUDA seeding": re.compile(r"^" + re.escape(RT) + r"manual_seed(?:_all)?\(.*\)$"),
    # NRN112: the same for a restored generator state (a checkpoint resume): the CPU has no CUDA
    # generator, so cpu deletes the restore, neuron restores the Neuron generator, accelerator keeps it for CUDA
    "CUDA generator state restored": re.compile(r"^" + re.escape(RT) + r"set_rng_state\(.*\)$"),
    # NRN110: a requirement that the device be there stops the run where it is not: cpu deletes it
    # (the CPU always is); the block form is `_REQUIREMENT`; a body left empty is `pass`
    "device requirement": re.compile(r"^assert " + re.escape(RT) + r"is_available\(\)(?:,.*)?$|^pass$"),
}
_REQUIREMENT = re.compile(r"^(\s*)if not \(?" + re.escape(RT) + r"is_available\(\)\)?:\s*$")
#: other justified differences, erased by a rewrite of the line: (pattern, replacement, reason)
REWRITES: list[tuple[re.Pattern[str], str, str]] = [
    # NRN201: a host-aware autocast sets bf16 on the target's branch only; cpu's autocast is not
    # host-aware (every host has a CPU), so its bf16 is unconditional
    (re.compile(r"torch\.bfloat16 if (?:" + re.escape(RT) + r"is_available\(\)|" + re.escape(D) + " == " + re.escape(D)
                + r") else (?:None|torch\.float16)"), "torch.bfloat16",
     "bf16 only on the target's branch of a host-aware autocast (the Neuron branch, named or written out)"),
    # NRN113: a runtime function chosen by host (`torch.neuron.empty_cache if <Neuron> else
    # torch.cuda.empty_cache`) on neuron, which keeps CUDA's; the other targets name one
    (re.compile(r"\((" + re.escape(RT) + r"\w+) if " + re.escape(RT) + r"is_available\(\) else \1\)"),
     r"\1", "a runtime function per host on neuron, one on the other targets"),
    # NRN304: the static KV cache only where the accelerator is Neuron (the other hosts keep the
    # dynamic one); cpu passes it everywhere
    (re.compile(r"""(["'])static\1 if (?:""" + re.escape(RT) + r"is_available\(\)|" + re.escape(D) + " == "
                + re.escape(D) + r") else None"), r"\1static\1",
     "the static KV cache on Neuron only, under neuron and accelerator"),
    # NRN115: `torch.cuda.get_device_name(i)` is `torch_neuronx.get_device_properties(i).name` on Neuron;
    # torch.cpu has no device properties, so cpu / accelerator report the call and leave it
    (re.compile(re.escape(RT) + r"get_device_properties\(([^()]*)\)\.name"), RT + r"get_device_name(\1)",
     "device name: no device-generic equivalent, reported under cpu / accelerator"),
]

#: the neuron target's additive forms (item 7 of the module docstring), erased line by line
_KEPT = r"""(?:f?(["'])[^"']*\2|<RT>\w+\([^()]*\)|\w+\([^()]*\)|torch\.device\([^()]*\))"""
ADDITIVE: list[tuple[re.Pattern[str], str]] = [
    # a Neuron arm in front of a choice by a flag (`x.to(<D>) if <Neuron> else x.cuda() if use_cuda
    # else x`): the other targets keep the flag's choice
    (re.compile(r"\S+ if (?:not )?(?:[\w.]+ and )*" + re.escape(RT) + r"is_available\(\) else (?=\S+ if (?:not )?[\w.]+ else )"),
     ""),
    (re.compile(r"(" + re.escape(D) + r"|torch\.device\(" + re.escape(D) + r"\)|" + re.escape(RT) + r"\w+\([^()]*\)) if "
                + re.escape(RT) + r"is_available\(\) else " + _KEPT + r"(?: if [^,]*? else (?:" + _KEPT.replace("\\2", "\\3")
                + "|" + re.escape(D) + "))?"), r"\1"),
    (re.compile(r"""\bnot in \((["'])cuda\1, """ + re.escape(D) + r"\)"), "!= " + D),
    (re.compile(r"""\bin \((["'])cuda\1, """ + re.escape(D) + r"\)"), "== " + D),
    (re.compile(r"\bif " + re.escape(RT) + r"is_available\(\) or \((.+?)\)(?= else\b|:$)"), r"if \1"),
    (re.compile(r"\bif " + re.escape(RT) + r"is_available\(\) or "), "if "),
    # NRN501's per-host half precision (item 8 drops its `fp16=not <Neuron>`): bf16 where Neuron is
    (re.compile(r"\b(bf16(?:_full_eval)?)=" + re.escape(RT) + r"is_available\(\)"), r"\1=True"),
]
#: item 8: the settings a host-aware compile keeps for the other hosts, and the `dynamic=False` cpu adds
_HOST_TEST = r"(?:" + re.escape(RT) + r"is_available\(\)|" + re.escape(D) + " == " + re.escape(D) + r")"
_CUDA_MODE = r"(?:max-autotune|max-autotune-no-cudagraphs|reduce-overhead)"
_KEPT_SETTING = (r"(?:mode=(?:\"" + _CUDA_MODE + r"\"|'" + _CUDA_MODE + r"')|options=None if " + _HOST_TEST
                 + r" else \{[^{}]*\}|dynamic=False(?: if " + _HOST_TEST + r" else True)?"
                 + r"|(?:device_ids|output_device)=None if " + _HOST_TEST + r" else (?:\[[^\[\]]*\]|\w+)"
                 + r"|fp16(?:_full_eval)?=not " + _HOST_TEST + r"|half_precision_backend=\"auto\" if " + _HOST_TEST
                 + r" else \"apex\")")
HOST_AWARE_COMPILE = re.compile(r",\s*(?<!\w)" + _KEPT_SETTING + r"|(?<!\w)" + _KEPT_SETTING + r",?\s*")
_CUDA_STRING = re.compile(r"""(["'])cuda\1""")
_CUDA_MOVE = re.compile(r"\.cuda\(\)")
_NCCL_STRING = re.compile(r"""(["'])nccl\1""")
_REPEATED = re.compile(r"(?:" + re.escape(D) + r", )+" + re.escape(D))  # a device list's entries, one each
_NEURON_BRANCH = re.compile(r"^(\s*)(?:elif .*(?:== |\()" + re.escape(D) + r"\)?:|if (?:not )?(?:[\w.]+ and )*"
                            + re.escape(RT) + r"is_available\(\):)$")


def _drop_additive_blocks(lines: list[str]) -> list[str]:
    """Without the neuron target's added blocks (item 7): an ``else:`` that repeats the statement
    of its ``if``, a dispatch's ``elif ... == <D>:`` branch, a detection's Neuron branch in front
    (``if <Neuron>: ...`` followed by ``elif <Neuron-or-CUDA check>:``, which becomes the ``if``;
    its values are devices, backends or the bf16 of a half dtype)."""
    out: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        indent = len(line) - len(line.lstrip())
        j = i + 1
        while j < len(lines) and (not lines[j].strip() or len(lines[j]) - len(lines[j].lstrip()) > indent):
            j += 1
        block = [b.strip() for b in lines[i + 1:j]]
        if line.strip() == "else:" and out and [b for b in block if b] == [out[-1].strip()]:
            i = i + 1 + block.index(out[-1].strip()) + 1  # the blank lines after it stay
            continue
        m = _NEURON_BRANCH.match(line)
        if m and line.strip().startswith("elif "):
            i = j
            continue
        if m and j < len(lines) and lines[j].strip().startswith("elif ") and block and \
                all(D in b or b.startswith("return") or "torch.bfloat16" in b for b in block):
            lines[j] = lines[j].replace("elif ", "if ", 1)
            i = j
            continue
        out.append(line)
        i += 1
    return out


def _code_and_comment(line: str) -> tuple[str, str]:
    m = re.match(r"^(\s*)(.*?)(\s*#.*)?$", line)
    assert m is not None
    return m.group(2), (m.group(3) or "").strip()


_NAMED = re.compile(r"^\s*(\w+) = " + _ACC + r"\s*(?:#.*)?$", re.M)


def named_devices(text: str) -> frozenset[str]:
    """The names ``text`` assigns the accelerator's device to."""
    return frozenset(_NAMED.findall(text))


def _unguarded(lines: list[str]) -> list[str]:
    """``lines`` with each guard's block (and each CUDA kernel context's) dedented in its place."""
    out: list[str] = []
    i = 0
    while i < len(lines):
        required = _REQUIREMENT.match(lines[i])
        if required:  # the requirement's block goes with it
            i += 1
            while i < len(lines) and len(lines[i]) - len(lines[i].lstrip()) > len(required.group(1)):
                i += 1
            continue
        m = _GUARD.match(lines[i]) or _KERNEL_CONTEXT.match(lines[i])
        if m:
            # a guard block emptied by a deletion (only comments and `pass` left): its comments
            j = i + 1
            while j < len(lines) and lines[j].strip() and \
                    len(lines[j]) - len(lines[j].lstrip()) > len(m.group(1)):
                j += 1
            body = [b.strip() for b in lines[i + 1:j]]
            if body and body.count("pass") == 1 and all(b == "pass" or b.startswith("#") for b in body):
                out.extend(m.group(1) + b for b in body if b != "pass")
                i = j
                continue
        if m and i + 1 < len(lines):
            # the guard's statements (one, or several guards written next to each other, merged)
            indent = m.group(1)
            j = i + 1
            while j < len(lines) and lines[j].strip() and len(lines[j]) - len(lines[j].lstrip()) > len(indent):
                j += 1
            if j > i + 1:
                step = len(lines[i + 1]) - len(lines[i + 1].lstrip()) - len(indent)
                out.extend(line[step:] for line in lines[i + 1:j])
                i = j
                continue
        out.append(lines[i])
        i += 1
    return out


def normalise(text: str, named: frozenset[str] = frozenset()) -> list[str]:
    """The lines of ``text`` with every device choice erased (see the module docstring); ``named``:
    names that hold the device."""
    lines: list[str] = []
    reads = re.compile(r"(?<![\w.])(?:" + "|".join(map(re.escape, sorted(named))) + r")\b(?!\s*=[^=])") \
        if named else None
    for line in _GUARDED_NEURONX.sub("", text).splitlines():
        if _NEURONX_IMPORT.match(line):
            continue
        if reads is not None:
            line = reads.sub(D, line)
        for pattern, repl in _DEVICE_SUBS:
            line = pattern.sub(repl, line)
        line = _RUNTIME.sub(RT, line)
        for pattern, repl in _NEURON_CHECK:
            line = pattern.sub(repl, line)
        before = None
        while before != line:
            before = line
            for pattern, repl in _FOLD:
                line = pattern.sub(repl, line)
        kept = line
        line = _COMPILE_BACKEND.sub("", line)
        for pattern, repl, _reason in REWRITES:
            line = pattern.sub(repl, line)
        for pattern, repl in ADDITIVE:
            line = pattern.sub(repl, line)
        line = HOST_AWARE_COMPILE.sub("", line)
        if kept.strip() and not line.strip():
            continue  # a compile argument (backend, item 8) on a line of its own
        lines.append(line)
    lines = _drop_additive_blocks(lines)
    # accelerator's CUDA-only guards: `if <RT>is_available():` over one statement -> the statement;
    # again, until none is left (a kernel context kept inside a guard)
    out = _unguarded(lines)
    while out != lines:
        lines, out = out, _unguarded(out)
    # the exceptions: a CUDA-only statement goes; and comments: a deleted statement takes its
    # own comments with it, so which comments are left depends on what each target deletes
    result: list[str] = []
    for line in out:
        code, comment = _code_and_comment(line)
        if any(p.match(code) for p in EXCEPTIONS.values()) or (comment and not code):
            continue
        if named and re.fullmatch(r"(\w+) = " + re.escape(D), code) and code.split()[0] in named:
            continue
        line = line[: len(line) - len(line.lstrip())] + code if comment else line
        if not line.strip() and result and not result[-1].strip():
            continue  # blank lines: a deleted statement may leave one more or less
        result.append(line)
    return _without_empty_blocks(result)


def _without_empty_blocks(lines: list[str]) -> list[str]:
    """Without the ``if ...:`` / ``else:`` lines whose block the exceptions emptied (the neuron
    target's ``if <Neuron>: <Neuron call> else: <CUDA call>`` around a CUDA-only statement)."""
    def indent(line: str) -> int:
        return len(line) - len(line.lstrip())

    changed = True
    while changed:
        changed = False
        for i, line in enumerate(lines):
            code = line.strip()
            following = next((other for other in lines[i + 1:] if other.strip()), "")
            if code.endswith(":") and code.split()[0] in ("if", "elif", "else:") and \
                    indent(following) <= indent(line):
                del lines[i]
                changed = True
                break
    return lines


def rewrite(name: str, target: str) -> str:
    source = (PIPELINE / f"{name}.before.py").read_bytes()
    # the rules' own edits: how they are then written (tests/test_written_code.py) is one
    # presentation for every target
    result = run_source(source, all_rules(), Options(target=target, unsafe_fixes=True), path=f"{name}.py",
                        tidy=False)
    assert result.error is None, result.error
    return (result.output if result.output is not None else source).decode()


def test_every_pipeline_script_is_compared():
    assert {"gpt_trainer", "tiny_inference", "fsdp_worker", "hf_generate", "hf_finetune",
            "custom_kernels"} <= set(SCRIPTS)


@pytest.mark.parametrize("target", OTHER_TARGETS)
@pytest.mark.parametrize("name", SCRIPTS)
def test_only_device_choices_differ(name, target):
    written = rewrite(name, target)
    named = named_devices(written)
    neuron = normalise(rewrite(name, "neuron"), named)
    other = normalise(written, named)
    if target == "cpu":  # item 9 of the module docstring
        # (an `else:` then repeating its `if`'s statement goes, as in item 7)
        neuron, other = (_drop_additive_blocks([_REPEATED.sub(D, _CUDA_STRING.sub(D, _NCCL_STRING.sub(
            D, _CUDA_MOVE.sub(f".to({D})", line)))) for line in side]) for side in (neuron, other))
    for i, (a, b) in enumerate(zip(neuron, other), 1):
        assert a == b, f"{name}: normalised line {i} differs:\n  neuron:  {a}\n  {target}: {b}"
    assert len(neuron) == len(other), f"{name}: {len(neuron)} vs {len(other)} normalised lines"


def test_normalise_erases_device_choices_only():
    neuron = 'device = "neuron" if torch.accelerator.is_available() else "cpu"\nx = 1\n'
    cpu = 'device = "cpu"\nx = 1\n'
    assert normalise(neuron) == normalise(cpu)
    assert normalise("x = 1\n") != normalise("x = 2\n")
    assert normalise('model = torch.compile(model, backend="neuron")\n') == normalise(
        "model = torch.compile(model)\n")
    # item 8: what a host-aware compile keeps for the other hosts; a mode Neuron honours is no such thing
    neuron_test = 'torch.accelerator.is_available() and torch.accelerator.current_accelerator().type == "neuron"'
    assert normalise(f'm = torch.compile(m, mode="max-autotune", options=None if {neuron_test} else {{"a": 1}}, '
                     f'dynamic=False if {neuron_test} else True)\n') == normalise("m = torch.compile(m, dynamic=False)\n")
    assert normalise('m = torch.compile(m, mode="default")\n') != normalise("m = torch.compile(m)\n")
    # a model or a learning rate is no device choice
    assert normalise("lr = 1e-3\n") != normalise("lr = 1e-4\n")
    assert normalise('m = Net("a")\n') != normalise('m = Net("b")\n')
