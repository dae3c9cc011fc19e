"""The progress bar: shown only on a terminal, after the delay; cleared at the end."""

from __future__ import annotations

import io

from neuronize.presenting.progress import Progress


class FakeTTY(io.StringIO):
    def isatty(self) -> bool:
        return True


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_draws_after_delay_and_clears():
    stream, clock = FakeTTY(), Clock()
    with Progress(10, stream=stream, clock=clock) as progress:
        progress.advance(2)
        assert stream.getvalue() == ""  # under the delay: nothing
        clock.now += 2.0
        progress.advance(2)
        text = stream.getvalue()
        assert text.startswith("\r") and "4/10 files" in text and "ETA 3s" in text
        assert "2/s" in text
        assert "\n" not in text
    final = stream.getvalue()
    assert final.endswith("\r") and final.rstrip("\r").endswith(" ")  # line erased
    assert "\n" not in final


def test_short_run_prints_nothing():
    stream, clock = FakeTTY(), Clock()
    with Progress(5, stream=stream, clock=clock) as progress:
        for _ in range(5):
            clock.now += 0.1
            progress.advance()
    assert stream.getvalue() == ""


def test_not_a_tty_prints_nothing():
    stream, clock = io.StringIO(), Clock()
    with Progress(5, stream=stream, clock=clock) as progress:
        clock.now += 10
        progress.advance(5)
    assert stream.getvalue() == ""


def test_disabled_prints_nothing():
    stream, clock = FakeTTY(), Clock()
    with Progress(5, stream=stream, enabled=False, clock=clock) as progress:
        clock.now += 10
        progress.advance(5)
    assert stream.getvalue() == ""


def test_throttled_and_final_state_drawn():
    stream, clock = FakeTTY(), Clock()
    with Progress(1000, stream=stream, clock=clock, interval=0.5) as progress:
        clock.now += 2
        for _ in range(999):
            progress.advance()  # same instant: drawn once
        assert stream.getvalue().count("\r") == 1
        progress.advance()  # the last file is always drawn
        assert "1000/1000 files" in stream.getvalue() and "done" in stream.getvalue()


def test_line_format():
    clock = Clock()
    progress = Progress(300, stream=FakeTTY(), clock=clock)
    with progress:
        clock.now += 3
        progress.done = 30
        line = progress.line()
    assert "30/300 files" in line and "10/s" in line and "ETA 27s" in line
    progress.total, progress.done = 10_000, 10
    assert "ETA" in progress.line(clock.now + 1)
    assert "m" in progress.line(clock.now + 1).split("ETA ")[1]


def test_zero_total_and_closed_stream():
    stream = FakeTTY()
    with Progress(0, stream=stream) as progress:
        progress.advance()
    assert stream.getvalue() == ""
    clock = Clock()
    stream = FakeTTY()
    progress = Progress(3, stream=stream, clock=clock)
    with progress:
        clock.now += 5
        stream.close()
        progress.advance()  # a closed stream disables the bar, never raises
    assert progress.enabled is False
