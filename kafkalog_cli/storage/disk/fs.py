"""Where a log dir lives: a local path, or a URL into object storage (s3://, gs://, hdfs://,
abfs://) read through pyarrow.fs.

A URL becomes an `ObjectPath`: a `Path` whose class carries the store, so `/`, `.parent` and
`.name` keep working and the read path passes it around as it passes local paths. Its
`stat`/`exists`/`is_dir`/`read_bytes` ask the store; `listdir`, `open_binary`, `size` and
`open_ranges` below are the few places the read path calls instead of os.scandir/open/os.stat/
os.pread, and they keep those exact calls for local paths. Reads are ranged: an object is
opened as pyarrow's RandomAccessFile (one GET per read, of the size the caller asks), never
downloaded whole. Nothing can change an object: `os.fspath()` of an ObjectPath raises, so a
write that slipped past the commands' own refusal fails with one line too.

pyarrow is imported only when a URL is given (the base install has none: `kafkalog[s3]`).
"""

from __future__ import annotations

import errno
import io
import operator
import os
import re
import stat as stat_mod
from pathlib import Path, PosixPath
from typing import Any, ClassVar, TypeGuard

from kafkalog_cli.errors import LogDirIOError, UsageError

_URL = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")
SCHEMES = ("s3", "gs", "gcs", "hdfs", "viewfs", "abfs", "abfss")
# a file to open or stat: a local file's text, or a Path (always, for an object: child())
FilePath = Path | str


def _pafs() -> Any:
    from pyarrow import fs  # type: ignore[import-untyped]  # pyarrow ships no type stubs

    return fs


def is_url(path: object) -> bool:
    """A `scheme://…` string (or an ObjectPath): not a path on this machine."""
    return isinstance(path, ObjectPath) or (isinstance(path, str) and bool(_URL.match(path)))


def is_remote(path: object) -> TypeGuard[ObjectPath]:
    return isinstance(path, ObjectPath)


class ObjectPath(PosixPath):
    """A path in an object store. Subclassed once per URL opened (`as_path`): the subclass
    holds the pyarrow FileSystem and how the URL maps to the store's own path (`key`)."""

    store: ClassVar[Any] = None  # pyarrow.fs.FileSystem
    store_pid: ClassVar[int] = 0  # the process that made it
    url_root: ClassVar[str] = ""  # the URL as given (no query), e.g. s3://bucket/prefix
    key_root: ClassVar[str] = ""  # ... as the store names it, e.g. bucket/prefix
    url_query: ClassVar[str] = ""  # "?endpoint_override=…" if the URL had one

    def __str__(self) -> str:
        key, root = self.key, self.key_root
        if key == root:
            return self.url_root
        if key.startswith(root.rstrip("/") + "/"):
            return self.url_root + key[len(root.rstrip("/")):]
        return self.url_root[:self.url_root.index("://") + 3] + key.lstrip("/")

    def __repr__(self) -> str:
        return f"ObjectPath({str(self)!r})"

    def __fspath__(self) -> str:
        raise UsageError(f"{self}: object storage is read-only to kafkalog; copy the log dir "
                         "to a local disk to change it")

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and super().__eq__(other)

    def __hash__(self) -> int:
        return hash((type(self), super().__hash__()))

    @classmethod
    def client(cls) -> Any:
        """The store's FileSystem. A forked child (-j workers) makes its own: sharing the
        parent's client would share its pooled HTTP connections, and the processes would
        read each other's responses."""
        if cls.store_pid != os.getpid():
            cls.store = _pafs().FileSystem.from_uri(cls.url_root + cls.url_query)[0]
            cls.store_pid = os.getpid()
        return cls.store

    @property
    def key(self) -> str:
        """The path as the store's FileSystem names it."""
        return PosixPath.__str__(self)

    def url(self) -> str:
        """The URL that opens this path again (in another process: a Spark executor)."""
        return str(self) + self.url_query

    def stat(self, *, follow_symlinks: bool = True) -> os.stat_result:
        info = _call(self, lambda: self.client().get_file_info(self.key))
        return _stat_result(self, info)

    def lstat(self) -> os.stat_result:
        return self.stat()

    def is_symlink(self) -> bool:
        return False  # object stores have no links

    def read_bytes(self) -> bytes:
        """A small object's bytes (checkpoints, snapshots)."""
        with open_binary(self) as f:
            return bytes(f.read())

    def read_text(self, encoding: str | None = None, errors: str | None = None,
                  newline: str | None = None) -> str:
        return self.read_bytes().decode(encoding or "utf-8", errors or "strict")

    def open(self, mode: str = "r", buffering: int = -1, encoding: str | None = None,
             errors: str | None = None, newline: str | None = None) -> Any:
        if set(mode) - set("rbt"):
            self.__fspath__()  # raises: nothing is written to a store
        raw = open_binary(self)
        if "b" in mode:
            return raw if buffering == 0 else io.BufferedReader(raw)
        return io.TextIOWrapper(io.BufferedReader(raw), encoding or "utf-8", errors, newline)

    def resolve(self, strict: bool = False) -> ObjectPath:
        return self

    def absolute(self) -> ObjectPath:
        return self

    def expanduser(self) -> ObjectPath:
        return self


def _stat_result(path: ObjectPath, info: Any) -> os.stat_result:
    pafs = _pafs()

    if info.type == pafs.FileType.NotFound:
        raise FileNotFoundError(errno.ENOENT, "no such file or directory", str(path))
    mode = stat_mod.S_IFDIR | 0o555 if info.type == pafs.FileType.Directory \
        else stat_mod.S_IFREG | 0o444
    mtime = info.mtime.timestamp() if info.mtime is not None else 0.0
    size = info.size if info.size is not None else 0
    return os.stat_result((mode, 0, 0, 1, 0, 0, size, int(mtime), int(mtime), int(mtime)))


# -- errors: pyarrow raises OSError (or ArrowException) with the SDK's words in the message --
_KINDS = (
    (("ACCESS_DENIED", "AccessDenied", "SIGNATURE_DOES_NOT_MATCH", "InvalidAccessKeyId",
      "INVALID_ACCESS_KEY_ID", "Forbidden", "PERMISSION_DENIED", "AuthorizationFailure"),
     "access denied"),
    (("NETWORK_CONNECTION", "Could not connect", "Couldn't connect", "Failed to connect",
      "curlCode", "Couldn't resolve", "Could not resolve", "Connection refused", "UNAVAILABLE",
      "timed out", "Timeout"), "cannot reach the store"),
    (("NoSuchBucket", "NO_SUCH_BUCKET", "bucket does not exist", "Bucket does not exist",
      "not found"), "no such bucket"),
)
_HTTP_403 = re.compile(r"(?<![\d.:])403(?!\d)")  # a status, not part of a port or address
_WHERE = re.compile(r"^When [^:]*?:\s*")


def describe(path: object, exc: BaseException) -> str:
    """One line: the URL, what kind of failure, the store's own words (first line)."""
    text = " ".join(str(exc).split())
    kind = next((k for words, k in _KINDS if any(w in text for w in words)
                 or (k == "access denied" and _HTTP_403.search(text))), "read failed")
    return f"{path}: {kind}: {_WHERE.sub('', text)}"


def _call(path: ObjectPath, fn: Any) -> Any:
    try:
        return fn()
    except FileNotFoundError:
        raise
    except Exception as e:  # noqa: BLE001 - pyarrow's OSError/ArrowException kinds, mapped
        raise LogDirIOError(describe(path, e)) from None


# -- opening a URL ----------------------------------------------------------------------
# (URL, query) -> (its class, its key), for every URL opened and its ancestors: a Spark task
# opens many files of one store, each by URL, and FileSystem.from_uri sets up a client
_KNOWN: dict[tuple[str, str], tuple[type[ObjectPath], str]] = {}


def _remember(url: str, key: str, query: str, cls: type[ObjectPath]) -> None:
    while True:
        _KNOWN[(url, query)] = (cls, key)
        up, _, name = url.rpartition("/")
        kup, _, kname = key.rpartition("/")
        if name != kname or "://" not in up or up.endswith("/") or not kup:
            return
        url, key = up, kup


def _known(url: str, query: str) -> ObjectPath | None:
    rest: list[str] = []
    while "://" in url and not url.endswith("/"):
        hit = _KNOWN.get((url, query))
        if hit is not None:
            cls, key = hit
            return cls("/".join([key, *reversed(rest)]))
        url, _, name = url.rpartition("/")
        rest.append(name)
    return None


def as_path(path: str | Path) -> Path:
    """A PATH argument as a Path: a local one as today, a URL as an ObjectPath."""
    if isinstance(path, Path):
        return path
    if not _URL.match(path):
        return Path(path)
    base, _, query = path.partition("?")
    query = "?" + query if query else ""
    base = base.rstrip("/") if not base.endswith("://") else base
    known = _known(base, query)
    if known is not None:
        return known
    try:
        pafs = _pafs()
    except ImportError:
        raise LogDirIOError(f"{path}: reading object storage needs pyarrow: "
                            "pip install 'kafkalog[s3]'") from None
    try:
        store, key = pafs.FileSystem.from_uri(path)
    except Exception as e:  # noqa: BLE001 - an unknown scheme, a malformed URL, no credentials
        if "Unrecognized filesystem type" in str(e):
            raise UsageError(f"{path}: unknown URL scheme; kafkalog reads local paths and "
                             f"{', '.join(s + '://' for s in SCHEMES)}") from None
        raise LogDirIOError(describe(path, e)) from None
    key = key.rstrip("/") or key
    attrs = {"store": store, "store_pid": os.getpid(), "url_root": base, "key_root": key,
             "url_query": query}
    cls: type[ObjectPath] = type("ObjectPath", (ObjectPath,), attrs)
    _remember(base, key, query, cls)
    return cls(key)


def absolute(path: str) -> str:
    """os.path.abspath for a local path; a URL as it is."""
    return path if is_url(path) else os.path.abspath(path)


def location(path: Path) -> str:
    """A path as text that opens it again in another process (a Spark executor)."""
    return path.url() if isinstance(path, ObjectPath) else str(path)


# -- the read path's file operations ----------------------------------------------------
class Entry:
    """What os.DirEntry gives the scanners, for an object in a listing."""

    __slots__ = ("_stat", "is_directory", "name", "path")

    def __init__(self, path: ObjectPath, name: str, is_directory: bool,
                 st: os.stat_result) -> None:
        self.path = path
        self.name = name
        self.is_directory = is_directory
        self._stat = st

    def is_dir(self, *, follow_symlinks: bool = True) -> bool:
        return self.is_directory

    def is_file(self, *, follow_symlinks: bool = True) -> bool:
        return not self.is_directory

    def is_symlink(self) -> bool:
        return False

    def stat(self, *, follow_symlinks: bool = True) -> os.stat_result:
        return self._stat


_NAME = operator.attrgetter("name")


def listdir(path: Path | str) -> list[Any]:
    """A directory's entries sorted by name (os.DirEntry locally; Entry for a URL, from
    one listing by prefix). OSError when it cannot be listed."""
    if not isinstance(path, ObjectPath):
        with os.scandir(path) as it:
            return sorted(it, key=_NAME)
    pafs = _pafs()

    infos = _call(path, lambda: path.client().get_file_info(pafs.FileSelector(path.key)))
    out = [Entry(path / i.base_name, i.base_name, i.type == pafs.FileType.Directory,
                 _stat_result(path, i)) for i in infos]
    return sorted(out, key=_NAME)


def child(directory: Path, name: str) -> FilePath:
    """`directory / name` as the cheapest thing that opens it: its text for a local file
    (building a Path cost more than reading a small partition's index), the Path for an
    object. The text is the Path's own: `str(directory / name)`."""
    if isinstance(directory, ObjectPath):
        return directory / name
    d = str(directory)  # a Path's text: normalised, so only "/" and "//" end in a slash
    if d == ".":
        return name
    return d + name if d[-1] == "/" else d + "/" + name


def size(path: FilePath) -> int:
    return os.stat(path).st_size if not isinstance(path, ObjectPath) else path.stat().st_size


class RemoteFile(io.RawIOBase):
    """An object opened for ranged reads: seek/read/readinto as an unbuffered local file
    gives them (what EntryScanner uses), each read one ranged GET of that many bytes."""

    def __init__(self, path: ObjectPath, raw: Any) -> None:
        self.path = path
        self._raw = raw
        self.size = int(raw.size())

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def seek(self, pos: int, whence: int = 0, /) -> int:
        return int(self._raw.seek(pos, whence))

    def tell(self) -> int:
        return int(self._raw.tell())

    def readinto(self, buffer: Any, /) -> int:
        try:
            return int(self._raw.readinto(buffer))
        except Exception as e:  # noqa: BLE001 - the store's error, one line
            raise LogDirIOError(describe(self.path, e)) from None

    def read(self, size: int = -1, /) -> bytes:
        try:
            return bytes(self._raw.read(None if size < 0 else size))
        except Exception as e:  # noqa: BLE001 - the store's error, one line
            raise LogDirIOError(describe(self.path, e)) from None

    def read_at(self, n: int, offset: int) -> bytes:
        try:
            return bytes(self._raw.read_at(n, offset))
        except Exception as e:  # noqa: BLE001 - the store's error, one line
            raise LogDirIOError(describe(self.path, e)) from None

    def fileno(self) -> int:
        raise io.UnsupportedOperation(f"{self.path}: an object has no file descriptor")

    def close(self) -> None:
        self._raw.close()
        super().close()


def open_binary(path: FilePath) -> Any:
    """Open for reading, unbuffered: `open(path, "rb", buffering=0)` locally, a RemoteFile
    for a URL. OSError (FileNotFoundError) as open() raises them."""
    if not isinstance(path, ObjectPath):
        return open(path, "rb", buffering=0)
    st = path.stat()  # NotFound as FileNotFoundError; a prefix is not a file
    if stat_mod.S_ISDIR(st.st_mode):
        raise IsADirectoryError(errno.EISDIR, "is a directory", str(path))
    return RemoteFile(path, _call(path, lambda: path.client().open_input_file(path.key)))


def file_size(f: Any) -> int:
    """Size of a file opened by open_binary."""
    return f.size if isinstance(f, RemoteFile) else os.fstat(f.fileno()).st_size


class Ranges:
    """pread on a file held open: os.pread on a descriptor locally, read_at for a URL."""

    def __init__(self, path: FilePath) -> None:
        self.path = path
        self.size: int
        self._remote: RemoteFile | None = None
        self._fd = -1
        if isinstance(path, ObjectPath):
            remote: RemoteFile = open_binary(path)
            self._remote = remote
            self.size = remote.size
        else:
            self._fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
            self.size = os.fstat(self._fd).st_size

    def pread(self, n: int, offset: int) -> bytes:
        if self._remote is not None:
            return self._remote.read_at(n, offset)
        return os.pread(self._fd, n, offset)

    def close(self) -> None:
        if self._remote is not None:
            self._remote.close()
        elif self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


def open_ranges(path: FilePath) -> Ranges:
    return Ranges(path)

