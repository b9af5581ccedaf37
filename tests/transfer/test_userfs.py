"""The owner's files opened with one thread's file-system identity (epcore.transfer.userfs)."""

from __future__ import annotations

import errno
import os
import shutil
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from epcore.transfer import userfs

NOBODY = 65534

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="needs root to take another identity")


@pytest.fixture
def tmp_path() -> Iterator[Path]:
    """A directory any user may reach (pytest's own temporary root is 0700)."""
    path = Path(tempfile.mkdtemp(prefix="ep_test_userfs_"))
    path.chmod(0o755)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def _open_dir(tmp_path: Path) -> Path:
    """A directory every user may enter and write."""
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    return shared


def test_the_owner_cannot_read_what_only_root_may(tmp_path: Path) -> None:
    """A file only root may read is refused to the owner's identity with EACCES."""
    secret = _open_dir(tmp_path) / "secret"
    secret.write_text("root only")
    secret.chmod(0o600)
    with pytest.raises(PermissionError) as caught:
        userfs.open_regular(str(secret), NOBODY, NOBODY, ())
    assert caught.value.errno == errno.EACCES


def test_files_made_belong_to_the_owner(tmp_path: Path) -> None:
    """A file and a directory made as the owner are the owner's, with the mode asked."""
    shared = _open_dir(tmp_path)
    fd = userfs.create_file(str(shared / "out"), 0o640, NOBODY, NOBODY, ())
    os.close(fd)
    userfs.make_directory(str(shared / "dir"), 0o750, NOBODY, NOBODY, ())
    assert (shared / "out").stat().st_uid == NOBODY
    assert (shared / "out").stat().st_mode & 0o777 == 0o640
    assert (shared / "dir").stat().st_uid == NOBODY


def test_a_link_the_owner_planted_reaches_only_what_the_owner_may(tmp_path: Path) -> None:
    """Writing through a link to a root-only file fails for the owner and leaves it intact."""
    shared = _open_dir(tmp_path)
    protected = tmp_path / "protected"
    protected.write_text("intact")
    protected.chmod(0o644)
    (shared / "out").symlink_to(protected)
    with pytest.raises(PermissionError):
        userfs.create_file(str(shared / "out"), 0o644, NOBODY, NOBODY, ())
    assert protected.read_text() == "intact"


def test_the_identity_is_the_calling_threads_alone(tmp_path: Path) -> None:
    """While one thread acts as the owner, another keeps root's identity and access, and the
    first gets root's back afterwards."""
    secret = _open_dir(tmp_path) / "secret"
    secret.write_text("root only")
    secret.chmod(0o600)
    inside, done = threading.Event(), threading.Event()
    seen: dict[str, object] = {}

    def owner() -> None:
        with userfs.as_owner(NOBODY, NOBODY, ()):
            try:
                open(secret).close()
                seen["owner"] = "read"
            except PermissionError:
                seen["owner"] = "refused"
            inside.set()
            done.wait(10)
        open(secret).close()
        seen["after"] = "read"

    thread = threading.Thread(target=owner)
    thread.start()
    assert inside.wait(10)
    with open(secret) as handle:
        assert handle.read() == "root only"  # this thread is still root
    done.set()
    thread.join(10)
    assert seen == {"owner": "refused", "after": "read"}
