"""What choosing rules, filtering files and naming claimers need of each rule, without importing it.

A run whose files are all in the result cache analyses nothing, so it needs of the rules only
their ids, names, kinds, pre-filter tokens and two flags. Importing every rule for those (and
libcst with them) was most of such a run. :func:`catalogue` reads them from an index kept in the
cache directory, one file per code fingerprint (the same fingerprint as the cache keys, so an
edited rule gets a new index), and writes the index the first time it has to import the rules.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from neuronize.sources.kinds import SourceKind

if TYPE_CHECKING:
    from neuronize.sources.cache import ResultCache
    from neuronize.transform import Transform

#: the prefix of a rule id in a run's rule ids that asks for the rule as a claimer
#: (neuronize/decision/claims.py)
CLAIMER = "~"


@dataclass(frozen=True)
class RuleInfo:
    """One rule as selection, the pre-filter and the claimers see it."""

    id: str
    name: str
    kinds: tuple[SourceKind, ...]
    tokens: tuple[bytes, ...]
    catch_all: bool
    #: a line rule (neuronize/line_rule.py): it reads lines, so it has no walk to claim code in
    reads_lines: bool

    @classmethod
    def of(cls, rule: type[Transform]) -> RuleInfo:
        from neuronize.line_rule import LineRule

        return cls(rule.id, rule.name, tuple(rule.kinds), tuple(rule.tokens), rule.catch_all,
                   issubclass(rule, LineRule))


_CATALOGUE: tuple[RuleInfo, ...] | None = None


def catalogue(cache: ResultCache | None = None) -> tuple[RuleInfo, ...]:
    """Every rule, sorted by id, once per process. With the run's result ``cache``, the first
    call reads the index kept there, or imports the rules and stores it."""
    global _CATALOGUE
    if _CATALOGUE is None:
        name = f"rules-{cache.fingerprint[:24]}.json" if cache is not None else ""
        found = _decoded(cache.get_file(name)) if cache is not None else None
        if found is None:
            from neuronize.registry import all_rules

            found = tuple(RuleInfo.of(rule) for rule in all_rules())
            if cache is not None:
                cache.put_file(name, _encoded(found))
        _CATALOGUE = found
    return _CATALOGUE


def by_id(ids: Iterable[str]) -> tuple[RuleInfo, ...]:
    """The catalogue's entries for ``ids`` (a claimer's id names its rule)."""
    known = {info.id: info for info in catalogue()}
    return tuple(known[i.removeprefix(CLAIMER)] for i in ids)


def _decoded(data: bytes | None) -> tuple[RuleInfo, ...] | None:
    """The stored index; None when missing or not of this shape (then it is rebuilt)."""
    try:
        return tuple(RuleInfo(e["id"], e["name"], tuple(SourceKind(k) for k in e["kinds"]),
                              tuple(t.encode("latin-1") for t in e["tokens"]), bool(e["catch_all"]),
                              bool(e["reads_lines"]))
                     for e in json.loads(data or b"null"))
    except Exception:  # noqa: BLE001 - a missing or damaged index is rebuilt, never a crash
        return None


def _encoded(infos: tuple[RuleInfo, ...]) -> bytes:
    return json.dumps([{"id": i.id, "name": i.name, "kinds": [k.value for k in i.kinds],
                        "tokens": [t.decode("latin-1") for t in i.tokens], "catch_all": i.catch_all,
                        "reads_lines": i.reads_lines} for i in infos]).encode()
