"""`neuronize verify`: the project's own tests, before and after migration, on simulated hosts.

``trees`` makes the original and the migrated copy side by side (and the hunks of the
migration), ``runs`` runs the user's command in one tree on one host (through the audit's
bootstrap and host simulation, neuronize/audit/child/), ``compare`` finds regressions and the
hunks on their tracebacks, ``render`` prints, ``session`` ties them together (and writes for
``fix --verify``).
"""
