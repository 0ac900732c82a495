"""Read-only answers from the files: info's overview, ListOffsets by time, transactions,
producer state."""
