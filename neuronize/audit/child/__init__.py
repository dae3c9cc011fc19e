"""The half of `neuronize audit` that runs inside the audited program.

Loaded by the generated ``sitecustomize.py`` from its file path under a private name, so the
audited interpreter needs neither neuronize nor its dependencies: these modules use only the
standard library, and torch once the program imports it. Nothing here runs in neuronize's own
process.
"""

from __future__ import annotations

import os
import sys

from .hooks import after_import
from .record import Recorder


def start() -> None:
    """Begin recording in this process; wrappers go in when the program imports torch."""
    records = os.environ.get("NEURONIZE_AUDIT_RECORDS")
    if not records or not os.path.isdir(records):
        return  # the audit that started us is gone: run the program untouched
    pretend = os.environ.get("NEURONIZE_AUDIT_PRETEND") == "1"
    root = os.environ.get("NEURONIZE_AUDIT_ROOT") or os.getcwd()
    recorder = Recorder(records, root)
    recorder.start()
    from . import observe

    observe.install_environ(recorder)

    after_import("torch", lambda torch: observe.install(torch, recorder, pretend))
    after_import("torch.utils.cpp_extension",
                 lambda module: observe.install_extension_hooks(module, recorder, pretend))
    after_import("triton.runtime.jit",
                 lambda module: observe.install_triton_hooks(module, recorder, pretend))
    if "torch" in sys.modules:  # imported by an earlier sitecustomize
        observe.install(sys.modules["torch"], recorder, pretend)
