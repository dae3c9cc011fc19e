"""`neuronize audit`: run a program, record every CUDA touch with the program's own file and line,
and put each next to the static findings (covered, missed, or never executed).

One job per module: ``launch`` runs the command under the bootstrap and merges the records,
``child/`` is what runs inside the audited interpreter (recording, the wrappers, the
--pretend-cuda stand-ins), ``join`` meets the static findings, ``render`` prints, ``session``
ties them together and decides the exit code.
"""
