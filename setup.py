"""Builds the optional compiled hot loop; everything else is declared in pyproject.toml.

The extension is optional: if it cannot be compiled, kafkalog falls back to the
pure-Python codec (same results, slower). Set KAFKALOG_NO_EXT=1 to skip it.
"""

import os
from pathlib import Path

from setuptools import setup

ext_modules = []
pyx = Path(__file__).parent / "kafkalog_cli" / "_speedups" / "fastcodec.pyx"
if pyx.exists() and not os.environ.get("KAFKALOG_NO_EXT"):
    from Cython.Build import cythonize
    from setuptools import Extension

    ext_modules = cythonize(
        [Extension("kafkalog_cli._speedups.fastcodec", [str(pyx.relative_to(Path(__file__).parent))],
                   extra_compile_args=["-O3"])],
        compiler_directives={"language_level": "3", "boundscheck": False, "wraparound": False},
        quiet=True,
    )

setup(ext_modules=ext_modules)
