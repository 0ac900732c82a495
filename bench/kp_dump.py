"""What a kafka-python user writes to dump a segment as JSONL: the peer of `kafkalog dump
--records --format jsonl --payload base64` (bench/results.py, bench/run.py).

    python bench/kp_dump.py SEGMENT.log
"""

import base64
import json
import sys

from kafka.record.memory_records import MemoryRecords


def b64(b: bytes | None) -> str | None:
    return None if b is None else base64.b64encode(b).decode()


def main() -> None:
    out = sys.stdout
    with open(sys.argv[1], "rb") as f:
        while True:
            head = f.read(12)
            if len(head) < 12:
                break
            size = int.from_bytes(head[8:12], "big")
            for r in MemoryRecords(head + f.read(size)).next_batch():
                out.write(json.dumps({
                    "kind": "record", "topic": "t", "partition": 0, "offset": r.offset,
                    "timestamp": r.timestamp, "timestampType": "CreateTime",
                    "key": b64(r.key), "value": b64(r.value),
                    "headers": [{"key": k, "value": b64(v)} for k, v in r.headers]}) + "\n")


if __name__ == "__main__":
    main()
