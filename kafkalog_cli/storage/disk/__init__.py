"""What is on disk and how it is found, named, read and safely written: names, log dirs,
segments, the batch scanner, indexes, checkpoints, the lock."""
