"""Optional compiled hot loops (Cython). Nothing here is required: every module has a
pure-Python twin that gives the same results (see kafkalog_cli.codec.batch_v2.ACCELERATED).

Built by setup.py from fastcodec.pyx when a C compiler is available; KAFKALOG_NO_EXT=1 skips
the build and KAFKALOG_PURE=1 ignores an installed build at run time.
"""
