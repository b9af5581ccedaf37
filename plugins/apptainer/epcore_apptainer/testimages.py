"""The two test containers of the startup probe, made by the plugin from a tiny root filesystem.

HTCondor ships a sandbox directory and ``exit_37.sif`` whose ``/exit_37`` exits with status 37;
epcore makes them itself on first use: the sandbox holds a static ``/exit_37`` program written
here byte by byte (an ELF file of a few instructions: exit(37)), so no compiler, shell or
busybox is needed inside, and the SIF is built from that sandbox by the runtime under test
(``<runtime> build``), so a runtime that cannot build or read a SIF fails the SIF probe.
"""

from __future__ import annotations

import os
import platform
import struct
from pathlib import Path

#: The program every test container runs; it exits with :data:`EXPECTED_STATUS`.
PROGRAM = "/exit_37"
EXPECTED_STATUS = 37

#: exit(37) as machine code, by ``platform.machine()``: the ELF machine number and the code.
_EXIT_37: dict[str, tuple[int, bytes]] = {
    # mov edi, 37; mov eax, 60 (exit); syscall
    "x86_64": (62, bytes.fromhex("bf25000000b83c0000000f05")),
    # mov x0, #37; mov x8, #93 (exit); svc #0
    "aarch64": (183, struct.pack("<3I", 0xD28004A0, 0xD2800BA8, 0xD4000001)),
}
#: Where the program is loaded (any page-aligned address above the first page).
_BASE = 0x400000
_ELF_HEADER = 64
_PROGRAM_HEADER = 56

#: Directories a container root is expected to have (the runtime mounts over some of them).
_ROOT_DIRS = ("bin", "dev", "etc", "proc", "sys", "tmp", "var/tmp")


def exit_program(machine: str | None = None) -> bytes:
    """A static ELF executable for ``machine`` (this one by default) that exits with 37.

    Raises KeyError for a machine without a recipe."""
    number, code = _EXIT_37[machine or platform.machine()]
    entry = _BASE + _ELF_HEADER + _PROGRAM_HEADER
    size = _ELF_HEADER + _PROGRAM_HEADER + len(code)
    ident = b"\x7fELF" + bytes([2, 1, 1, 0]) + bytes(8)  # 64-bit, little endian, SysV
    header = ident + struct.pack(
        "<HHIQQQIHHHHHH",
        2,  # ET_EXEC
        number,
        1,
        entry,
        _ELF_HEADER,  # program headers follow the ELF header
        0,
        0,
        _ELF_HEADER,
        _PROGRAM_HEADER,
        1,
        0,
        0,
        0,
    )
    # One PT_LOAD segment, read and execute, mapping the whole file at _BASE.
    segment = struct.pack("<IIQQQQQQ", 1, 5, 0, _BASE, _BASE, size, size, 0x1000)
    return header + segment + code


def make_sandbox(path: Path) -> Path:
    """Write the test sandbox directory at ``path`` (replaced if it exists, made readable by
    every user, since jobs of any user may read an image); ``path``."""
    path.mkdir(parents=True, exist_ok=True)
    for name in _ROOT_DIRS:
        (path / name).mkdir(parents=True, exist_ok=True)
    program = path / PROGRAM.lstrip("/")
    staged = program.with_name(program.name + ".new")
    staged.write_bytes(exit_program())
    staged.chmod(0o755)
    os.replace(staged, program)
    for root, dirs, _files in os.walk(path):
        for name in dirs:
            os.chmod(os.path.join(root, name), 0o755)
    path.chmod(0o755)
    return path
