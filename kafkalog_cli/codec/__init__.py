"""Pure codec layer: bytes in, values out. No paths, no files, no printing."""
