"""Tables fit a terminal (expanded, one block per row, when too wide); pipes get every value
whole on its row."""

import re

import pytest
from tabulate import tabulate

from kafkalog_cli.output.fit import cells, expanded, table
from tests.cli.run import run, run_on_tty

HEADERS = ["kind", "offset", "value", "headers"]
ROWS = [
    ["record", 0, "v" * 300, "[]"],  # a value much wider than any screen
    ["record", 1, "日本語の値" * 20 + "\nsecond line", None],  # wide characters, a newline
    ["record", 2, "", "[]"],
]


def _values_back(text: str) -> list[dict[str, str]]:
    """Parse the expanded layout: `name | piece` lines, continuations with a blank name
    (values without newlines: their pieces join back without a separator)."""
    records: list[dict[str, str]] = []
    name = ""
    for line in text.split("\n"):
        if line.startswith("-[ RECORD "):
            records.append({})
            continue
        head, sep, piece = line.partition(" | ")
        if not sep:  # an empty value: "name |"
            head, piece = line.removesuffix(" |"), ""
        if head.strip():
            name = head.strip()
            records[-1][name] = piece
        else:
            records[-1][name] += piece
    return records


def test_a_table_that_fits_is_left_alone():
    rows = [["a", 1], ["b", 2]]
    assert table(["x", "y"], rows, 80) == tabulate(rows, headers=["x", "y"])
    assert table(["x", "y"], rows, None) == tabulate(rows, headers=["x", "y"])


def test_a_pipe_gets_whole_values_however_wide():
    text = table(HEADERS, ROWS, None)
    assert "v" * 300 in text and "RECORD" not in text


@pytest.mark.parametrize("width", [40, 80, 120])
def test_too_wide_goes_expanded_within_the_width_and_loses_nothing(width):
    text = table(HEADERS, [ROWS[0], ROWS[2]], width)
    lines = text.split("\n")
    assert lines[0].startswith("-[ RECORD 1 ]")
    assert max(map(cells, lines)) <= width
    back = _values_back(text)
    assert back == [{"kind": "record", "offset": "0", "value": "v" * 300, "headers": "[]"},
                    {"kind": "record", "offset": "2", "value": "", "headers": "[]"}]


def test_wide_characters_and_newlines_stay_within_the_width():
    text = expanded(HEADERS, [ROWS[1]], 30)
    lines = text.split("\n")
    assert max(map(cells, lines)) <= 30
    value_lines = [ln.partition(" | ")[2] for ln in lines[1:] if " | " in ln]
    # the pieces of the value, in order, are the value (cut where the width ends and at \n)
    assert "".join(value_lines[2:-1]) == "日本語の値" * 20
    assert value_lines[-1] == "second line"
    assert cells("日本") == 4 and cells("e\u0301") == 1


def test_dump_table_fits_a_terminal_and_a_pipe_gets_full_rows(sample):
    args = ("dump", sample / "demo-0", "--format", "table", "--records", "--print-data")
    tty = run_on_tty(*args, columns=80)
    assert tty.code == 0
    lines = tty.text.splitlines()
    assert any(ln.startswith("-[ RECORD ") for ln in lines)
    assert max(map(cells, lines)) <= 80
    piped = run(*args)
    assert "RECORD" not in piped.text
    assert max(map(cells, piped.text.splitlines())) > 200  # the whole batch row


def test_info_table_fits_a_terminal(sample):
    tty = run_on_tty("info", sample, columns=100)
    assert tty.code == 0
    lines = tty.text.splitlines()  # the log dir row, then one expanded block per partition
    assert any(ln.startswith("-[ RECORD ") for ln in lines)
    assert any(re.fullmatch(r"topic +\| demo", ln) for ln in lines)
    assert max(map(cells, lines)) <= 100
