"""Keep every Spark test on one xdist worker, so that one JVM and one Spark Connect server
start per run (each costs seconds of a 2-core machine, and two at once slow both).

conftest.py moves the Spark modules to the front of the collection. xdist's `load`
scheduling hands each worker a first chunk of consecutive tests, about an eighth of the run
for two workers: enough for the whole suite, not for `pytest -n 2 tests/spark`. This
scheduler (installed by tests/conftest.py's pytest_xdist_make_scheduler) gives the first
worker all the leading Spark tests as its first chunk, and schedules everything else as
`load` does.
"""

from __future__ import annotations

from typing import Any

# in the order they run; the session-scoped local SparkSession and the module-scoped
# Spark Connect server both live on the worker that runs these
SPARK_MODULES = ("test_spark.py", "test_s3_spark.py", "test_connect.py", "test_standalone.py")
SPARK_NODEIDS = tuple(f"tests/spark/{m}" for m in SPARK_MODULES)


def is_spark(nodeid: str) -> bool:
    return nodeid.split("::", 1)[0] in SPARK_NODEIDS


def make_scheduler(config: Any, log: Any) -> Any:
    from xdist.scheduler import LoadScheduling

    class SparkFirstScheduling(LoadScheduling):  # type: ignore[misc]
        def schedule(self) -> None:
            if (self.collection is not None or len(self.nodes) < 2
                    or not self._check_nodes_have_same_collection()):
                return super().schedule()  # type: ignore[no-any-return]
            collection = next(iter(self.node2collection.values()))
            lead = 0
            while lead < len(collection) and is_spark(collection[lead]):
                lead += 1
            limit = self.maxschedchunk or len(collection)
            chunk = max(min(len(collection) // len(self.nodes) // 4, limit), 2)
            if lead <= chunk:  # the first chunk holds them all anyway
                return super().schedule()  # type: ignore[no-any-return]
            self.collection = collection
            self.pending[:] = range(len(collection))
            if self.maxschedchunk is None:
                self.maxschedchunk = len(collection)
            self._send_tests(self.nodes[0], lead)
            for node in self.nodes[1:]:
                self._send_tests(node, chunk)
            if not self.pending:
                for node in self.nodes:
                    node.shutdown()
            return None

    return SparkFirstScheduling(config, log)
