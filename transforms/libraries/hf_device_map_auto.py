"""NRN503: Hugging Face / accelerate ``device_map`` and ``max_memory`` planning for GPUs."""

from __future__ import annotations

import libcst as cst

from neuronize.analysis.context import FileContext
from neuronize.transform import Evidence, Example, Safety, Transform
from neuronize.transforms._helpers.calls import keyword
from neuronize.transforms._helpers.device_model import pins_outside_cuda_code
from neuronize.transforms._helpers.hf import device_map_kind, entry_key
from neuronize.transforms._helpers.literals import string_value
from neuronize.transforms._helpers.messages import short
from neuronize.analysis.project_functions import names_one_of
from neuronize.transforms._helpers.value_flow import enclosing_scope

#: the edit group of the device edits beside a model its loader places on GPUs: they wait for the
#: placement, by hand (on Neuron the planner finds no GPU and leaves the model on the CPU)
PLACED_BY_LOADER = "devices beside a model placed on GPUs by its loader"

_LOADERS = (
    "transformers.pipeline",
    "accelerate.infer_auto_device_map",
    "accelerate.load_checkpoint_and_dispatch",
    "accelerate.dispatch_model",
    "accelerate.utils.get_balanced_memory",
)


def _parameters(ctx: FileContext) -> frozenset[str]:
    """The parameter names of the innermost enclosing function (a value only passed through)."""
    for anc in ctx.ancestors():
        if isinstance(anc, cst.FunctionDef):
            params = anc.params
            every = [*params.posonly_params, *params.params, *params.kwonly_params]
            return frozenset(p.name.value for p in every)
    return frozenset()


class HfDeviceMapAuto(Transform):
    """Finds Hugging Face models placed on GPUs by `device_map` (accelerate's memory planner, GPU indices).

    What it does:
        Reports `device_map="auto"` (and `"balanced"`, `"sequential"`...) in `from_pretrained(...)`,
        `pipeline(...)` and accelerate's dispatch helpers, `device_map` values naming GPUs
        (`"cuda"`, `0`, `{"": 0}`, per-layer dicts), and `max_memory=` budgets. A device chosen at
        run time (`device_map={"": local_rank}`, `device_map=args.device_map`) is reported as one
        to check, not as a GPU plan; a value only passed through (a parameter of the enclosing
        function) and host devices (`{"": "cpu"}`, `"disk"`, `"meta"`, also through a name last
        assigned one: `device_map = "cpu"`) are not reported. A plan set as an entry of keyword
        arguments (`kwargs["device_map"] = "auto"`, or a dict literal a wrapper hands its loader:
        `model_kwargs={"device_map": "auto"}`) is reported where it is set. Report only. A
        plan or GPU map holds the device edits of its function (of the whole file, for a model
        loaded at module level, as in a script or notebook), functions nested in it included: the
        tensors that meet the model stay where its loader puts them until the loading is changed
        by hand. So does a call of a function another module of the project defines that loads a
        model this way and returns it (`model = load_model(name)`, imported), which is reported.

    Why on TorchNeuron:
        Whether accelerate's planner sees NeuronCore memory is unverified (no Neuron memory probe
        was found), so the model may silently stay on the CPU. NeuronCores on one chip share HBM,
        so per-GPU budgets and GPU indices do not carry over.

    Example:
        model = AutoModelForCausalLM.from_pretrained(name, device_map="auto")

    Use instead:
        model = AutoModelForCausalLM.from_pretrained(name, torch_dtype=torch.bfloat16)
        model = model.to("neuron")
        # several NeuronCores: a tensor-parallel plan (`tp_plan`) under torchrun

    Fix safety:
        Report only: the replacement depends on the model size and the number of NeuronCores.

    Evidence:
        INF: no automatic placement over NeuronCores is documented. DOC-old: cores on a chip share
        HBM.
    """

    id = "NRN503"
    name = "hf-device-map-auto"
    safety = Safety.REPORT_ONLY
    evidence = Evidence.INF
    section = "hf"
    effort = "medium"
    references = (
        "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/tutorials/tutorial-hf-inference-torch-compile.html",
        "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/frameworks/torch/pytorch-native-overview.html",
    )
    # "cuda": a call of a project loader (Options.placed_loaders) holds only the CUDA placements beside it
    tokens = (b"device_map", b"max_memory", b"cuda")
    examples = (
        Example("from transformers import AutoModel\nm = AutoModel.from_pretrained('x', device_map='auto')\n"),
        Example("import transformers\np = transformers.pipeline('text-generation', device_map={'': 0})\n"),
    )

    def __init__(self, ctx) -> None:  # type: ignore[no-untyped-def]
        super().__init__(ctx)
        #: string literals assigned to names so far, by scope: what `device_map=name` holds
        self._literals: dict[tuple[int, str], cst.BaseExpression] = {}

    def visit_Assign(self, node: cst.Assign) -> None:
        if len(node.targets) != 1:
            return
        target = node.targets[0].target
        if isinstance(target, cst.Name):
            key = (id(enclosing_scope(self.ctx)), target.value)
            if string_value(node.value) is not None:
                self._literals[key] = node.value
            else:
                self._literals.pop(key, None)
        elif entry_key(target) == "device_map":
            kind = device_map_kind(node.value)
            if kind in ("planner", "gpu"):
                self._report_plan(node, node.value, kind, f"the keyword entry `{short(target, 40)}`")

    def visit_DictElement(self, node: cst.DictElement) -> None:
        """``{"device_map": "auto"}``: the keyword arguments a wrapper hands its loader
        (``HuggingFacePipeline.from_model_id(..., model_kwargs={"device_map": "auto"})``)."""
        if string_value(node.key) == "device_map" and (kind := device_map_kind(node.value)) in ("planner", "gpu"):
            self._report_plan(node, node.value, kind, 'the keyword entry `"device_map"`')

    def _report_plan(self, node: cst.Arg | cst.Assign | cst.DictElement, value: cst.BaseExpression, kind: str,
                     where: str) -> None:
        pins = self._pins(node.value)
        if kind == "planner":
            self.report(node, f"`device_map={short(value, 40, tight=True)}` in {where}: whether "
                        "accelerate sees NeuronCore memory is unverified; load on CPU with "
                        '`torch_dtype=torch.bfloat16`, then `.to("neuron")`; across several NeuronCores use a '
                        "tensor-parallel plan (`tp_plan`) under torchrun", pins=pins)
        else:
            self.report(node, f"`device_map` in {where} names GPUs: load on CPU, then "
                        '`.to("neuron")` (each process owns one NeuronCore)', evidence=Evidence.DOC_OLD, pins=pins)

    def _project_loader(self, func: cst.BaseExpression) -> bool:
        """``func`` is a function another module of the project defines that loads a model onto GPUs
        (``Options.placed_loaders``), imported here."""
        loaders = self.ctx.options.placed_loaders
        qualified = self.ctx.qualify(func) if loaders else None
        return qualified is not None and names_one_of(qualified, loaders)

    def _pins(self, written: cst.BaseExpression) -> str | None:
        """The edit group the device edits around this loading wait for: none for a plan passed
        in by name (the code around may choose it: ``if device_map is None: model.cuda()``), nor
        where the loading runs only on CUDA (a CUDA branch, which Neuron never takes)."""
        return None if isinstance(written, cst.Name) else pins_outside_cuda_code(self.ctx, PLACED_BY_LOADER)

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if self._project_loader(func):
            self.report(node, f"`{short(func, 40)}()` returns a model its loader places on GPUs (a `device_map` in "
                        "the project's module): load on CPU there, then `.to(\"neuron\")`; the device edits "
                        "beside it wait for it", evidence=Evidence.INF, pins=self._pins(node))
            return
        if isinstance(func, cst.Attribute) and func.attr.value == "from_pretrained":
            where = "`from_pretrained`"
        else:
            qualified = self.ctx.qualify(func)
            if qualified not in _LOADERS:
                return
            where = f"`{qualified.rsplit('.', 1)[-1]}`"
        device_map = keyword(node, "device_map")
        value = device_map.value if device_map is not None else None
        if isinstance(value, cst.Name) and (id(enclosing_scope(self.ctx)), value.value) in self._literals:
            value = self._literals[(id(enclosing_scope(self.ctx)), value.value)]  # `device_map = "cpu"` above
        kind = device_map_kind(value) if value is not None else None
        if device_map is None or kind is None:
            pass
        elif kind in ("planner", "gpu"):
            self._report_plan(device_map, value, kind, where)  # type: ignore[arg-type]
        elif not (isinstance(device_map.value, cst.Name) and device_map.value.value in _parameters(self.ctx)):
            shown = short(device_map.value, 40, tight=True)
            self.report(device_map, f"`device_map={shown}` in {where} places the model on a device chosen at "
                        "run time (under torchrun usually a GPU index); check it on Neuron: load on CPU, then "
                        '`.to("neuron")`', evidence=Evidence.INF)
        max_memory = keyword(node, "max_memory")
        if max_memory is not None and not (isinstance(max_memory.value, cst.Name)
                                           and max_memory.value.value == "None"):
            self.report(max_memory, f"`max_memory=` in {where} budgets GPU memory; NeuronCores on a chip share "
                        "HBM, so plan placement by NeuronCore instead", evidence=Evidence.DOC_OLD,
                        pins=self._pins(max_memory.value))
