"""Which settings each file runs with: its nearest configuration, with the command line on top.

As in ruff, every file uses the nearest ``neuronize.toml`` or ``pyproject.toml`` with
``[tool.neuronize]`` above it, whatever the order of the arguments or the current directory; a
file with none above it uses the one above the current directory, else the defaults. ``--config
FILE`` makes one file govern every source. The command line wins over every configuration:
``--select`` replaces the selection (and the configuration's ``ignore``), ``--extend-select``
and ``--ignore`` add to it,
``--unsafe-fixes`` / ``--target`` replace the setting.

Configurations are read once per run and folders are looked up once each, so resolving a
thousand files costs a few dictionary lookups per file.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from neuronize.sources.config import Config, config_in, find_config, ignored_codes_for, load_config
from neuronize.registry import matches, select_rules
from neuronize.rule_index import CLAIMER, RuleInfo, catalogue
from neuronize.sources.discover import Excludes
from neuronize.sources.kinds import SourceKind
from neuronize.types import Options, Target

if TYPE_CHECKING:
    from neuronize.transform import Transform

COMMAND_LINE = "command line"
DEFAULT = "default"


@dataclass(frozen=True)
class Overrides:
    """What the command line says; empty / ``None`` means "not given"."""

    select: tuple[str, ...] = ()
    extend_select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    unsafe_fixes: bool | None = None
    target: str | None = None
    config_file: Path | None = None
    report_unused_suppressions: bool = False
    kinds: tuple[SourceKind, ...] = ()
    exclude_kinds: tuple[SourceKind, ...] = ()


@dataclass(frozen=True)
class Settings:
    """The settings of every file one configuration governs.

    ``values`` holds each setting (as spelt in the configuration) as it is in effect, and
    ``origins`` where it came from: a configuration file, :data:`COMMAND_LINE` or :data:`DEFAULT`
    (``--show-settings`` prints both).
    """

    config: Config
    rules: tuple[RuleInfo, ...]
    options: Options
    origins: dict[str, str] = field(default_factory=dict)
    values: dict[str, object] = field(default_factory=dict)
    #: the kinds of source read (neuronize/sources/kinds.py)
    kinds: frozenset[SourceKind] = frozenset(SourceKind)
    #: :meth:`run_ids` by (``per-file-ignores`` codes, kind): the same for most files of a run
    _run_ids: dict[tuple[tuple[str, ...], SourceKind | None], tuple[str, ...]] = field(
        default_factory=dict, init=False, compare=False, repr=False)

    @property
    def excludes(self) -> Excludes:
        config = self.config
        return Excludes(root=config.root,
                        patterns=(*(config.exclude or ()), *config.extend_exclude),
                        replace_defaults=config.exclude is not None)

    def ignored_here(self, path: Path) -> tuple[str, ...]:
        """The codes ``per-file-ignores`` turns off for ``path``."""
        root = self.config.root
        if not self.config.per_file_ignores or root is None:
            return ()
        try:
            relative = Path(os.path.abspath(path)).relative_to(Path(os.path.abspath(root)))
        except ValueError:
            return ()
        return ignored_codes_for(self.config, relative.as_posix())

    def rule_ids(self, path: Path, kind: SourceKind | None = None) -> tuple[str, ...]:
        """The enabled rules (those that read ``kind``, when given) minus the ``per-file-ignores``
        of ``path``."""
        return self._enabled(self.ignored_here(path), kind)

    def run_ids(self, path: Path, kind: SourceKind | None = None) -> tuple[str, ...]:
        """:meth:`rule_ids`, and where a catch-all rule is among them, the rules ``ignore`` or
        ``per-file-ignores`` turns off here, as claimers (``~NRN101``, :mod:`neuronize.decision.claims`):
        an ignored rule silences its sites rather than hand them to the catch-all."""
        here = self.ignored_here(path)
        key = (here, kind)
        if key not in self._run_ids:
            self._run_ids[key] = self._claiming(self._enabled(here, kind), here, kind)
        return self._run_ids[key]

    def _enabled(self, ignored: tuple[str, ...], kind: SourceKind | None) -> tuple[str, ...]:
        return tuple(r.id for r in self.rules
                     if (kind is None or kind in r.kinds) and not any(matches(r, code) for code in ignored))

    def _claiming(self, enabled: tuple[str, ...], here: tuple[str, ...], kind: SourceKind | None
                  ) -> tuple[str, ...]:
        if not any(r.catch_all for r in self.rules if r.id in enabled):
            return enabled
        ignored = (*tuple(self.values.get("ignore") or ()), *here)  # type: ignore[arg-type]
        return enabled + tuple(CLAIMER + r.id for r in catalogue()
                               if r.id not in enabled and not r.catch_all and not r.reads_lines
                               and (kind is None or kind in r.kinds)
                               and any(matches(r, code) for code in ignored))


def resolve(config: Config, overrides: Overrides) -> Settings:
    """One configuration's settings with the command line on top (raises ``SelectionError``)."""
    source = str(config.path) if config.path is not None else DEFAULT
    origins: dict[str, str] = {}

    def origin(key: str, from_cli: bool, in_config: bool) -> None:
        origins[key] = COMMAND_LINE if from_cli else source if in_config else DEFAULT

    select = list(overrides.select) or list(config.select or ())
    origin("select", bool(overrides.select), config.select is not None)
    if overrides.extend_select and select:
        select += overrides.extend_select
    if overrides.extend_select:
        origins["extend-select"] = COMMAND_LINE
    # as in ruff, a --select on the command line starts afresh: the configuration's ignore goes too
    kept = () if overrides.select else config.ignore
    ignore = [*kept, *overrides.ignore]
    origin("ignore", bool(overrides.ignore), bool(kept))
    if overrides.ignore and kept:
        origins["ignore"] = f"{source} + {COMMAND_LINE}"
    rules = select_rules(catalogue(), select, ignore)
    unsafe = overrides.unsafe_fixes if overrides.unsafe_fixes is not None else bool(config.unsafe_fixes)
    origin("unsafe-fixes", overrides.unsafe_fixes is not None, config.unsafe_fixes is not None)
    target = Target(overrides.target or config.target or Target.NEURON)
    origin("target", overrides.target is not None, config.target is not None)
    origin("exclude", False, config.exclude is not None)
    origin("extend-exclude", False, bool(config.extend_exclude))
    origin("per-file-ignores", False, bool(config.per_file_ignores))
    # ruff's select / extend-exclude pattern: --kinds over the configuration's kinds, then both
    # lists of kinds left out
    chosen = overrides.kinds or config.kinds or tuple(SourceKind)
    left_out = {*config.extend_exclude_kinds, *overrides.exclude_kinds}
    kinds = frozenset(k for k in chosen if k not in left_out)
    origin("kinds", bool(overrides.kinds), config.kinds is not None)
    origin("extend-exclude-kinds", bool(overrides.exclude_kinds), bool(config.extend_exclude_kinds))
    options = Options(target=target, unsafe_fixes=unsafe,
                      report_unused_suppressions=overrides.report_unused_suppressions)
    values: dict[str, object] = {
        "select": tuple(select) if select else None,  # None: every rule
        "extend-select": overrides.extend_select,
        "ignore": tuple(ignore),
        "unsafe-fixes": unsafe,
        "target": target.value,
        "exclude": config.exclude,  # None: the built-in excludes
        "extend-exclude": config.extend_exclude,
        "per-file-ignores": config.per_file_ignores,
        "kinds": tuple(k.value for k in SourceKind if k in kinds),
        "extend-exclude-kinds": tuple(k.value for k in SourceKind if k in left_out),
    }
    return Settings(config, rules, options, origins, values, kinds)


class Resolver:
    """Settings per file (hierarchical, as ruff), or one :class:`Settings` for every file.

    Also answers discovery's ``excluded(path, is_dir)`` with the excludes of the configuration
    that governs the folder a path is in, so a sub-project's excludes apply inside it only.
    """

    def __init__(self, overrides: Overrides = Overrides(), *, cwd: Path | None = None,
                 single: Settings | None = None) -> None:
        self.overrides = overrides
        self._single = single
        if single is None and overrides.config_file is not None:
            self._single = resolve(load_config(overrides.config_file), overrides)
        self._cwd = Path(os.path.abspath(cwd or Path.cwd()))
        self._folders: dict[str, Path | None] = {}
        self._settings: dict[Path | None, Settings] = {}
        #: a file's folder (as a string) -> its settings: discovery asks once per file
        self._by_folder: dict[str, Settings] = {}
        self._excludes: dict[Path | None, Excludes] = {}

    @classmethod
    def fixed(cls, rules: Iterable[type[Transform] | RuleInfo], options: Options,
              config: Config | None = None, kinds: Iterable[SourceKind] | None = None) -> Resolver:
        """Every file runs with these rules, options, configuration and kinds (None: all)."""
        chosen = frozenset(SourceKind) if kinds is None else frozenset(kinds)
        infos = tuple(r if isinstance(r, RuleInfo) else RuleInfo.of(r) for r in rules)
        return cls(single=Settings(config or Config(), infos, options, kinds=chosen))

    def discovery_kinds(self) -> frozenset[SourceKind] | None:
        """The kinds worth looking for before any configuration is read (None: every kind)."""
        if self._single is not None:
            return self._single.kinds
        if self.overrides.kinds or self.overrides.exclude_kinds:
            return frozenset(k for k in (self.overrides.kinds or SourceKind)
                             if k not in self.overrides.exclude_kinds)
        return None

    def config_path(self, folder: Path | str) -> Path | None:
        """The configuration governing ``folder``: its own, else its nearest parent's, else the
        one above the current directory."""
        candidate = os.path.abspath(folder)
        chain: list[str] = []
        while True:
            if candidate in self._folders:
                found = self._folders[candidate]
                break
            chain.append(candidate)
            found = config_in(Path(candidate))
            if found is not None:
                break
            parent = os.path.dirname(candidate)
            if parent == candidate:
                found = find_config(self._cwd)
                break
            candidate = parent
        for visited in chain:
            self._folders[visited] = found
        return found

    def for_path(self, path: Path | str) -> Settings:
        """The settings of one file."""
        if self._single is not None:
            return self._single
        folder = os.path.dirname(os.path.abspath(path))
        settings = self._by_folder.get(folder)
        if settings is None:
            settings = self._by_folder[folder] = self._for_folder(folder)
        return settings

    def _for_folder(self, folder: Path | str) -> Settings:
        key = self.config_path(folder)
        if key not in self._settings:
            self._settings[key] = resolve(load_config(key) if key else Config(), self.overrides)
        return self._settings[key]

    def used(self) -> list[Settings]:
        """The settings resolved so far, one per configuration (for ``-v``)."""
        return list(self._settings.values()) if self._single is None else [self._single]

    def excluded(self, path: Path, is_dir: bool) -> bool:
        """Discovery's question, answered by the configuration of the folder ``path`` is in."""
        settings = self.for_path(path)
        key = settings.config.path
        if key not in self._excludes:
            self._excludes[key] = settings.excludes
        return self._excludes[key].excluded(path, is_dir)


def describe(settings: Settings, path: Path) -> str:
    """``--show-settings``: the settings of ``path`` and where each came from."""
    config = settings.config
    shown = path.parent if path.name == "-" else path
    lines = [f"Settings for {shown}",
             f"  config file: {config.path if config.path is not None else '(none: defaults)'}"]
    for key, value in settings.values.items():
        origin = settings.origins.get(key, "default")
        lines.append(f"  {key:<17} {_as_toml(key, value):<40} ({origin})")
    here = settings.ignored_here(path)
    if here:
        lines.append(f"  per-file-ignores for this file: {', '.join(here)}")
    ids = settings.rule_ids(path)
    lines.append(f"  rules ({len(ids)}): {', '.join(ids)}")
    return "\n".join(lines)


def _as_toml(key: str, value: object) -> str:
    """A setting's value as it would be written in the configuration."""
    if value is None:
        return "(every rule)" if key == "select" else "(built-in)"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{json.dumps(k)} = {json.dumps(list(v))}"
                               for k, v in value.items()) + "}"
    return json.dumps(list(value) if isinstance(value, tuple) else value)
