"""Man pages: the committed man/*.1 are what `make man` generates from the click definitions
today (so a changed option or help text without `make man` fails here), and each page has the
sections a man page needs."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

from kafkalog_cli import manpages
from kafkalog_cli.cli import COMMANDS

MAN = Path(__file__).resolve().parents[2] / "man"
SECTIONS = ["NAME", "SYNOPSIS", "DESCRIPTION", "OPTIONS", "EXIT STATUS", "FILES", "SEE ALSO"]


def stale(committed: Path, generated: Path) -> list[str]:
    """Pages that differ, are missing, or should not be there."""
    want = {p.name: p.read_bytes() for p in generated.glob("*.1")}
    have = {p.name: p.read_bytes() for p in committed.glob("*.1")}
    return sorted(n for n in want.keys() | have.keys() if want.get(n) != have.get(n))


@pytest.fixture(scope="module")
def generated(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("man")
    r = subprocess.run([sys.executable, "-m", "kafkalog_cli.manpages", str(out)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return out


def test_committed_pages_are_up_to_date(generated):
    diff = stale(MAN, generated)
    assert not diff, f"man pages out of date: {diff}; run `make man` and commit man/"


def test_a_stale_or_extra_page_is_detected(generated, tmp_path):
    copy = tmp_path / "man"
    copy.mkdir()
    for p in generated.glob("*.1"):
        (copy / p.name).write_bytes(p.read_bytes())
    assert stale(copy, generated) == []
    page = copy / "kafkalog-dump.1"
    page.write_text(page.read_text().replace("from\\-offset", "from\\-ofset"))
    (copy / "kafkalog-gone.1").write_text(".TH X 1\n")
    (copy / "kafkalog-verify.1").unlink()
    assert stale(copy, generated) == ["kafkalog-dump.1", "kafkalog-gone.1",
                                      "kafkalog-verify.1"]


def test_one_page_per_command_named_as_git_names_them(generated):
    assert {p.name for p in generated.glob("*.1")} == {"kafkalog.1"} | {
        f"kafkalog-{n}.1" for n in COMMANDS}


@pytest.mark.parametrize("name", list(COMMANDS))
def test_command_page_sections(generated, name):
    text = (generated / f"kafkalog-{name}.1").read_text()
    heads = re.findall(r"^\.SH (.+)$", text, re.M)
    assert [h for h in heads if h in SECTIONS] == SECTIONS
    assert text.startswith(f".TH KAFKALOG-{name.upper()} 1 ")
    assert f"kafkalog\\-{name.replace('-', chr(92) + '-')} \\- " in text  # NAME line
    for h in heads:
        assert h in SECTIONS or h == "EXAMPLES"


def test_dump_page_content(generated):
    text = (generated / "kafkalog-dump.1").read_text()
    assert "\\-\\-decode [auto|none|offsets|transactions|share|metadata]" in text
    examples = text.split(".SH EXAMPLES", 1)[1].split(".SH", 1)[0]
    assert "kafkalog dump /var/lib/kafka/orders\\-0" in examples
    assert "Exit codes: 0 all read" in text.split(".SH EXIT STATUS", 1)[1]
    assert "\\fI*.txnindex\\fR" in text.split(".SH FILES", 1)[1]


def test_main_page_lists_every_command_and_completion(generated):
    text = (generated / "kafkalog.1").read_text()
    for n in COMMANDS:
        assert f"\\fBkafkalog\\-{n.replace('-', chr(92) + '-')}\\fR(1)" in text
    assert "_KAFKALOG_COMPLETE" in text and "bash_source" in text


def test_roff_escaping():
    assert manpages.esc(".starts with a dot\n'quote") == "\\&.starts with a dot\n\\&'quote"
    assert manpages.esc("a\\b --x") == "a\\eb \\-\\-x"
    desc, ex = manpages.split_help("One.\n\nTwo\nlines.\n\n\b\nExamples:\n  a b\n      c")
    assert desc == ["One.", "Two lines."] and ex == ["a b", "    c"]
