"""Builds the optional compiled hot loops; everything else is declared in pyproject.toml.

The extension is optional: if it cannot be compiled (no Cython, no C compiler, a build error),
the install still succeeds and kafkalog falls back to the pure-Python codec (same results,
slower). Set KAFKALOG_NO_EXT=1 to skip it; `kafkalog_cli.codec.batch_v2.ACCELERATED` tells
which one is in use.
"""

import os
import sys
from pathlib import Path

from setuptools import setup
from setuptools.command.build_ext import build_ext

ROOT = Path(__file__).parent
SPEEDUPS = Path("kafkalog_cli") / "_speedups"
# each module is optional on its own: one that fails to cythonize or compile leaves the others
MODULES = ("fastcodec", "fastscan", "fastclean", "fastinflate", "fastout")


def _warn(what: str, exc: BaseException) -> None:
    print(f"warning: {what} failed ({type(exc).__name__}: {exc}); "
          "kafkalog will use the pure-Python codec", file=sys.stderr)


class OptionalBuildExt(build_ext):
    """build_ext that reports a failed compile instead of failing the install."""

    def run(self) -> None:
        try:
            super().run()
        except Exception as exc:  # e.g. DistutilsPlatformError: no compiler at all
            _warn("building the C extension", exc)

    def build_extension(self, ext) -> None:
        try:
            super().build_extension(ext)
        except Exception as exc:  # CCompilerError, DistutilsExecError, missing headers...
            _warn(f"building {ext.name}", exc)


def _extensions() -> list:
    if os.environ.get("KAFKALOG_NO_EXT"):
        return []
    try:
        from Cython.Build import cythonize
        from setuptools import Extension
    except Exception as exc:  # Cython missing (--no-build-isolation)
        _warn("importing Cython", exc)
        return []
    compile_args = [] if sys.platform == "win32" else ["-O3"]
    exts = []
    for name in MODULES:
        pyx = SPEEDUPS / f"{name}.pyx"
        if not (ROOT / pyx).exists():
            continue
        try:
            exts += cythonize(
                [Extension(f"kafkalog_cli._speedups.{name}", [str(pyx)],
                           extra_compile_args=compile_args)],
                compiler_directives={"language_level": "3", "boundscheck": False,
                                     "wraparound": False},
                quiet=True,
            )
        except Exception as exc:  # a .pyx error
            _warn(f"cythonizing {pyx.name}", exc)
    return exts


setup(ext_modules=_extensions(), cmdclass={"build_ext": OptionalBuildExt})
