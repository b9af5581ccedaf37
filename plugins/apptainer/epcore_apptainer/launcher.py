"""SINGULARITY_USE_LAUNCHER: the script a job's command runs through, and its marker.

HTCondor (24.x+) binds ``$(LIBEXEC)/condor_container_launcher.sh`` into the container and runs
the job's command through it; the script leaves ``.condor_container_launched`` in the job's
scratch directory and becomes the command. A job whose runtime ended without that file never
reached its command: the runtime itself failed (its image could not be mounted, say), and the
starter requeues the job ("Apptainer runtime failed to start") instead of reporting the
runtime's status (255) as the job's exit code.

epcore installs no LIBEXEC, so the plugin writes the script itself, beside its test images.
"""

from __future__ import annotations

import os
from pathlib import Path

#: The marker the launcher leaves in the job's scratch directory (HTCondor's name).
MARKER = ".condor_container_launched"
SCRIPT_NAME = "condor_container_launcher.sh"
#: The code a job that never reached its command goes back to idle with: HTCondor's vacate
#: code ContainerError (HTCondor's starter EXCEPTs, which requeues the job without one; a
#: code keeps the reason in the job's VacateReason).
CONTAINER_ERROR = 1021
#: What the job's VacateReason says (HTCondor's EXCEPT message).
FAILED_TO_START = "Apptainer runtime failed to start"
#: The script: the marker first (where the job's scratch directory is inside the container,
#: else the working directory, which is that directory too), then the job's command.
SCRIPT = f"""#!/bin/sh
# epcore-apptainer (SINGULARITY_USE_LAUNCHER): the marker tells the starter the runtime
# reached the job's command; then the command replaces this shell.
: > "${{_CONDOR_SCRATCH_DIR:-.}}/{MARKER}"
exec "$@"
"""


def write_launcher(directory: Path) -> Path:
    """The launcher script in ``directory`` (written when missing or different), readable
    and runnable by every user, since any job's user must read the bind's source."""
    path = directory / SCRIPT_NAME
    try:
        if path.read_text(encoding="ascii") == SCRIPT:
            return path
    except (OSError, UnicodeDecodeError):
        pass
    directory.mkdir(parents=True, exist_ok=True)
    directory.chmod(0o755)
    staged = path.with_name(path.name + ".new")
    staged.write_text(SCRIPT, encoding="ascii")
    staged.chmod(0o755)
    os.replace(staged, path)
    return path


def marker_path(scratch: str) -> str:
    """Where the launcher of a job whose scratch directory is ``scratch`` leaves its marker
    (on the host)."""
    return os.path.join(scratch, MARKER)
