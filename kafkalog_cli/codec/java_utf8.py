"""Text as Java's `new String(bytes, UTF_8)` reads it, which is how Kafka reads a record's
header keys (DefaultRecord.readHeaders): each malformed part becomes U+FFFD, as Python's
"replace" does, but for one difference: Java takes a three-byte encoded surrogate
(ED A0-BF 80-BF) as one malformed character, where Python sees three. Checked against
kafka-dump-log (tests/conformance/test_conformance_header_keys.py)."""

from __future__ import annotations

import codecs

ERRORS = "kafkalog-java"  # the error handler's name, for bytes.decode and the compiled codec


def _java_replace(e: UnicodeError) -> tuple[str, int]:
    if not isinstance(e, UnicodeDecodeError):
        raise e
    data, i = e.object, e.start
    if (data[i] == 0xED and i + 2 < len(data) and 0xA0 <= data[i + 1] <= 0xBF
            and 0x80 <= data[i + 2] <= 0xBF):
        return "\ufffd", i + 3
    return "\ufffd", e.end


codecs.register_error(ERRORS, _java_replace)


def java_utf8(data: bytes) -> str:
    return data.decode("utf-8", ERRORS)
