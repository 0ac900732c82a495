"""A partition's roll and index settings, as the topic configs of the same names: in a
module of its own so that reading commands need not import the writer."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class LogConfig:
    segment_bytes: int = 1024 * 1024 * 1024
    segment_ms: int = 7 * 24 * 3600 * 1000
    segment_jitter_ms: int = 0
    index_interval_bytes: int = 4096
    segment_index_bytes: int = 10 * 1024 * 1024
    fsync: bool = False
