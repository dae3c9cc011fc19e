"""A content-hash cache of per-file results, so a re-run on an unchanged tree parses nothing.

Pure storage: no printing, never raises on a bad entry or an unwritable directory (a bad entry is
a miss; a failed write is dropped).

**Key.** ``sha256`` over a format tag, ``neuronize.__version__``, a fingerprint of the source of
the rules and of the engine modules they run in (so editing a rule invalidates, even without a
version bump), the sorted enabled rule ids, the :class:`~neuronize.types.Options`, the ``fix``
flag, and finally the file's bytes. The path is deliberately *not* part of the key: two files with
the same bytes have the same result (a finding never embeds the path).

**Where.** ``ResultCache(None)`` uses :func:`default_directory`: ``$NEURONIZE_CACHE_DIR`` if set,
else ``$XDG_CACHE_HOME/neuronize``, else ``~/.cache/neuronize``: one cache per user, shared by
every project and never inside a work tree. A directory passed explicitly (``.neuronize_cache/``
in a project, say) works the same way; every cache directory gets a ``.gitignore`` holding ``*``
so git never picks it up.

**Layout.** ``<dir>/v1/<key[:2]>/<key>.json``, one small JSON document per result; the rewritten
bytes (``fix``) are stored base64-encoded inside it. Beside them, ``<dir>/v1/rules-<fingerprint>.json``
holds what a run needs of the rules when every file is cached (neuronize/rule_index.py), and
``<dir>/v1/facts/<key>.json`` the facts about a project's files, under a hash of their paths and
bytes (neuronize/analysis/project_facts.py). Writes are atomic (through
:func:`neuronize.sources.write.write_bytes_atomic`: a temporary file of each writer's own in the
same directory, then ``os.replace``), so concurrent runs at worst both write the same entry.
"""

from __future__ import annotations

import base64
import dataclasses
import functools
import enum
import hashlib
import json
import os
from pathlib import Path
from typing import Any
from collections.abc import Iterable, Sequence

from neuronize.sources.write import write_bytes_atomic

FORMAT = "v1"
_GITIGNORE = "# created by neuronize: this directory is a cache\n*\n"

#: the package: any module of it may shape a result (a list of the engine's modules by name went
#: stale when they moved into stage folders)
_PACKAGE_DIR = Path(__file__).resolve().parent.parent


def default_directory() -> Path:
    """``$NEURONIZE_CACHE_DIR``, else ``$XDG_CACHE_HOME/neuronize``, else ``~/.cache/neuronize``."""
    explicit = os.environ.get("NEURONIZE_CACHE_DIR")
    if explicit:
        return Path(explicit)
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg) if xdg and os.path.isabs(xdg) else Path.home() / ".cache"
    return base / "neuronize"


def _rule_source_files() -> list[Path]:
    """Every module of the package and of the rules (in a checkout they are two folders)."""
    files = set(_PACKAGE_DIR.rglob("*.py"))
    try:
        from neuronize.registry import rule_files

        files.update(rule_files())
    except Exception:  # noqa: BLE001 - a missing package only weakens the fingerprint
        pass
    return sorted(files)


def code_fingerprint(files: Iterable[Path] | None = None) -> str:
    """sha256 over the names and contents of ``files`` (default: the rules and engine modules)."""
    digest = hashlib.sha256()
    for path in sorted(_rule_source_files() if files is None else files):
        digest.update(path.name.encode() + b"\0")
        try:
            digest.update(path.read_bytes())
        except OSError:
            digest.update(b"<missing>")
        digest.update(b"\0")
    return digest.hexdigest()


_FINGERPRINT: str | None = None


def _default_fingerprint() -> str:
    global _FINGERPRINT
    if _FINGERPRINT is None:
        _FINGERPRINT = code_fingerprint()
    return _FINGERPRINT


@functools.lru_cache(maxsize=256)
def _options_text(options: Any) -> str:
    """The options as the cache key spells them (once per distinct options: ``asdict`` is slow)."""
    if dataclasses.is_dataclass(options) and not isinstance(options, type):
        data = dataclasses.asdict(options)
    else:
        data = {"repr": repr(options)}
    return json.dumps(data, sort_keys=True, default=_spelled)


def _spelled(value: Any) -> Any:
    """A value JSON has no form for, spelled the same in every process: a set sorted (its own
    order follows string hashing, which differs from one process to the next)."""
    return sorted(value, key=str) if isinstance(value, (set, frozenset)) else str(value)


# -- (de)serialisation -------------------------------------------------------------------------
def _plain(value: Any) -> Any:
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    if isinstance(value, enum.Enum):
        return value.value
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    raise TypeError(f"cannot store a {type(value).__name__} in the cache")


def result_to_json(result: Any) -> dict[str, Any]:
    """A :class:`~neuronize.types.SourceResult` as a JSON-able dict.

    Generic over the dataclass fields, so a field added to ``SourceResult``, ``Finding`` or
    ``FileError`` is stored too (or refused with TypeError, never silently dropped).
    """
    data: dict[str, Any] = {}
    for f in dataclasses.fields(result):
        value = getattr(result, f.name)
        if f.name == "findings":
            data["findings"] = [{k.name: _plain(getattr(item, k.name)) for k in dataclasses.fields(item)}
                                for item in value]
        elif f.name == "output":
            data["output"] = None if value is None else base64.b64encode(value).decode("ascii")
        elif f.name == "error":
            data["error"] = None if value is None else {
                k.name: _plain(getattr(value, k.name)) for k in dataclasses.fields(value)}
        else:
            data[f.name] = _plain(value)
    return data


def result_from_json(data: dict[str, Any]) -> Any:
    """The inverse of :func:`result_to_json`; raises on anything malformed or incomplete."""
    from neuronize.types import Evidence, FileError, Finding, SourceResult, Safety

    kwargs: dict[str, Any] = {}
    for f in dataclasses.fields(SourceResult):
        value = data[f.name]  # KeyError: stored by another shape of SourceResult, a miss
        if f.name == "findings":
            findings = []
            for item in value:
                if not isinstance(item, dict):
                    raise ValueError("finding is not an object")
                item = dict(item)
                item["safety"] = Safety(item["safety"])
                if item.get("evidence") is not None:
                    item["evidence"] = Evidence(item["evidence"])
                item["notes"] = tuple((kind, text) for kind, text in item.get("notes", ()))
                findings.append(Finding(**item))
            value = tuple(findings)
        elif f.name == "output":
            value = None if value is None else base64.b64decode(value.encode("ascii"), validate=True)
        elif f.name == "error":
            value = None if value is None else FileError(**value)
        elif isinstance(value, list):
            value = tuple(value)
        elif isinstance(value, dict):
            raise ValueError(f"unexpected object in field {f.name}")
        kwargs[f.name] = value
    return SourceResult(**kwargs)


# -- the cache ---------------------------------------------------------------------------------
class ResultCache:
    """Results by content hash. ``get`` misses on anything unreadable; ``put`` never raises."""

    def __init__(self, directory: Path | None = None, *, fingerprint: str | None = None) -> None:
        self.directory = Path(directory) if directory is not None else default_directory()
        self._fingerprint = fingerprint
        self._prefixes: dict[tuple[object, ...], bytes] = {}
        self._ready = False

    @property
    def fingerprint(self) -> str:
        if self._fingerprint is None:
            self._fingerprint = _default_fingerprint()
        return self._fingerprint

    def key(self, source: bytes, rule_ids: Sequence[str], options: Any, fix: bool) -> str:
        """The cache key of ``source`` analysed by ``rule_ids`` with ``options`` (hex sha256)."""
        import neuronize

        version = neuronize.__version__
        ids = tuple(sorted(rule_ids))
        opts = _options_text(options)
        memo = (version, ids, opts, bool(fix))
        prefix = self._prefixes.get(memo)
        if prefix is None:
            header = json.dumps({
                "format": FORMAT,
                "version": version,
                "code": self.fingerprint,
                "rules": list(ids),
                "options": opts,
                "fix": bool(fix),
            }, sort_keys=True)
            prefix = hashlib.sha256(header.encode()).digest()
            self._prefixes[memo] = prefix
        return hashlib.sha256(prefix + source).hexdigest()

    def _path(self, key: str) -> Path:
        return self.directory / FORMAT / key[:2] / f"{key}.json"

    def get(self, key: str) -> Any:
        """The stored :class:`~neuronize.types.SourceResult`, or None (missing or unreadable)."""
        try:
            with open(self._path(key), "rb") as handle:
                data = json.loads(handle.read())
            if not isinstance(data, dict) or data.get("key") != key:
                raise ValueError("entry does not belong to this key")
            result = result_from_json(data["result"])
        except Exception:  # noqa: BLE001 - a corrupt or missing entry is a miss, never a crash
            return None
        return result

    def put(self, key: str, result: Any) -> bool:
        """Store ``result`` under ``key``; True if written. Never raises."""
        try:
            payload = json.dumps({"key": key, "result": result_to_json(result)},
                                 separators=(",", ":")).encode()
            target = self._path(key)
            self._prepare(target.parent)
            # Owner-only, and not fsynced: an entry lost in a power cut is a miss, nothing more.
            write_bytes_atomic(target, payload, mode=0o600, fsync=False)
        except Exception:  # noqa: BLE001 - a cache that cannot be written is just not used
            return False
        return True

    def get_file(self, name: str) -> bytes | None:
        """The bytes of a file the run keeps beside the results (the rule index), or None."""
        try:
            return (self.directory / FORMAT / name).read_bytes()
        except OSError:
            return None

    def put_file(self, name: str, data: bytes) -> bool:
        """Keep ``data`` as ``name`` beside the results; True if written. Never raises."""
        target = self.directory / FORMAT / name
        try:
            self._prepare(target.parent)
            write_bytes_atomic(target, data, mode=0o600, fsync=False)
        except Exception:  # noqa: BLE001 - a cache that cannot be written is just not used
            return False
        return True

    def _prepare(self, shard: Path) -> None:
        if not self._ready:
            self.directory.mkdir(parents=True, exist_ok=True)
            ignore = self.directory / ".gitignore"
            if not ignore.exists():
                write_bytes_atomic(ignore, _GITIGNORE.encode())
            self._ready = True
        shard.mkdir(parents=True, exist_ok=True)

    def clear(self) -> None:
        """Delete every entry (the directory and its .gitignore stay)."""
        import shutil

        shutil.rmtree(self.directory / FORMAT, ignore_errors=True)
