"""Kafka's message specs, read from the jars of the reference Kafka 4 (``common/message/*.json``
and ``common/metadata/*.json``), with what the tests need to judge kafkalog's decoders by them:

* :func:`load_specs` - every spec of a jar, nested and common structs resolved;
* :func:`sample` - values for every field a version has (tagged ones set, null, absent or
  at their default);
* :func:`encode` - the bytes Kafka's generated ``write`` produces for those values;
* :func:`to_json` - what Kafka's generated ``JsonConverter.write`` makes of them.

The rules are the message generator's (generator/src/main/java/org/apache/kafka/message):
fields exist in ``versions`` (default: their ``taggedVersions``); flexible versions use
compact lengths (uvarint n+1) and end every struct with a tagged-field section; a single
nullable struct has an int8 marker (-1 null, 1 present), inside a tag a uvarint 1; the JSON
writer names fields by their lower-camel name and writes a tagged field only when it is not
its default. No kafkalog imports: this is the independent side.
"""
from __future__ import annotations

import base64
import json
import random
import struct
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

MAX_VERSION = 0x7FFF
PRIMITIVES = {"bool": ">?", "int8": ">b", "int16": ">h", "uint16": ">H", "int32": ">i",
              "uint32": ">I", "int64": ">q", "float64": ">d"}
VARIABLE = ("string", "bytes", "uuid", "records")  # records: in requests only
Versions = tuple[int, int] | None  # inclusive; None is empty ("none")


def parse_versions(text: str | None, fallback: Versions = None) -> Versions:
    if text is None or text == "":
        return fallback
    if text == "none":
        return None
    if text.endswith("+"):
        return int(text[:-1]), MAX_VERSION
    lo, _, hi = text.partition("-")
    return int(lo), int(hi or lo)


def has(v: Versions, version: int) -> bool:
    return v is not None and v[0] <= version <= v[1]


@dataclass
class StructSpec:
    name: str
    fields: list[FieldSpec]


@dataclass
class FieldSpec:
    name: str
    type: str  # element type for arrays: a primitive name or a struct name
    array: bool
    struct: StructSpec | None
    versions: Versions
    nullable: Versions
    tagged: Versions
    tag: int | None
    default: str  # as written in the spec ("" when absent)
    flexible_override: str | None = None

    @property
    def json_name(self) -> str:
        return self.name[:1].lower() + self.name[1:]


@dataclass
class MessageSpec:
    name: str
    kind: str  # coordinator-key, coordinator-value, metadata, data, ...
    api_key: int | None
    valid: Versions
    flexible: Versions
    fields: list[FieldSpec]
    source: str = ""  # jar!path
    raw: dict = field(default_factory=dict, repr=False)


def strip_comments(text: str) -> str:
    """Kafka's specs are JSON with // and /* */ comments (Jackson ALLOW_COMMENTS)."""
    out, i, n, in_str = [], 0, len(text), False
    while i < n:
        c = text[i]
        if in_str:
            out.append(c)
            if c == "\\" and i + 1 < n:
                out.append(text[i + 1])
                i += 1
            elif c == '"':
                in_str = False
        elif c == '"':
            in_str = True
            out.append(c)
        elif text.startswith("//", i):
            while i < n and text[i] != "\n":
                i += 1
            continue
        elif text.startswith("/*", i):
            i = text.index("*/", i) + 2
            continue
        else:
            out.append(c)
        i += 1
    return "".join(out)


def _field(raw: dict, common: dict[str, dict]) -> FieldSpec:
    type_ = raw["type"]
    array = type_.startswith("[]")
    elem = type_.removeprefix("[]")
    struct_spec = None
    if elem not in PRIMITIVES and elem not in VARIABLE:
        body = raw["fields"] if "fields" in raw else common[elem]["fields"]
        struct_spec = StructSpec(elem, [_field(f, common) for f in body])
    tagged = parse_versions(raw.get("taggedVersions"))
    return FieldSpec(
        name=raw["name"], type=elem, array=array, struct=struct_spec,
        versions=parse_versions(raw.get("versions"), tagged),
        nullable=parse_versions(raw.get("nullableVersions")),
        # a JSON null default is no default (FieldSpec: fieldDefault == null ? "" : ...)
        tagged=tagged, tag=raw.get("tag"),
        default="" if raw.get("default") is None else str(raw["default"]),
        flexible_override=raw.get("flexibleVersions"))


def parse_spec(text: str, source: str = "") -> MessageSpec:
    raw = json.loads(strip_comments(text))
    common = {s["name"]: s for s in raw.get("commonStructs", [])}
    return MessageSpec(
        name=raw["name"], kind=raw["type"], api_key=raw.get("apiKey"),
        valid=parse_versions(raw["validVersions"]),
        flexible=parse_versions(raw.get("flexibleVersions", "none")),
        fields=[_field(f, common) for f in raw.get("fields", [])], source=source, raw=raw)


def load_specs(jar: Path, only: set[str] | None = None) -> dict[str, MessageSpec]:
    """Every ``common/*/*.json`` spec in a jar (or those of the names ``only``), by name."""
    out: dict[str, MessageSpec] = {}
    with zipfile.ZipFile(jar) as z:
        for name in z.namelist():
            if only is not None and Path(name).stem not in only:
                continue
            if name.startswith("common/") and name.endswith(".json"):
                spec = parse_spec(z.read(name).decode("utf-8"), f"{jar.name}!{name}")
                out[spec.name] = spec
    return out


EMPTY_STRUCT = "new X()"  # default_value of a single struct field with no default


def default_value(f: FieldSpec) -> Any:
    """The value a field has when the spec's default applies (FieldSpec/FieldType rules)."""
    d = f.default
    if f.array or f.struct is not None:
        return None if d == "null" else [] if f.array else EMPTY_STRUCT
    if d == "null":
        return None
    if f.type == "bool":
        return d == "true"
    if f.type == "string":
        return d
    if f.type == "bytes":
        return b""
    if f.type == "uuid":
        return bytes(16)
    if f.type == "float64":
        return float(d or 0)
    return int(d, 0) if d else 0


# --- encoding ---------------------------------------------------------------------------------

def uvarint(n: int) -> bytes:
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _length(n: int, flexible: bool, wide: bool) -> bytes:
    """A length or count; n = -1 is null."""
    if flexible:
        return uvarint(n + 1)
    return struct.pack(">i" if wide else ">h", n)


def _one(f: FieldSpec, v: Any, version: int, flexible: bool) -> bytes:
    if f.struct is not None:
        return _struct(f.struct.fields, v, version, flexible)
    if f.type in PRIMITIVES:
        return struct.pack(PRIMITIVES[f.type], v)
    if f.type == "uuid":
        return v
    if v is None:
        return _length(-1, flexible, f.type == "bytes")
    raw = v.encode("utf-8") if f.type == "string" else v
    return _length(len(raw), flexible, f.type == "bytes") + raw


def _value(f: FieldSpec, v: Any, version: int, flexible: bool) -> bytes:
    if f.array:
        if v is None:
            return _length(-1, flexible, True)
        return _length(len(v), flexible, True) + b"".join(
            _one(f, e, version, flexible) for e in v)
    if f.struct is not None and has(f.nullable, version):
        return b"\xff" if v is None else b"\x01" + _one(f, v, version, flexible)
    return _one(f, v, version, flexible)


def _struct(fields: list[FieldSpec], values: dict, version: int, flexible: bool) -> bytes:
    out = bytearray()
    tags: dict[int, bytes] = {}
    for f in fields:
        if not has(f.versions, version):
            continue
        if has(f.tagged, version):
            if f.name in values:
                v = values[f.name]
                if f.struct is not None and not f.array:  # marker as a uvarint inside a tag
                    data = uvarint(1) + _one(f, v, version, True)
                else:
                    data = _value(f, v, version, True)
                tags[f.tag] = data
            continue
        out += _value(f, values[f.name], version, flexible)
    if flexible:
        out += uvarint(len(tags))
        for tag in sorted(tags):
            out += uvarint(tag) + uvarint(len(tags[tag])) + tags[tag]
    return bytes(out)


def encode(spec: MessageSpec, version: int, values: dict) -> bytes:
    """The message body at ``version`` (no version prefix)."""
    assert has(spec.valid, version), (spec.name, version)
    return _struct(spec.fields, values, version, has(spec.flexible, version))


# --- JSON -------------------------------------------------------------------------------------

def uuid_text(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def _json_one(f: FieldSpec, v: Any, version: int) -> Any:
    if v is None:
        return None
    if f.struct is not None:
        return _json_struct(f.struct.fields, v, version)
    if f.type == "bytes":
        return base64.b64encode(v).decode("ascii")
    if f.type == "uuid":
        return uuid_text(v)
    return v


def is_default(f: FieldSpec, v: Any) -> bool:
    """``generateNonDefaultValueCheck`` negated; a struct's default is ``new X()``: every
    field at its default (equals() compares them all)."""
    d = default_value(f)
    if d != EMPTY_STRUCT:
        return bool(v == d)
    return isinstance(v, dict) and all(is_default(g, v[g.name])
                                       for g in f.struct.fields if g.name in v)


def written(v: Versions, version: int) -> bool:
    """Whether a generated JsonConverter's write() emits a field of versions `v` at `version`:
    it tests only the bounds the field has (`_version >= lo` for lo > 0, `_version <= hi`
    when bounded), so a 0+ field is written at any version, even one the spec lacks."""
    return v is not None and (v[0] == 0 or version >= v[0]) and version <= v[1]


def _json_struct(fields: list[FieldSpec], values: dict, version: int) -> dict:
    out: dict[str, Any] = {}
    for f in fields:
        if not written(f.versions, version):
            continue
        if has(f.tagged, version) and (f.name not in values or is_default(f, values[f.name])):
            continue
        v = values[f.name]
        out[f.json_name] = [_json_one(f, e, version) for e in v] if f.array and v is not None \
            else _json_one(f, v, version)
    return out


def to_json(spec: MessageSpec, version: int, values: dict) -> dict:
    """``<Name>JsonConverter.write(message, version)``."""
    return _json_struct(spec.fields, values, version)


def _filled(fields: list[FieldSpec], values: dict, version: int) -> dict:
    out: dict[str, Any] = {}
    for f in fields:
        if f.name in values:
            v = values[f.name]
            if f.struct is not None and v is not None:
                v = [_filled(f.struct.fields, e, version) for e in v] if f.array else \
                    _filled(f.struct.fields, v, version)
            out[f.name] = v
        elif written(f.versions, version) and not has(f.tagged, version):
            out[f.name] = _default_of(f, version)
    return out


def with_defaults(spec: MessageSpec, values: dict, version: int) -> dict:
    """The message object a reader builds from `values` (read at another version), as seen
    by a write at `version`: the fields it did not read keep their defaults."""
    return _filled(spec.fields, values, version)


# --- sample values ----------------------------------------------------------------------------

_RANGES = {"int8": (-128, 127), "int16": (-(2**15), 2**15 - 1), "uint16": (0, 2**16 - 1),
           "int32": (-(2**31), 2**31 - 1), "uint32": (0, 2**32 - 1),
           "int64": (-(2**63), 2**63 - 1)}
# what sample() sets: FULL every field, tagged ones off their default; EMPTY nullable fields
# null, arrays/strings/bytes empty, tagged fields absent; NULL_TAGS as FULL but tagged fields
# whose default is not null are null; DEFAULT_TAGS as FULL but tagged fields written with
# their default value (Kafka's writer leaves them out; a reader must not show them)
FULL, EMPTY, NULL_TAGS, DEFAULT_TAGS = "full", "empty", "null-tags", "default-tags"
MODES = (FULL, EMPTY, NULL_TAGS, DEFAULT_TAGS)


def _null_is_news(f: FieldSpec, version: int) -> bool:
    """A tagged field whose null is not its default (so a null is written and shown). Not
    single structs: Kafka writes such a null as a 0 byte, which its reader takes for a
    present struct."""
    return has(f.tagged, version) and has(f.nullable, version) and f.default != "null" \
        and (f.struct is None or f.array)


def _default_of(f: FieldSpec, version: int) -> Any:
    d = default_value(f)
    return _struct_at_defaults(f.struct.fields, version) if d == EMPTY_STRUCT else d


def _struct_at_defaults(fields: list[FieldSpec], version: int) -> dict:
    return {f.name: _default_of(f, version) for f in fields
            if has(f.versions, version) and not has(f.tagged, version)}


def _sample_one(f: FieldSpec, version: int, rng: random.Random, mode: str) -> Any:
    if f.struct is not None:
        return _sample_struct(f.struct.fields, version, rng, mode)
    if f.type == "bool":
        return rng.random() < 0.5
    if f.type in _RANGES:
        lo, hi = _RANGES[f.type]
        return rng.choice([lo, hi, rng.randint(lo, hi), 7])
    if f.type == "float64":
        return rng.choice([0.5, -1e300, 3.25])
    if f.type == "uuid":
        return bytes(rng.randrange(256) for _ in range(16))
    n = 0 if mode == EMPTY else rng.randint(1, 5)
    if f.type == "bytes":
        return bytes(rng.randrange(256) for _ in range(n))
    return "".join(rng.choice("abcXYZ-_.é€") for _ in range(n))


def _sample_value(f: FieldSpec, version: int, rng: random.Random, mode: str) -> Any:
    if mode == EMPTY and has(f.nullable, version):
        return None
    if f.array:
        n = 0 if mode == EMPTY else rng.randint(1, 2)
        return [_sample_one(f, version, rng, mode) for _ in range(n)]
    return _sample_one(f, version, rng, mode)


def _sample_struct(fields: list[FieldSpec], version: int, rng: random.Random,
                   mode: str) -> dict:
    out: dict[str, Any] = {}
    for f in fields:
        if not has(f.versions, version):
            continue
        if not has(f.tagged, version):
            out[f.name] = _sample_value(f, version, rng, mode)
        elif mode == NULL_TAGS and _null_is_news(f, version):
            out[f.name] = None
        elif mode == DEFAULT_TAGS:
            if default_value(f) is not None:  # a null default cannot be written
                out[f.name] = _default_of(f, version)
        elif mode != EMPTY:
            v = _sample_value(f, version, rng, mode)
            while is_default(f, v):  # a tagged field at its default is not shown
                v = _sample_value(f, version, rng, mode)
            out[f.name] = v
    return out


def sample(spec: MessageSpec, version: int, mode: str = FULL) -> dict:
    """Values for every field of ``version`` (see MODES), by a seeded random choice."""
    rng = random.Random(f"{spec.name}/{version}/{mode}")
    return _sample_struct(spec.fields, version, rng, mode)


def modes_of(spec: MessageSpec, version: int) -> list[str]:
    """The MODES that make a different record for this version (null-tags, default-tags
    only when it has such tagged fields)."""
    def walk(fields: list[FieldSpec], test) -> bool:
        return any(has(f.versions, version) and (
            test(f) or (f.struct is not None and walk(f.struct.fields, test))) for f in fields)
    out = [FULL, EMPTY]
    if walk(spec.fields, lambda f: _null_is_news(f, version)):
        out.append(NULL_TAGS)
    if walk(spec.fields, lambda f: has(f.tagged, version) and default_value(f) is not None):
        out.append(DEFAULT_TAGS)
    return out


def versions_of(spec: MessageSpec) -> range:
    assert spec.valid is not None
    return range(spec.valid[0], spec.valid[1] + 1)
