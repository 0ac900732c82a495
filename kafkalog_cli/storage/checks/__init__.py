"""verify: the findings, the batch rules recover shares, and the state recomputed from the log."""
