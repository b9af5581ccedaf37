"""The two test containers of the startup probe, made by the plugin from a tiny root filesystem.

HTCondor ships a sandbox directory and ``exit_37.sif`` whose ``/exit_37`` exits with status 37;
epcore makes them itself on first use: the sandbox holds a static ``/exit_37`` program written
here byte by byte (an ELF file of a few instructions: exit(37)), so no compiler, shell or
busybox is needed inside, and the SIF is built from that sandbox by the runtime under test
(``<runtime> build``), so a runtime that cannot build or read a SIF fails the SIF probe. On
x86_64 the sandbox also holds ``/get_user_ns`` (HTCondor's 24.x+ probe of whether the runtime
makes a user namespace), written the same way.
"""

from __future__ import annotations

import os
import platform
import struct
from pathlib import Path

#: The program every test container runs; it exits with :data:`EXPECTED_STATUS`.
PROGRAM = "/exit_37"
EXPECTED_STATUS = 37
#: The program that prints the link of its user namespace (``user:[<inode>]``), x86_64 only.
USER_NS_PROGRAM = "/get_user_ns"

#: exit(37) as machine code, by ``platform.machine()``: the ELF machine number and the code.
_EXIT_37: dict[str, tuple[int, bytes]] = {
    # mov edi, 37; mov eax, 60 (exit); syscall
    "x86_64": (62, bytes.fromhex("bf25000000b83c0000000f05")),
    # mov x0, #37; mov x8, #93 (exit); svc #0
    "aarch64": (183, struct.pack("<3I", 0xD28004A0, 0xD2800BA8, 0xD4000001)),
}
#: get_user_ns for x86_64: readlink("/proc/self/ns/user", buffer, 64); on success the link
#: and a newline to stdout and exit(0), else exit(1). The buffer lies just past the file's
#: bytes in the (writable) segment; the path follows the code.
_USER_NS_CODE = bytes.fromhex(
    "488d3d40000000"  # lea rdi, [rip + path]
    "488d354c000000"  # lea rsi, [rip + buffer]
    "ba40000000"  # mov edx, 64
    "b859000000"  # mov eax, 89 (readlink)
    "0f05"  # syscall
    "85c0"  # test eax, eax
    "7e1d"  # jle fail
    "89c2"  # mov edx, eax
    "c604160a"  # mov byte [rsi + rdx], 10
    "ffc2"  # inc edx
    "bf01000000"  # mov edi, 1
    "b801000000"  # mov eax, 1 (write)
    "0f05"  # syscall
    "31ff"  # xor edi, edi
    "b83c000000"  # mov eax, 60 (exit)
    "0f05"  # syscall
    "bf01000000"  # fail: mov edi, 1
    "b83c000000"  # mov eax, 60 (exit)
    "0f05"  # syscall
)
_USER_NS_PATH = b"/proc/self/ns/user\x00"
_USER_NS_BUFFER = 80

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
    return _elf(number, code)


def user_ns_program(machine: str | None = None) -> bytes | None:
    """The static ``/get_user_ns`` for ``machine`` (this one by default); None where there is
    no recipe (then the probe does not know, and says nothing, as HTCondor when it cannot
    tell)."""
    if (machine or platform.machine()) != "x86_64":
        return None
    return _elf(62, _USER_NS_CODE + _USER_NS_PATH, _USER_NS_BUFFER)


def _elf(number: int, code: bytes, extra_memory: int = 0) -> bytes:
    """An ELF executable of one segment holding ``code`` (entered at its first byte) and
    ``extra_memory`` zeroed bytes after it, writable when there are such bytes."""
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
    # One PT_LOAD segment mapping the whole file at _BASE: read and execute, and write when
    # it has room for data past the file.
    flags = 7 if extra_memory else 5
    segment = struct.pack("<IIQQQQQQ", 1, flags, 0, _BASE, _BASE, size, size + extra_memory, 0x1000)
    return header + segment + code


def make_sandbox(path: Path) -> Path:
    """Write the test sandbox directory at ``path`` (replaced if it exists, made readable by
    every user, since jobs of any user may read an image); ``path``."""
    path.mkdir(parents=True, exist_ok=True)
    for name in _ROOT_DIRS:
        (path / name).mkdir(parents=True, exist_ok=True)
    _write_program(path / PROGRAM.lstrip("/"), exit_program())
    user_ns = user_ns_program()
    if user_ns is not None:
        _write_program(path / USER_NS_PROGRAM.lstrip("/"), user_ns)
    for root, dirs, _files in os.walk(path):
        for name in dirs:
            os.chmod(os.path.join(root, name), 0o755)
    path.chmod(0o755)
    return path


def _write_program(path: Path, content: bytes) -> None:
    """``content`` as the executable ``path``, replaced at once (a probe may be reading it)."""
    staged = path.with_name(path.name + ".new")
    staged.write_bytes(content)
    staged.chmod(0o755)
    os.replace(staged, path)
