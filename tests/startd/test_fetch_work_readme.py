"""README's embedding example (a Python fetch-work source feeding an in-process startd) runs
as it is printed there."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

README = Path(__file__).resolve().parents[2] / "README.md"
SECTION = "## Feeding a startd from another scheduler"


def readme_example() -> str:
    """The first Python block of README's section on fetched work."""
    text = README.read_text()
    assert SECTION in text, "README lost its section on fetched work"
    section = text.split(SECTION, 1)[1].split("\n## ", 1)[0]
    found = re.search(r"```python\n(.*?)```", section, re.DOTALL)
    assert found is not None, "the section has no python example"
    return found.group(1)


def test_readme_embedding_example_runs(tmp_path: Path) -> None:
    """The example runs its four jobs to exit code 0 on two slots, each accepted by the
    startd, and ends by itself."""
    script = tmp_path / "example.py"
    script.write_text(readme_example())
    # The example's mkdtemp() lands here (reachable by nobody, unlike pytest's base
    # directory), and goes away with it.
    scratch = Path(tempfile.mkdtemp(prefix="ep_readme_"))
    scratch.chmod(0o711)
    try:
        done = subprocess.run(
            [sys.executable, str(script)],
            cwd=tmp_path,
            env={**os.environ, "TMPDIR": str(scratch)},
            capture_output=True,
            text=True,
            timeout=180,
        )
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.splitlines()
    assert "exit codes: [0, 0, 0, 0]" in lines, done.stdout
    accepted = [line for line in lines if re.fullmatch(r"job \d accepted by slot[12]@\S+", line)]
    assert sorted(line.split()[1] for line in accepted) == ["0", "1", "2", "3"], done.stdout
