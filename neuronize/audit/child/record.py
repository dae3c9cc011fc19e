"""Where a CUDA touch happened, written to this process's record file as it happens.

Each distinct site (kind, what, file, line) is appended as one JSON line the first time it is
seen and flushed at once, so a run stopped by ``--max-seconds`` or killed keeps what it recorded.
How often each site ran, and which lines of the project's files ran, follow at exit.
"""

from __future__ import annotations

import atexit
import json
import os
import signal
import sys
import sysconfig
import threading
from collections.abc import Callable
from types import FrameType
from typing import Any, TextIO

_AUDIT_DIR = os.path.dirname(os.path.abspath(__file__))
_STDLIB = os.path.abspath(sysconfig.get_paths()["stdlib"])
_PACKAGES = ("site-packages", "dist-packages")


class Recorder:
    def __init__(self, directory: str, root: str, trace_lines: bool = True) -> None:
        self.trace_lines = trace_lines  # which lines ran (audit); off where only sites matter
        self.root = os.path.abspath(root)
        self.path = os.path.join(directory, f"{os.getpid()}.jsonl")
        self.library_dirs: list[str] = []  # torch (and triton): internal frames are skipped
        self.counts: dict[tuple, int] = {}
        self.lines: dict[str, set[int]] = {}
        self._kinds: dict[str, str] = {}
        self._lock = threading.Lock()
        self._file: TextIO | None = None

    # -- lifecycle ---------------------------------------------------------------------------
    def start(self) -> None:
        self._file = open(self.path, "a", encoding="utf-8")
        self._write({"type": "process", "pid": os.getpid(), "argv": sys.argv,
                     "rank": os.environ.get("RANK")})
        atexit.register(self.finish)
        os.register_at_fork(after_in_child=self._after_fork)
        # multiprocessing children (DataLoader workers) leave through os._exit, not atexit, and
        # clear the finalizers they inherit: register one again in each of them.
        import multiprocessing.util as mp_util

        mp_util.register_after_fork(self, lambda recorder: mp_util.Finalize(
            recorder, recorder.finish, exitpriority=0))
        if self.trace_lines:
            self._trace_lines()
        if threading.current_thread() is threading.main_thread() and \
                signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
            # --max-seconds ends the run with SIGTERM: exit through atexit so the counts and the
            # executed lines are written (a program with its own handler keeps it).
            signal.signal(signal.SIGTERM, _exit_on_sigterm)

    def _after_fork(self) -> None:
        """A forked process (a DataLoader worker, say) records into a file of its own; the
        parent's counts stay the parent's."""
        self._lock = threading.Lock()
        self.counts = {}
        self.path = os.path.join(os.path.dirname(self.path), f"{os.getpid()}.jsonl")
        self._file = open(self.path, "a", encoding="utf-8")
        self._write({"type": "process", "pid": os.getpid(), "argv": sys.argv,
                     "rank": os.environ.get("RANK")})

    def finish(self) -> None:
        sys.settrace(None)
        threading.settrace(None)
        with self._lock:
            if self._file is None:
                return
            self._write({"type": "counts", "sites": [[*key, n] for key, n in self.counts.items()]})
            self._write({"type": "lines", "files": {f: sorted(v) for f, v in self.lines.items()}})
            self._file.close()
            self._file = None

    def _write(self, entry: dict) -> None:
        assert self._file is not None
        self._file.write(json.dumps(entry) + "\n")
        self._file.flush()

    # -- sites -------------------------------------------------------------------------------
    def add_library(self, path: str) -> None:
        """Frames under this folder (or in this file) are library internals, not the program's."""
        path = os.path.abspath(path)
        self.library_dirs.append(path + os.sep if os.path.isdir(path) else path)
        self._kinds.clear()

    def kind_of(self, filename: str) -> str:
        """'audit', 'stdlib', 'library' (torch, triton) or 'program' (anything else)."""
        kind = self._kinds.get(filename)
        if kind is None:
            path = os.path.abspath(filename) if not filename.startswith("<") else filename
            if path.startswith(("<", _AUDIT_DIR)):
                kind = "audit" if path.startswith(_AUDIT_DIR) else "stdlib"
            elif any(path.startswith(d) for d in self.library_dirs):
                kind = "library"
            elif path.startswith(_STDLIB) and not any(p in path for p in _PACKAGES):
                kind = "stdlib"
            else:
                kind = "program"
            self._kinds[filename] = kind
        return kind

    def caller(self, frame: FrameType | None, through_torch: bool) -> tuple[FrameType, str] | None:
        """The first frame of the program above ``frame`` and the torch function it called.

        ``through_torch=False``: a call made by torch itself (torch.manual_seed seeding CUDA,
        say) is no touch of the program's: None.
        """
        via = ""
        while frame is not None:
            kind = self.kind_of(frame.f_code.co_filename)
            if kind == "program":
                return frame, via
            if kind == "library":
                if not through_torch:
                    return None
                # co_qualname is Python 3.11+; co_name on 3.10
                qualname = getattr(frame.f_code, "co_qualname", frame.f_code.co_name)
                if "<locals>" not in qualname:  # not a decorator's wrapper
                    via = qualname
            frame = frame.f_back
        return None

    def site(self, kind: str, what: str, *, redirect: str = "", touch: bool = True,
             through_torch: bool = True, frame: FrameType | None = None) -> str | None:
        """Record a touch at the program's frame; returns ``file:line`` (None if not the program's)."""
        found = self.caller(frame or sys._getframe(1), through_torch)
        if found is None:
            return None
        where, via = found
        filename = os.path.abspath(where.f_code.co_filename)
        key = (kind, what, filename, where.f_lineno)
        with self._lock:
            seen = key in self.counts
            self.counts[key] = self.counts.get(key, 0) + 1
            if not seen and self._file is not None:
                self._write({"type": "site", "kind": kind, "what": what, "file": filename,
                             "line": where.f_lineno, "via": via if via != what else "",
                             "redirect": redirect, "touch": touch})
        return f"{os.path.relpath(filename)}:{where.f_lineno}"

    # -- executed lines ----------------------------------------------------------------------
    def _in_project(self, filename: str) -> bool:
        return self.kind_of(filename) == "program" and os.path.abspath(filename).startswith(
            self.root + os.sep) and not any(p in filename for p in _PACKAGES)

    def _trace_lines(self) -> None:
        """Which lines of the project's files ran: static findings on lines that never ran are
        reported as such. Frames of other files are not traced (one dict lookup per call)."""
        wanted: dict[str, set[int] | None] = {}

        def local(frame: FrameType, event: str, arg: object) -> Callable[..., Any]:
            if event == "line":
                lines = wanted[frame.f_code.co_filename]
                if lines is not None:
                    lines.add(frame.f_lineno)
            return local

        def global_(frame: FrameType, event: str, arg: object) -> Callable[..., Any] | None:
            filename = frame.f_code.co_filename
            if filename not in wanted:
                wanted[filename] = (self.lines.setdefault(os.path.abspath(filename), set())
                                    if self._in_project(filename) else None)
            if wanted[filename] is None:
                return None
            return local

        sys.settrace(global_)
        threading.settrace(global_)


def _exit_on_sigterm(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)
