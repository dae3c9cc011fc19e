"""Running a file's analysis on a thread with a deep C stack.

libcst's native parser recurses on the C stack: ~2000 nested brackets overflow a default 8 MB
thread stack and kill the process (a segfault cannot be caught). Parsing runs on a thread with a
large stack instead; Python-level recursion limits then fail cleanly, as an error for that one
file.

One such thread per process, started at the first file and kept: a new thread per file made the
C allocator (glibc gives a thread that starts while the last one is still exiting an arena of its
own) spread the parser's memory over several arenas, each keeping the peak of the files it saw,
about 50 MB more per worker on real repositories.
"""

from __future__ import annotations

import os
import queue
import threading
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

_DEEP_STACK = 512 * 1024 * 1024

#: the call to make and where its outcome goes: (value, None) or (None, exception)
_Call = tuple[Callable[[], object], "queue.SimpleQueue[tuple[object, BaseException | None]]"]

_thread: threading.Thread | None = None
_calls: queue.SimpleQueue[_Call] = queue.SimpleQueue()
_starting = threading.Lock()


def on_deep_stack(func: Callable[[], T]) -> T:
    """``func()`` on the process's deep-stack thread (a plain thread: the executor of
    concurrent.futures would cost its import, and logging's, at every start); its exception is
    raised here. Calls from several threads wait their turn; a call from that thread runs at once."""
    global _thread
    if threading.current_thread() is _thread:
        return func()
    with _starting:
        if _thread is None:
            previous = threading.stack_size(_DEEP_STACK)
            try:
                _thread = threading.Thread(target=_serve, args=(_calls,), name="neuronize-parse", daemon=True)
                _thread.start()
            finally:
                threading.stack_size(previous)
    # an answer of its own per call: one a Ctrl-C abandoned is never taken for the next call's
    answer: queue.SimpleQueue[tuple[object, BaseException | None]] = queue.SimpleQueue()
    _calls.put((func, answer))
    value, failure = answer.get()
    if failure is not None:
        raise failure
    return value  # type: ignore[return-value]


def _serve(calls: queue.SimpleQueue[_Call]) -> None:
    while True:
        func, answer = calls.get()
        try:
            answer.put((func(), None))
        except BaseException as exc:  # noqa: BLE001 - re-raised in the caller's thread
            answer.put((None, exc))
        del func, answer  # the last file's tree is not kept alive while the thread waits


def _forget_thread() -> None:
    """A forked child has no copy of the thread: it starts its own at its first file."""
    global _thread, _calls, _starting
    _thread, _calls, _starting = None, queue.SimpleQueue(), threading.Lock()


os.register_at_fork(after_in_child=_forget_thread)
