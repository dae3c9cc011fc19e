"""What every rule may ask about the file being analysed, computed once per file and shared.

Names are resolved with an alias table built from the module's import statements, not with
libcst's scope or qualified-name providers (those cost 4-7 parses per file; see
../shared/reference/performance.md). ``import torch as T``, ``from torch import cuda`` and
``from torch.cuda.amp import autocast`` are all understood; a name nobody imported (a local
variable called ``cuda``) resolves to nothing.
"""

from __future__ import annotations

import re
from typing import Any
from dataclasses import dataclass, field
from collections.abc import Iterator, Sequence

import libcst as cst

from neuronize.analysis.roles import FileRoles, Role
#: ``dotted_name`` is also imported from here by rules (its home is neuronize.analysis.syntax)
from neuronize.analysis.syntax import dotted_name, ends_early, imported_names, is_star_import, scoped_statements
from neuronize.analysis.walk import children, iter_syntax
#: ``Options`` is also imported from here by tests (its home is neuronize.types)
from neuronize.types import Options

#: availability probes of other accelerators (``is_xpu_available()``,
#: ``torch.backends.mps.is_available()``): a chain of them dispatches over what the machine has.
#: Comparisons with a device *name* (``if args.device == "mps"``) are not a dispatch: there the
#: user picks the device, and the CUDA branch must follow the name to "neuron".
_DEVICES = "mps|xpu|npu|hpu|mlu|musa|sdaa|xla|tpu|neuron"
_OTHER_DEVICE = re.compile(
    rf"\bis_(?:torch_)?({_DEVICES})_available\b|\btorch\.(?:backends\.)?({_DEVICES})\.is_available\b"
)


class ImportTable:
    """Local name -> fully qualified name, from every import statement in the module."""

    def __init__(self) -> None:
        self._names: dict[str, str] = {}
        self.modules: set[str] = set()  # every module imported, fully qualified
        self._under: dict[str, frozenset[str]] = {}
        #: the local names an import binds outside any function: readable anywhere in the module
        self.top_level: set[str] = set()

    def add(self, stmt: cst.Import | cst.ImportFrom, *, top_level: bool = True) -> None:
        self._under.clear()
        for imported in imported_names(stmt):
            self.modules.add(imported.module)
            if imported.local is None:  # a star import binds nothing we can name
                continue
            self._names[imported.local] = imported.target
            if top_level:
                self.top_level.add(imported.local)
            if imported.name is not None:  # `from a import x`: `a.x` is imported too
                self.modules.add(imported.target)

    def qualify(self, node: cst.CSTNode) -> str | None:
        """The fully qualified name an expression refers to, if it starts at an import."""
        # Fast exit (rules ask this of every Name and Attribute): find the head name first.
        head_node = node
        while type(head_node) is cst.Attribute:
            head_node = head_node.value
        if type(head_node) is not cst.Name or head_node.value not in self._names:
            return None
        name = dotted_name(node)
        if name is None:
            return None
        head, _, rest = name.partition(".")
        full = self._names.get(head)
        if full is None:
            return None
        return f"{full}.{rest}" if rest else full

    def names_under(self, prefix: str) -> frozenset[str]:
        """The local names bound to something whose qualified name starts with ``prefix``
        (``{"synchronize"}`` after ``from torch.cuda import synchronize`` for ``"torch.cuda."``):
        a rule that looks at every Name asks this set first, as cheap as a dict lookup."""
        if prefix not in self._under:
            self._under[prefix] = frozenset(local for local, full in self._names.items() if full.startswith(prefix))
        return self._under[prefix]

    def local_names_for(self, qualified: str) -> list[str]:
        """Local spellings bound to ``qualified`` (``["T"]`` after ``import torch as T``)."""
        return [local for local, full in self._names.items() if full == qualified]

    def imports_module(self, prefix: str) -> bool:
        return any(m == prefix or m.startswith(prefix + ".") for m in self.modules)


def collect_imports(module: cst.Module, inherited: ImportTable | None = None) -> ImportTable:
    """Build the alias table by walking statements only (never expressions: that is the cheap part).

    ``inherited``: names bound before the module runs (a notebook's earlier cells); the module's
    own imports override them."""
    table = ImportTable()
    if inherited is not None:
        table._names.update(inherited._names)
        table.modules |= inherited.modules
        table.top_level |= inherited.top_level
    starred = False
    for stmt, functions in scoped_statements(module.body):
        if isinstance(stmt, cst.SimpleStatementLine):
            for small in stmt.body:
                if isinstance(small, (cst.Import, cst.ImportFrom)):
                    table.add(small, top_level=not functions)
                    starred |= is_star_import(small)
    if starred and "torch" not in table._names and _reads_torch(module):
        # `from .utils import *` re-exports the `import torch` of that module: a file that binds
        # `torch` nowhere else and uses it gets it there
        table._names["torch"] = "torch"
        table.top_level.add("torch")
    return table


def _reads_torch(module: cst.Module) -> bool:
    """The module uses the name ``torch`` (``torch.cuda.synchronize()``), bound or not."""
    return any(isinstance(node, cst.Name) and node.value == "torch" for node in iter_syntax(module))


def _closing_fallback_test(link: cst.CSTNode, child: cst.CSTNode | None) -> bool:
    """``child`` is the test of ``link``, the last ``if``/``elif`` of its chain (no ``else``), and
    that test is a negation."""
    return (isinstance(link, cst.If) and link.orelse is None and child is link.test
            and isinstance(link.test, cst.UnaryOperation) and isinstance(link.test.operator, cst.Not))


@dataclass
class FileContext:
    """Shared, per-file facts. Rules read it; only the engine writes it (``stack``, as it walks).

    What rules report is not kept here: it goes to the engine's
    :class:`~neuronize.transform.Reporter`, through ``Transform.fix`` / ``report``."""

    module: cst.Module
    names: ImportTable
    options: Options = field(default_factory=Options)
    path: str = "<string>"
    #: the file's bytes as read, for cheap "can this file contain X at all" checks before a rule
    #: walks the tree for X (a plain substring test costs nothing next to a walk)
    source: bytes = b""
    #: the nodes from the module down to the node being visited (inclusive)
    stack: list[cst.CSTNode] = field(default_factory=list)
    #: id(node) -> its parent, for every node the walk has entered (the engine fills it as it walks)
    parents: dict[int, cst.CSTNode] = field(default_factory=dict, repr=False)
    _dispatch: dict[tuple[int, int], frozenset[str]] = field(default_factory=dict)
    _roles: FileRoles | None = None
    _quote: str | None = None
    #: answers helpers compute once per file (or per scope of it), keyed by question and node id;
    #: the nodes live as long as the module this context holds, so their ids stay theirs
    memo: dict[tuple[str, int], Any] = field(default_factory=dict, repr=False)
    #: statements that ran before the module: what a notebook's earlier cells bound that this cell
    #: relies on (the imports it uses, the device variable the notebook chose)
    inherited: cst.Module | None = None

    @property
    def quote_style(self) -> str:
        """The quote most of the file's strings use, for the strings fixes add
        (:mod:`neuronize.writing.quotes`); computed on first use, once per file."""
        if self._quote is None:
            from neuronize.writing.quotes import file_quote

            self._quote = file_quote(self.source)
        return self._quote

    @property
    def roles(self) -> FileRoles:
        """What the code is for (GPU kernels, CUDA tests, Inductor, CUDA graphs, fake tensors):
        see :mod:`neuronize.analysis.roles`; computed on first use, once per file."""
        if self._roles is None:
            self._roles = FileRoles(self.module, self.names, self.path, self.source, self.options.kernel_import,
                                    self.options.project_extensions, self.options.library_wrappers,
                                    self.options.own_packages, self.options.vendor_engine,
                                    self.options.op_namespaces, self.options.kernel_feeds)
        return self._roles

    def role(self, stack: Sequence[cst.CSTNode] | None = None) -> Role | None:
        """The role of the code at the node being visited (or at the end of ``stack``), if CUDA
        is its point."""
        return self.roles.role_for(self.stack if stack is None else stack)

    def stack_for(self, node: cst.CSTNode) -> list[cst.CSTNode]:
        """The path from the module down to ``node``: the walk's stack, on down to ``node`` where it
        lies under the visited node (a rule visiting a call fixes its argument), else (a rule
        reporting from ``leave_Module``, after the walk) the path the walk's parent links give, so
        that the report carries the facts of where ``node`` stands."""
        if node is self.stack[-1]:
            return self.stack
        if len(self.stack) != 1 or id(node) not in self.parents:
            down = _path_down(self.stack[-1], node)  # the walk has not been under the visited node yet
            return [*self.stack[:-1], *down] if down else self.stack
        path = [node]
        while id(path[-1]) in self.parents:
            path.append(self.parents[id(path[-1])])
        return path[::-1]

    # -- tree navigation -----------------------------------------------------------------
    @property
    def parent(self) -> cst.CSTNode | None:
        """The parent of the node being visited."""
        return self.stack[-2] if len(self.stack) > 1 else None

    def ancestors(self) -> Iterator[cst.CSTNode]:
        """Ancestors of the node being visited, innermost first."""
        return reversed(self.stack[:-1])

    def qualify(self, node: cst.CSTNode) -> str | None:
        return self.names.qualify(node)

    def device_dispatch(self) -> tuple[str, ...]:
        """Other devices whose availability an enclosing ``if``/``elif`` chain (or chain of
        conditional expressions) probes, besides the branch the visited node is in: ``("mps",)`` in
        ``if torch.cuda.is_available(): ... elif torch.backends.mps.is_available(): ...``.

        Such a chain dispatches over devices: its CUDA branch must stay CUDA (rewriting it would
        break CUDA, and on a Mac ``torch.accelerator`` means MPS); Neuron gets a branch of its
        own, by hand. Empty when the node is in no such chain, or in the negated test of the
        chain's last ``elif`` with no ``else`` (``elif not torch.cuda.is_available(): device =
        "cpu"``): a fallback for the hosts no branch served, which Neuron may skip without taking
        any other host's branch.
        """
        devices: set[str] = set()
        stack = self.stack
        i = len(stack) - 1  # the node itself may head a chain (`"cuda" if ... else "mps" if ...`)
        while i >= 0:
            node = stack[i]
            if not isinstance(node, (cst.If, cst.IfExp)):
                i -= 1
                continue
            top = i  # climb to the head of the chain: each `elif` is the `orelse` of the one above
            while top > 0 and type(stack[top - 1]) is type(node) and stack[top - 1].orelse is stack[top]:  # type: ignore[attr-defined]
                top -= 1
            if not _closing_fallback_test(node, stack[i + 1] if i + 1 < len(stack) else None):
                devices |= self._other_branch_devices(stack[top], i - top)
            if i == top and isinstance(node, cst.If) and i + 1 < len(stack) and stack[i + 1] is node.body and top > 0:
                devices |= self._sibling_devices(node, stack[top - 1])
            i = top - 1
        return tuple(sorted(devices))

    def _sibling_devices(self, stmt: cst.If, block: cst.CSTNode) -> frozenset[str]:
        """Other devices probed by the ``if`` statements around ``stmt`` in ``block`` that, like it,
        leave early: ``if is_cuda_available(): return cuda_timer`` then ``if is_npu_available():
        return npu_timer`` is a dispatch over devices written without ``elif``."""
        body = getattr(block, "body", None)
        if not isinstance(body, (list, tuple)) or not ends_early(stmt.body):
            return frozenset()
        at = next((n for n, s in enumerate(body) if s is stmt), None)
        if at is None:
            return frozenset()
        run = [stmt]
        for step in (-1, 1):
            n = at + step
            while 0 <= n < len(body) and isinstance(body[n], cst.If) and ends_early(body[n].body):
                run.append(body[n])
                n += step
        code = " ".join(self.module.code_for_node(s.test) for s in run if s is not stmt)
        return frozenset(m.group(1) or m.group(2) for m in _OTHER_DEVICE.finditer(code))

    def _other_branch_devices(self, head: cst.CSTNode, own: int) -> frozenset[str]:
        key = (id(head), own)
        if key not in self._dispatch:
            tests = []
            link: cst.CSTNode | None = head
            while isinstance(link, (cst.If, cst.IfExp)):
                tests.append(link.test)
                link = link.orelse
            code = " ".join(self.module.code_for_node(t) for n, t in enumerate(tests) if n != own)
            self._dispatch[key] = frozenset(
                m.group(1) or m.group(2) for m in _OTHER_DEVICE.finditer(code))
        return self._dispatch[key]

    def is_name_reference(self, node: cst.Name) -> bool:
        """Whether ``node`` (the Name being visited) stands for a value, rather than naming an
        attribute, an import or a keyword argument."""
        parent = self.parent
        if isinstance(parent, cst.Attribute) and parent.attr is node:
            return False
        if isinstance(parent, (cst.ImportAlias, cst.AsName)):
            return False
        return not (isinstance(parent, cst.Arg) and parent.keyword is node)

    def statement_to_remove(self, node: cst.CSTNode) -> cst.CSTNode:
        """The node to delete so that ``node`` (a small or whole statement) disappears."""
        if isinstance(node, cst.BaseSmallStatement):
            for anc in self.ancestors():
                if isinstance(anc, (cst.SimpleStatementLine, cst.SimpleStatementSuite)):
                    if len(anc.body) == 1 and isinstance(anc, cst.SimpleStatementLine):
                        return anc
                    return node
        return node


def _path_down(root: cst.CSTNode, node: cst.CSTNode) -> list[cst.CSTNode]:
    """The nodes from ``root`` down to ``node`` (both included); empty when ``node`` is not under it."""
    if root is node:
        return [root]
    for child in children(root):
        below = _path_down(child, node)
        if below:
            return [root, *below]
    return []
