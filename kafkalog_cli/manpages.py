"""Man pages from the click definitions: `kafkalog.1` and `kafkalog-<command>.1` (git's naming).

    python -m kafkalog_cli.manpages [OUT_DIR]      (`make man`; default: man/)

Sections: NAME (the COMMANDS summary), SYNOPSIS (click's usage pieces), DESCRIPTION (the
command's help without its `Examples:` block), OPTIONS (click's help records, so defaults and
ranges read as in --help), EXAMPLES, EXIT STATUS (the command's epilog), FILES (below),
SEE ALSO. The output is deterministic (no date), so a test can regenerate the pages and
compare them with the committed ones.
"""

from __future__ import annotations

import inspect
import re
import sys
from pathlib import Path

import click

from kafkalog_cli import __version__
from kafkalog_cli.cli import COMMANDS, root

_READS = ("Reads segments (\\fI*.log\\fR), indexes (\\fI*.index\\fR, \\fI*.timeindex\\fR, "
          "\\fI*.txnindex\\fR) and producer snapshots (\\fI*.snapshot\\fR) of the partition dirs "
          "under PATH; never writes")
_LOCK = ("Takes the POSIX lock on \\fI<log dir>/.lock\\fR (the lock a running broker holds) "
         "and refuses to run while it is held")
_QUARANTINE = ("What it removes goes to \\fI<log dir>/../.kafkalog-quarantine/<log dir name>/"
               "<UTC time>/\\fR with a \\fImanifest.jsonl\\fR, unless "
               "\\fB--no-quarantine\\fR (\\fB--quarantine DIR\\fR puts it elsewhere)")
FILES: dict[str, list[str]] = {
    "append": [_LOCK, "Writes \\fI<logdir>/<topic>-<partition>/\\fR segments, "
               "\\fI.index\\fR, \\fI.timeindex\\fR, \\fI.txnindex\\fR, \\fI.snapshot\\fR, "
               "\\fIleader-epoch-checkpoint\\fR and \\fIpartition.metadata\\fR",
               "Updates \\fIrecovery-point-offset-checkpoint\\fR, "
               "\\fIreplication-offset-checkpoint\\fR and \\fIlog-start-offset-checkpoint\\fR; "
               "\\fI.kafka_cleanshutdown\\fR with \\fB--clean-shutdown\\fR"],
    "dump": [_READS, "Also reads KRaft \\fI*.checkpoint\\fR snapshots, "
             "\\fIbootstrap.checkpoint\\fR, \\fIleader-epoch-checkpoint\\fR, the root "
             "checkpoint files, \\fIpartition.metadata\\fR and \\fIquorum-state\\fR"],
    "verify": [_READS, "Also checks the root checkpoint files, "
               "\\fIleader-epoch-checkpoint\\fR, \\fIpartition.metadata\\fR, "
               "\\fImeta.properties\\fR and leftover \\fI.cleaned\\fR/\\fI.swap\\fR/"
               "\\fI.deleted\\fR files"],
    "index-rebuild": [_LOCK, "Rewrites \\fI*.index\\fR, \\fI*.timeindex\\fR and "
                      "\\fI*.txnindex\\fR next to each segment (through a temporary file and a "
                      "rename)"],
    "find-by-time": [_READS, "Reads \\fIlog-start-offset-checkpoint\\fR"],
    "retain": [_LOCK, "Renames deleted segments to \\fI*.deleted\\fR, then removes them",
               "Updates \\fIlog-start-offset-checkpoint\\fR; reads "
               "\\fIreplication-offset-checkpoint\\fR (the high watermark bounds deletion)",
               _QUARANTINE],
    "compact": [_LOCK, "Writes \\fI*.cleaned\\fR, renames to \\fI*.swap\\fR, replaces the old "
                "segments (\\fI*.deleted\\fR)", "Reads and updates "
                "\\fIcleaner-offset-checkpoint\\fR; reads \\fIlog-start-offset-checkpoint\\fR "
                "and \\fIreplication-offset-checkpoint\\fR", _QUARANTINE],
    "recover": [_LOCK, "Finishes or undoes \\fI.cleaned\\fR/\\fI.swap\\fR/\\fI.deleted\\fR "
                "leftovers, truncates damaged tails, rebuilds indexes and producer snapshots, "
                "removes the producer snapshots the broker's load deletes",
                "Reads \\fIrecovery-point-offset-checkpoint\\fR, "
                "\\fIlog-start-offset-checkpoint\\fR, "
                "\\fI.kafka_cleanshutdown\\fR; updates \\fIrecovery-point-offset-checkpoint\\fR "
                "and \\fIreplication-offset-checkpoint\\fR", _QUARANTINE],
    "info": [_READS, "Reads the root checkpoint files, \\fImeta.properties\\fR, "
             "\\fI.kafka_cleanshutdown\\fR and the state of \\fI.lock\\fR"],
    "txn": [_READS, "Reads \\fIreplication-offset-checkpoint\\fR (the high watermark bounds "
            "the last stable offset)"],
    "generate": ["Writes a complete log dir under OUT: partition dirs, segments, indexes, "
                 "snapshots and checkpoint files"],
    "migrate": [_LOCK + " (on OUT)", "Reads Kafka 0.7 \\fI*.kafka\\fR segments under SOURCE; "
                "writes a current log dir under OUT and the offset mapping (CSV)"],
}
SEE_ALSO_EXTRA = "kafka-dump-log.sh, kafka-transactions.sh (Apache Kafka)"


def esc(text: str) -> str:
    """Roff-safe text: backslashes, dashes of options, and a leading dot or quote."""
    text = text.replace("\\", "\\e").replace("-", "\\-")
    return "\n".join("\\&" + ln if ln.startswith((".", "'")) else ln
                     for ln in text.split("\n"))


def _rich(text: str) -> str:
    """Escape, but keep the \\fI...\\fR font changes of the FILES table."""
    parts = re.split(r"(\\f[BIR])", text)
    return "".join(p if re.fullmatch(r"\\f[BIR]", p) else esc(p) for p in parts)


def split_help(help_text: str) -> tuple[list[str], list[str]]:
    """(description paragraphs, example lines) of a click help text."""
    text = inspect.cleandoc(help_text)
    paragraphs = [p.strip("\n") for p in re.split(r"\n\s*\n", text.strip())]
    desc: list[str] = []
    examples: list[str] = []
    for p in paragraphs:
        body = p.removeprefix("\b").strip("\n")
        lines = body.split("\n")
        if lines[0].strip() == "Examples:":
            examples += [ln.strip() if not ln.startswith("      ") else "    " + ln.strip()
                         for ln in lines[1:] if ln.strip()]
        else:
            desc.append(body if p.startswith("\b") else " ".join(
                ln.strip() for ln in lines))
    return desc, examples


def _header(name: str, summary: str) -> list[str]:
    return [f'.TH {name.upper()} 1 "" "kafkalog {__version__}" "kafkalog manual"',
            ".SH NAME", f"{esc(name)} \\- {esc(summary)}"]


def _paragraphs(desc: list[str]) -> list[str]:
    out: list[str] = []
    for p in desc:
        out.append(".PP")
        if "\n" in p:  # a \b block: keep its lines
            out += [".nf", esc(p), ".fi"]
        else:
            out.append(esc(p))
    return out


def _options(cmd: click.Command, ctx: click.Context) -> list[str]:
    out = [".SH OPTIONS"]
    for param in cmd.get_params(ctx):
        if not isinstance(param, click.Option):
            continue
        rec = param.get_help_record(ctx)
        if rec is None:
            continue
        out += [".TP", f"\\fB{esc(rec[0])}\\fR", esc(rec[1]) if rec[1] else ""]
    return out


def _root_context() -> click.Context:
    return click.Context(root, info_name="kafkalog", **root.context_settings)


def command_page(name: str) -> str:
    parent = _root_context()
    cmd = root.get_command(parent, name)
    assert cmd is not None, name
    ctx = click.Context(cmd, info_name=name, parent=parent)
    desc, examples = split_help(cmd.help or "")
    usage = " ".join(cmd.collect_usage_pieces(ctx))
    lines = _header(f"kafkalog-{name}", COMMANDS[name][1])
    lines += [".SH SYNOPSIS", f"\\fBkafkalog {esc(name)}\\fR {esc(usage)}",
              ".SH DESCRIPTION", *_paragraphs(desc)]
    lines += _options(cmd, ctx)
    if examples:
        lines += [".SH EXAMPLES", ".nf", ".RS 4", esc("\n".join(examples)), ".RE", ".fi"]
    lines += [".SH EXIT STATUS", ".PP", esc(cmd.epilog or root.epilog or "")]
    lines += [".SH FILES"]
    for f in FILES.get(name, ["Reads the files named by PATH"]):
        lines += [".IP \\(bu 2", _rich(f) + "."]
    others = ", ".join(f"\\fBkafkalog-{esc(n)}\\fR(1)" for n in COMMANDS if n != name)
    lines += [".SH SEE ALSO", f"\\fBkafkalog\\fR(1), {others}; {esc(SEE_ALSO_EXTRA)}"]
    return "\n".join(lines) + "\n"


def main_page() -> str:
    ctx = _root_context()
    desc = [" ".join(inspect.cleandoc(root.help or "").split())]
    lines = _header("kafkalog", "inspect, verify and repair Apache Kafka log directories")
    lines += [".SH SYNOPSIS", "\\fBkafkalog\\fR [\\fB\\-\\-debug\\fR] \\fICOMMAND\\fR "
              "[\\fIARGS\\fR...]", ".br", "\\fBkafkalog\\fR \\fICOMMAND\\fR \\fB\\-\\-help\\fR",
              ".SH DESCRIPTION", *_paragraphs(desc), ".SH COMMANDS"]
    for n, (_mod, summary) in COMMANDS.items():
        lines += [".TP", f"\\fBkafkalog\\-{esc(n)}\\fR(1)", esc(summary)]
    lines += _options(root, ctx)
    lines += [".SH EXIT STATUS", ".PP", esc(root.epilog or ""),
              ".SH ENVIRONMENT", ".TP", "\\fBKAFKALOG_DEBUG\\fR",
              "Any value: show tracebacks on errors (as \\fB\\-\\-debug\\fR).", ".TP",
              "\\fB_KAFKALOG_COMPLETE\\fR",
              esc("Shell completion (click): eval \"$(_KAFKALOG_COMPLETE=bash_source kafkalog)\" "
                  "in ~/.bashrc; zsh_source for ~/.zshrc; fish_source > "
                  "~/.config/fish/completions/kafkalog.fish."),
              ".SH SEE ALSO",
              ", ".join(f"\\fBkafkalog\\-{esc(n)}\\fR(1)" for n in COMMANDS) + "; "
              + esc(SEE_ALSO_EXTRA)]
    return "\n".join(lines) + "\n"


def pages() -> dict[str, str]:
    """file name -> content, for every page."""
    out = {"kafkalog.1": main_page()}
    for name in COMMANDS:
        out[f"kafkalog-{name}.1"] = command_page(name)
    return out


def write(out_dir: Path) -> list[Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for fname, text in pages().items():
        p = out_dir / fname
        p.write_text(text, encoding="utf-8")
        written.append(p)
    return written


if __name__ == "__main__":
    target = Path(sys.argv[1] if len(sys.argv) > 1 else "man")
    for p in write(target):
        sys.stdout.write(f"{p}\n")
