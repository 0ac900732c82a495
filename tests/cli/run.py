"""Run the CLI as operators do: a real process, stdout and stderr apart."""

import subprocess
import sys


class Result:
    def __init__(self, code: int, out: bytes, err: str) -> None:
        self.code, self.out, self.err = code, out, err

    @property
    def text(self) -> str:
        return self.out.decode("utf-8", "replace")


def run(*args: object, stdin: bytes = b"") -> Result:
    p = subprocess.run([sys.executable, "-m", "kafkalog_cli", *map(str, args)], input=stdin,
                       capture_output=True, timeout=300)
    return Result(p.returncode, p.stdout, p.stderr.decode("utf-8", "replace"))


def run_on_tty(*args: object, columns: int = 120, stdout_tty: bool = True,
               env: dict[str, str] | None = None) -> Result:
    """Run the CLI with stderr (and stdout, unless `stdout_tty` is false: then a pipe) on
    pseudo-terminals `columns` wide, as from an interactive shell; collect what each got."""
    import os
    import pty
    import select
    import struct
    from fcntl import ioctl
    from termios import TIOCSWINSZ

    ptys = [pty.openpty() for _ in range(2 if stdout_tty else 1)]
    for _master, slave in ptys:
        ioctl(slave, TIOCSWINSZ, struct.pack("HHHH", 40, columns, 0, 0))
    full_env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    p = subprocess.Popen([sys.executable, "-m", "kafkalog_cli", *map(str, args)],
                         stdin=subprocess.DEVNULL, env={**full_env, **(env or {})},
                         stdout=ptys[1][1] if stdout_tty else subprocess.PIPE,
                         stderr=ptys[0][1])
    for _master, slave in ptys:
        os.close(slave)
    got: dict[int, list[bytes]] = {m: [] for m, _ in ptys}
    if p.stdout is not None:
        got[p.stdout.fileno()] = []
    open_fds = set(got)
    while open_fds:
        ready = select.select(list(open_fds), [], [], 300)[0]
        if not ready:  # hung: end it, and let the caller's assertions see what came
            p.kill()
            break
        for fd in ready:
            try:
                data = os.read(fd, 65536)
            except OSError:  # EIO: the pty's other side is closed
                data = b""
            if data:
                got[fd].append(data)
            else:
                open_fds.discard(fd)
    p.wait(timeout=300)
    for m, _ in ptys:
        os.close(m)
    err = b"".join(got[ptys[0][0]])
    out = b"".join(got[ptys[1][0]] if stdout_tty else got[p.stdout.fileno()])
    if p.stdout is not None:
        p.stdout.close()
    # a pty turns \n into \r\n
    return Result(p.returncode, out.replace(b"\r\n", b"\n"),
                  err.replace(b"\r\n", b"\n").decode("utf-8", "replace"))


def run_forked(*args: object, stdin: bytes = b"", env: dict[str, str] | None = None) -> Result:
    """`run`, in a process forked from this one rather than a fresh interpreter: its own pid,
    file descriptors, exit code and environment, without the start-up (about 0.2 s, most of
    a small command's time: for suites of hundreds of runs, such as the crash matrices).
    `env`: set in the child on top of this process's environment."""
    import os
    import tempfile

    preload_commands()

    with tempfile.TemporaryFile() as inp, tempfile.TemporaryFile() as out, \
            tempfile.TemporaryFile() as err:
        inp.write(stdin)
        inp.seek(0)
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child
            code = 70
            try:
                os.environ.update(env or {})
                for f, fd in ((inp, 0), (out, 1), (err, 2)):
                    os.dup2(f.fileno(), fd)
                sys.stdin = open(0, closefd=False)  # noqa: SIM115 - the child's own fd 0
                sys.stdout = open(1, "w", closefd=False)  # noqa: SIM115
                sys.stderr = open(2, "w", closefd=False)  # noqa: SIM115
                code = exit_code_of_main([str(a) for a in args])
            except BaseException:  # noqa: BLE001 - shown in the parent as a traceback
                import traceback

                traceback.print_exc()
                sys.stderr.flush()
            os._exit(code)
        _, status = os.waitpid(pid, 0)
        out.seek(0)
        err.seek(0)
        return Result(os.waitstatus_to_exitcode(status), out.read(),
                      err.read().decode("utf-8", "replace"))


def exit_code_of_main(argv: list[str]) -> int:
    """The CLI's `main(argv)` in a forked child: the exit code it would give a process
    (SystemExit's, 0 when it returns), with stdout and stderr flushed. What escapes as any
    other exception is the caller's to report."""
    from kafkalog_cli.cli import main

    try:
        main(argv)
        code = 0
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else 1
    sys.stdout.flush()
    sys.stderr.flush()
    return code


def preload_commands() -> None:
    """The commands' modules, imported once here rather than in every forked child."""
    import importlib

    from kafkalog_cli import cli

    for name, (module, _summary) in cli.COMMANDS.items():
        if name != "export":  # (pyspark: not for these)
            importlib.import_module(f"kafkalog_cli.commands.{module}")
