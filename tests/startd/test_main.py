"""What a startd built by ``epcore.startd.main`` imports: not the modules it never uses."""

from __future__ import annotations

import subprocess
import sys

#: Modules a startd never uses, each a few MB of resident memory held for its whole life by
#: the startd and the zygote forked from it: the TLS and HTTP stack (once pulled in by
#: ``xml.sax.saxutils`` for XML escaping), the CEDAR client and the links to other daemons.
NEVER_IN_A_STARTD = (
    "ssl",
    "http.client",
    "urllib.request",
    "xml.sax",
    "cryptography",
    "epcore.net",
    "epcore.links",
)


def test_a_startd_with_every_plugin_imports_no_network_stack() -> None:
    """Importing the startd's entry point and loading every installed plugin (as ``ep
    startd`` does before it builds the startd) imports no TLS, HTTP, CEDAR or link module."""
    script = (
        "import sys\n"
        "import epcore.cli.startd_cmd, epcore.startd.main\n"
        "from epcore.plugins import load_plugins\n"
        "load_plugins()\n"
        "print('\\n'.join(sys.modules))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    loaded = set(done.stdout.split())
    assert "epcore.startd.startd" in loaded
    assert not loaded & set(NEVER_IN_A_STARTD)
