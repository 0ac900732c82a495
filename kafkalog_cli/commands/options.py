"""Options and value parsers shared by several commands.

Values that end up in Kafka's files take their type from what they are in Kafka, here and
nowhere else: Int16/Int32/Int64 for protocol fields (with the narrower range Kafka allows,
e.g. a producer epoch >= 0) and config values (the range of their ConfigDef validator),
TopicName for Kafka's topic-name rule (storage.naming.topic_name_error), compression levels
per codec (codec.compression.level_error). Every refusal is one line naming the option and
the allowed range, before anything is written.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any, ClassVar, TypeVar

import click
from click.shell_completion import CompletionItem

from kafkalog_cli.codec import compression
from kafkalog_cli.codec.compression import DEFAULT_MAX_DECOMPRESSED
from kafkalog_cli.codec.layout import INT_RANGES
from kafkalog_cli.errors import UsageError
from kafkalog_cli.output.render import FORMATS, PAYLOADS
from kafkalog_cli.storage.naming import topic_name_error

F = TypeVar("F", bound=Callable[..., Any])

# the epilog sentence of every command that changes a log dir (storage/safety.py)
NO_LINKS = (" Nothing is written, renamed or created through a symlink: a partition dir it "
            "would change that is a symlink or holds one, and a .lock or checkpoint (or its "
            ".tmp) it would write that is one, are refused with exit 8 before anything changes.")


def parse_time(value: str) -> int:
    """Epoch milliseconds, or ISO-8601 with a zone (`2024-05-01T12:00:00Z`)."""
    v = value.strip()
    if v.lstrip("-").isdigit():
        return int(v)
    try:
        dt = datetime.fromisoformat(v.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        raise click.BadParameter(f"{value!r} is neither epoch milliseconds nor ISO-8601") from None
    if dt.tzinfo is None:
        raise click.BadParameter(f"{value!r} has no time zone; add Z or +HH:MM")
    return int(dt.timestamp() * 1000)


class TimeType(click.ParamType):
    name = "TIME"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> int:
        if isinstance(value, int):
            return value
        try:
            return parse_time(str(value))
        except click.BadParameter as e:
            self.fail(e.message, param, ctx)


class KafkaInt(click.IntRange):
    """An integer Kafka stores in `bits` bits, within [min, max] (default: the whole width)."""

    name = "integer"
    bits: ClassVar[int]

    def __init__(self, min: int | None = None, max: int | None = None) -> None:
        lo, hi = INT_RANGES[self.bits]
        self.low = lo if min is None else min
        self.high = hi if max is None else max
        assert lo <= self.low <= self.high <= hi
        super().__init__(self.low, self.high)

    @property
    def kafka_type(self) -> str:
        return f"INT{self.bits}"

    def error(self, value: object) -> str | None:
        """Why `value` (already parsed, e.g. from JSON) is not one of these, or None."""
        if not isinstance(value, int) or isinstance(value, bool):
            return f"{value!r} is not an integer ({self.kafka_type})"
        if not self.low <= value <= self.high:
            return f"{value} is out of range [{self.low}, {self.high}] ({self.kafka_type})"
        return None

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> int:
        if isinstance(value, str):
            try:
                value = int(value.strip(), 10)
            except ValueError:
                self.fail(f"{value!r} is not an integer ({self.kafka_type})", param, ctx)
        why = self.error(value)
        if why is not None:
            self.fail(why, param, ctx)
        return int(value)

    def _describe_range(self) -> str:
        return f"{self.low}<=x<={self.high}, {self.kafka_type}"


class Int16(KafkaInt):
    bits = 16


class Int32(KafkaInt):
    bits = 32


class Int64(KafkaInt):
    bits = 64


class TopicName(click.ParamType):
    """A topic name Kafka accepts (Topic.validate)."""

    name = "TOPIC"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        why = topic_name_error(str(value))
        if why is not None:
            self.fail(why, param, ctx)
        return str(value)


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
    return click.option("--max-decompressed-bytes", type=click.IntRange(1), metavar="BYTES",
                        default=DEFAULT_MAX_DECOMPRESSED, show_default=True,
                        help="Cap on the decompressed size of one batch (hostile-input guard).")(f)


def paths_argument(f: F) -> F:
    return click.argument("paths", nargs=-1, required=True, shell_complete=complete_paths,
                          type=click.Path(exists=False, path_type=str))(f)


# -- shell completion (click's `_KAFKALOG_COMPLETE=bash_source|zsh_source|fish_source`) ------
def complete_paths(ctx: click.Context, param: click.Parameter,
                   incomplete: str) -> list[CompletionItem]:
    """Files and directories (log dirs, partition dirs, segment files): the shell's own."""
    return [CompletionItem(incomplete, type="file")]


def complete_log_dir(ctx: click.Context, param: click.Parameter,
                     incomplete: str) -> list[CompletionItem]:
    """A log dir: directories only, completed by the shell."""
    return [CompletionItem(incomplete, type="dir")]


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
    from kafkalog_cli.storage.naming import parse_partition_dir

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
    return [CompletionItem(t) for t in topics if t.startswith(incomplete)]


def complete_partition(ctx: click.Context, param: click.Parameter,
                       incomplete: str) -> list[CompletionItem]:
    """Partition numbers of the --topic given earlier (of every topic if none is)."""
    params = _completion_params(ctx)
    topic = params.get("topic")
    topics = set(params.get("topics") or ()) | ({topic} if topic else set())
    nums = sorted({p for t, p in _partitions_on_command_line(ctx) if not topics or t in topics})
    return [CompletionItem(str(n)) for n in nums if str(n).startswith(incomplete)]
