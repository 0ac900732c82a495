"""csv output is lossless: null is an empty, unquoted cell and an empty string a quoted empty
cell `""` (PostgreSQL's COPY ... CSV), so a record's null key and its zero-length key differ;
every other value is written as the csv module's QUOTE_MINIMAL wrote it (quoted only for a
comma, a quote, CR or LF; CRLF line ends)."""

import csv
import io
import json
import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kafkalog_cli.output.render import CsvRenderer, cell, csv_field, json_bytes
from tests.cli.run import run


def parse(data: bytes) -> list[list[str | None]]:
    """A small RFC 4180 reader that keeps what csv.reader loses: an unquoted empty cell is
    None, a quoted one "". Every line must end in CRLF (outside quotes)."""
    text = data.decode("utf-8")
    rows: list[list[str | None]] = []
    row: list[str | None] = []
    i, n = 0, len(text)
    while i < n:
        if text[i] == '"':
            i += 1
            buf = []
            while True:
                j = text.index('"', i)
                buf.append(text[i:j])
                if text.startswith('"', j + 1):  # a doubled quote
                    buf.append('"')
                    i = j + 2
                else:
                    i = j + 1
                    break
            cell: str | None = "".join(buf)
        else:
            j = i
            while j < n and text[j] not in ',\r\n':
                assert text[j] != '"', f"a quote in an unquoted cell at {j}"
                j += 1
            cell = text[i:j] or None
            i = j
        row.append(cell)
        if text.startswith(",", i):
            i += 1
        elif text.startswith("\r\n", i):
            rows.append(row)
            row = []
            i += 2
        else:
            raise AssertionError(f"a cell must end in ',' or CRLF at {i}: {text[i:i + 10]!r}")
    assert not row, "the last line has no CRLF"
    return rows


def render(rows: list[dict[str, object]], columns: list[str] | None = None) -> bytes:
    out = io.BytesIO()
    r = CsvRenderer(out, columns)
    for row in rows:
        r.row(row)
    r.close()
    return out.getvalue()


def old_render(rows: list[dict[str, object]], columns: list[str]) -> bytes:
    """What csv.DictWriter wrote before (cells as `cell` gave them, null empty)."""
    s = io.StringIO()
    w = csv.DictWriter(s, fieldnames=columns, extrasaction="raise")
    w.writeheader()
    for row in rows:
        w.writerow({k: cell(v) for k, v in row.items()})
    return s.getvalue().encode()


def test_null_and_empty_string_differ_byte_for_byte():
    rows = [{"kind": "record", "key": None, "value": ""},
            {"kind": "record", "key": "", "value": None},
            {"kind": "batch"}]  # fields a row lacks: empty, as null
    assert render(rows, ["kind", "key", "value"]) == (
        b'kind,key,value\r\n'
        b'record,,""\r\n'
        b'record,"",\r\n'
        b'batch,,\r\n')
    assert parse(render(rows)) == [["kind", "key", "value"], ["record", None, ""],
                                   ["record", "", None], ["batch", None, None]]


def test_other_values_are_quoted_as_before_hand_computed():
    # the expected line worked out by hand from RFC 4180 (not by any csv library)
    row = {"a": "a,b", "b": 'say "hi"', "c": "l1\nl2", "d": "cr\rx", "e": "plain",
           "f": " sp ", "g": "tab\there", "h": True, "i": False, "j": 7, "k": -1.5,
           "l": [{"name": "h", "value": None}], "m": {"x": ""}, "n": "é\u2028",
           "o": '"', "p": ",", "q": "\r\n"}
    got = render([row], list(row))
    assert got == (
        b"a,b,c,d,e,f,g,h,i,j,k,l,m,n,o,p,q\r\n"
        b'"a,b","say ""hi""","l1\nl2","cr\rx",plain, sp ,tab\there,true,false,7,-1.5,'
        b'"[{""name"":""h"",""value"":null}]","{""x"":""""}",'
        + "é\u2028".encode() + b',"""",",","\r\n"\r\n')
    assert parse(got)[1] == ["a,b", 'say "hi"', "l1\nl2", "cr\rx", "plain", " sp ",
                             "tab\there", "true", "false", "7", "-1.5",
                             '[{"name":"h","value":null}]', '{"x":""}', "é\u2028", '"',
                             ",", "\r\n"]


def test_csv_field():
    assert [csv_field(v) for v in (None, "", "x", 'x"', "a,b", 0, True, [])] == \
        ["", '""', "x", '"x"""', '"a,b"', "0", "true", "[]"]


_TEXT = st.text(st.sampled_from('ab ,"\r\n\t\x00é\u2028'), max_size=8)
_VALUE = st.one_of(st.none(), _TEXT, st.integers(), st.booleans(),
                   st.floats(allow_nan=False), st.lists(_TEXT, max_size=2))


@given(st.lists(st.lists(_VALUE, min_size=3, max_size=3), max_size=5))
def test_values_but_empty_strings_as_the_csv_module_wrote_them_and_all_read_back(table):
    cols = ["x", "y", "z"]
    rows = [dict(zip(cols, r, strict=True)) for r in table]
    got = render(rows, cols)
    # the csv module as oracle, where it could tell: no empty string, a row not all empty
    if not any(v == "" for r in table for v in r):
        assert got == old_render(rows, cols)
    # every cell reads back: null as None, a string as itself, the rest as csv_field's text
    want = [cols, *([None if v is None else v if isinstance(v, str)
                     else json_bytes(v).decode() if isinstance(v, list)
                     else csv_field(v) for v in r] for r in table)]
    assert parse(got) == want
    # and csv.reader agrees, but for null/"" which it cannot tell apart
    assert list(csv.reader(io.StringIO(got.decode(), newline=""))) == \
        [[c or "" for c in r] for r in want]


def test_union_of_fields_and_header_alone():
    assert render([{"a": None}, {"b": "", "a": 1}]) == b'a,b\r\n,\r\n1,""\r\n'
    assert render([], ["a", "b"]) == b"a,b\r\n"
    assert render([]) == b""
    # one column: null is an empty line, "" a quoted cell (PostgreSQL's convention)
    assert render([{"a": None}, {"a": ""}], ["a"]) == b'a\r\n\r\n""\r\n'


def test_a_field_outside_the_declared_columns_raises():
    with pytest.raises(ValueError, match="not in fieldnames: 'c'"):
        render([{"a": 1, "c": 2}], ["a", "b"])


def test_many_rows_stream_and_stay_linear():
    pick = random.Random(0).choice
    rows = [{"k": pick([None, "", "v,w"]), "n": i} for i in range(20000)]
    got = parse(render(rows, ["k", "n"]))
    assert [r[0] for r in got[1:]] == [r["k"] for r in rows]


def test_dump_records_csv_tells_a_null_key_from_an_empty_one(tmp_path):
    recs = [{"key": None, "value": "a,b"}, {"key": "", "value": 'say "hi"'},
            {"key": "k", "value": "line1\nline2"}, {"key": "x", "value": None},
            {"key": "y", "value": ""}]
    stdin = "".join(json.dumps(r) + "\n" for r in recs).encode()
    for p in (0, 1):
        r = run("append", tmp_path, "--create", "--topic", "t", "--partition", p,
                "--now", "1700000000000", stdin=stdin)
        assert r.code == 0, r.err
    d = run("dump", tmp_path / "t-0", "--records", "--no-batches", "--format", "csv",
            "--payload", "utf8")
    assert d.code == 0, d.err
    # the whole output, by hand: a null key an empty cell, an empty key `""`; other values
    # quoted as before
    assert d.out == (
        b"kind,topic,partition,offset,timestamp,timestampType,key,value,headers,sequence,crc,"
        b"control,decoded\r\n"
        b'record,t,0,0,1700000000000,CreateTime,,"a,b",[],-1,,,\r\n'
        b'record,t,0,1,1700000000000,CreateTime,"","say ""hi""",[],-1,,,\r\n'
        b'record,t,0,2,1700000000000,CreateTime,k,"line1\nline2",[],-1,,,\r\n'
        b"record,t,0,3,1700000000000,CreateTime,x,,[],-1,,,\r\n"
        b'record,t,0,4,1700000000000,CreateTime,y,"",[],-1,,,\r\n')
    rows = parse(d.out)
    cols = rows[0]
    got = [(r[cols.index("offset")], r[cols.index("key")], r[cols.index("value")])
           for r in rows[1:]]
    assert got == [("0", None, "a,b"), ("1", "", 'say "hi"'), ("2", "k", "line1\nline2"),
                   ("3", "x", None), ("4", "y", "")]
    # hex and base64 write an empty key as "" too; -j 2 over two partitions as -j 1
    for payload in ("hex", "base64"):
        rows = parse(run("dump", tmp_path / "t-0", "--records", "--no-batches", "--format",
                         "csv", "--payload", payload).out)
        assert [r[rows[0].index("key")] for r in rows[1:3]] == [None, ""], payload
    one = run("dump", tmp_path, "--records", "--format", "csv", "-j", "1")
    two = run("dump", tmp_path, "--records", "--format", "csv", "-j", "2")
    assert (two.code, two.out) == (one.code, one.out) and one.code == 0
    assert one.out.count(b',"",') == 4  # each partition: the empty key and the empty value
