#!/usr/bin/env python3
"""The test project's application: burns CPU for ``--seconds`` of CPU time.

It speaks the BOINC API through the client's shared memory file (``boinc_mmap_file`` in its
slot directory): it reports its CPU time and fraction done on the app_status channel and
obeys the suspend, resume, quit and abort requests on the process control channel, so that
the client really stops computing on a CPU it no longer may use. At the end it writes the
``boinc_finish_called`` file the client looks for and exits 0.
"""

from __future__ import annotations

import mmap
import os
import sys
import time

CHANNEL = 1024
CONTROL_REQUEST = 0
APP_STATUS = 5 * CHANNEL


def _message(shm: mmap.mmap, offset: int) -> str | None:
    if shm[offset] == 0:
        return None
    raw = shm[offset + 1 : offset + CHANNEL]
    shm[offset] = 0
    return raw.split(b"\0", 1)[0].decode(errors="replace")


def _send(shm: mmap.mmap, offset: int, text: str) -> None:
    if shm[offset] != 0:
        return  # the client has not read the last one yet
    data = text.encode()[: CHANNEL - 2] + b"\0"
    shm[offset + 1 : offset + 1 + len(data)] = data
    shm[offset] = 1


def _cpu() -> float:
    times = os.times()
    return times.user + times.system


def main() -> int:
    seconds = float(sys.argv[sys.argv.index("--seconds") + 1]) if "--seconds" in sys.argv else 30
    fd = os.open("boinc_mmap_file", os.O_RDWR)
    shm = mmap.mmap(fd, 8 * CHANNEL)
    suspended = False
    last_report = 0.0
    while True:
        request = _message(shm, CONTROL_REQUEST)
        if request is not None:
            if "<quit/>" in request or "<abort/>" in request:
                return 0
            if "<suspend/>" in request:
                suspended = True
            if "<resume/>" in request:
                suspended = False
        cpu = _cpu()
        if time.monotonic() - last_report >= 0.5:
            last_report = time.monotonic()
            _send(
                shm,
                APP_STATUS,
                f"<current_cpu_time>{cpu:.3f}</current_cpu_time>\n"
                f"<checkpoint_cpu_time>{cpu:.3f}</checkpoint_cpu_time>\n"
                f"<fraction_done>{min(cpu / seconds, 1.0):.4f}</fraction_done>\n",
            )
        if cpu >= seconds:
            break
        if suspended:
            time.sleep(0.1)
            continue
        end = time.monotonic() + 0.05
        while time.monotonic() < end:
            pass
    with open("boinc_finish_called", "w") as file:
        file.write("0\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
