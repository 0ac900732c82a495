"""Rendering rows for the terminal, pipes and programs. Only commands import this."""
