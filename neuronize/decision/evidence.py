"""What the evidence marks mean (``[evidence: INF]`` in a message): a leaf module, so that
``neuronize explain INF`` loads neither libcst nor a rule."""

from __future__ import annotations

#: What each evidence mark means, in words a user can act on (``neuronize explain INF``); the
#: report's "Evidence marks" section and every rule's explanation quote these sentences.
EVIDENCE_MEANINGS: dict[str, str] = {
    "DOC": "stated in the AWS Neuron documentation of the TorchNeuron public beta "
           "(https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/index.html) or its "
           "release notes: fixes resting on it are safe.",
    "DOC-old": "stated in an older AWS Neuron page (the \"Native PyTorch for AWS Trainium\" FAQ) "
               "that predates the public beta: likely still true; the fix is unsafe, so review it.",
    "SRC": "read in the source code or tests of a public pre-release of torch-neuronx, not in "
           "the documentation: the released behaviour may differ; the fix is unsafe, so review "
           "it and test on Trainium.",
    "3P": "from third-party code or write-ups (Hugging Face pull requests, community scripts, "
          "a published migration report), not from AWS: useful, not authoritative; review it.",
    "INF": "inferred from the documentation plus upstream PyTorch behaviour, not stated anywhere: "
           "a hypothesis; the fix is never applied silently, so review it and test on Trainium.",
}


def explain_evidence(mark: str) -> str | None:
    """``neuronize explain INF``: what an evidence mark means (None if ``mark`` is not one)."""
    for key, meaning in EVIDENCE_MEANINGS.items():
        if key.lower() == mark.lower():
            return f"[evidence: {key}]: {meaning}\n"
    return None
