"""NRN506: a Hugging Face ``Trainer`` whose transformers has no Neuron device."""

from __future__ import annotations

import libcst as cst

from neuronize.analysis.context import FileContext
from neuronize.decision.policy import TRAINER_ON_CPU
from neuronize.transform import Evidence, Example, Safety, Transform
from neuronize.transforms._helpers.names import last_name

#: the first transformers release whose ``TrainingArguments`` can choose the Neuron device; every
#: 4.x release lacks it (the branch was merged in March 2026, after 5.0)
NEURON_DEVICE_RELEASE = (5, 0)
#: the packages whose ``*Trainer`` classes derive from transformers' ``Trainer``
_TRAINER_PACKAGES = ("transformers.", "trl.", "sentence_transformers.", "setfit.")
_OLD = (("newest_releases", (("transformers", (4, 16)),)),)


class HfTrainerDevice(Transform):
    """Finds a Hugging Face `Trainer` whose transformers release puts the model on the CPU on Trainium.

    What it does:
        Reports each `Trainer(...)` (and the `*Trainer` classes of TRL and Sentence Transformers
        built on it) in a project whose transformers requirement stops before 5.0
        (`transformers==4.16.2`). The device edits of its file wait with it (edit group
        `devices beside a Trainer whose transformers has no Neuron device`): a notebook that
        moves its own inputs to Neuron would meet the CPU model the Trainer hands back. A project
        that admits a newer transformers gets nothing here.

    Why on TorchNeuron:
        The Trainer moves the model to `TrainingArguments.device`. Transformers 4.x chooses CUDA
        when it is there and the CPU otherwise; the Neuron branch of `TrainingArguments` came in
        2026. On Trainium such a Trainer trains on the CPU whatever the rest of the program does.

    Example:
        trainer = Trainer(model=model, args=args, train_dataset=train)
        # requirements.txt: transformers==4.16.2

    Use instead:
        trainer = Trainer(model=model, args=args, train_dataset=train)
        # requirements.txt: a transformers release with the Neuron device, then migrate again

    Fix safety:
        Report only: the release to move to is the project's choice.

    Evidence:
        3P: transformers PR #44302 (a Neuron device in `TrainingArguments`).
    """

    id = "NRN506"
    name = "trainer-without-neuron-device"
    safety = Safety.REPORT_ONLY
    evidence = Evidence.THIRD_PARTY
    section = "hf"
    effort = "low"
    references = ("https://github.com/huggingface/transformers/pull/44302",
                  "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/index.html")
    tokens = (b"Trainer",)
    examples = (
        Example("from transformers import Trainer\n\ntrainer = Trainer(model=model, args=args)\n", facts=_OLD),
        Example("from trl import SFTTrainer\n\ntrainer = SFTTrainer(model, args=config)\n", facts=_OLD),
        Example("import transformers\n\n\nclass Distiller(transformers.Trainer):\n    pass\n\n\n"
                "trainer = Distiller(model=student, args=args)\n", facts=_OLD),
        Example("from transformers import Trainer\n\ntrainer = Trainer(model=model, args=args)\n", finds=False),
        Example("from transformers import Trainer\n\ntrainer = Trainer(model=model, args=args)\n", finds=False,
                facts=(("newest_releases", (("transformers", (5, 2)),)),)),
        Example("trainer = DistillationTrainer(model=student, args=args)\n", facts=_OLD),
    )

    def __init__(self, ctx: FileContext) -> None:
        super().__init__(ctx)
        self._subclasses: set[str] = set()  # the file's own Trainers (`class DistillationTrainer(Trainer)`)
        self._defined: set[str] = set()  # every class the file defines
        #: the newest transformers the project admits, where it is bounded
        self._newest = dict(ctx.options.newest_releases or ()).get("transformers")

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        if any(self._trainer(base.value) for base in node.bases):
            self._subclasses.add(node.name.value)
        self._defined.add(node.name.value)

    def _trainer(self, func: cst.BaseExpression) -> bool:
        """``func`` is a Hugging Face Trainer class: one of the packages', a subclass the file
        defines, or a ``*Trainer`` name the file neither imports nor defines (a notebook's class
        from an earlier cell, each cell being read on its own)."""
        if isinstance(func, cst.Name) and func.value in self._subclasses:
            return True
        qualified = self.ctx.qualify(func)
        if qualified is None:
            return isinstance(func, cst.Name) and func.value.endswith("Trainer") and func.value not in self._defined
        return qualified.startswith(_TRAINER_PACKAGES) and qualified.endswith("Trainer")

    def visit_Call(self, node: cst.Call) -> None:
        newest = self._newest
        if newest is None or newest >= NEURON_DEVICE_RELEASE or not self._trainer(node.func):
            return
        self.report(node.func, f"`{last_name(node.func)}(...)` moves the model to `TrainingArguments.device`, "
                               f"and the project's transformers stops at {newest[0]}.{newest[1]}, which has no Neuron "
                               "device there: on Trainium the model trains on the CPU, beside which the file's device "
                               "edits wait; require a transformers release with the Neuron device (5.x) first",
                    pins=TRAINER_ON_CPU)
