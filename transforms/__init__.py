"""The rules, one module per rule, grouped by family in sub-packages; what they share is in
``_helpers``. Imported as ``neuronize.transforms`` (see pyproject.toml).

Refuses to be imported as a top-level ``transforms`` package: ML repositories are full of their
own ``transforms`` modules, and ours must never shadow theirs.
"""

if __name__ != "neuronize.transforms":
    raise ImportError(
        f"neuronize's rules must be imported as 'neuronize.transforms', not {__name__!r}; "
        "install neuronize (pip install -e .) instead of adding the repository root to sys.path"
    )
