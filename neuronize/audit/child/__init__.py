"""The half of `neuronize audit` that runs inside the audited program.

Loaded by the generated ``sitecustomize.py`` from its file path under a private name, so the
audited interpreter needs neither neuronize nor its dependencies: these modules use only the
standard library, and torch once the program imports it. Nothing here runs in neuronize's own
process.
"""

from __future__ import annotations

import os

from .hooks import after_import
from .hosts import HOST_VAR
from .record import Recorder


def start() -> None:
    """Begin recording in this process; wrappers go in when the program imports torch (at once
    if it already has). ``NEURONIZE_HOST`` names a simulated host (hosts.py) for the program."""
    records = os.environ.get("NEURONIZE_AUDIT_RECORDS")
    if not records or not os.path.isdir(records):
        return  # the audit that started us is gone: run the program untouched
    host = os.environ.get(HOST_VAR) or None
    if host == "cpu":
        return  # the real machine: nothing to simulate or record
    pretend = os.environ.get("NEURONIZE_AUDIT_PRETEND") == "1" or host == "cuda"
    root = os.environ.get("NEURONIZE_AUDIT_ROOT") or os.getcwd()
    recorder = Recorder(records, root, trace_lines=os.environ.get("NEURONIZE_AUDIT_LINES") != "0")
    recorder.start()
    from . import observe

    observe.install_environ(recorder)

    after_import("torch", lambda torch: observe.install(torch, recorder, pretend, host))
    after_import("torch.utils.cpp_extension",
                 lambda module: observe.install_extension_hooks(module, recorder, pretend))
    after_import("triton.runtime.jit",
                 lambda module: observe.install_triton_hooks(module, recorder, pretend))
