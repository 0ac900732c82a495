"""The file-name grammar of a Kafka log dir (LogFileUtils, LocalLog, Snapshots).

Segment files: `<base offset, 20 digits>.<log|index|timeindex|txnindex|snapshot>` with an
optional `.cleaned`, `.swap` or `.deleted` suffix. KRaft snapshots:
`<end offset 20>-<epoch 10>.checkpoint` (`00000000000000000000-0000000000.checkpoint` is the
bootstrap snapshot a Kafka 4 `format --standalone` writes, KIP-853/KIP-1170). Partition dirs:
`<topic>-<partition>`, or with `.<uuid32>-delete|-future|-stray` appended. Tiered storage's
`remote-log-index-cache/` (RemoteIndexCache) holds `<start offset>_<segment uuid>.index`,
`.timeindex` and `.txnindex` of remote segments, `.deleted` or `.tmp` on their way in or out.
Nobody else assembles or parses these names.

Topic names follow Kafka's rule (org.apache.kafka.common.internals.Topic.validate): ASCII
letters, digits, '.', '_' and '-', 1 to 249 characters, not "." or "..". A broker loads a
partition dir whose topic breaks it (LocalLog.parseTopicPartitionName does not check), but
the checkpoints it then writes (`<topic> <partition> <offset>` lines) no longer parse.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from enum import Enum

LOG = ".log"
INDEX = ".index"
TIMEINDEX = ".timeindex"
TXNINDEX = ".txnindex"
SNAPSHOT = ".snapshot"
CLEANED = ".cleaned"
SWAP = ".swap"
DELETED = ".deleted"
INDEX_KINDS = (INDEX, TIMEINDEX, TXNINDEX)

RECOVERY_POINT = "recovery-point-offset-checkpoint"
LOG_START = "log-start-offset-checkpoint"
REPLICATION = "replication-offset-checkpoint"
CLEANER = "cleaner-offset-checkpoint"
META = "meta.properties"
LOCK = ".lock"
CLEAN_SHUTDOWN = ".kafka_cleanshutdown"
ROOT_CHECKPOINTS = (RECOVERY_POINT, LOG_START, REPLICATION, CLEANER)
ROOT_FILES = (*ROOT_CHECKPOINTS, META, LOCK, CLEAN_SHUTDOWN)
LEADER_EPOCH = "leader-epoch-checkpoint"
PARTITION_METADATA = "partition.metadata"
QUORUM_STATE = "quorum-state"
METADATA_TOPIC = "__cluster_metadata"
REMOTE_INDEX_CACHE = "remote-log-index-cache"
QUARANTINE = ".kafkalog-quarantine"

TOPIC_MAX_LENGTH = 249
_TOPIC_LEGAL = re.compile(r"[a-zA-Z0-9._-]+")
_SEGMENT_RE = re.compile(r"^(\d{20})(\.log|\.index|\.timeindex|\.txnindex|\.snapshot)"
                         r"(\.cleaned|\.swap|\.deleted)?$")
_KRAFT_SNAPSHOT_RE = re.compile(r"^(\d{20})-(\d{10})\.checkpoint(\.deleted)?$")
_KRAFT_PART_RE = re.compile(r"^(\d{20})-(\d{10})-.+\.checkpoint\.part$")
# Uuid.toString: 16 bytes in URL-safe base64 without padding
_REMOTE_INDEX_RE = re.compile(r"^(\d{1,19})_([A-Za-z0-9_-]{22})(\.index|\.timeindex|\.txnindex)"
                              r"(\.deleted|\.tmp)?$")
_PARTITION_NUMBER_RE = re.compile(r"[+-]?\d+")
_DIR_SUFFIX_RE = {s: re.compile(r"^(\S+)-(\S+)\.(\S+)" + s + "$")
                  for s in ("-delete", "-future", "-stray")}


class FileKind(Enum):
    SEGMENT = "segment"  # .log/.index/.timeindex/.txnindex/.snapshot (+ temp suffix)
    KRAFT_SNAPSHOT = "kraft-snapshot"
    KRAFT_SNAPSHOT_PART = "kraft-snapshot-part"
    LEADER_EPOCH = "leader-epoch-checkpoint"
    PARTITION_METADATA = "partition.metadata"
    QUORUM_STATE = "quorum-state"
    REMOTE_INDEX = "remote-index"  # in remote-log-index-cache/
    ROOT = "root"
    TMP = "tmp"
    UNKNOWN = "unknown"


@dataclass(frozen=True, slots=True)
class FileName:
    name: str
    kind: FileKind
    offset: int | None = None  # base offset (segments, remote indexes), end offset (KRaft)
    suffix: str | None = None  # .log, .index, ... for segment files and remote indexes
    temp: str | None = None  # .cleaned / .swap / .deleted (remote indexes: .deleted / .tmp)
    epoch: int | None = None  # KRaft snapshot epoch


@functools.lru_cache(maxsize=4096)  # every partition dir holds the same few names
def parse_file_name(name: str) -> FileName:
    m = _SEGMENT_RE.match(name)
    if m:
        return FileName(name, FileKind.SEGMENT, int(m.group(1)), m.group(2), m.group(3))
    m = _KRAFT_SNAPSHOT_RE.match(name)
    if m:
        return FileName(name, FileKind.KRAFT_SNAPSHOT, int(m.group(1)), None, m.group(3),
                        int(m.group(2)))
    m = _KRAFT_PART_RE.match(name)
    if m:
        return FileName(name, FileKind.KRAFT_SNAPSHOT_PART, int(m.group(1)),
                        epoch=int(m.group(2)))
    m = _REMOTE_INDEX_RE.match(name)
    if m:
        return FileName(name, FileKind.REMOTE_INDEX, int(m.group(1)), m.group(3), m.group(4))
    if name == LEADER_EPOCH:
        return FileName(name, FileKind.LEADER_EPOCH)
    if name == PARTITION_METADATA:
        return FileName(name, FileKind.PARTITION_METADATA)
    if name == QUORUM_STATE:
        return FileName(name, FileKind.QUORUM_STATE)
    if name in ROOT_FILES:
        return FileName(name, FileKind.ROOT)
    if name.endswith(".tmp"):
        return FileName(name, FileKind.TMP)
    return FileName(name, FileKind.UNKNOWN)


def is_bootstrap_snapshot(fn: FileName) -> bool:
    """The KRaft snapshot at offset 0, epoch 0: what `kafka-storage format` writes for a
    dynamic quorum (Kafka 4, KIP-853/KIP-1170); a controller's own snapshots end later."""
    return fn.kind is FileKind.KRAFT_SNAPSHOT and fn.offset == 0 and fn.epoch == 0 and \
        not fn.temp


def segment_file_name(base_offset: int, suffix: str, temp: str = "") -> str:
    return f"{base_offset:020d}{suffix}{temp}"


def kraft_snapshot_name(end_offset: int, epoch: int) -> str:
    return f"{end_offset:020d}-{epoch:010d}.checkpoint"


@dataclass(frozen=True, slots=True)
class PartitionName:
    topic: str
    partition: int
    state: str = ""  # "", "delete", "future" or "stray"


def is_utf8(name: str) -> bool:
    """False for a name from the file system holding bytes that are not UTF-8 (Python keeps
    them as surrogate escapes, PEP 383). Java decodes such a name lossily, so a broker can
    list the entry but never open it by that name."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def parse_partition_dir(name: str) -> PartitionName | None:
    """LocalLog.parseTopicPartitionName; None where Kafka would throw, or could not open
    the dir (a name that is not UTF-8)."""
    if not name or "-" not in name or not is_utf8(name):
        return None
    state = ""
    for suffix, rx in _DIR_SUFFIX_RE.items():
        if name.endswith(suffix):
            if not rx.match(name):
                return None
            state = suffix[1:]
            name = name[:name.rfind(".")]
            break
    i = name.rfind("-")
    topic, part = name[:i], name[i + 1:]
    if not topic or not part:
        return None
    try:
        # Java's Integer.parseInt accepts a leading '+' and nothing else
        if not _PARTITION_NUMBER_RE.fullmatch(part):
            return None
        partition = int(part)
    except ValueError:
        return None
    if not -(2**31) <= partition < 2**31:
        return None
    return PartitionName(topic, partition, state)


def topic_name_error(topic: str) -> str | None:
    """Why Kafka refuses `topic` as a topic name, or None when it is legal."""
    if not topic:
        return "the empty string is not a topic name"
    shown = repr(topic if len(topic) <= 60 else topic[:60] + "...")
    if topic in (".", ".."):
        return f"{shown} is not allowed as a topic name"
    if len(topic) > TOPIC_MAX_LENGTH:
        return (f"{shown} is {len(topic)} characters long; a topic name has at most "
                f"{TOPIC_MAX_LENGTH}")
    if not _TOPIC_LEGAL.fullmatch(topic):
        bad = next(c for c in topic if not _TOPIC_LEGAL.fullmatch(c))
        return (f"{shown} holds {bad!r}; a topic name has only ASCII letters, digits, "
                "'.', '_' and '-'")
    return None


def partition_dir_name(topic: str, partition: int) -> str:
    return f"{topic}-{partition}"
