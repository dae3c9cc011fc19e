"""NRN911: CUDA/NCCL environment variables read or set through ``os.environ`` / ``os.getenv``."""

from __future__ import annotations

import re

import libcst as cst

from neuronize.analysis.context import FileContext, dotted_name
from neuronize.analysis.cuda_env_vars import CPU_ONLY, HIDE_ALL, advice_for
from neuronize.transform import Evidence, Example, Safety, Transform
from neuronize.transforms._helpers.calls import argument
from neuronize.transforms._helpers.literals import string_value

#: an NCCL variable's name, whole (`"TORCH_NCCL_BLOCKING_WAIT"`), wherever the code keeps it
NCCL_NAME = re.compile(r"(?:TORCH_)?NCCL_[A-Z0-9_]+")


def _hides_all(key: str, value: cst.BaseExpression | None) -> bool:
    return key == "CUDA_VISIBLE_DEVICES" and value is not None and string_value(value) in HIDE_ALL


SET_METHODS = {"setdefault": "sets", "update": "sets", "pop": "removes", "get": "reads",
               "__getitem__": "reads", "__contains__": "checks"}
OS_FUNCTIONS = {"os.getenv": "reads", "os.putenv": "sets", "os.unsetenv": "removes",
                "os.environ.get": "reads", "os.environ.setdefault": "sets", "os.environ.pop": "removes",
                "os.environ.update": "sets", "os.environ.__getitem__": "reads"}


class CudaEnvVar(Transform):
    """Finds CUDA, NCCL and CUDA-allocator environment variables read or set by the code.

    What it does:
        Reports string keys such as `CUDA_VISIBLE_DEVICES`, `CUDA_LAUNCH_BLOCKING`,
        `PYTORCH_CUDA_ALLOC_CONF` / `PYTORCH_ALLOC_CONF`, `NCCL_*` / `TORCH_NCCL_*`,
        `TORCH_CUDA_ARCH_LIST`, `CUDA_HOME`, `CUBLAS_WORKSPACE_CONFIG` and other `CUDA_*` names when they are used with
        `os.environ[...]` (set, read, `del`), `os.environ.get/setdefault/pop/update`,
        `"KEY" in os.environ`, `os.getenv`, `os.putenv`, `os.unsetenv`, a copy of the environment
        (`env = os.environ.copy()` then `env["KEY"] = ...`, `dict(os.environ, KEY=...)`,
        `{**os.environ, "KEY": ...}`) or a dict passed as `env=`. Each finding gives the Neuron
        equivalent where one exists. `NCCL_*` / `TORCH_NCCL_*` names kept elsewhere in code (a class
        constant, the keys of a dict of variables the program exports later) are reported too; a
        plain list of names is documentation and is not. Setting
        `CUDA_VISIBLE_DEVICES` to `""` or `"-1"` hides every GPU to run on the CPU: that finding
        asks for an explicit CPU device instead of pointing at NeuronCores. Other strings
        (messages, docs) are never looked at.

    Why on TorchNeuron:
        The Neuron runtime reads its own variables: `NEURON_RT_VISIBLE_CORES` selects NeuronCores
        like `CUDA_VISIBLE_DEVICES` selects GPUs, and the `"neuron"` process group ignores NCCL
        settings. CUDA variables are silently ignored, so code that relies on them (to pick a
        device, to count GPUs, to tune the allocator) behaves differently.

    Example:
        os.environ["CUDA_VISIBLE_DEVICES"] = "0,1,2,3"
        os.environ.setdefault("NCCL_DEBUG", "INFO")

    Use instead:
        os.environ["NEURON_RT_VISIBLE_CORES"] = "0-3"
        (delete the NCCL setting; multi-node training needs EFA on every node)

    Fix safety:
        Report only: core numbering differs from GPU numbering (logical NeuronCores, several per
        chip), and under torchrun the `"neuron"` process group sets the variable per rank.

    Evidence:
        DOC: `NEURON_RT_VISIBLE_CORES` and no NCCL mapping; EFA; INF: `NEURON_LAUNCH_BLOCKING` and
        no `PYTORCH_CUDA_ALLOC_CONF` analogue.
    """

    id = "NRN911"
    name = "cuda-env-var"
    safety = Safety.REPORT_ONLY
    evidence = Evidence.DOC
    section = "unsupported"
    effort = "low"
    references = (
        "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/neuron-runtime/api/nrt-env-var-reference.html",
        "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/guides/torch-distributed.html",
        "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/reference/env-vars.html",
    )
    tokens = (b"CUDA_", b"NCCL_", b"CUBLAS_", b"NVIDIA_VISIBLE_DEVICES", b"PYTORCH_ALLOC_CONF")
    examples = (
        Example('import os\nos.environ["CUDA_VISIBLE_DEVICES"] = "0,1"\n', None),
        Example('from os import getenv\ndebug = getenv("NCCL_DEBUG", "WARN")\n', None),
    )

    def __init__(self, ctx: FileContext) -> None:
        super().__init__(ctx)
        self._env_names: set[str] = set()  # local copies of the environment
        self._seen_dicts: set[int] = set()
        self._keys: set[int] = set()  # ids of the key strings already reported with their use
        self._active = ctx.names.imports_module("os")  # every lookup goes through `os`

    def _is_environ(self, node: cst.BaseExpression) -> bool:
        if self.ctx.qualify(node) == "os.environ":
            return True
        return isinstance(node, cst.Name) and node.value in self._env_names

    # -- environment copies -------------------------------------------------------------------
    def visit_Assign(self, node: cst.Assign) -> None:
        if not self._active:
            return
        if not self._is_env_copy(node.value):
            return
        for target in node.targets:
            if isinstance(target.target, cst.Name):
                self._env_names.add(target.target.value)

    def _is_env_copy(self, value: cst.BaseExpression) -> bool:
        if self._is_environ(value):
            return True
        if isinstance(value, cst.Call):
            func = value.func
            if isinstance(func, cst.Attribute) and func.attr.value == "copy" and self._is_environ(func.value):
                return True
            qualified = self.ctx.qualify(func) or dotted_name(func)
            if qualified in ("dict", "copy.copy", "copy.deepcopy") and value.args:
                return self._is_environ(value.args[0].value)
        if isinstance(value, cst.Dict):
            return any(isinstance(el, cst.StarredDictElement) and self._is_environ(el.value)
                       for el in value.elements)
        return False

    # -- uses -----------------------------------------------------------------------------------
    def visit_Subscript(self, node: cst.Subscript) -> None:
        if not self._active:
            return
        if len(node.slice) != 1 or not self._is_environ(node.value):
            return
        index = node.slice[0].slice
        if not isinstance(index, cst.Index):
            return
        key = string_value(index.value)
        if key is None:
            return
        verb, value = "reads", None
        parent = self.ctx.parent
        if isinstance(parent, (cst.AssignTarget, cst.AugAssign)) or (
                isinstance(parent, cst.AnnAssign) and parent.target is node):
            verb = "sets"
            statement = self.ctx.stack[-3] if isinstance(parent, cst.AssignTarget) else parent
            value = getattr(statement, "value", None)
        elif isinstance(parent, (cst.Del,)) or isinstance(parent, cst.Element) and any(
                isinstance(a, cst.Del) for a in list(self.ctx.ancestors())[:3]):
            verb = "removes"
        self._report_key(node, key, verb, index.value, value)

    def visit_Call(self, node: cst.Call) -> None:
        if not self._active:
            return
        func = node.func
        verb = OS_FUNCTIONS.get(self.ctx.qualify(func) or "")
        if verb is None and isinstance(func, cst.Attribute) and self._is_environ(func.value):
            verb = SET_METHODS.get(func.attr.value)
        if verb is not None:
            if isinstance(func, cst.Attribute) and func.attr.value == "update":
                self._check_update(node)
                return
            arg = argument(node, "key", 0)
            key = string_value(arg.value) if arg is not None else None
            if key is not None:
                default = argument(node, "value", 1) or argument(node, "default", 1)
                self._report_key(node, key, verb, arg.value, default.value if default else None)  # type: ignore[union-attr]
            return
        # dict(os.environ, CUDA_VISIBLE_DEVICES="0")
        if isinstance(func, cst.Name) and func.value == "dict" and node.args and self._is_environ(node.args[0].value):
            for arg in node.args[1:]:
                if arg.keyword is not None:
                    self._report_key(arg, arg.keyword.value, "sets", value=arg.value)

    def _check_update(self, node: cst.Call) -> None:
        for arg in node.args:
            if arg.keyword is not None:
                self._report_key(arg, arg.keyword.value, "sets", value=arg.value)
            elif isinstance(arg.value, cst.Dict):
                self._check_dict(arg.value)

    def visit_Dict(self, node: cst.Dict) -> None:
        if not self._active:
            return
        parent = self.ctx.parent
        passed_as_env = isinstance(parent, cst.Arg) and parent.keyword is not None and parent.keyword.value == "env"
        if passed_as_env or self._is_env_copy(node):
            self._check_dict(node)

    def _check_dict(self, node: cst.Dict) -> None:
        if id(node) in self._seen_dicts:
            return
        self._seen_dicts.add(id(node))
        for el in node.elements:
            if isinstance(el, cst.DictElement):
                key = string_value(el.key)
                if key is not None:
                    self._report_key(el, key, "sets", el.key, el.value)

    def visit_Comparison(self, node: cst.Comparison) -> None:
        if not self._active:
            return
        for target in node.comparisons:
            if isinstance(target.operator, (cst.In, cst.NotIn)) and self._is_environ(target.comparator):
                key = string_value(node.left)
                if key is not None:
                    self._report_key(node, key, "checks", node.left)

    def _report_key(self, node: cst.CSTNode, key: str, verb: str, key_node: cst.CSTNode | None = None,
                    value: cst.BaseExpression | None = None) -> None:
        found = advice_for(key)
        if found is None:
            return
        self._keys.add(id(key_node))
        advice, evidence = (CPU_ONLY, Evidence.DOC) if verb == "sets" and _hides_all(key, value) else found
        self.report(node, f"{verb} `{key}`: {advice}", evidence=evidence)

    # -- NCCL names kept in constants and tables ------------------------------------------------
    def visit_SimpleString(self, node: cst.SimpleString) -> None:
        if "NCCL_" not in node.value or id(node) in self._keys:
            return
        key = string_value(node)
        parent = self.ctx.parent
        kept = isinstance(parent, (cst.Assign, cst.AnnAssign)) or (
            isinstance(parent, cst.DictElement) and parent.key is node)
        if key is not None and kept and NCCL_NAME.fullmatch(key):
            # a name list (`KEYS = ("NCCL_DEBUG", ...)`) documents; a constant or a keyed table sets
            self.report(node, f"`{key}` names an NCCL setting the code keeps (a constant, a table of variables): "
                        f"{advice_for(key)[0]}")  # type: ignore[index]
