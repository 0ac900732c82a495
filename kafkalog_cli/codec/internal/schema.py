"""Kafka's generated-message encoding, read by schema (the `*.json` message specs).

A schema is a tree of `Struct`s of `Field`s, each valid for a range of message versions.
How a field is encoded depends on whether the message version is *flexible* (KIP-482):

| type      | non-flexible                          | flexible                              |
|-----------|---------------------------------------|---------------------------------------|
| bool/int8 | 1 byte                                | same                                  |
| int16     | 2 bytes big-endian (uint16 likewise)  | same                                  |
| int32     | 4 bytes (uint32 likewise)             | same                                  |
| int64     | 8 bytes; float64: IEEE-754, 8 bytes   | same                                  |
| uuid      | 16 bytes                              | same                                  |
| string    | int16 length, -1 = null, then UTF-8   | uvarint length+1, 0 = null, then UTF-8|
| bytes     | int32 length, -1 = null, then bytes   | uvarint length+1, 0 = null, then bytes|
| array     | int32 count, -1 = null, then elements | uvarint count+1, 0 = null, then elems |

In flexible versions every struct ends with a tagged-field section: uvarint count, then per
field uvarint tag, uvarint size and the value (encoded flexibly). Unknown tags are skipped.
A single (non-array) struct field is preceded by an int8 marker (-1 null, 1 present) in the
versions where it is nullable.

`read_struct` returns the values under Kafka's JSON names (`JsonConverter`: the field name
with its first letter lowered; fields absent from the version left out; tagged fields only
when present and not their default). `bytes` stay `bytes` until `jsonable` turns them into
base64 (Jackson's BinaryNode) and uuids are Kafka's `Uuid.toString` (URL-safe base64).
"""

from __future__ import annotations

import base64
import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kafkalog_cli.errors import CorruptDataError

MAX_VERSION = 0x7FFF
Versions = tuple[int, int]  # inclusive range; (1, 0) is empty
NO_VERSIONS: Versions = (1, 0)
_UVARINT_MAX_BYTES = 5

_FIXED: dict[str, struct.Struct] = {
    "bool": struct.Struct(">?"), "int8": struct.Struct(">b"), "int16": struct.Struct(">h"),
    "uint16": struct.Struct(">H"), "int32": struct.Struct(">i"), "uint32": struct.Struct(">I"),
    "int64": struct.Struct(">q"), "float64": struct.Struct(">d"),
}
_UUID_SIZE = 16
_I16 = _FIXED["int16"]
_I32 = _FIXED["int32"]


def versions(spec: str) -> Versions:
    """Kafka's version-range syntax: `none`, `3`, `0-2`, `1+`."""
    if spec == "none":
        return NO_VERSIONS
    if spec.endswith("+"):
        return int(spec[:-1]), MAX_VERSION
    lo, _, hi = spec.partition("-")
    return int(lo), int(hi or lo)


def _in(v: int, r: Versions) -> bool:
    return r[0] <= v <= r[1]


def json_name(name: str) -> str:
    """`MessageGenerator.lowerCaseFirst`: TopicId -> topicId, KRaftVersion -> kRaftVersion."""
    return name[:1].lower() + name[1:]


@dataclass(frozen=True)
class Field:
    name: str  # Kafka's field name; the JSON key is json_name(name)
    type: str | Struct  # a primitive type name or a nested struct
    array: bool = False
    versions: Versions = (0, MAX_VERSION)
    nullable: Versions = NO_VERSIONS
    tag: int | None = None
    tagged: Versions = NO_VERSIONS
    default: Any = None  # what an absent tagged field means (omitted from output)


@dataclass(frozen=True)
class Struct:
    name: str
    fields: tuple[Field, ...]


@dataclass(frozen=True)
class Message(Struct):
    """A top-level message: a record key or value, a metadata or control record.

    `api_key` is the record type (coordinator records, metadata records), None for the
    others; `valid` and `flexible` are the spec's validVersions and flexibleVersions.
    """

    api_key: int | None = None
    valid: Versions = (0, 0)
    flexible: Versions = NO_VERSIONS


ZERO_UUID = "AAAAAAAAAAAAAAAAAAAAAA"  # Uuid.ZERO_UUID.toString()


class _Sentinel:
    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name


_AUTO: Any = _Sentinel("AUTO")
# the default of a single struct field whose spec gives none: `new X()`, every field default
EMPTY_STRUCT: Any = _Sentinel("EMPTY_STRUCT")


def _zero(type_: str | Struct, array: bool) -> Any:
    """The default of a field whose spec gives none (FieldSpec's per-type defaults; a spec's
    `"default": null` is no default)."""
    if array:
        return []
    if isinstance(type_, Struct):
        return EMPTY_STRUCT
    return {"string": "", "bytes": b"", "uuid": ZERO_UUID, "bool": False,
            "float64": 0.0}.get(type_, 0)


def field(name: str, type_: str | Struct, v: str | None = None, *, null: str = "none",
          tag: int | None = None, tagged: str = "none", default: Any = _AUTO,
          array: bool | None = None) -> Field:
    """A Field from spec-like arguments: `field("Isr", "[]int32", null="0+", tag=0, ...)`.

    A Struct type is an array of structs unless `array=False` (a single nested struct).
    Without `v` a field exists in its tagged versions if it has any, else in every version.
    Without `default` it is the type's zero (empty string/array, false, 0, the zero uuid).
    """
    if v is None:
        v = tagged if tagged != "none" else "0+"
    if isinstance(type_, str):
        array = type_.startswith("[]")
        type_ = type_.removeprefix("[]")
    elif array is None:
        array = True
    if default is _AUTO:
        default = _zero(type_, array)
    return Field(name, type_, array, versions(v), versions(null), tag, versions(tagged), default)


def message(name: str, *fields: Field, api_key: int | None = None, valid: str = "0",
            flexible: str = "none") -> Message:
    return Message(name, tuple(fields), api_key, versions(valid), versions(flexible))


class UnknownRecordType(CorruptDataError):
    """A record whose type/version has no schema here (kafka-dump-log: "Unknown record type")."""


class Reader:
    """A cursor over one message; every short read raises CorruptDataError at its position."""

    __slots__ = ("data", "end", "flexible", "pos", "what")

    def __init__(self, data: bytes | memoryview, pos: int, end: int, flexible: bool,
                 what: str) -> None:
        self.data, self.pos, self.end, self.flexible, self.what = data, pos, end, flexible, what

    def fail(self, reason: str, pos: int | None = None) -> CorruptDataError:
        return CorruptDataError(f"{self.what}: {reason}", pos=self.pos if pos is None else pos)

    def take(self, n: int, name: str) -> bytes:
        if n > self.end - self.pos:
            raise self.fail(f"{name}: needs {n} bytes, {self.end - self.pos} left")
        b = bytes(self.data[self.pos:self.pos + n])
        self.pos += n
        return b

    def fixed(self, kind: str, name: str) -> Any:
        s = _FIXED[kind]
        if s.size > self.end - self.pos:
            raise self.fail(f"{name}: needs {s.size} bytes, {self.end - self.pos} left")
        v = s.unpack_from(self.data, self.pos)[0]
        self.pos += s.size
        return v

    def uvarint(self, name: str) -> int:
        result = shift = 0
        for _ in range(_UVARINT_MAX_BYTES):
            if self.pos >= self.end:
                raise self.fail(f"{name}: varint runs past the end")
            b = self.data[self.pos]
            self.pos += 1
            result |= (b & 0x7F) << shift
            if b < 0x80:
                return result & 0xFFFFFFFF
            shift += 7
        raise self.fail(f"{name}: varint longer than {_UVARINT_MAX_BYTES} bytes")

    def length(self, name: str, long: bool) -> int:
        """A string/bytes/array length; -1 means null."""
        if self.flexible:
            return self.uvarint(name) - 1
        return int(self.fixed("int32" if long else "int16", name))


def _read_value(r: Reader, f: Field, version: int) -> Any:
    name = f.name
    if f.array:
        start = r.pos
        n = r.length(name, True)
        if n < 0:
            return _null(r, f, version, start)
        if n > r.end - r.pos:  # every element takes at least one byte
            raise r.fail(f"{name}: array of {n} elements in {r.end - r.pos} bytes", start)
        return [_read_one(r, f, version) for _ in range(n)]
    return _read_one(r, f, version)


def _null(r: Reader, f: Field, version: int, pos: int) -> None:
    if not _in(version, f.nullable):
        raise r.fail(f"non-nullable field {f.name} was serialized as null", pos)
    return None


def _read_one(r: Reader, f: Field, version: int) -> Any:
    t = f.type
    if isinstance(t, Struct):
        if not f.array and _in(version, f.nullable):
            start = r.pos
            if r.fixed("int8", f.name) < 0:
                return _null(r, f, version, start)
        return _read_fields(r, t, version)
    if t in _FIXED:
        return r.fixed(t, f.name)
    if t == "uuid":
        return uuid_text(r.take(_UUID_SIZE, f.name))
    if t in ("string", "bytes"):
        start = r.pos
        n = r.length(f.name, t == "bytes")
        if n < 0:
            if f.array:  # elements of a []string are never null
                raise r.fail(f"{f.name}: null array element", start)
            return _null(r, f, version, start)
        raw = r.take(n, f.name)
        return raw.decode("utf-8", "replace") if t == "string" else raw
    raise r.fail(f"{f.name}: unknown type {t!r} in schema")


def _read_fields(r: Reader, s: Struct, version: int) -> dict[str, Any]:
    values: dict[str, Any] = {}
    tagged: dict[int, Field] = {}
    for f in s.fields:
        if not _in(version, f.versions):
            continue
        if f.tag is not None and _in(version, f.tagged):
            tagged[f.tag] = f
            continue
        values[f.name] = _read_value(r, f, version)
    found: dict[str, Any] = {}
    if r.flexible:
        count = r.uvarint("tagged field count")
        for _ in range(count):
            tag = r.uvarint("tag")
            size = r.uvarint(f"tag {tag} size")
            if size > r.end - r.pos:
                raise r.fail(f"tag {tag}: {size} bytes, {r.end - r.pos} left")
            tf = tagged.get(tag)
            if tf is None:  # unknown tags are kept by Kafka, shown by no one
                r.pos += size
                continue
            sub = Reader(r.data, r.pos, r.pos + size, True, r.what)
            found[tf.name] = _read_value(sub, tf, version)
            r.pos += size
    out: dict[str, Any] = {}
    for f in s.fields:  # JSON order is schema order, tagged fields in their place
        if f.name in values:
            out[json_name(f.name)] = values[f.name]
        elif f.name in found and not _is_default(f, found[f.name], version):
            out[json_name(f.name)] = found[f.name]
    return out


def _is_default(f: Field, value: Any, version: int) -> bool:
    """JsonConverter's non-default check: a tagged field equal to its default is left out."""
    if f.default is not EMPTY_STRUCT:
        return bool(value == f.default)
    if not isinstance(value, dict) or not isinstance(f.type, Struct):
        return False
    for g in f.type.fields:  # as read: tagged fields are in `value` only when non-default
        if _in(version, g.versions) and not (g.tag is not None and _in(version, g.tagged)) \
                and not _is_default(g, value.get(json_name(g.name)), version):
            return False
    return not any(json_name(g.name) in value for g in f.type.fields
                   if g.tag is not None and _in(version, g.tagged))


def read_struct(data: bytes | memoryview, s: Struct, version: int, flexible: Versions,
                pos: int = 0, exact: bool = False) -> tuple[dict[str, Any], int]:
    """Decode `s` at `version` from data[pos:]; returns (values, next position).

    `exact` makes trailing bytes an error (Kafka's MetadataRecordSerde checks; the group and
    transaction coordinators do not).
    """
    r = Reader(data, pos, len(data), _in(version, flexible), f"{s.name} v{version}")
    out = _read_fields(r, s, version)
    if exact and r.pos != r.end:
        raise r.fail(f"{r.end - r.pos} byte(s) of garbage after the message")
    return out, r.pos


def read_message(data: bytes | memoryview, m: Message, version: int, pos: int = 0,
                 exact: bool = False) -> tuple[dict[str, Any], int]:
    """read_struct for a message, at one of its valid versions (else CorruptDataError)."""
    if not _in(version, m.valid):
        raise CorruptDataError(f"{m.name}: unknown version {version}", pos=0)
    return read_struct(data, m, version, m.flexible, pos, exact)


def written_at(s: Struct, values: dict[str, Any], version: int) -> dict[str, Any]:
    """What JsonConverter.write(message, version) prints of values read at another version
    (ControlRecordUtils reads KRaft control records at version 0 and kafka-dump-log writes
    them at their own Version field): the fields of `version`, those not read at their
    default. The generated writer checks only a field's bounds other than 0+, so a field
    of every version is written at any version, a negative one too."""
    out: dict[str, Any] = {}
    for f in s.fields:
        lo, hi = f.versions
        if (lo > 0 and version < lo) or version > hi:
            continue
        key = json_name(f.name)
        if key in values:
            v = values[key]
            if isinstance(f.type, Struct) and v is not None:
                v = [written_at(f.type, e, version) for e in v] if f.array else \
                    written_at(f.type, v, version)
            out[key] = v
        elif not (f.tag is not None and _in(version, f.tagged)):  # tagged: only non-default
            out[key] = written_at(f.type, {}, version) if f.default is EMPTY_STRUCT and \
                isinstance(f.type, Struct) else f.default
    return out


def read_version(data: bytes | memoryview, what: str) -> int:
    """The int16 version that prefixes coordinator keys and values."""
    if len(data) < _I16.size:
        raise CorruptDataError(f"{what}: {len(data)} bytes, too short for a version", pos=0)
    return int(_I16.unpack_from(data, 0)[0])


def uuid_text(raw: bytes) -> str:
    """Kafka's `Uuid.toString`: URL-safe base64 of the 16 bytes, no padding."""
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def jsonable(value: Any, on_bytes: Callable[[bytes], Any] | None = None) -> Any:
    """Replace bytes (deep) by base64 text, as Jackson writes a BinaryNode."""
    if isinstance(value, bytes):
        return on_bytes(value) if on_bytes else base64.b64encode(value).decode("ascii")
    if isinstance(value, dict):
        return {k: jsonable(v, on_bytes) for k, v in value.items()}
    if isinstance(value, list):
        return [jsonable(v, on_bytes) for v in value]
    return value
