"""Source trees of sample third-party plugins: installed into a virtual environment by the
tests (see tests/test_plugins.py), never collected or imported by epcore's own test run.

The broken plugin raises at import and the sample plugin's tests need it installed, so pytest
must not look inside these trees.
"""

from __future__ import annotations

collect_ignore_glob = ["*"]
