"""Options and value parsers shared by several commands."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any, TypeVar

import click

from kafkalog_cli.codec.compression import DEFAULT_MAX_DECOMPRESSED
from kafkalog_cli.output.render import FORMATS, PAYLOADS

F = TypeVar("F", bound=Callable[..., Any])


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


def format_option(default: str = "text", choices: tuple[str, ...] = FORMATS) -> Callable[[F], F]:
    return click.option("--format", "fmt", type=click.Choice(choices), default=default,
                        show_default=True, help="Output format.")


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
    return click.argument("paths", nargs=-1, required=True,
                          type=click.Path(exists=False, path_type=str))(f)
