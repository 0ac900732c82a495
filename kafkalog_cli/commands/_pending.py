"""Commands listed in --help whose implementation lands with a later issue."""

from __future__ import annotations

import click

from kafkalog_cli.errors import KafkalogError


def pending(name: str, issue: int, summary: str) -> click.Command:
    @click.command(name, context_settings={"ignore_unknown_options": True},
                   help=f"{summary}\n\nNot built yet: it lands with issue #{issue}.")
    @click.argument("args", nargs=-1, type=click.UNPROCESSED)
    def cmd(args: tuple[str, ...]) -> int:
        raise KafkalogError(f"`kafkalog {name}` is not built yet (issue #{issue})")

    return cmd
