"""Which files of a job travel, and where each lands: pure, from the job ad alone.

- :func:`wants_transfer`: ShouldTransferFiles YES, or IF_NEEDED when the execute host's
  FILESYSTEM_DOMAIN is not the job's (HTCondor's rule; NO never transfers).
- :func:`input_files`: the executable (unless TransferExecutable is false), stdin (unless
  TransferIn is false) and each TransferInput entry, by its path on the submit host and its
  name in the sandbox. ``dir`` sends the directory itself, ``dir/`` its contents (HTCondor's
  trailing-slash rule).
- :func:`output_names`: the TransferOutput entries, else every file the job made or changed
  at the top of its sandbox; stdout and stderr travel under HTCondor's own sandbox names.
- :func:`parse_remaps` / :func:`output_target`: TransferOutputRemaps (``name = target;
  ...``, ``\\`` escaping ``;``, ``=`` and itself) and the path each returned file gets in the
  Iwd. Unlike HTCondor, a remap may not leave the Iwd (``..``, or an absolute path outside
  it): the name the file arrives under comes from the execute host, which a job controls.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable

import attrs

from epcore.classad import UNDEFINED, ClassAd
from epcore.config import Config
from epcore.errors import EpError

#: The sandbox names the job's stdout and stderr have (HTCondor's starter uses the same).
STDOUT_NAME = "_condor_stdout"
STDERR_NAME = "_condor_stderr"
#: What the sandbox holds that is the starter's, never the job's output.
STARTER_FILES = frozenset({".job.ad", ".machine.ad", ".chirp.config", ".update.ad"})
#: Sandbox names that are never returned as new files (they travel as stdout and stderr).
_STREAMS = frozenset({STDOUT_NAME, STDERR_NAME})


class TransferPlanError(EpError):
    """A transfer setting that cannot be followed (a malformed remap, a name that would
    leave the Iwd or the sandbox); the message names it."""


@attrs.frozen
class Remap:
    """One entry of TransferOutputRemaps: the sandbox ``source`` goes to ``target``."""

    source: str
    target: str


@attrs.frozen
class InputFile:
    """One input: ``source`` on the submit host, ``name`` in the sandbox ("" for a
    directory's contents, sent into the sandbox's top)."""

    source: str
    name: str
    is_executable: bool = False


def _string(job: ClassAd, attribute: str) -> str | None:
    value = job.evaluate(attribute)
    return value if isinstance(value, str) else None


def _flag(job: ClassAd, attribute: str, default: bool) -> bool:
    value = job.evaluate(attribute)
    return value if isinstance(value, bool) else default


def split_names(text: str | None) -> tuple[str, ...]:
    """A file list as HTCondor writes one: names separated by commas (or newlines)."""
    if not text:
        return ()
    return tuple(part.strip() for part in text.replace("\n", ",").split(",") if part.strip())


def host_domain(config: Config) -> str:
    """This host's file-system domain: FILESYSTEM_DOMAIN (its default is the full host name),
    UID_DOMAIN only when FILESYSTEM_DOMAIN is set empty."""
    return str(config.get("FILESYSTEM_DOMAIN") or config.get("UID_DOMAIN") or "")


def travels_here(job: ClassAd, config: Config) -> bool:
    """Whether the schedd offered the job's files (it gave a TransferKey) and they travel to
    this host rather than the job running in place."""
    return "TransferKey" in job and wants_transfer(job, host_domain(config))


def wants_transfer(job: ClassAd, filesystem_domain: str) -> bool:
    """Whether the job's files travel to a host of ``filesystem_domain`` (module docstring)."""
    should = (_string(job, "ShouldTransferFiles") or "IF_NEEDED").upper()
    if should == "YES":
        return True
    if should != "IF_NEEDED":
        return False
    theirs = _string(job, "FileSystemDomain")
    return theirs is None or theirs.lower() != filesystem_domain.lower()


def _under(iwd: str, path: str) -> str:
    return posixpath.normpath(path if posixpath.isabs(path) else posixpath.join(iwd, path))


def _stream(job: ClassAd, attribute: str) -> str | None:
    path = _string(job, attribute)
    return None if not path or path == "/dev/null" else path


def input_files(job: ClassAd) -> tuple[InputFile, ...]:
    """What goes into the sandbox, in order (module docstring)."""
    iwd = _string(job, "Iwd") or "/"
    found: list[InputFile] = []
    cmd = _string(job, "Cmd")
    if cmd and _flag(job, "TransferExecutable", True):
        source = _under(iwd, cmd)
        found.append(InputFile(source, posixpath.basename(source), is_executable=True))
    stdin = _stream(job, "In")
    if stdin is not None and _flag(job, "TransferIn", True):
        source = _under(iwd, stdin)
        found.append(InputFile(source, posixpath.basename(source)))
    for entry in split_names(_string(job, "TransferInput")):
        source = _under(iwd, entry)
        contents_only = entry.endswith("/") and source != "/"
        found.append(InputFile(source, "" if contents_only else posixpath.basename(source)))
    return tuple(found)


def sandbox_ad(job: ClassAd, sandbox: str) -> ClassAd:
    """The job's ad as it runs in ``sandbox``: Iwd is the sandbox, the executable and stdin
    are the copies there, stdout and stderr are written under their sandbox names."""
    ad = job.copy()
    ad["Iwd"] = sandbox
    cmd = _string(job, "Cmd")
    if cmd and _flag(job, "TransferExecutable", True):
        ad["Cmd"] = posixpath.join(sandbox, posixpath.basename(cmd))
    stdin = _stream(job, "In")
    if stdin is not None and _flag(job, "TransferIn", True):
        ad["In"] = posixpath.join(sandbox, posixpath.basename(stdin))
    for attribute, name in (("Out", STDOUT_NAME), ("Err", STDERR_NAME)):
        if _stream(job, attribute) is not None:
            ad[attribute] = posixpath.join(sandbox, name)
    return ad


def output_names(job: ClassAd, changed: Iterable[str]) -> tuple[str, ...]:
    """The sandbox names that go back, in order: stdout and stderr when the job has them,
    then TransferOutput's entries, or, without it, the ``changed`` top-level files."""
    names = [
        name
        for attribute, name in (("Out", STDOUT_NAME), ("Err", STDERR_NAME))
        if _stream(job, attribute) is not None
    ]
    listed = split_names(_string(job, "TransferOutput"))
    if listed:
        names.extend(name.rstrip("/") for name in listed)
    else:
        names.extend(sorted(n for n in changed if n not in STARTER_FILES and n not in _STREAMS))
    return tuple(names)


def _unescaped_split(text: str, separator: str) -> list[str]:
    """``text`` cut at each ``separator`` no backslash escapes; escapes kept."""
    parts, current, escaped = [], [], False
    for char in text:
        if escaped:
            current.append("\\" + char)
            escaped = False
        elif char == "\\":
            escaped = True
        elif char == separator:
            parts.append("".join(current))
            current = []
        else:
            current.append(char)
    if escaped:
        raise TransferPlanError(f"TransferOutputRemaps {text!r}: ends with a lone backslash")
    parts.append("".join(current))
    return parts


def _unescape(text: str) -> str:
    out, escaped = [], False
    for char in text:
        if escaped or char != "\\":
            out.append(char)
            escaped = False
        else:
            escaped = True
    return "".join(out)


def parse_remaps(text: str | None) -> tuple[Remap, ...]:
    """TransferOutputRemaps as entries (module docstring); TransferPlanError naming the
    entry when one has no ``=`` or an empty side."""
    if not text:
        return ()
    remaps = []
    for entry in _unescaped_split(text, ";"):
        if not entry.strip():
            continue
        sides = _unescaped_split(entry, "=")
        if len(sides) != 2:
            raise TransferPlanError(
                f"TransferOutputRemaps: {entry.strip()!r} is not of the form name = target"
            )
        source, target = (_unescape(side.strip()) for side in sides)
        if not source or not target:
            raise TransferPlanError(
                f"TransferOutputRemaps: {entry.strip()!r} has an empty name or target"
            )
        remaps.append(Remap(source, target))
    return tuple(remaps)


def check_relative(name: str) -> tuple[str, ...]:
    """The components of a relative path that stays where it starts (no ``..``, not
    absolute, not empty); TransferPlanError otherwise."""
    if not name or name.startswith("/") or "\0" in name:
        raise TransferPlanError(f"{name!r} is not a relative file name")
    parts = tuple(part for part in name.split("/") if part not in ("", "."))
    if not parts or ".." in parts:
        raise TransferPlanError(f"{name!r} leaves the directory it is relative to")
    return parts


def _inside(iwd: str, target: str) -> str:
    if ".." in target.split("/"):
        raise TransferPlanError(f"the remap target {target!r} contains ..")
    path = _under(iwd, target)
    root = posixpath.normpath(iwd)
    if path != root and not path.startswith(root.rstrip("/") + "/"):
        raise TransferPlanError(f"the remap target {target!r} is outside the Iwd {iwd}")
    return path


def output_target(job: ClassAd, name: str, remaps: tuple[Remap, ...]) -> str:
    """Where the returned sandbox file ``name`` lands on the submit host (module docstring).

    ``name`` is what the execute host sent: a sandbox path of a listed output (or of a file
    below a listed directory), or a top-level file when TransferOutput lists none. A name
    the job ad does not account for raises TransferPlanError.
    """
    iwd = _string(job, "Iwd") or "/"
    if name in (STDOUT_NAME, STDERR_NAME):
        stream = _stream(job, "Out" if name == STDOUT_NAME else "Err")
        if stream is None:
            raise TransferPlanError(f"{name}: the job has no such stream")
        return _under(iwd, stream)
    parts = check_relative(name)
    listed = [entry.rstrip("/") for entry in split_names(_string(job, "TransferOutput"))]
    for remap in remaps:
        if remap.source in (name, "/".join(parts)):
            return _inside(iwd, remap.target)
    if not listed:
        if len(parts) != 1:
            raise TransferPlanError(f"{name!r}: only top-level files return unlisted")
        return _inside(iwd, parts[0])
    for entry in listed:
        entry_parts = tuple(p for p in entry.split("/") if p not in ("", "."))
        if parts[: len(entry_parts)] == entry_parts:
            # A listed path lands under its last component's name, as HTCondor puts it.
            rest = parts[len(entry_parts) :]
            target = next((r.target for r in remaps if r.source == entry), entry_parts[-1])
            base = _inside(iwd, target)
            return posixpath.join(base, *rest) if rest else base
    raise TransferPlanError(f"{name!r} is not among the job's TransferOutput")


def max_megabytes(job: ClassAd, attribute: str, configured: int) -> int | None:
    """The job's MaxTransferInputMB / MaxTransferOutputMB, else ``configured``; None when
    unlimited (a negative value)."""
    value = job.evaluate(attribute)
    if value is UNDEFINED or not isinstance(value, int) or isinstance(value, bool):
        value = configured
    return None if value < 0 else value
