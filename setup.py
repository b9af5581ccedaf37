"""setuptools' build script, for one opt-in step: the ClassAd parser's fast path compiled.

Without ``EPCORE_MYPYC=1`` it builds nothing and epcore stays pure Python, so that
``pip install -e .`` works on any machine, with or without a C compiler. With it, mypyc
(part of mypy, in the ``test`` extra) compiles :mod:`epcore.classad.fastparse` and its
scanner into extension modules beside the source, which Python then imports instead of the
``.py`` (extension modules come first in an import directory); deleting the ``.so`` files
brings the pure-Python modules back. The results are the same either way (CI runs tests/classad
on both). README's "Compiled parser" section has the commands.
"""

from __future__ import annotations

import os

from setuptools import Extension, setup

#: The modules compiled: the parser's fast path, which every plain text takes, and its scanner.
COMPILED = ["epcore/classad/fastparse.py", "epcore/classad/scanner.py"]


def extensions() -> list[Extension]:
    """The compiled modules when asked for (EPCORE_MYPYC=1), else none."""
    if os.environ.get("EPCORE_MYPYC") != "1":
        return []
    from mypyc.build import mypycify

    # One group, named inside the package, so that its shared library lands beside the
    # modules (mypyc names an unnamed group by a hash, at the top of the tree).
    return mypycify(COMPILED, opt_level="3", group_name="epcore.classad.compiled")


setup(ext_modules=extensions())
