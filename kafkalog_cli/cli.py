"""Root command: lazy subcommand loading, global options, and the one place errors become
exit codes."""

from __future__ import annotations

import gc
import importlib
import os
import sys
from typing import Any

import click

from kafkalog_cli import __version__
from kafkalog_cli.errors import (
    EXIT_INTERRUPTED,
    EXIT_OPERATIONAL,
    EXIT_READER_GONE,
    EXIT_USAGE,
    KafkalogError,
    one_line,
)

# command name -> (module, one-line summary). Modules are imported only when run.
COMMANDS: dict[str, tuple[str, str]] = {
    "append": ("append", "Append records to a partition, rolling segments as a broker does."),
    "dump": ("dump", "Print batches, records, indexes and checkpoints (kafka-dump-log and more)."),
    "verify": ("verify", "Check a log dir, partition or file for every kind of damage."),
    "index-rebuild": ("index_rebuild",
                      "Rebuild .index/.timeindex/.txnindex as Kafka's recovery does."),
    "find-by-time": ("find_by_time",
                     "Find the first offset at or after a timestamp (ListOffsets)."),
    "retain": ("retain", "Apply time/size/log-start retention offline, crash-safe."),
    "compact": ("compact", "Run Kafka's log cleaner offline, in bounded memory."),
    "recover": ("recover", "Do offline what a broker does after an unclean shutdown."),
    "info": ("info", "One-screen overview: partitions, offsets, checkpoints, sizes, state."),
    "txn": ("txn", "Open (hanging) and aborted transactions per partition, and the LSO."),
    "export": ("export", "Write log dirs as Parquet, JSON or CSV with Spark (kafkalog[spark])."),
    "generate": ("generate", "Write a deterministic, seeded log dir (fixtures, drills)."),
    "migrate": ("migrate",
                "Turn Kafka 0.7 partitions into current ones; print the offset mapping."),
}


# --color as git, ls and ripgrep spell it; `main` turns every form into --color=WHEN
COLOR_WHEN: dict[str, bool | None] = {"always": True, "never": False, "auto": None}


class ReaderGone(Exception):
    """Stdout's reader went away (EPIPE, `| head`). Click would turn the BrokenPipeError
    into exit 1 ("problems fixed"); this type passes through it to main."""


class LazyGroup(click.Group):
    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except BrokenPipeError as e:
            raise ReaderGone from e

    def resolve_command(self, ctx: click.Context, args: list[str]
                        ) -> tuple[str | None, click.Command | None, list[str]]:
        # click suggests near option names but, with commands loaded lazily, no commands
        name = args[0] if args else ""
        if name not in COMMANDS and not name.startswith("-") and not ctx.resilient_parsing:
            import difflib  # only for a mistyped command: start-up stays lean

            close = difflib.get_close_matches(name, COMMANDS)
            hint = ("" if not close else f" Did you mean {close[0]!r}?" if len(close) == 1
                    else f" (Did you mean one of: {', '.join(map(repr, close))}?)")
            raise click.UsageError(f"No such command {name!r}.{hint}", ctx)
        return super().resolve_command(ctx, args)

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name not in COMMANDS:
            return None
        module = importlib.import_module(f"kafkalog_cli.commands.{COMMANDS[name][0]}")
        cmd: click.Command = module.command
        return cmd

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        # summaries come from the table, so --help imports no command module
        with formatter.section("Commands"):
            formatter.write_dl([(n, s) for n, (_, s) in COMMANDS.items()])


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]},
             epilog="Exit codes (fsck style, OR-ed): 0 clean, 1 problems fixed, 4 problems left, "
                    "8 operational error, 16 usage error, 32 interrupted; 141 (alone) stdout's "
                    "reader went away before the end (| head), as a shell reports it for cat.")
@click.version_option(__version__, prog_name="kafkalog")
@click.option("--debug", is_flag=True, envvar="KAFKALOG_DEBUG",
              help="Show tracebacks on errors [env: KAFKALOG_DEBUG].")
@click.option("-q", "--quiet", is_flag=True,
              help="Results and errors only: no progress bar, notes, warnings, summaries or "
                   "lines for what was left as it was.")
@click.option("-v", "--verbose", count=True, help="More detail on stderr (repeatable).")
@click.option("--color", type=click.Choice(list(COLOR_WHEN)), default="auto", show_default=True,
              is_flag=False, flag_value="always", metavar="[WHEN]",
              help="Colour: WHEN is always, never or auto (on a terminal unless NO_COLOR is "
                   "set); --color alone means always.")
@click.option("--no-color", is_flag=True, help="The same as --color=never.")
@click.option("--utc", is_flag=True, help="Show times in UTC rather than local time.")
@click.pass_context
def root(ctx: click.Context, debug: bool, quiet: bool, verbose: int, color: str,
         no_color: bool, utc: bool) -> None:
    """Inspect, verify and repair Apache Kafka log directories with no broker running.

    Global options (-q, -v, --color, --no-color, --utc, --debug) may also follow the
    command name.
    """
    from kafkalog_cli.commands import global_options

    global_options.apply(quiet=quiet, verbose=verbose,
                         color=COLOR_WHEN["never" if no_color else color], utc=utc)
    ctx.obj = {"debug": debug}


def _error(msg: str) -> None:
    if sys.stderr is not None:
        sys.stderr.write(f"kafkalog: error: {one_line(msg)}\n")


def _closed_std_streams() -> bool:
    """Python sets sys.stdout/sys.stderr to None when fd 1/2 was closed (`>&-`). Put
    /dev/null on such a free fd, so that no file opened later takes its number and gets
    written by mistake. True when stdout was closed: where the results go, so an
    operational error, found before any work."""
    stdout_closed = sys.stdout is None
    for fd, name in ((1, "stdout"), (2, "stderr")):
        if getattr(sys, name) is not None or _fd_in_use(fd):
            continue
        null = os.open(os.devnull, os.O_WRONLY)
        if null != fd:
            os.dup2(null, fd)
            os.close(null)
        setattr(sys, name, open(fd, "w", closefd=False))  # noqa: SIM115 - for the process's life
    return stdout_closed


def _fd_in_use(fd: int) -> bool:
    try:
        os.fstat(fd)
    except OSError:
        return False
    return True


def main(argv: list[str] | None = None) -> None:
    # A command decodes millions of short-lived records in batches; CPython's default
    # gen-0 threshold (700) makes the cyclic GC rescan live batches over and over.
    gc.set_threshold(10_000, 20, 20)
    args = _globals_first(sys.argv[1:] if argv is None else list(argv))
    debug = "--debug" in args[:args.index("--")] if "--" in args else "--debug" in args
    debug = debug or _env_flag("KAFKALOG_DEBUG")
    if _closed_std_streams():
        _error("standard output is closed; give it a file or /dev/null (>/dev/null)")
        sys.exit(EXIT_OPERATIONAL)
    code = 0
    try:
        result: Any = root.main(args=args, prog_name="kafkalog", standalone_mode=False)
        code = result if isinstance(result, int) else 0
    except click.exceptions.Exit as e:
        code = e.exit_code
    except click.BadParameter as e:
        if isinstance(e, click.MissingParameter):
            _usage_error(e)
        else:  # a value given was wrong: one line naming the option and what it takes
            _error(f"{_param_name(e)}: {e.message}" if _param_name(e) else e.message)
        code = EXIT_USAGE
    except click.UsageError as e:
        _usage_error(e)
        code = EXIT_USAGE
    except click.Abort:
        _error("interrupted")
        code = EXIT_INTERRUPTED
    except KafkalogError as e:
        _traceback(debug)
        _error(str(e))
        code = e.exit_code
    except KeyboardInterrupt:
        _error("interrupted")
        code = EXIT_INTERRUPTED
    except (BrokenPipeError, ReaderGone):
        # the reader went away (| head): stop quietly, as cat does, and not with 0: what was
        # found past the cut (damage, a half-done run) is unknown to the script
        _silence_stdout()
        code = EXIT_READER_GONE
    except OSError as e:
        _traceback(debug)
        _error(f"{e.filename or ''}: {e.strerror or e}".lstrip(": "))
        code = EXIT_OPERATIONAL
    except Exception as e:  # noqa: BLE001 - the one catch-all: no traceback unless --debug
        _traceback(debug)
        _error(f"internal error: {type(e).__name__}: {e} (run with --debug for a traceback)")
        code = EXIT_OPERATIONAL
    try:
        sys.stdout.flush()
    except BrokenPipeError:  # the last of the output was not read either
        _silence_stdout()
        code = EXIT_READER_GONE
    sys.exit(code)


def _traceback(debug: bool) -> None:
    """--debug: the traceback of the exception being handled, then the same error line and
    exit code as without it (a traceback is no reason for a script to see another code)."""
    if debug:
        import traceback  # only here: it pulls in tokenize and linecache, ~4 ms of start-up

        traceback.print_exc()


def _env_flag(name: str) -> bool:
    """A boolean environment variable as click reads --debug's (0, false, no, off: off)."""
    try:
        return bool(click.BOOL.convert(os.environ.get(name) or "0", None, None))
    except click.BadParameter:
        return True  # click refuses the value itself, as an error: here it is simply on


def _usage_error(e: click.UsageError) -> None:
    if e.ctx is not None:
        sys.stderr.write(e.ctx.get_usage() + "\n")
    _error(e.format_message())


def _param_name(e: click.BadParameter) -> str:
    if e.param_hint is not None:
        return e.param_hint if isinstance(e.param_hint, str) else " / ".join(e.param_hint)
    if e.param is None:
        return ""
    if isinstance(e.param, click.Option):
        return max(e.param.opts, key=len)
    return e.param.human_readable_name


_GLOBAL_FLAGS = ("-q", "--quiet", "-v", "-vv", "-vvv", "--verbose", "--utc", "--debug")


def _globals_first(args: list[str]) -> list[str]:
    """Let global flags stand anywhere (`kafkalog verify -q DIR`): move them before the
    command. No command defines options of these names, so nothing is ambiguous. Every
    colour flag becomes --color=WHEN, so the last one wins and bare --color never takes
    the command name for its value."""
    if "--" in args:
        cut = args.index("--")
        head, tail = args[:cut], args[cut:]
    else:
        head, tail = args, []
    flags: list[str] = []
    rest: list[str] = []
    command: click.Command | None = None
    it = iter(range(len(head)))
    for i in it:
        a = head[i]
        if command is not None and _takes_value(command, a) and i + 1 < len(head):
            rest += [a, head[i + 1]]  # `dump --key -q`: -q is the key, not the flag
            next(it)
            continue
        if command is None and a in COMMANDS:  # (its module is imported to run it anyway)
            command = root.get_command(click.Context(root), a)
        if a == "--no-color":
            flags.append("--color=never")
        elif a == "--color":
            when = head[i + 1] if i + 1 < len(head) else None
            if when in COLOR_WHEN:  # ripgrep's --color WHEN
                next(it)
            flags.append(f"--color={when if when in COLOR_WHEN else 'always'}")
        elif a in _GLOBAL_FLAGS or a.startswith("--color="):
            flags.append(a)
        else:
            rest.append(a)
    return flags + rest + tail


def _takes_value(command: click.Command, arg: str) -> bool:
    """Whether `arg` is an option of `command` that takes the next argument as its value."""
    return any(isinstance(p, click.Option) and not p.is_flag and not p.count
               and arg in p.opts for p in command.params)


def _silence_stdout() -> None:
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
