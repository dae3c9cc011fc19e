"""Where the migration report's links point: paths relative to where neuronize ran (the default
without a repository), or absolute URLs for a pull request: ``--link-base URL``, or the
repository's web address at the commit read (``report``, ``check``) or at the branch the edits
will be pushed on (``fix``), when the ``origin`` remote is on GitHub, GitLab or Bitbucket."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

#: ``--link-base none``: keep relative links even in a repository with a known remote
NO_LINK_BASE = "none"


@dataclass(frozen=True)
class Links:
    """``base`` ends with ``/`` (None: relative links); paths are taken relative to ``root``."""

    base: str | None = None
    root: Path | None = None

    def target(self, display: str) -> str:
        """The link target of a file shown as ``display`` (a path relative to the current
        directory, or absolute)."""
        if self.base is None:
            return display.replace(" ", "%20")
        from urllib.parse import quote

        path = display
        if self.root is not None:
            path = os.path.relpath(os.path.abspath(display), self.root)
        return self.base + quote(path.replace(os.sep, "/"))


#: relative links (no repository, or ``--link-base none``)
RELATIVE = Links()


def links_for(link_base: str | None, start: Path, *, wrote: bool) -> Links:
    """The links of a report on files under ``start``: ``link_base`` as given (``none`` for
    relative links), else detected from the repository, else relative."""
    if link_base == NO_LINK_BASE:
        return RELATIVE
    root = repository_root(start)
    if link_base:
        return Links(link_base.rstrip("/") + "/", root)
    if root is None:
        return RELATIVE
    base = _detected_base(root, wrote)
    return Links(base, root) if base else RELATIVE


def repository_root(start: Path) -> Path | None:
    """The nearest folder at or above ``start`` holding ``.git`` (a folder or a worktree's file)."""
    here = Path(os.path.abspath(start))
    for folder in (here, *here.parents):
        if (folder / ".git").exists():
            return folder
    return None


def _git(root: Path, *args: str) -> str | None:
    import subprocess

    try:
        proc = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True,
                              timeout=10, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    if proc.returncode != 0:
        return None
    return proc.stdout.strip() or None


_SCP_LIKE = re.compile(r"^(?:[\w.-]+@)?(?P<host>[\w.-]+):(?P<path>[^/].*)$")


def web_address(remote: str) -> tuple[str, str] | None:
    """``(https://host/owner/repo, host kind)`` of a remote URL (https, ssh or ``git@host:``)."""
    remote = remote.strip()
    match = re.match(r"^(?:https?|ssh|git)://(?:[^@/]+@)?(?P<host>[^/:]+)(?::\d+)?/(?P<path>.+)$", remote)
    match = match or _SCP_LIKE.match(remote)
    if match is None:
        return None
    host, path = match.group("host"), match.group("path")
    path = path[:-4] if path.endswith(".git") else path
    kind = next((k for k in ("github", "gitlab", "bitbucket") if k in host), None)
    if kind is None:
        return None
    return f"https://{host}/{path.strip('/')}", kind


def _detected_base(root: Path, wrote: bool) -> str | None:
    remote = _git(root, "remote", "get-url", "origin")
    address = web_address(remote) if remote else None
    if address is None:
        return None
    # Lines after `fix` are those of the files as written: the branch they will be pushed on;
    # else the commit that was read.
    ref = _git(root, "symbolic-ref", "--short", "-q", "HEAD") if wrote else _git(root, "rev-parse", "HEAD")
    if ref is None:
        return None
    from urllib.parse import quote

    web, kind = address
    middle = {"github": "blob", "gitlab": "-/blob", "bitbucket": "src"}[kind]
    return f"{web}/{middle}/{quote(ref)}/"
