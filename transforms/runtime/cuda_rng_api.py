"""NRN112: ``torch.cuda.manual_seed(_all)`` / ``get_rng_state`` / ``set_rng_state`` -> ``torch.neuron``."""

from __future__ import annotations

from neuronize.transforms._helpers import hosts, per_target
from neuronize.transform import Evidence, Example, Safety
from neuronize.transforms._helpers.cuda_runtime import NEURON, CudaRef, _CudaApiRule, spelled

#: torch.cuda name -> torch.neuron name (reference R1, R2)
MAPPED = {
    "manual_seed": "manual_seed",
    "manual_seed_all": "manual_seed_all",
    "seed": "seed",
    "initial_seed": "initial_seed",
    "get_rng_state": "get_rng_state",
    "set_rng_state": "set_rng_state",
}
#: seen on CUDA, not in any TorchNeuron source read: reported
UNMAPPED = {
    "seed_all": "use `torch.neuron.seed()` (one device per process)",
    "get_rng_state_all": "use `torch.neuron.get_rng_state()` (one device per process); it raises on a host "
                         "without CUDA: save it under the same device condition as the load side restores it "
                         "(save and load move together)",
    "set_rng_state_all": "use `torch.neuron.set_rng_state(state)` (one device per process), under the same device "
                         "condition as the save side",
}
class CudaRngApi(_CudaApiRule):
    """Finds CUDA random-number-generator calls (`torch.cuda.manual_seed_all`, RNG state save/restore).

    What it does:
        Rewrites `torch.cuda.manual_seed`, `manual_seed_all`, `seed`, `initial_seed`,
        `get_rng_state` and `set_rng_state` to the same function of `torch.neuron`, arguments
        kept, called or referenced, in every import spelling. `seed_all`,
        `get_rng_state_all` and `set_rng_state_all` have no known Neuron counterpart and are
        reported with the single-device replacement.

    Why on TorchNeuron:
        On a machine without CUDA the `torch.cuda` seeding calls do nothing (they are queued
        until CUDA initialises) and the state functions raise, so a checkpoint that saves the
        CUDA RNG state breaks and seeding silently stops covering the device. TorchNeuron
        registers a `torch.neuron` device module with the same RNG functions (Philox state,
        16 bytes). `torch.manual_seed(s)` already seeds the Neuron generator too.

        On the neuron target every host keeps its path (`torch.neuron` exists only with
        torch-neuronx): a call inside an `if torch.cuda.is_available():` (which NRN110 turns into
        "the accelerator is Neuron"), a `device.type == "cuda"` guard that follows it (NRN103) or
        a branch only Neuron takes is rewritten in place; a call that is a statement of its own
        gets `if <the accelerator is Neuron>: <Neuron call> else: <CUDA call>`; any other use
        `<Neuron call> if <the accelerator is Neuron> else <CUDA call>`. The file's RNG state
        calls (`get_rng_state`, `set_rng_state` and their `_all` forms: a checkpoint's save and
        load) are one edit group: where one of them cannot be migrated (`*_all`, a per-backend
        table entry), none is (`torch.manual_seed(s)` already seeds the Neuron generator).
        A `manual_seed` or `manual_seed_all` call with `torch.manual_seed` of the same seed in
        its block, or in a block around it in the same function, is left as it is: Neuron is
        seeded already, and the CUDA call does nothing on a host without CUDA.

    Example:
        torch.cuda.manual_seed_all(seed)
        if torch.cuda.is_available():
            ckpt["cuda_rng"] = torch.cuda.get_rng_state()

    Use instead:
        if on_neuron():
            torch.neuron.manual_seed_all(seed)
        else:
            torch.cuda.manual_seed_all(seed)
        if on_neuron():
            ckpt["cuda_rng"] = torch.neuron.get_rng_state()

    Fix safety:
        Unsafe: the functions are known from TorchNeuron's tests, not its documentation, and a
        CUDA RNG state stored in an old checkpoint is not a Neuron state (restore it only into
        runs started on Neuron). Dictionary keys such as `"cuda_rng"` are left as they are.

    Evidence:
        SRC: torch-neuronx RNG tests.
    """

    id = "NRN112"
    targets = per_target.ALL
    name = "cuda-rng-api"
    safety = Safety.UNSAFE
    evidence = Evidence.SRC
    section = "device"
    references = ("https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/index.html",)
    tokens = (b"cuda",)
    FUNCTIONS = frozenset(MAPPED) | frozenset(UNMAPPED)
    examples = (
        Example("import torch\ntorch.cuda.manual_seed_all(0)\n",
                "import torch\nif hasattr(torch, \"accelerator\") and "
                "torch.accelerator.is_available() and torch.accelerator.current_accelerator().type "
                "== \"neuron\":\n    torch.neuron.manual_seed_all(0)\nelse:\n    torch.cuda.manual_seed_all(0)\n"),
        # under a CUDA check (which NRN110 extends to Neuron): both hosts keep their own generator's state
        Example("import torch\nif torch.cuda.is_available():\n    state = torch.cuda.get_rng_state()\n",
                f"import torch\nif torch.cuda.is_available():\n    state = torch.neuron.get_rng_state() if {NEURON} else "
                "torch.cuda.get_rng_state()\n"),
        Example("import torch\nstates = torch.cuda.get_rng_state_all()\n", None),
        Example("import torch\nckpt = {\"rng\": torch.cuda.get_rng_state()}\n",
                f"import torch\nckpt = {{\"rng\": torch.neuron.get_rng_state() if {NEURON} else torch.cuda.get_rng_state()}}\n"),
        # save and load are one decision: `*_all` has no Neuron counterpart, so neither side changes
        Example("import torch\nsaved = torch.cuda.get_rng_state()\ntorch.cuda.set_rng_state_all(states)\n", None),
    )

    def target_for(self, ref: CudaRef) -> str | None:
        return f"torch.neuron.{MAPPED[ref.fn]}" if ref.fn in MAPPED else None

    def group_for(self, ref: CudaRef) -> str | None:
        """The file's RNG state calls are one decision (a checkpoint's save and load): one that
        cannot be made host-aware (``*_all``, a table entry) holds back the others."""
        if per_target.target(self.ctx) != per_target.NEURON or ref.fn not in hosts.RNG_STATE_FUNCTIONS:
            return None
        return hosts.rng_state_group(self.ctx)

    def on_ref(self, ref: CudaRef) -> None:
        if ref.fn in UNMAPPED:
            self.report(ref.outer, f"{spelled(ref)} has no known TorchNeuron counterpart: {UNMAPPED[ref.fn]}",
                        group=self.group_for(ref))
            return
        if per_target.target(self.ctx) != per_target.NEURON:
            self.portable(ref, "the CUDA generator exists only on CUDA (`torch.manual_seed` seeds the CPU "
                               "and every accelerator)")
            return
        if ref.call is not None and hosts.seeded_by_torch(self.ctx, ref.call, self.ctx.ancestors()):
            return  # nothing to add for Neuron, and every other host keeps its call
        target = f"torch.neuron.{MAPPED[ref.fn]}"
        shown = f"`{target}()`" if ref.call is not None else f"`{target}`"
        note = ""
        if ref.fn == "set_rng_state":
            note = ": a CUDA RNG state from an old checkpoint does not carry over to Neuron"
        self.guarded_rewrite(ref, target, f"{spelled(ref)} -> {shown}{note}", group=self.group_for(ref))
