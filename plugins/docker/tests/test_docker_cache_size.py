"""DockerCachedImageSizeMb: the plugin's startd cron job reports what its pulled images take."""

from __future__ import annotations

import time
from pathlib import Path

import docker
import pytest
from docker_fixtures import PushImage
from epcore_docker.images import ImageCache
from epcore_docker.plugin import CACHE_JOB, ep_cron_jobs
from runtime_helpers import LOG, docker_config, run_label

from epcore.config import Config
from epcore.testing.startd import InProcessStartd

MiB = 1024 * 1024


def _job_size(config: Config) -> object:
    (job,) = ep_cron_jobs(config)
    ads = job.run()
    assert len(ads) == 1
    return ads[0].evaluate("DockerCachedImageSizeMb")


def test_the_size_counts_only_the_images_the_plugin_pulled(
    tmp_path: Path,
    run_tag: str,
    push_image: PushImage,
    busybox_image: str,
    docker_client: docker.DockerClient,
) -> None:
    """Before any pull the cache takes 0 MB (the imported busybox is not counted); after a
    pull of an image with 3 MB of data it takes that image's size in whole megabytes."""
    config = docker_config(tmp_path, run_tag)
    assert _job_size(config) == 0
    image = push_image("cache-size", marker_bytes=3 * MiB)
    ImageCache(str(tmp_path), 8, LOG).ensure(docker_client.api, image, time.time())
    size = docker_client.api.inspect_image(image)["Size"]
    assert size >= 3 * MiB
    assert _job_size(config) == size // MiB


def test_the_job_follows_the_advertise_interval(tmp_path: Path, run_tag: str) -> None:
    """The cron job is periodic every DOCKER_CACHE_ADVERTISE_INTERVAL seconds (1200 unset)."""
    (default,) = ep_cron_jobs(docker_config(tmp_path, run_tag))
    (set_,) = ep_cron_jobs(
        docker_config(tmp_path, run_tag, {"DOCKER_CACHE_ADVERTISE_INTERVAL": "60"})
    )
    assert (default.name, default.mode, default.period) == (CACHE_JOB, "Periodic", 1200.0)
    assert default.publish is False  # sent with the next update, not on its own
    assert set_.period == 60.0


@pytest.mark.parametrize(
    "knobs",
    [{"DOCKER": ""}, {"DOCKER_IMAGE_CACHE_SIZE": "none"}],
)
def test_no_job_when_docker_jobs_are_off(
    tmp_path: Path, run_tag: str, knobs: dict[str, str]
) -> None:
    """With docker jobs turned off or misconfigured the plugin runs no cache job."""
    assert ep_cron_jobs(docker_config(tmp_path, run_tag, knobs)) == []


def test_the_size_needs_no_dockerd(tmp_path: Path, run_tag: str) -> None:
    """The job reads the cache's record alone, so it answers while dockerd does not."""
    (tmp_path / "docker_image_cache").write_text(f"1.0 {3 * MiB} registry/one:1\n")
    config = docker_config(
        tmp_path, run_tag, {"DOCKER_URL": "unix:///nonexistent/epcore-cache.sock"}
    )
    assert _job_size(config) == 3


def test_an_installed_startd_advertises_the_size(tmp_path: Path, run_tag: str) -> None:
    """A startd with every installed plugin runs the job (found through the entry point) and
    its slot ads carry DockerCachedImageSizeMb from the cache's record in SPOOL."""
    local = tmp_path / "local"
    (local / "spool").mkdir(parents=True)
    (local / "spool" / "docker_image_cache").write_text(f"1.0 {5 * MiB} registry/one:1\n")
    config = tmp_path / "condor_config"
    config.write_text(
        f"LOCAL_DIR = {local}\nRUNBENCHMARKS = False\nIS_OWNER = False\nNUM_CPUS = 1\n"
        f"MEMORY = 512\nDOCKER_URL = unix:///nonexistent/epcore-cache.sock\n"
        f"DOCKER_EXTRA_ARGUMENTS = {run_label(run_tag)}\nDOCKER_CACHE_ADVERTISE_INTERVAL = 1\n"
    )
    startd = InProcessStartd.open(str(config))
    try:

        def size() -> object:
            (slot,) = startd.startd.query()
            return slot.evaluate("DockerCachedImageSizeMb")

        startd.turn_until(lambda: size() == 5, 20, "DockerCachedImageSizeMb in the slot ad")
    finally:
        startd.close()
