"""The docker container runtime: what the startd advertises and how a starter runs a job.

Built by the startd once (and again on reconfiguration) from its configuration; every starter
inherits the object and opens its own connection to dockerd, since a connection must not be
shared between processes. Everything dockerd is asked goes through the docker SDK, never a
shell: DOCKER_EXTRA_ARGUMENTS is parsed into SDK keywords (:mod:`epcore_docker.extra_args`).
The startd's own questions (is dockerd there, its version, the labelled containers) go over
dockerd's unix socket without the SDK (:mod:`epcore_docker.daemon`), so that the SDK, and the
10 MB it holds, is imported only where containers run or dockerd is not on a unix socket.

Containers are labelled ``epcore.job_key`` with the job's tracking key (its cgroup name, which
starts with the execute directory's prefix), so that a startd finds and removes the container
of a starter that died (:meth:`DockerRuntime.reclaim`), and at its start every container of
its own execute directories that no running job holds (:meth:`DockerRuntime.sweep`).
"""

from __future__ import annotations

import logging
import os
import re
import signal
import socket
import threading
import time
from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING, Any

from epcore.api import HoldCode, as_user, open_user_file
from epcore.classad import ClassAd
from epcore.config import Config
from epcore.errors import ConfigError, JobSetupError
from epcore.types import ContainerJob, MachineAttribute, RunningContainer
from epcore_docker import daemon
from epcore_docker.daemon import DAEMON_ERRORS, DaemonError
from epcore_docker.settings import (
    ContainerOptions,
    DockerSettings,
    job_options,
    machine_attributes,
    read_settings,
)

if TYPE_CHECKING:
    import docker
    from docker.models.containers import Container

NAME = "docker"
#: The label naming the job a container belongs to.
JOB_KEY_LABEL = "epcore.job_key"
SLOT_LABEL = "epcore.slot"
#: Seconds a request to dockerd may take (a pull or a wait takes as long as it needs).
API_TIMEOUT = 60
_CONTAINER_NAME = re.compile(r"[^A-Za-z0-9_.-]")


def daemon_url(config: Config) -> str | None:
    """Where dockerd listens: DOCKER_URL, else None (the DOCKER_HOST environment variable,
    else the default socket, as the docker command finds it)."""
    url = (config.get("DOCKER_URL") or "").strip()
    return url or None


def docker_version_text(version: dict[str, object]) -> str:
    """DockerVersion as ``docker --version`` prints it: ``Docker version 20.10.24, build x``."""
    text = f"Docker version {version.get('Version', 'unknown')}"
    build = version.get("GitCommit")
    return f"{text}, build {build}" if build else text


class DockerRuntime:
    """The docker runtime of one startd (see the module docstring)."""

    name = NAME

    def __init__(self, config: Config, log: logging.Logger | None = None) -> None:
        self.config = config
        self.log = log or logging.getLogger("epcore.docker")
        self.url = daemon_url(config)
        self.spool = config.get("SPOOL") or "/tmp"
        self._client: docker.DockerClient | None = None
        self._client_pid = 0
        self._api_version: str | None = None
        self._settings: DockerSettings | None = None
        self._settings_error: ConfigError | None = None
        try:
            self._settings = read_settings(config)
        except ConfigError as error:
            self._settings_error = error
        self.disabled = (config.get("DOCKER") or "").strip() == ""

    # -- dockerd --------------------------------------------------------------------------

    def client(self) -> docker.DockerClient:
        """This process's client (a forked starter makes its own)."""
        import docker

        if self._client is None or self._client_pid != os.getpid():
            version = self._api_version or "auto"
            if self.url is None:
                # DOCKER_HOST, DOCKER_TLS_VERIFY and DOCKER_CERT_PATH, as the docker command.
                self._client = docker.from_env(version=version, timeout=API_TIMEOUT)
            else:
                self._client = docker.DockerClient(
                    base_url=self.url, version=version, timeout=API_TIMEOUT
                )
            self._client_pid = os.getpid()
        return self._client

    def new_api(self) -> docker.APIClient:
        """A client of its own, for one thread."""
        import docker

        version = self._api_version or "auto"
        if self.url is None:
            return docker.from_env(version=version, timeout=API_TIMEOUT).api
        return docker.APIClient(base_url=self.url, version=version, timeout=API_TIMEOUT)

    @staticmethod
    def _environment_url() -> str:
        """Where ``docker.from_env`` connects, for messages."""
        return os.environ.get("DOCKER_HOST") or "unix:///var/run/docker.sock"

    # -- what the startd advertises -------------------------------------------------------

    def configuration_problem(self) -> str | None:
        """Why the configuration keeps docker jobs from running here; None when it does not."""
        if self.disabled:
            return "DOCKER is empty: docker jobs are turned off in the configuration"
        if self._settings_error is not None:
            return str(self._settings_error)
        return None

    def offline_reason(self) -> str | None:
        """Why this machine cannot run docker jobs now; None when it can."""
        problem = self.configuration_problem()
        if problem is not None:
            return problem
        try:
            self._ping()
        except DAEMON_ERRORS as error:
            return f"dockerd does not answer at {self.url or self._environment_url()}: {error}"
        return None

    def _ping(self) -> None:
        path = daemon.unix_socket(self.url)
        if path is not None:
            daemon.get(path, "/_ping", API_TIMEOUT)
            return
        from epcore_docker.container import DOCKER_ERRORS

        try:
            self.client().ping()
        except DOCKER_ERRORS as error:
            raise DaemonError(str(error)) from error

    def _version(self) -> dict[str, object]:
        path = daemon.unix_socket(self.url)
        if path is not None:
            found = daemon.get_json(path, "/version", API_TIMEOUT)
        else:
            from epcore_docker.container import DOCKER_ERRORS

            try:
                found = self.client().version()
            except DOCKER_ERRORS as error:
                raise DaemonError(str(error)) from error
        if not isinstance(found, dict):
            raise DaemonError(f"dockerd's version is not an object: {found!r}")
        return found

    def machine_attributes(self) -> Sequence[MachineAttribute]:
        """HasDocker, DockerVersion and the volumes and networks; HasDocker = false and
        DockerOfflineReason when docker cannot be used."""
        reason = self.offline_reason()
        if reason is None:
            try:
                version = self._version()
            except DAEMON_ERRORS as error:
                reason = f"dockerd answers but not with its version: {error}"
            else:
                # The starters' clients use it instead of asking dockerd each time (10 ms).
                api_version = version.get("ApiVersion")
                self._api_version = api_version if isinstance(api_version, str) else None
                assert self._settings is not None
                found = [
                    MachineAttribute("HasDocker", True),
                    MachineAttribute("DockerVersion", docker_version_text(version)),
                ]
                return found + machine_attributes(self._settings)
        self.log.warning("docker jobs cannot run here: %s", reason)
        return [
            MachineAttribute("HasDocker", False),
            MachineAttribute("DockerOfflineReason", reason),
        ]

    def runs(self, job: ClassAd, machine: ClassAd | None = None) -> bool:
        """Docker universe jobs: WantDocker is true (the slot does not matter)."""
        return job.evaluate("WantDocker") is True

    # -- running a job --------------------------------------------------------------------

    def start(self, request: ContainerJob, log: logging.Logger) -> RunningContainer:
        """Pull the image when needed, then create and start the job's container."""
        from epcore_docker.container import DOCKER_ERRORS, DockerContainer, machine_oom_kills
        from epcore_docker.images import ImageCache

        # Not offline_reason(): the startd asked dockerd already, and a dockerd gone since
        # then fails the create below with its own reason.
        reason = self.configuration_problem()
        if reason is not None:
            raise JobSetupError(
                f"this execution point cannot run docker jobs: {reason}",
                HoldCode.FAILED_TO_CREATE_PROCESS,
            )
        settings = self._settings
        assert settings is not None
        image = request.job.evaluate("DockerImage")
        if not isinstance(image, str) or not image.strip():
            raise JobSetupError(
                "a docker job needs DockerImage (docker_image) as a string",
                HoldCode.FAILED_TO_CREATE_PROCESS,
            )
        image = image.strip()
        options = job_options(settings, request.machine, request.job, now=time.time())
        for warning in options.warnings:
            log.warning("%s", warning)
        cache = ImageCache(self.spool, settings.image_cache_size, log)
        try:
            cache.ensure(self.client().api, image, time.time())
            container = self._create(request, image, settings, options)
        except DOCKER_ERRORS as error:
            reason = getattr(error, "explanation", None) or str(error)
            message = f"Cannot create the container of docker image {image}: {reason}"
            raise JobSetupError(message, HoldCode.FAILED_TO_CREATE_PROCESS) from error
        container_id = str(container.id)
        log.info("created container %s (%s) from %s", container_id[:12], container.name, image)
        try:
            self._feed_stdin(container_id, request)
            oom_kills_before = machine_oom_kills()
            container.start()
        except JobSetupError:
            self._remove_quietly(container_id, log)  # the job's input cannot be read
            raise
        except DOCKER_ERRORS as error:
            self._remove_quietly(container_id, log)
            reason = getattr(error, "explanation", None) or str(error)
            message = f"Cannot start the container of docker image {image}: {reason}"
            raise JobSetupError(message, HoldCode.FAILED_TO_CREATE_PROCESS) from error
        return DockerContainer(
            container_id,
            self.new_api,
            log,
            stdout=request.stdout,
            stderr=request.stderr,
            uid=request.uid,
            gid=request.gid,
            oom_kills_before=oom_kills_before,
        )

    def _create(
        self,
        request: ContainerJob,
        image: str,
        settings: DockerSettings,
        options: ContainerOptions,
    ) -> Container:
        import docker.types

        extra = settings.extra
        mounts = [docker.types.Mount(request.sandbox, request.sandbox, type="bind")]
        mounts += [
            docker.types.Mount(m.container_path, m.host_path, type="bind", read_only=m.read_only)
            for m in options.mounts
        ]
        environment = dict(request.environment)
        environment.update(extra.environment)
        labels = {JOB_KEY_LABEL: request.job_key, SLOT_LABEL: request.slot_name}
        # The SDK's keywords, built here at the call and nowhere else.
        kwargs: dict[str, Any] = {
            "command": list(request.argv) or None,
            "working_dir": request.sandbox,
            "user": f"{request.uid}:{request.gid}",
            "group_add": [str(g) for g in request.extra_gids],
            "mounts": mounts,
            "environment": environment,
            "labels": labels,
            "name": _container_name(request.job_key),
            "mem_limit": f"{max(request.memory_mb, 6)}m",
            # No swap beyond the slot's memory: the job is held for its memory instead.
            "memswap_limit": f"{max(request.memory_mb, 6)}m",
            "cpu_shares": max(int(request.cpus * 100), 2),
            "stop_signal": signal.Signals(request.kill_signal).name,
            # DOCKER_RUN_UNDER_INIT: an init as PID 1 reaps the job's orphans and passes on
            # signals, which a job's own PID 1 might ignore.
            "init": self.config.get_bool("DOCKER_RUN_UNDER_INIT", True),
            "detach": True,
        }
        if request.stdin != "/dev/null":
            kwargs["stdin_open"] = True
            # The SDK sets StdinOnce (dockerd closes the job's stdin when our feed ends, so
            # the job sees end of file) only for a create that is not detached.
            kwargs["detach"] = False
        if options.network_mode is not None:
            kwargs["network_mode"] = options.network_mode
        if options.drop_all_capabilities:
            kwargs["cap_drop"] = ["ALL"]
            # "setuid and setgid binaries disabled" (seed 000).
            kwargs["security_opt"] = ["no-new-privileges"]
        if options.shm_size is not None:
            kwargs["shm_size"] = options.shm_size
        for key, value in extra.create_kwargs().items():
            if key in ("labels", "group_add", "security_opt", "cap_drop"):
                kwargs[key] = _merged(kwargs.get(key), value)
            elif key == "shm_size" and options.shm_size is not None:
                continue  # DOCKER_SHM_SIZE wins over --shm-size
            else:
                kwargs[key] = value
        if extra.log_driver is not None or extra.log_options:
            kwargs["log_config"] = docker.types.LogConfig(
                type=extra.log_driver or "json-file", config=dict(extra.log_options)
            )
        if extra.ulimits:
            kwargs["ulimits"] = [
                docker.types.Ulimit(name=u.name, soft=u.soft, hard=u.hard) for u in extra.ulimits
            ]
        return self.client().containers.create(image, **kwargs)

    def _feed_stdin(self, container_id: str, request: ContainerJob) -> None:
        """Attach to the container's stdin and copy the job's input file into it from a
        thread (the file is opened as the job's user)."""
        if request.stdin == "/dev/null":
            return
        with as_user(request.uid, request.gid):
            try:
                fd = open_user_file(request.stdin, os.O_RDONLY | os.O_NOFOLLOW)
            except OSError as error:
                message = f"cannot read the job's input {request.stdin}: {error.strerror}"
                raise JobSetupError(message, HoldCode.UNABLE_TO_OPEN_INPUT) from error
        api = self.new_api()
        sock = api.attach_socket(container_id, params={"stdin": 1, "stream": 1})
        raw: socket.socket = getattr(sock, "_sock", sock)

        def feed() -> None:
            try:
                with os.fdopen(fd, "rb") as source:
                    while chunk := source.read(1 << 16):
                        raw.sendall(chunk)
                raw.shutdown(socket.SHUT_WR)
            except OSError:
                pass  # the container ended before reading all of it
            finally:
                sock.close()
                api.close()

        threading.Thread(target=feed, name=f"stdin-{container_id[:12]}", daemon=True).start()

    def _remove_quietly(self, container_id: str, log: logging.Logger) -> None:
        from epcore_docker.container import DOCKER_ERRORS

        try:
            self.client().api.remove_container(container_id, v=True, force=True)
        except DOCKER_ERRORS as error:
            log.error("cannot remove container %s: %s", container_id[:12], error)

    # -- after a starter is gone -----------------------------------------------------------

    def _labelled(self, label: str) -> list[dict[str, object]]:
        path = daemon.unix_socket(self.url)
        if path is not None:
            found = daemon.get_json(path, daemon.containers_request(label), API_TIMEOUT)
        else:
            from epcore_docker.container import DOCKER_ERRORS

            try:
                found = self.client().api.containers(all=True, filters={"label": label})
            except DOCKER_ERRORS as error:
                raise DaemonError(str(error)) from error
        if not isinstance(found, list):
            raise DaemonError(f"dockerd's container list is not a list: {found!r}")
        return [entry for entry in found if isinstance(entry, dict)]

    def sweep(self, keep: Collection[str], prefixes: Collection[str]) -> tuple[str, ...]:
        """Remove the containers of this startd's execute directories that no running job
        holds; the job keys removed."""
        if self.disabled:
            return ()
        try:
            listed = self._labelled(JOB_KEY_LABEL)
        except DAEMON_ERRORS as error:
            self.log.info("cannot look for stale containers: %s", error)
            return ()
        removed = []
        for entry in listed:
            labels = entry.get("Labels") or {}
            key = labels.get(JOB_KEY_LABEL, "") if isinstance(labels, dict) else ""
            if not key or key in keep or not any(key.startswith(p) for p in prefixes):
                continue
            self._remove_quietly(str(entry["Id"]), self.log)
            removed.append(key)
        return tuple(removed)

    def reclaim(self, job_key: str) -> bool:
        """Remove the container of ``job_key`` (its starter died); False when there is none."""
        if self.disabled:
            return False
        try:
            listed = self._labelled(f"{JOB_KEY_LABEL}={job_key}")
        except DAEMON_ERRORS as error:
            self.log.error("cannot look for the container of job %s: %s", job_key, error)
            return False
        for entry in listed:
            self._remove_quietly(str(entry["Id"]), self.log)
        return bool(listed)


def _container_name(job_key: str) -> str:
    """A container name from the job key (docker allows ``[A-Za-z0-9][A-Za-z0-9_.-]*``)."""
    return "ep_" + _CONTAINER_NAME.sub("_", job_key)[-120:]


def _merged(ours: object, admins: object) -> object:
    """Our values with the admin's added; our labels win (the sweep depends on them)."""
    if isinstance(ours, dict) and isinstance(admins, dict):
        return {**admins, **ours}
    if isinstance(ours, list) and isinstance(admins, list):
        return ours + [item for item in admins if item not in ours]
    return admins
