"""Why a file could not be read, said in one line that names the real cause."""

from __future__ import annotations

import codecs

import pytest

from neuronize.analysis.read_errors import read_error


def test_an_unknown_codec_is_a_decoding_error() -> None:
    with pytest.raises(LookupError) as raised:
        codecs.lookup("no-such-codec")
    assert read_error(raised.value, b"# coding: no-such-codec\n").message.startswith("cannot decode: ")


@pytest.mark.parametrize("exc", [IndexError("pop from empty list"), KeyError("x")])
def test_a_failure_of_ours_is_an_internal_error_not_a_decoding_error(exc: LookupError) -> None:
    message = read_error(exc, b"x = 1\n").message
    assert message.startswith(f"internal error ({type(exc).__name__}: ") and message.endswith("please report it")
