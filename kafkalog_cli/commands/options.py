"""Options and value parsers shared by every command: the one place an option's type is set.

Each value takes its type from what it is in Kafka: Int8/Int16/Int32/Int64 for protocol fields
(with the narrower range Kafka allows, e.g. a producer epoch >= 0), CONFIGS for config values
(the type and range of their ConfigDef validator), Double for ratios (finite), Time for
timestamps (epoch ms >= 0 or ISO-8601, in every command), TopicName for Kafka's topic-name
rule (storage.naming.topic_name_error), compression levels per codec
(codec.compression.level_error), Bytes for keys and separators (the argument's bytes, UTF-8
or not) and Text for other free text (UTF-8). Numbers are ASCII digits only. Every refusal is
one line naming the option and the allowed range or form, before anything is read or written.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

import click

from kafkalog_cli.codec import compression
from kafkalog_cli.codec.compression import DEFAULT_MAX_DECOMPRESSED
from kafkalog_cli.codec.layout import INT_RANGES
from kafkalog_cli.commands import parallel
from kafkalog_cli.errors import UsageError
from kafkalog_cli.output.render import FORMATS, PAYLOADS
from kafkalog_cli.storage.disk.fs import is_url
from kafkalog_cli.storage.disk.naming import topic_name_error

if TYPE_CHECKING:  # completion runs only under the shell's _KAFKALOG_COMPLETE
    from click.shell_completion import CompletionItem

F = TypeVar("F", bound=Callable[..., Any])

# the epilog sentence of every command that changes a log dir (storage/disk/safety.py)
NO_LINKS = (" Nothing is written, renamed or created through a symlink: a partition dir it "
            "would change that is a symlink or holds one, and a .lock or checkpoint (or its "
            ".tmp) it would write that is one, are refused with exit 8 before anything changes.")


_BLANKS = " \t\r\n"
# Python's int() and float() also take Unicode digits ('٣'), underscores ('1_000') and
# 'nan'/'inf'; Java's parsers (and so Kafka's configs) take none of these
_ASCII_INT = re.compile(r"[+-]?[0-9]+")
_ASCII_FLOAT = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_MAX_DIGITS = 30  # past every width; int() of a long string is slow or refused
ISO_EXAMPLE = "2024-05-01T12:00:00Z"


def shown(text: str) -> str:
    """`text` in an error line: quoted, escaped (no newline, and bytes that are not UTF-8 as
    \\xNN), long ones cut."""
    r = repr(os.fsencode(text)) if undecodable(text) else repr(text)
    return r if len(r) <= 60 else f"{r[:40]}... ({len(text)} characters)"


def undecodable(text: str) -> bool:
    """Whether `text` came from argv bytes that are not UTF-8 (decoded as lone surrogates)."""
    return any("\udc80" <= c <= "\udcff" for c in text)


class KafkaInt(click.IntRange):
    """An integer Kafka stores in `bits` bits, within [min, max] (default: the whole width),
    written in ASCII digits. `unit` replaces "INT<bits>" in messages when the option's unit
    is not the field's."""

    name = "integer"
    bits: ClassVar[int]

    def __init__(self, min: int | None = None, max: int | None = None, *,
                 unit: str | None = None) -> None:
        lo, hi = INT_RANGES[self.bits]
        self.low = lo if min is None else min
        self.high = hi if max is None else max
        assert lo <= self.low <= self.high <= hi
        self.unit = unit
        super().__init__(self.low, self.high)

    @property
    def kafka_type(self) -> str:
        return self.unit or f"INT{self.bits}"

    @property
    def allowed(self) -> str:
        return f"[{self.low}, {self.high}] ({self.kafka_type})"

    def error(self, value: object) -> str | None:
        """Why `value` (already parsed, e.g. from JSON) is not one of these, or None."""
        if not isinstance(value, int) or isinstance(value, bool):
            return f"{value!r} is not an integer in {self.allowed}"
        if not self.low <= value <= self.high:
            return f"{value} is out of range {self.allowed}"
        return None

    def parse(self, value: object) -> int:
        """`value` (text or an int) as one of these; ValueError saying why not."""
        if isinstance(value, str):
            text = value.strip(_BLANKS)
            if not _ASCII_INT.fullmatch(text):
                raise ValueError(f"{shown(value)} is not an integer in {self.allowed}")
            if len(text) > _MAX_DIGITS:
                raise ValueError(f"{shown(text)} is out of range {self.allowed}")
            value = int(text)
        why = self.error(value)
        if why is not None:
            raise ValueError(why)
        assert isinstance(value, int)
        return value

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> int:
        try:
            return self.parse(value)
        except ValueError as e:
            self.fail(str(e), param, ctx)

    def _describe_range(self) -> str:
        return f"{self.low}<=x<={self.high}, {self.kafka_type}"


class Int8(KafkaInt):
    bits = 8


class Int16(KafkaInt):
    bits = 16


class Int32(KafkaInt):
    bits = 32


class Int64(KafkaInt):
    bits = 64


class Double(click.FloatRange):
    """A DOUBLE in [min, max], as Kafka's ConfigDef.Range.between, and finite: Java reads
    NaN and Infinity and Range lets NaN through, but neither means anything here."""

    name = "float"

    def __init__(self, min: float, max: float) -> None:
        self.low, self.high = min, max
        super().__init__(min, max)

    @property
    def allowed(self) -> str:
        return f"[{self.low:g}, {self.high:g}] (a finite DOUBLE)"

    def parse(self, value: object) -> float:
        """`value` (text or a number) as one of these; ValueError saying why not."""
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            number, text = float(value), repr(value)
        else:
            text = str(value).strip(_BLANKS)
            if not _ASCII_FLOAT.fullmatch(text):
                raise ValueError(f"{shown(str(value))} is not a number in {self.allowed}")
            number = float(text)
        if not (math.isfinite(number) and self.low <= number <= self.high):
            raise ValueError(f"{shown(text)} is out of range {self.allowed}")
        return number

    def convert(self, value: Any, param: click.Parameter | None,
                ctx: click.Context | None) -> float:
        try:
            return self.parse(value)
        except ValueError as e:
            self.fail(str(e), param, ctx)

    def _describe_range(self) -> str:
        return f"{self.low:g}<=x<={self.high:g}"


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MS = timedelta(milliseconds=1)


class Time(click.ParamType):
    """A time as Kafka stores one: epoch milliseconds, an INT64 >= 0. Written as epoch ms
    (ASCII digits) or ISO-8601 with a zone (`2024-05-01T12:00:00Z`, `...+02:00`); each of
    `specials` (e.g. find-by-time's `latest`) passes through as it is."""

    name = "TIME"
    high = INT_RANGES[64][1]

    def __init__(self, specials: tuple[str, ...] = ()) -> None:
        self.specials = specials

    @property
    def allowed(self) -> str:
        also = f", or {' / '.join(self.specials)}" if self.specials else ""
        return (f"epoch ms in [0, {self.high}] (INT64) or ISO-8601 with a zone such as "
                f"{ISO_EXAMPLE}{also}")

    def parse(self, value: object) -> int | str:
        """`value` as epoch ms (or one of the specials); ValueError saying why not."""
        if isinstance(value, int) and not isinstance(value, bool):
            ms, text = value, str(value)
        else:
            text = str(value).strip(_BLANKS)
            if text in self.specials:
                return text
            ms = self._epoch_ms(text)
        if not 0 <= ms <= self.high:
            raise ValueError(f"{text} is out of range ({self.allowed})")
        return ms

    def _epoch_ms(self, text: str) -> int:
        if _ASCII_INT.fullmatch(text):
            if len(text) > _MAX_DIGITS:
                raise ValueError(f"{shown(text)} is out of range ({self.allowed})")
            return int(text)
        try:  # ASCII only: fromisoformat also reads other scripts' digits
            if not text.isascii():
                raise ValueError
            dt = datetime.fromisoformat(text[:-1] + "+00:00" if text[-1:] in ("Z", "z")
                                        else text)
        except ValueError:
            raise ValueError(f"{shown(text)} is not a time ({self.allowed})") from None
        if dt.tzinfo is None:
            raise ValueError(f"{shown(text)} has no time zone: add Z or +HH:MM "
                             f"({self.allowed})")
        return (dt - _EPOCH) // _MS

    def convert(self, value: Any, param: click.Parameter | None,
                ctx: click.Context | None) -> int | str:
        try:
            return self.parse(value)
        except ValueError as e:
            self.fail(str(e), param, ctx)


class Text(click.ParamType):
    """Free text that is printed or handed to another program: it must be UTF-8 (argv bytes
    that are not arrive as lone surrogates, which no output can carry)."""

    name = "text"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        text = str(value)
        if undecodable(text):
            self.fail(f"{shown(text)} is not valid UTF-8 (give it as UTF-8 text)", param, ctx)
        return text


class Bytes(click.ParamType):
    """An argument as the bytes it is, UTF-8 or not: os.fsencode undoes the surrogateescape
    decoding of argv, so `--key $'\\xff'` means the one byte 0xff."""

    name = "bytes"

    def convert(self, value: Any, param: click.Parameter | None,
                ctx: click.Context | None) -> bytes:
        return value if isinstance(value, bytes) else os.fsencode(str(value))


class TopicName(click.ParamType):
    """A topic name Kafka accepts (Topic.validate)."""

    name = "TOPIC"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        text = str(value)
        why = topic_name_error(text)
        if undecodable(text):
            why = (f"{shown(text)} is not valid UTF-8; a topic name has only ASCII letters, "
                   "digits, '.', '_' and '-'")
        if why is not None:
            self.fail(why, param, ctx)
        return text


# The configs options set, with the type and validator range of Kafka's ConfigDefs
# (LogConfig, CleanerConfig, TransactionStateManagerConfig): one place for every command.
CONFIGS: dict[str, KafkaInt | Double] = {
    "segment.bytes": Int32(min=14),  # atLeast(LegacyRecord.RECORD_OVERHEAD_V0)
    "segment.ms": Int64(min=1),
    "segment.index.bytes": Int32(min=4),
    "index.interval.bytes": Int32(min=0),
    "retention.ms": Int64(min=-1),
    # a LONG with no validator, every negative meaning "no limit": -1 is the one documented
    "retention.bytes": Int64(min=-1),
    "file.delete.delay.ms": Int64(min=0),
    "delete.retention.ms": Int64(min=0),
    "min.compaction.lag.ms": Int64(min=0),
    "min.cleanable.dirty.ratio": Double(0, 1),
    # a LONG, but one cleaner thread's SkimpyOffsetMap takes an INT32 of memory; 48 bytes
    # hold the two entries LogCleaner requires
    "log.cleaner.dedupe.buffer.size": Int32(min=48),
    # a DOUBLE with no validator; past 1 the map overfills, at 0 it holds nothing
    "log.cleaner.io.buffer.load.factor": Double(0.01, 1),
}
CLEANUP_POLICIES = ("compact", "delete")  # cleanup.policy: ValidList.in(compact, delete)


def cleanup_policy(value: object) -> frozenset[str]:
    """cleanup.policy, a Kafka LIST: "compact,delete" (or a JSON list); ValueError if not."""
    if isinstance(value, str):
        items = [] if not value.strip() else [x.strip() for x in value.strip().split(",")]
    elif isinstance(value, list) and all(isinstance(x, str) for x in value):
        items = value
    else:
        raise ValueError(f"{value!r} is not a list of {' / '.join(CLEANUP_POLICIES)}")
    bad = [x for x in items if x not in CLEANUP_POLICIES]
    if bad:
        raise ValueError(f"{bad[0]!r} is not one of {', '.join(CLEANUP_POLICIES)} (a "
                         "comma-separated list of them)")
    return frozenset(items)


LEVEL_HELP = ("Compression level, as Kafka's compression.<codec>.level takes it: " + ", ".join(
    f"{compression.name(c)} {lo}..{hi}" for c, (lo, hi) in compression.LEVELS.items())
    + f" (gzip also {compression.GZIP_DEFAULT_LEVEL}).")


def check_level(codec: str, level: int | None) -> None:
    """--level against the range Kafka allows for --codec."""
    if level is not None:
        why = compression.level_error(compression.BY_NAME[codec], level)
        if why is not None:
            raise UsageError(f"--level: {why}")


def format_option(default: str = "text", choices: tuple[str, ...] = FORMATS) -> Callable[[F], F]:
    """--format; default "auto" means a table on a terminal and plain text in a pipe."""
    if default == "auto":
        choices = ("auto", *choices)
    return click.option("--format", "fmt", type=click.Choice(choices), default=default,
                        show_default=True, callback=_resolve_auto,
                        help="Output format" + (" (auto: a table on a terminal, text when "
                                                "piped)." if default == "auto" else "."))


def _resolve_auto(ctx: click.Context, param: click.Parameter, value: str) -> str:
    if value != "auto":
        return value
    import sys

    return "table" if sys.stdout.isatty() else "text"


def payload_option(f: F) -> F:
    return click.option("--payload", type=click.Choice(PAYLOADS), default="utf8",
                        show_default=True,
                        help="How keys, values and header values are shown (utf8 shows "
                             "invalid bytes as \\xNN).")(f)


def max_decompressed_option(f: F) -> F:
    # a batch Java inflates lives in an int-indexed ByteBuffer: INT32
    return click.option("--max-decompressed-bytes", type=Int32(min=1), metavar="BYTES",
                        default=DEFAULT_MAX_DECOMPRESSED, show_default=True,
                        help="Cap on the decompressed size of one batch (hostile-input guard).")(f)


class GivenPath(click.Path):
    """A path that is not empty: "" (an unset $LOGDIR in a script) would otherwise name the
    current directory, and a command would read or change whatever log dir that is."""

    def convert(self, value: Any, param: click.Parameter | None,
                ctx: click.Context | None) -> Any:
        if isinstance(value, str | bytes) and not value:
            self.fail("an empty path (an unset variable?); to mean this directory, give '.'",
                      param, ctx)
        return super().convert(value, param, ctx)


def paths_argument(f: F) -> F:
    """PATHs to read: local paths, or URLs into object storage (s3://…, storage/disk/fs.py)."""
    return click.argument("paths", nargs=-1, required=True, shell_complete=complete_paths,
                          type=GivenPath(exists=False, path_type=str))(f)


class LocalPath(GivenPath):
    """A path on this machine, for what a command changes: a URL is refused (exit 16), as
    repair happens on a broker's own disk, never in object storage."""

    def convert(self, value: Any, param: click.Parameter | None,
                ctx: click.Context | None) -> Any:
        if isinstance(value, str) and is_url(value):
            self.fail(f"{value}: object storage is read-only to kafkalog (repair happens on a "
                      "broker's own disk); copy the log dir to a local disk to change it",
                      param, ctx)
        return super().convert(value, param, ctx)


def local_paths_argument(f: F) -> F:
    """PATHs a command changes: local only."""
    return click.argument("paths", nargs=-1, required=True, shell_complete=complete_paths,
                          type=LocalPath(exists=False, path_type=str))(f)


# -- shell completion (click's `_KAFKALOG_COMPLETE=bash_source|zsh_source|fish_source`) ------
def complete_paths(ctx: click.Context, param: click.Parameter,
                   incomplete: str) -> list[CompletionItem]:
    """Files and directories (log dirs, partition dirs, segment files): the shell's own."""
    return _completions([incomplete], "file")


def complete_log_dir(ctx: click.Context, param: click.Parameter,
                     incomplete: str) -> list[CompletionItem]:
    """A log dir: directories only, completed by the shell."""
    return _completions([incomplete], "dir")


def _completions(values: list[str], kind: str = "plain") -> list[CompletionItem]:
    from click.shell_completion import CompletionItem  # imported by completion runs only

    return [CompletionItem(v, type=kind) for v in values]


_DIR_PARAMS = ("logdir", "paths")


def _completion_params(ctx: click.Context) -> dict[str, Any]:
    """The values given so far. While an option's value is being completed click's resilient
    parse of `... --topic` fails and leaves every parameter unset, so parse the words again
    without the dangling option (click passes them in COMP_WORDS/COMP_CWORD to every shell)."""
    if any(ctx.params.get(n) for n in _DIR_PARAMS):
        return ctx.params
    import os

    from click.shell_completion import split_arg_string

    words = split_arg_string(os.environ.get("COMP_WORDS", ""))
    cword = os.environ.get("COMP_CWORD", "")
    if cword.isdigit():  # bash, zsh: the index of the word being completed
        args = words[1:int(cword)]
    else:  # fish: the word itself, also the last of COMP_WORDS
        args = words[1:]
        if cword and args and args[-1] == cword:
            args.pop()
    if ctx.info_name in args:
        args = args[args.index(ctx.info_name) + 1:]
    if args and args[-1].startswith("-"):
        args = args[:-1]
    try:
        sub = ctx.command.make_context(ctx.info_name, args, parent=ctx.parent,
                                       resilient_parsing=True)
    except click.ClickException:
        return ctx.params
    return {**sub.params, **{k: v for k, v in ctx.params.items() if v}}


def _partitions_on_command_line(ctx: click.Context) -> list[tuple[str, int]]:
    """(topic, partition) of the partition dirs under the dirs given earlier on the line."""
    from kafkalog_cli.storage.disk.naming import parse_partition_dir

    params = _completion_params(ctx)
    given: list[object] = []
    for name in _DIR_PARAMS:
        v = params.get(name)
        given += list(v) if isinstance(v, (tuple, list)) else [v] if v else []
    found: set[tuple[str, int]] = set()
    for g in given:
        root = Path(str(g)).expanduser()
        candidates = [root]
        try:
            if root.is_dir():
                candidates += [e for e in root.iterdir() if e.is_dir()]
        except OSError:
            continue
        for d in candidates:
            pn = parse_partition_dir(d.name)
            if pn is not None:
                found.add((pn.topic, pn.partition))
    return sorted(found)


def complete_topic(ctx: click.Context, param: click.Parameter,
                   incomplete: str) -> list[CompletionItem]:
    """Topics of the log dir (or partition dirs) named earlier on the command line."""
    topics = sorted({t for t, _ in _partitions_on_command_line(ctx)})
    return _completions([t for t in topics if t.startswith(incomplete)])


def complete_partition(ctx: click.Context, param: click.Parameter,
                       incomplete: str) -> list[CompletionItem]:
    """Partition numbers of the --topic given earlier (of every topic if none is)."""
    params = _completion_params(ctx)
    topic = params.get("topic")
    topics = set(params.get("topics") or ()) | ({topic} if topic else set())
    nums = sorted({p for t, p in _partitions_on_command_line(ctx) if not topics or t in topics})
    return _completions([str(n) for n in nums if str(n).startswith(incomplete)])


MAX_JOBS = 1024


def jobs_option(f: F) -> F:
    """-j/--jobs: worker processes for per-partition work (commands/parallel.py); default
    every core this process may run on (parallel.Auto: none for a small dir)."""
    return _jobs(f, "Partitions worked on at once, each in its own process [default: every "
                    "core, one process for less than 2 MiB of data]; output is the same for "
                    "every N.")


def spark_jobs_option(f: F) -> F:
    """-j/--jobs of a command that runs through Spark: the local master's cores."""
    return _jobs(f, "Cores of Spark's local master, local[N] [default: every core]; output "
                    "is the same for every N.")


def _jobs(f: F, text: str) -> F:
    return click.option("-j", "--jobs", type=Int32(min=1, max=MAX_JOBS, unit="processes"),
                        metavar="N", default=None, callback=_default_jobs, help=text)(f)


def _default_jobs(ctx: click.Context, param: click.Parameter, value: int | None) -> int:
    if value is not None:
        return value
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        cores = os.cpu_count() or 1
    return parallel.Auto(max(cores, 1))
