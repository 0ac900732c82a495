"""Everything that changes a log dir: append, recovery, retention, compaction, index rebuild,
and the replacement protocol and quarantine they share."""
