"""output/plain.py draws the text tabulate draws ("plain"), or hands the table to tabulate."""

from __future__ import annotations

import pytest
import tabulate as tabulate_module
from hypothesis import given, settings
from hypothesis import strategies as st
from tabulate import tabulate

from kafkalog_cli.output import plain
from kafkalog_cli.output.plain import plain_table

# cells as info's columns hold them, and the near misses tabulate reads as something else
_CELLS = st.one_of(
    st.integers(-(10**20), 10**20).map(str),
    st.sampled_from(["-", "none", "gzip,lz4,none", "2023-11-14T22:13:20.200Z", "demo-0",
                     "1,000", "1,000.5", "007", "-0", "+5", "1e5", "inf", "nan", "True",
                     "False", "1_000", " 12", "a b", "x ", "", "é", "1.5", ".", "-1,2",
                     "t.-0", "\x1b[31mred\x1b[0m", "two\nlines"]),
    st.text(st.characters(min_codepoint=32, max_codepoint=126), min_size=1, max_size=8),
)


# mostly what the fast path takes: integers, and text with a dash or letters in it
_SIMPLE = st.one_of(st.integers(-(10**6), 10**12).map(str),
                    st.sampled_from(["-", "none", "lz4,none", "demo-12", "1,000"]))


def _tables(cells: st.SearchStrategy[str]) -> st.SearchStrategy[tuple[list[str], list[list[str]]]]:
    return st.integers(1, 4).flatmap(lambda n: st.tuples(
        st.lists(st.text(st.characters(min_codepoint=33, max_codepoint=126), min_size=1,
                         max_size=9), min_size=n, max_size=n),
        st.lists(st.lists(cells, min_size=n, max_size=n), max_size=6)))


@settings(max_examples=300, deadline=None)
@given(st.one_of(_tables(_CELLS), _tables(_SIMPLE)))
def test_same_text_as_tabulate(table: tuple[list[str], list[list[str]]]) -> None:
    headers, rows = table
    assert plain_table(rows, headers) == tabulate(rows, headers=headers, tablefmt="plain")


def test_info_like_columns_are_drawn_here(monkeypatch: pytest.MonkeyPatch) -> None:
    """The fast path is taken for info's cells (so the test above compares it)."""
    def refuse(*_a: object, **_k: object) -> str:
        raise AssertionError("tabulate called")

    rows = [["demo-0", "1", "0", "100", "-", "14000", "lz4,none"],
            ["demo-10", "12", "-", "7", "100", "9", "-"]]
    headers = ["partition", "segs", "start", "end", "hw", "bytes", "codecs"]
    want = tabulate(rows, headers=headers, tablefmt="plain")
    monkeypatch.setattr(tabulate_module, "tabulate", refuse)
    assert plain_table(rows, headers) == want
    assert [plain._kind(c) for c in zip(*rows, strict=True)] == \
        ["str", "int", "str", "int", "str", "int", "str"]
