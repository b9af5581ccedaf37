"""Opening a job's files without blocking: regular files and character devices only."""

from __future__ import annotations

import contextlib
import os
import socket
import threading
from pathlib import Path

import pytest

from epcore.transfer.userfs import NotARegularFile, open_user_file

WRITE = os.O_WRONLY | os.O_CREAT | os.O_APPEND


def test_a_regular_file_is_opened_blocking(tmp_path: Path) -> None:
    """A regular file (made when absent) opens, and its descriptor is blocking again."""
    fd = open_user_file(str(tmp_path / "log"), WRITE)
    try:
        assert os.get_blocking(fd)
        os.write(fd, b"x")
    finally:
        os.close(fd)
    assert (tmp_path / "log").read_bytes() == b"x"


def test_dev_null_is_accepted() -> None:
    """/dev/null, a character device, is a file a job may name."""
    os.close(open_user_file("/dev/null", os.O_RDONLY))
    os.close(open_user_file("/dev/null", WRITE))


@pytest.mark.parametrize("flags", [os.O_RDONLY, WRITE], ids=["read", "write"])
def test_a_fifo_nobody_opened_is_refused_at_once(tmp_path: Path, flags: int) -> None:
    """A FIFO without a process at its other end is refused, naming it, without blocking."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(NotARegularFile, match="FIFO") as raised:
        open_user_file(str(fifo), flags)
    assert raised.value.filename == str(fifo)


def test_a_fifo_someone_reads_is_refused_too(tmp_path: Path) -> None:
    """A FIFO a process reads (so that opening it for writing would succeed) is refused."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    try:
        with pytest.raises(NotARegularFile, match="it is a FIFO, not a regular file"):
            open_user_file(str(fifo), WRITE)
    finally:
        os.close(reader)


def test_a_directory_and_a_socket_are_refused(tmp_path: Path) -> None:
    """A directory opened for reading and a Unix socket are not files a job may name."""
    with pytest.raises(NotARegularFile, match="directory"):
        open_user_file(str(tmp_path), os.O_RDONLY)
    path = tmp_path / "sock"
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(path))
    try:
        with pytest.raises(NotARegularFile, match="FIFO or socket"):
            open_user_file(str(path), WRITE)
    finally:
        server.close()


def test_other_errors_are_plain_os_errors(tmp_path: Path) -> None:
    """A missing file is an OSError as open reports it, not a NotARegularFile."""
    with pytest.raises(FileNotFoundError):
        open_user_file(str(tmp_path / "missing"), os.O_RDONLY)


def test_a_fifo_never_blocks_the_caller(tmp_path: Path) -> None:
    """Opening a FIFO returns within a second whatever the flags (a thread watches)."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    done = threading.Event()

    def attempt() -> None:
        for flags in (os.O_RDONLY, WRITE, os.O_RDWR):
            with contextlib.suppress(OSError):
                os.close(open_user_file(str(fifo), flags))
        done.set()

    threading.Thread(target=attempt, daemon=True).start()
    assert done.wait(1.0), "opening a FIFO blocked"
