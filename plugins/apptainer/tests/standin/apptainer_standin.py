"""A stand-in for the ``apptainer`` (and ``singularity``) command, for epcore's tests only.

It implements the part of Apptainer's command line that epcore's plugin and spython call:
``--version``; ``exec``, ``run`` and ``test`` with the options HTCondor's starter passes (-B,
-S, -W, --pwd, --home, -C, --contain, --ipc, --cleanenv, -p, --nv, --rocm, --env); ``build``
and ``pull`` of a SIF or a sandbox from a directory, a SIF or a ``docker://`` reference; and
``inspect``. Containers are real: bubblewrap gives them a user namespace (the user keeps its
uid), a PID namespace with -C or -p, an IPC namespace with -C or --ipc, the image as a
read-only root, private /tmp and /var/tmp with --contain, tmpfs for -S directories, and the
binds asked for. A SIF file is read by unpacking its squashfs partition (found through the
SIF descriptors) with unsquashfs into the cache directory, since it cannot be mounted here;
SIFs are written with siftool around a squashfs made by mksquashfs. ``docker://`` images are
fetched from a registry's HTTP API (plain HTTP for 127.0.0.1 and localhost).

Usage errors and failures print ``FATAL:`` lines on stderr and exit with 255, as Apptainer.
"""

import _signal  # signal without its enum wrappers, which take longer to import than the rest
import os
import struct
import sys

# The imports a pull or a build needs are made where they are used: the stand-in starts twice
# per job (the pre-job test, the job), so its start is the runtime's overhead.

VERSION = "1.3.6-epcore-standin"
SINGULARITY_VERSION = "3.8.7-epcore-standin"
DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
SIF_MAGIC = b"SIF_MAGIC"
SIF_PARTITION = 0x4004
# The SIF global header and one data object descriptor (little endian, packed).
SIF_HEADER = struct.Struct("<32s10s3s3s16sqqqqqqqq")
SIF_DESCRIPTOR = struct.Struct("<i?IIIqqqqqqq128s384s")
SIF_ARCH = {"x86_64": "2", "aarch64": "4"}
MANIFEST_TYPES = (
    "application/vnd.docker.distribution.manifest.v2+json, "
    "application/vnd.oci.image.manifest.v1+json, "
    "application/vnd.docker.distribution.manifest.list.v2+json, "
    "application/vnd.oci.image.index.v1+json"
)
FLAGS = {
    "-C": "containall",
    "--containall": "containall",
    "-c": "contain",
    "--contain": "contain",
    "-i": "ipc",
    "--ipc": "ipc",
    "-e": "cleanenv",
    "--cleanenv": "cleanenv",
    "-p": "pid",
    "--pid": "pid",
    "--nv": "nv",
    "--rocm": "rocm",
    "--no-home": "nohome",
    "-u": "userns",
    "--userns": "userns",
    "-w": "writable",
    "--writable": "writable",
}
VALUED = {
    "-B": "bind",
    "--bind": "bind",
    "--mount": "bind",
    "-S": "scratch",
    "--scratch": "scratch",
    "-W": "workdir",
    "--workdir": "workdir",
    "--pwd": "pwd",
    "-H": "home",
    "--home": "home",
    "--env": "env",
}


class Fatal(Exception):
    """A failure reported as Apptainer reports it."""


def fatal(message: str) -> Fatal:
    return Fatal(message)


def program_name() -> str:
    return os.path.basename(sys.argv[0])


# -- images --------------------------------------------------------------------------------


def cache_dir() -> str:
    """Where unpacked images are kept: a ``.cache`` directory beside the program (made open
    to all, sticky, by whoever installs the stand-in), else the runtime's cache directory, a
    directory per user in either. A SIF is unpacked because it cannot be mounted here; kept
    across runs, the unpacking costs once what a mount would cost every time (little)."""
    beside = os.path.join(os.path.dirname(os.path.realpath(sys.argv[0])), ".cache")
    if os.path.isdir(beside) and os.access(beside, os.W_OK):
        return os.path.join(beside, str(os.getuid()))
    for name in ("APPTAINER_CACHEDIR", "SINGULARITY_CACHEDIR"):
        value = os.environ.get(name)
        if value and os.path.isdir(value) and os.access(value, os.W_OK):
            return os.path.join(value, ".standin-cache")
    temporary = os.environ.get("TMPDIR") or "/tmp"
    return os.path.join(temporary, f"apptainer-standin-cache-{os.getuid()}")


def sif_partition(path: str) -> int:
    """The offset of the SIF's squashfs partition."""
    with open(path, "rb") as handle:
        header = SIF_HEADER.unpack(handle.read(SIF_HEADER.size))
        if not header[1].startswith(SIF_MAGIC):
            raise fatal(f"could not open image {path}: image format not recognized")
        total, offset = header[8], header[9]
        handle.seek(offset)
        for _ in range(total):
            fields = SIF_DESCRIPTOR.unpack(handle.read(SIF_DESCRIPTOR.size))
            kind, used, object_offset = fields[0], fields[1], fields[5]
            if used and kind == SIF_PARTITION:
                return int(object_offset)
    raise fatal(f"could not open image {path}: no root filesystem partition found")


def unpacked(key: str, fill) -> str:
    """The cache's directory for ``key``, made by ``fill(directory)`` on first use."""
    root = cache_dir()
    target = os.path.join(root, key)
    if os.path.isdir(target):
        return target
    # Imported only to fill the cache: every exec and test of a SIF comes here, and these
    # imports (with subprocess's) took longer than the rest of the stand-in's start.
    import shutil
    import tempfile

    os.makedirs(root, exist_ok=True)
    staging = tempfile.mkdtemp(prefix="unpack-", dir=root)
    try:
        fill(staging)
        os.chmod(staging, 0o755)
        try:
            os.rename(staging, target)
        except OSError:
            if not os.path.isdir(target):
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return target


def sif_root(path: str) -> str:
    offset = sif_partition(path)
    info = os.stat(path)
    # The file itself (device, inode) as it is now (size, modification time) names its
    # unpacked tree, without a hash (hashlib's import alone was a fifth of a start).
    key = f"{info.st_dev:x}-{info.st_ino:x}-{info.st_size:x}-{info.st_mtime_ns:x}"

    def fill(directory: str) -> None:
        import subprocess

        rootfs = os.path.join(directory, "rootfs")
        done = subprocess.run(
            ["unsquashfs", "-q", "-n", "-no-xattrs", "-o", str(offset), "-d", rootfs, path],
            capture_output=True,
            text=True,
        )
        if done.returncode != 0:
            raise fatal(f"could not open image {path}: unsquashfs failed: {done.stderr.strip()}")

    return os.path.join(unpacked("sif-" + key, fill), "rootfs")


def registry_get(url: str, accept: str | None = None) -> bytes:
    import urllib.request

    request = urllib.request.Request(url, headers={"Accept": accept} if accept else {})
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            data: bytes = response.read()
            return data
    except OSError as error:
        raise fatal(f"while fetching {url}: {error}") from error


def docker_root(reference: str) -> str:
    import gzip
    import hashlib
    import io
    import json
    import platform
    import tarfile

    name = reference[len("docker://") :]
    first, _, rest = name.partition("/")
    if not rest or not ("." in first or ":" in first or first == "localhost"):
        raise fatal(f"{reference}: only images of a registry named in the reference can be pulled")
    repository, tag = rest, "latest"
    if "@" in rest:
        repository, tag = rest.split("@", 1)
    elif ":" in rest.rsplit("/", 1)[-1]:
        repository, tag = rest.rsplit(":", 1)
    host = first.split(":")[0]
    scheme = "http" if host in ("127.0.0.1", "localhost") else "https"
    base = f"{scheme}://{first}/v2/{repository}"
    body = registry_get(f"{base}/manifests/{tag}", MANIFEST_TYPES)
    manifest = json.loads(body)
    if "manifests" in manifest:
        arch = {"x86_64": "amd64", "aarch64": "arm64"}.get(platform.machine(), platform.machine())
        chosen = [
            m for m in manifest["manifests"] if m.get("platform", {}).get("architecture") == arch
        ]
        if not chosen:
            raise fatal(f"{reference}: no image for {arch}")
        body = registry_get(f"{base}/manifests/{chosen[0]['digest']}", MANIFEST_TYPES)
        manifest = json.loads(body)
    digest = hashlib.sha256(body).hexdigest()

    def fill(directory: str) -> None:
        rootfs = os.path.join(directory, "rootfs")
        os.mkdir(rootfs)
        for layer in manifest.get("layers", []):
            blob = registry_get(f"{base}/blobs/{layer['digest']}")
            if blob[:2] == b"\x1f\x8b":
                blob = gzip.decompress(blob)
            with tarfile.open(fileobj=io.BytesIO(blob)) as tar:
                members = []
                for member in tar.getmembers():
                    head, _, leaf = member.name.rpartition("/")
                    if leaf.startswith(".wh."):
                        gone = os.path.join(rootfs, head, leaf[4:])
                        if os.path.isdir(gone) and not os.path.islink(gone):
                            import shutil

                            shutil.rmtree(gone)
                        elif os.path.lexists(gone):
                            os.unlink(gone)
                        continue
                    if member.isdev():
                        continue
                    members.append(member)
                # Python 3.11.4 and later warn without a filter; older ones have none.
                safe = {"filter": "tar"} if hasattr(tarfile, "tar_filter") else {}
                tar.extractall(rootfs, members=members, **safe)

    return os.path.join(unpacked("docker-" + digest[:32], fill), "rootfs")


def image_root(image: str) -> str:
    """The root directory of ``image`` (a sandbox, a SIF, a docker:// reference)."""
    if image.startswith("docker://"):
        return docker_root(image)
    if "://" in image:
        raise fatal(f"could not open image {image}: only docker:// references can be fetched")
    if not os.path.lexists(image):
        raise fatal(
            f"could not open image {image}: failed to retrieve path for {image}: "
            f"lstat {image}: no such file or directory"
        )
    if os.path.isdir(image):
        return os.path.realpath(image)
    try:
        return sif_root(image)
    except OSError as error:
        raise fatal(f"could not open image {image}: {error.strerror}") from error


# -- running -------------------------------------------------------------------------------


def parse_action(args: list[str]) -> tuple[dict[str, object], str, list[str]]:
    options: dict[str, object] = {"bind": [], "scratch": [], "env": []}
    while args and args[0].startswith("-"):
        word = args.pop(0)
        if word == "--":
            break
        value = None
        if word.startswith("--") and "=" in word:
            word, value = word.split("=", 1)
        if word in FLAGS:
            options[FLAGS[word]] = True
        elif word in VALUED:
            if value is None:
                if not args:
                    raise fatal(f"flag needs an argument: {word}")
                value = args.pop(0)
            key = VALUED[word]
            if key in ("bind", "scratch", "env"):
                options[key] += [v for v in value.split(",") if v]  # type: ignore[operator]
            else:
                options[key] = value
        else:
            raise fatal(f"unknown flag: {word}")
    if not args:
        raise fatal("an image is required")
    return options, args[0], args[1:]


def underlay(source: str, dest: str, covered: set[str], writable: bool, out: list[str]) -> None:
    """Mount the image's entries under ``dest``, leaving room for what ``covered`` mounts."""
    for entry in sorted(os.listdir(source)):
        path = os.path.join(source, entry)
        target = os.path.join(dest, entry)
        if target in covered:
            continue
        if os.path.islink(path):
            out += ["--symlink", os.readlink(path), target]
        elif any(c.startswith(target + "/") for c in covered):
            if os.path.isdir(path):
                out += ["--dir", target]
                underlay(path, target, covered, writable, out)
        else:
            out += ["--bind" if writable else "--ro-bind", path, target]


def container_command(
    options: dict[str, object], root: str, image_is_sif: bool, command: list[str]
) -> list[str]:
    contain = bool(options.get("containall") or options.get("contain"))
    mounts: list[tuple[str, list[str]]] = []
    if contain:
        mounts += [("/tmp", ["--tmpfs", "/tmp"]), ("/var/tmp", ["--tmpfs", "/var/tmp"])]
    for directory in options["scratch"]:  # type: ignore[union-attr]
        mounts.append((directory, ["--tmpfs", directory]))
    home = options.get("home")
    home_dest = None
    if isinstance(home, str):
        source, _, home_dest = home.partition(":")
        home_dest = home_dest or source
        mounts.append((home_dest, ["--bind", source, home_dest]))
    for bind in options["bind"]:  # type: ignore[union-attr]
        parts = bind.split(":")
        source = parts[0]
        dest = parts[1] if len(parts) > 1 and parts[1] else source
        if not os.path.exists(source):
            raise fatal(
                f"container creation failed: mount {source}->{dest} error: "
                f"while mounting {source}: mount source {source} doesn't exist"
            )
        mode = "--ro-bind" if len(parts) > 2 and parts[2] == "ro" else "--bind"
        mounts.append((dest, [mode, source, dest]))
    by_dest: dict[str, list[str]] = {}
    for dest, op in mounts:
        by_dest[os.path.normpath(dest)] = op  # a later mount of a place wins
    covered = set(by_dest) | {"/proc", "/dev", "/sys"}
    writable = bool(options.get("writable"))
    if writable and image_is_sif:
        raise fatal("no SIF writable overlay partition found in the image")
    argv = ["bwrap", "--unshare-user", "--die-with-parent", "--tmpfs", "/"]
    if options.get("containall") or options.get("pid"):
        argv.append("--unshare-pid")
    if options.get("containall") or options.get("ipc"):
        argv.append("--unshare-ipc")
    underlay(root, "/", covered, writable, argv)
    argv += ["--proc", "/proc", "--dev", "/dev", "--ro-bind", "/sys", "/sys"]
    for dest in sorted(by_dest, key=lambda d: (d.count("/"), d)):
        argv += by_dest[dest]
    argv += ["--remount-ro", "/"]
    environment = (
        {}
        if (options.get("cleanenv") or options.get("containall"))
        else {k: v for k, v in os.environ.items() if not k.startswith(("APPTAINER", "SINGULARITY"))}
    )
    for name, value in os.environ.items():
        for prefix in ("SINGULARITYENV_", "APPTAINERENV_"):
            if name.startswith(prefix) and len(name) > len(prefix):
                environment[name[len(prefix) :]] = value
    for pair in options["env"]:  # type: ignore[union-attr]
        name, _, value = pair.partition("=")
        environment[name] = value
    environment.setdefault("PATH", DEFAULT_PATH)
    environment["HOME"] = home_dest or os.environ.get("HOME", "/")
    argv.append("--clearenv")
    for name, value in sorted(environment.items()):
        argv += ["--setenv", name, value]
    pwd = options.get("pwd")
    argv += ["--chdir", pwd if isinstance(pwd, str) else (home_dest or "/")]
    return [*argv, "--", *command]


def action(name: str, args: list[str]) -> int:
    options, image, rest = parse_action(args)
    root = image_root(image)
    is_sif = not image.startswith("docker://") and not os.path.isdir(image)
    if name == "exec":
        if not rest:
            raise fatal("exec needs a command")
        command = rest
    elif name == "run":
        if not os.path.exists(os.path.join(root, ".singularity.d/runscript")):
            raise fatal(f"no runscript found in {image}")
        command = ["/.singularity.d/runscript", *rest]
    else:
        if not os.path.exists(os.path.join(root, ".singularity.d/test")):
            print("INFO:    No test script found in container, exiting", file=sys.stderr)
            return 0
        command = ["/bin/sh", "/.singularity.d/test"]
    argv = container_command(options, root, is_sif, command)
    return supervise([find_program("bwrap"), *argv[1:]])


def find_program(name: str) -> str:
    """``name`` on PATH (shutil.which without shutil's import time)."""
    for directory in (os.environ.get("PATH") or "/usr/bin:/bin").split(os.pathsep):
        candidate = os.path.join(directory or ".", name)
        if os.access(candidate, os.X_OK) and not os.path.isdir(candidate):
            return candidate
    return f"/usr/bin/{name}"


def payload(root: int) -> list[int]:
    """The processes below ``root`` that are not bubblewrap's own."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat", "rb") as handle:
                    fields = handle.read().decode(errors="replace").rsplit(")", 1)[1].split()
            except OSError:
                continue
            children.setdefault(int(fields[1]), []).append(int(entry))
    found: list[int] = []
    pending = list(children.get(root, []))
    while pending:
        pid = pending.pop()
        pending += children.get(pid, [])
        try:
            with open(f"/proc/{pid}/comm", encoding="utf-8") as handle:
                if handle.read().strip() != "bwrap":
                    found.append(pid)
        except OSError:
            continue
    return found


def supervise(argv: list[str]) -> int:
    """Run the container and pass the signals this process gets on to the job inside, as
    Apptainer's starter does; the job's exit status."""
    child = os.posix_spawn(argv[0], argv, os.environ)

    def forward(signum: int, _frame: object) -> None:
        for pid in payload(child):
            try:  # noqa: SIM105 (contextlib is one more import at every start)
                os.kill(pid, signum)
            except OSError:
                pass

    for name in ("SIGTERM", "SIGINT", "SIGHUP", "SIGQUIT", "SIGUSR1", "SIGUSR2", "SIGALRM"):
        _signal.signal(getattr(_signal, name), forward)
    while True:
        try:
            _, status = os.waitpid(child, 0)
        except InterruptedError:
            continue
        code = os.waitstatus_to_exitcode(status)
        return code if code >= 0 else 128 - code


# -- building ------------------------------------------------------------------------------


def build(args: list[str]) -> int:
    import shutil
    import subprocess
    import tempfile

    force = sandbox = False
    while args and args[0].startswith("-"):
        word = args.pop(0)
        if word in ("-F", "--force"):
            force = True
        elif word in ("-s", "--sandbox"):
            sandbox = True
        else:
            raise fatal(f"unknown flag: {word}")
    if len(args) != 2:
        raise fatal("build needs an output and a source")
    output, source = args
    if os.path.lexists(output) and not force:
        raise fatal(f"image file already exists: {output} - will not overwrite")
    root = image_root(source)
    if sandbox:
        shutil.rmtree(output, ignore_errors=True)
        shutil.copytree(root, output, symlinks=True)
        return 0
    with tempfile.TemporaryDirectory(prefix="standin-build-") as work:
        squashfs = os.path.join(work, "rootfs.squashfs")
        staged = os.path.join(work, "image.sif")
        for argv in (
            ["mksquashfs", root, squashfs, "-noappend", "-all-root", "-quiet", "-no-progress"],
            ["siftool", "new", staged],
            [
                "siftool",
                "add",
                staged,
                squashfs,
                "--datatype",
                "4",
                "--parttype",
                "2",
                "--partfs",
                "1",
                "--partarch",
                SIF_ARCH.get(os.uname().machine, "2"),
            ],
        ):
            done = subprocess.run(argv, capture_output=True, text=True)
            if done.returncode != 0:
                raise fatal(f"while building {output}: {argv[0]}: {done.stderr.strip()}")
        if os.path.isdir(output) and not os.path.islink(output):
            shutil.rmtree(output)
        shutil.move(staged, output)
    return 0


def inspect(args: list[str]) -> int:
    import json

    while args and args[0].startswith("-"):
        args.pop(0)
    if len(args) != 1:
        raise fatal("inspect needs one image")
    root = image_root(args[0])
    labels_file = os.path.join(root, ".singularity.d/labels.json")
    labels = {}
    if os.path.exists(labels_file):
        with open(labels_file, encoding="utf-8") as handle:
            labels = json.load(handle)
    print(json.dumps({"data": {"attributes": {"labels": labels}}, "type": "container"}))
    return 0


def main(argv: list[str]) -> int:
    args = list(argv)
    while args and args[0] in (
        "-s",
        "--silent",
        "-q",
        "--quiet",
        "-d",
        "--debug",
        "-v",
        "--verbose",
    ):
        args.pop(0)
    if not args:
        raise fatal("a command is required")
    command, rest = args[0], args[1:]
    if command in ("--version", "version"):
        if program_name() == "singularity":
            print(f"singularity version {SINGULARITY_VERSION}")
        else:
            print(f"apptainer version {VERSION}")
        return 0
    if command in ("exec", "run", "test"):
        return action(command, rest)
    if command in ("build", "pull"):
        return build(rest)
    if command == "inspect":
        return inspect(rest)
    raise fatal(f'unknown command "{command}" for "{program_name()}"')


def entry() -> None:
    """The command: ``main`` with Apptainer's way of failing."""
    try:
        sys.exit(main(sys.argv[1:]))
    except Fatal as error:
        print(f"FATAL:   {error}", file=sys.stderr)
        sys.exit(255)
