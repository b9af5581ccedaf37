"""Moving a job's files between its Iwd and its sandbox, for jobs that run in the sandbox.

A job in a container sees only its sandbox (mounted as its working directory), as HTCondor's
docker universe jobs do, so its files travel as with ``should_transfer_files = YES`` on one
machine: before the job, its executable (unless ``TransferExecutable`` is false: then Cmd names
a program inside the image) and the ``TransferInput`` files and directories are copied from the
Iwd into the sandbox; after it, the ``TransferOutput`` files, or when it names none every file
the job made or changed at the top of the sandbox, are copied back into the Iwd.

Every copy runs with the job user's effective identity (:func:`as_user`): the Iwd and the
sandbox belong to that user, who could otherwise plant a link that makes the root starter read
or overwrite any file. Links are not followed out of the sandbox, and only regular files and
directories travel.
"""

from __future__ import annotations

import os
import shutil
import stat

import attrs

from epcore.classad import ClassAd
from epcore.errors import JobSetupError
from epcore.starter.privileges import as_user

#: HoldReasonCode 12 and 13 (HTCondor's table): output and input transfer failed.
HOLD_TRANSFER_OUTPUT = 12
HOLD_TRANSFER_INPUT = 13

#: What the sandbox holds that is the starter's, never the job's output.
_STARTER_FILES = frozenset({".job.ad", ".machine.ad"})


@attrs.frozen
class FileStamp:
    """What a sandbox file looked like before the job ran."""

    size: int
    mtime_ns: int


def _names(job: ClassAd, attribute: str) -> tuple[str, ...]:
    value = job.evaluate(attribute)
    if not isinstance(value, str):
        return ()
    return tuple(part.strip() for part in value.replace("\n", ",").split(",") if part.strip())


def _copy_file(source: str, target: str) -> None:
    """Copy one regular file without following a link at either end, and without blocking
    on a FIFO at either end (O_NONBLOCK until each is known to be a regular file)."""
    in_fd = os.open(source, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    try:
        if not stat.S_ISREG(os.fstat(in_fd).st_mode):
            raise IsADirectoryError(f"{source} is not a regular file")
        os.set_blocking(in_fd, True)
        mode = stat.S_IMODE(os.fstat(in_fd).st_mode)
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_NONBLOCK
        out_fd = os.open(target, flags, mode)
        try:
            if not stat.S_ISREG(os.fstat(out_fd).st_mode):
                raise IsADirectoryError(f"{target} is not a regular file")
            os.set_blocking(out_fd, True)
            with (
                os.fdopen(in_fd, "rb", closefd=False) as reader,
                os.fdopen(out_fd, "wb", closefd=False) as writer,
            ):
                shutil.copyfileobj(reader, writer, 1 << 20)
            os.fchmod(out_fd, mode)
        finally:
            os.close(out_fd)
    finally:
        os.close(in_fd)


def _copy_tree(source: str, target: str) -> None:
    """Copy a directory's regular files and directories; links and devices are left out."""
    os.makedirs(target, exist_ok=True)
    for entry in os.scandir(source):
        destination = os.path.join(target, entry.name)
        if entry.is_dir(follow_symlinks=False):
            _copy_tree(entry.path, destination)
        elif entry.is_file(follow_symlinks=False):
            _copy_file(entry.path, destination)


def _copy(source: str, target_dir: str) -> str:
    """Copy ``source`` (a file, a directory, or ``dir/`` for a directory's contents) into
    ``target_dir``; the name it has there."""
    contents_only = source.endswith("/") and len(source) > 1
    source = source.rstrip("/") or "/"
    info = os.lstat(source)
    if stat.S_ISDIR(info.st_mode):
        if contents_only:
            _copy_tree(source, target_dir)
            return "."
        name = os.path.basename(source)
        _copy_tree(source, os.path.join(target_dir, name))
        return name
    name = os.path.basename(source)
    _copy_file(source, os.path.join(target_dir, name))
    return name


def executable_into(executable: str, sandbox: str, uid: int, gid: int) -> str:
    """Copy the job's executable into the sandbox, executable by its user; the path there.

    Raises JobSetupError (hold code 6, as a missing executable) when it cannot be copied.
    """
    target = os.path.join(sandbox, os.path.basename(executable))
    try:
        with as_user(uid, gid):
            _copy_file(executable, target)
            os.chmod(target, stat.S_IMODE(os.stat(target).st_mode) | 0o700)
    except OSError as error:
        message = f"cannot copy the executable {executable} into the sandbox: {error.strerror}"
        raise JobSetupError(message, 6) from error
    return target


def transfer_in(job: ClassAd, iwd: str, sandbox: str, uid: int, gid: int) -> tuple[str, ...]:
    """Copy the job's ``TransferInput`` (relative to ``iwd``) into ``sandbox``; the names
    made there. Raises JobSetupError (hold code 13) naming the file that failed."""
    made = []
    for name in _names(job, "TransferInput"):
        source = name if os.path.isabs(name) else os.path.join(iwd, name)
        try:
            with as_user(uid, gid):
                made.append(_copy(source, sandbox))
        except OSError as error:
            reason = error.strerror or str(error)
            message = f"TransferInput: cannot copy {source} into the sandbox: {reason}"
            raise JobSetupError(message, HOLD_TRANSFER_INPUT) from error
    return tuple(made)


def stamps(sandbox: str) -> dict[str, FileStamp]:
    """The files at the top of ``sandbox`` now, to tell later which the job made or changed."""
    found = {}
    for entry in os.scandir(sandbox):
        if entry.is_file(follow_symlinks=False):
            info = entry.stat(follow_symlinks=False)
            found[entry.name] = FileStamp(info.st_size, info.st_mtime_ns)
    return found


def transfer_out(
    job: ClassAd,
    sandbox: str,
    iwd: str,
    before: dict[str, FileStamp],
    uid: int,
    gid: int,
) -> str | None:
    """Copy the job's output back into ``iwd``: the ``TransferOutput`` names (relative to the
    sandbox), else every top-level file it made or changed. None when all went back; else why
    one did not (the job is then held with code 12)."""
    names = _names(job, "TransferOutput")
    if not names:
        names = tuple(
            sorted(
                name
                for name, stamp in stamps(sandbox).items()
                if name not in _STARTER_FILES and before.get(name) != stamp
            )
        )
    for name in names:
        source = os.path.join(sandbox, name)
        try:
            with as_user(uid, gid):
                if not os.path.lexists(source):
                    return f"TransferOutput: the job made no {name}"
                _copy(source, iwd)
        except OSError as error:
            reason = error.strerror or str(error)
            return f"cannot copy the output file {name} back to {iwd}: {reason}"
    return None
