"""The compiled visible-UTF-8 decoder equals bytes.decode("utf-8", "backslashreplace")."""

import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafkalog_cli.output.render import _utf8_visible_pure, utf8_visible

TRICKY = [b"\xc0\x80", b"\xc1\xbf", b"\xe0\x80\x80", b"\xe0\x9f\xbf", b"\xed\xa0\x80",
          b"\xed\x9f\xbf", b"\xf0\x8f\xbf\xbf", b"\xf4\x90\x80\x80", b"\xf5", b"\xff",
          b"\xe2\x82", b"\xe2", b"\xf0\x9f\x98", b"\xf0\x9f\x98\x80", b"\x80", b"caf\xc3\xa9",
          b"\xc3", b""]
pieces = st.one_of(st.sampled_from(TRICKY), st.binary(max_size=8),
                   st.text(max_size=8).map(lambda s: s.encode("utf-8", "surrogatepass")))


def test_compiled_version_is_in_use():
    if os.environ.get("KAFKALOG_NO_EXT") or os.environ.get("KAFKALOG_PURE") == "1":
        pytest.skip("extension deliberately disabled")
    assert utf8_visible is not _utf8_visible_pure


@settings(max_examples=3000, deadline=None)
@given(st.lists(pieces, max_size=12).map(b"".join))
def test_equals_python_backslashreplace(data):
    assert utf8_visible(data) == data.decode("utf-8", "backslashreplace")


@pytest.mark.parametrize("data", TRICKY)
def test_tricky_sequences(data):
    assert utf8_visible(data) == data.decode("utf-8", "backslashreplace")
    assert utf8_visible(data + b"tail") == (data + b"tail").decode("utf-8", "backslashreplace")


def test_none_and_memoryview():
    assert utf8_visible(None) is None
    assert utf8_visible(memoryview(b"ab\xff")) == "ab\\xff"
