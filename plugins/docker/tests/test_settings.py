"""The docker knobs read from the configuration and applied to jobs (epcore_docker.settings)."""

from __future__ import annotations

import pytest
from epcore_docker.extra_args import DockerArgumentError, ExtraArguments, parse_extra_arguments
from epcore_docker.settings import (
    ContainerOptions,
    DockerSettings,
    DockerSettingsError,
    Mount,
    Volume,
    job_options,
    machine_attributes,
    read_settings,
)

from epcore.classad import ClassAd, parse_ad, parse_expr
from epcore.config import Config
from epcore.errors import ConfigError, JobSetupError
from epcore.types import MachineAttribute

NOW = 1_700_000_000.0
MACHINE = parse_ad('[ Memory = 2048; Cpus = 2; Name = "slot1@ep" ]')

SEED_VOLUMES = """\
DOCKER_VOLUMES = SOME_DIR, ANOTHER_DIR
DOCKER_VOLUME_DIR_SOME_DIR = /path1
DOCKER_VOLUME_DIR_ANOTHER_DIR = /path/to/no2
DOCKER_MOUNT_VOLUMES = SOME_DIR, ANOTHER_DIR
"""

SEED_MOUNT_IF = """\
DOCKER_VOLUMES = SOME_DIR, ANOTHER_DIR
DOCKER_VOLUME_DIR_SOME_DIR = /path1
DOCKER_VOLUME_DIR_SOME_DIR_MOUNT_IF = WantSomeDirMounted && Owner == "smith"
DOCKER_VOLUME_DIR_ANOTHER_DIR = /path/to/no2
DOCKER_MOUNT_VOLUMES = SOME_DIR, ANOTHER_DIR
"""

SEED_SHM_HALF_MEMORY = "DOCKER_SHM_SIZE = Memory * 1024 * 1024 / 2"
SEED_SHM_USER_VALUE = (
    "DOCKER_SHM_SIZE = ifThenElse(DevShmSize isnt Undefined && isInteger(DevShmSize) && "
    "int(DevShmSize) <= (Memory * 1024 * 1024), int(DevShmSize), 2 * 1024 * 1024 * 1024)"
)


def _settings(text: str) -> DockerSettings:
    return read_settings(Config.from_text(text))


def _options(text: str, job: str = "[]", machine: ClassAd = MACHINE) -> ContainerOptions:
    return job_options(_settings(text), machine, parse_ad(job), now=NOW)


def test_defaults_without_any_docker_knob() -> None:
    """With no docker knobs: no volumes or networks, 8 cached images, capabilities dropped."""
    settings = _settings("")
    assert settings.volumes == ()
    assert settings.networks == ()
    assert settings.image_cache_size == 8
    assert settings.drop_all_capabilities == parse_expr("true")
    assert settings.shm_size is None
    assert settings.extra == ExtraArguments.empty()
    assert machine_attributes(settings) == []
    assert _options("") == ContainerOptions((), None, True, None, ())


def test_seed_volume_example() -> None:
    """The seed's SOME_DIR/ANOTHER_DIR example mounts both read-write and advertises both."""
    settings = _settings(SEED_VOLUMES)
    assert settings.volumes == (
        Volume("SOME_DIR", "/path1", "/path1", False, None, True),
        Volume("ANOTHER_DIR", "/path/to/no2", "/path/to/no2", False, None, True),
    )
    assert machine_attributes(settings) == [
        MachineAttribute("HasDockerVolumeSOME_DIR", True),
        MachineAttribute("HasDockerVolumeANOTHER_DIR", True),
    ]
    assert _options(SEED_VOLUMES).mounts == (
        Mount("/path1", "/path1", False),
        Mount("/path/to/no2", "/path/to/no2", False),
    )


@pytest.mark.parametrize(
    ("job", "some_dir_mounted"),
    [
        ('[ Owner = "smith"; WantSomeDirMounted = true ]', True),
        ('[ Owner = "SMITH"; WantSomeDirMounted = true ]', True),
        ('[ Owner = "smith"; WantSomeDirMounted = false ]', False),
        ('[ Owner = "smith" ]', False),
        ('[ Owner = "jones"; WantSomeDirMounted = true ]', False),
        ("[ WantSomeDirMounted = true ]", False),
        ("[]", False),
    ],
)
def test_seed_mount_if_example(job: str, some_dir_mounted: bool) -> None:
    """/path1 is mounted only for smith's jobs that set WantSomeDirMounted; /path/to/no2 always."""
    options = _options(SEED_MOUNT_IF, job)
    expected = [Mount("/path/to/no2", "/path/to/no2", False)]
    if some_dir_mounted:
        expected.insert(0, Mount("/path1", "/path1", False))
    assert options.mounts == tuple(expected)
    assert options.warnings == ()


@pytest.mark.parametrize(
    ("mount_if", "job", "mounted"),
    [
        ("MY.Cpus >= 2", "[]", True),
        ("TARGET.RequestCpus > MY.Cpus", "[ RequestCpus = 1 ]", False),
        ("RequestCpus <= Cpus", "[ RequestCpus = 2 ]", True),
        ("time() > 1000", "[]", True),
        ("CurrentTime == 1700000000", "[]", True),
    ],
)
def test_mount_if_sees_machine_job_and_time(mount_if: str, job: str, mounted: bool) -> None:
    """MOUNT_IF is evaluated with MY = machine, TARGET = job, and the given time."""
    config = "DOCKER_VOLUMES = V\nDOCKER_VOLUME_DIR_V = /v\nDOCKER_MOUNT_VOLUMES = V\n"
    options = _options(f"{config}DOCKER_VOLUME_DIR_V_MOUNT_IF = {mount_if}\n", job)
    assert bool(options.mounts) is mounted


@pytest.mark.parametrize("mount_if", ["1/0 == 1", '"yes"', "{1}"])
def test_a_mount_if_that_is_not_boolean_skips_the_volume_with_a_warning(mount_if: str) -> None:
    """A MOUNT_IF giving ERROR or a non-boolean does not mount, and says so in a warning."""
    config = "DOCKER_VOLUMES = V\nDOCKER_VOLUME_DIR_V = /v\nDOCKER_MOUNT_VOLUMES = V\n"
    options = _options(f"{config}DOCKER_VOLUME_DIR_V_MOUNT_IF = {mount_if}\n")
    assert options.mounts == ()
    assert len(options.warnings) == 1
    assert "DOCKER_VOLUME_DIR_V_MOUNT_IF" in options.warnings[0]


def test_volumes_not_in_mount_volumes_are_advertised_but_not_mounted() -> None:
    """A volume missing from DOCKER_MOUNT_VOLUMES is advertised yet never mounted."""
    config = "DOCKER_VOLUMES = A B\nDOCKER_VOLUME_DIR_A = /a\nDOCKER_VOLUME_DIR_B = /b\n"
    config += "DOCKER_MOUNT_VOLUMES = b\n"
    settings = _settings(config)
    assert [volume.always for volume in settings.volumes] == [False, True]
    assert [a.name for a in machine_attributes(settings)] == [
        "HasDockerVolumeA",
        "HasDockerVolumeB",
    ]
    assert _options(config).mounts == (Mount("/b", "/b", False),)


@pytest.mark.parametrize(
    ("value", "host", "container", "read_only"),
    [
        ("/srv/data", "/srv/data", "/srv/data", False),
        ("/srv/data:/data", "/srv/data", "/data", False),
        ("/srv/data:/data:ro", "/srv/data", "/data", True),
        ("/srv/data:/data:RO", "/srv/data", "/data", True),
        ("/srv/data:/data:rw", "/srv/data", "/data", False),
        ("  /srv/data : /data : ro ", "/srv/data", "/data", True),
    ],
)
def test_volume_dir_forms(value: str, host: str, container: str, read_only: bool) -> None:
    """DOCKER_VOLUME_DIR_<NAME> is host, host:container or host:container:ro|rw."""
    config = f"DOCKER_VOLUMES = V\nDOCKER_VOLUME_DIR_V = {value}\nDOCKER_MOUNT_VOLUMES = V\n"
    (volume,) = _settings(config).volumes
    assert (volume.host_path, volume.container_path, volume.read_only) == (
        host,
        container,
        read_only,
    )
    assert _options(config).mounts == (Mount(host, container, read_only),)


def test_repeated_volume_names_count_once() -> None:
    """A name listed twice in DOCKER_VOLUMES (in any case) is one volume."""
    settings = _settings("DOCKER_VOLUMES = V, v V\nDOCKER_VOLUME_DIR_V = /v\n")
    assert [volume.name for volume in settings.volumes] == ["V"]


@pytest.mark.parametrize(
    ("config", "knob", "line", "problem"),
    [
        ("DOCKER_VOLUMES = A\n", "DOCKER_VOLUME_DIR_A", 1, "is not set"),
        ("DOCKER_VOLUMES = A\nDOCKER_VOLUME_DIR_A = data\n", "DOCKER_VOLUME_DIR_A", 2, "absolute"),
        ("DOCKER_VOLUMES = A\nDOCKER_VOLUME_DIR_A = /d:d\n", "DOCKER_VOLUME_DIR_A", 2, "absolute"),
        ("DOCKER_VOLUMES = A\nDOCKER_VOLUME_DIR_A = /d:/d:rx\n", "DOCKER_VOLUME_DIR_A", 2, "HOST"),
        (
            "DOCKER_VOLUMES = A\nDOCKER_VOLUME_DIR_A = /d:/d:ro:x\n",
            "DOCKER_VOLUME_DIR_A",
            2,
            "HOST",
        ),
        ("DOCKER_VOLUMES = A\nDOCKER_VOLUME_DIR_A = /d::ro\n", "DOCKER_VOLUME_DIR_A", 2, "HOST"),
        ("DOCKER_VOLUMES = A\nDOCKER_VOLUME_DIR_A = :/d\n", "DOCKER_VOLUME_DIR_A", 2, "HOST"),
        ("DOCKER_VOLUMES = A.B\n", "DOCKER_VOLUMES", 1, "volume name"),
        (
            "DOCKER_VOLUMES = A\nDOCKER_VOLUME_DIR_A = /a\nDOCKER_MOUNT_VOLUMES = A, B\n",
            "DOCKER_MOUNT_VOLUMES",
            3,
            "'B' is not one of DOCKER_VOLUMES",
        ),
        ("DOCKER_MOUNT_VOLUMES = A\n", "DOCKER_MOUNT_VOLUMES", 1, "none configured"),
        (
            "DOCKER_VOLUMES = A\nDOCKER_VOLUME_DIR_A = /a\n"
            "DOCKER_VOLUME_DIR_A_MOUNT_IF = Owner ==\n",
            "DOCKER_VOLUME_DIR_A_MOUNT_IF",
            3,
            "not a ClassAd expression",
        ),
        ("DOCKER_IMAGE_CACHE_SIZE = 0\n", "DOCKER_IMAGE_CACHE_SIZE", 1, "1 or more"),
        ("DOCKER_IMAGE_CACHE_SIZE = -3\n", "DOCKER_IMAGE_CACHE_SIZE", 1, "1 or more"),
        ("DOCKER_IMAGE_CACHE_SIZE = many\n", "DOCKER_IMAGE_CACHE_SIZE", 1, "whole number"),
        ("DOCKER_IMAGE_CACHE_SIZE = 2.5\n", "DOCKER_IMAGE_CACHE_SIZE", 1, "whole number"),
        ("DOCKER_IMAGE_CACHE_SIZE = true\n", "DOCKER_IMAGE_CACHE_SIZE", 1, "whole number"),
        ("DOCKER_IMAGE_CACHE_SIZE = 8 +\n", "DOCKER_IMAGE_CACHE_SIZE", 1, "whole number"),
        ("\nDOCKER_DROP_ALL_CAPABILITIES = (\n", "DOCKER_DROP_ALL_CAPABILITIES", 2, "ClassAd"),
        ("DOCKER_SHM_SIZE = Memory *\n", "DOCKER_SHM_SIZE", 1, "not a ClassAd expression"),
        ("DOCKER_NETWORKS = ok, -bad\n", "DOCKER_NETWORKS", 1, "'-bad' is not a docker network"),
    ],
)
def test_setting_errors_name_the_knob_and_its_line(
    config: str, knob: str, line: int, problem: str
) -> None:
    """Each unusable docker knob is a DockerSettingsError naming it, at its file and line."""
    with pytest.raises(DockerSettingsError) as caught:
        _settings(config)
    error = caught.value
    assert isinstance(error, ConfigError)
    assert (error.source, error.line) == ("<string>", line)
    assert str(error).startswith(f"<string>, line {line}: ")
    assert knob in str(error)
    assert problem in str(error)


def test_extra_argument_errors_carry_the_knob_location() -> None:
    """A bad DOCKER_EXTRA_ARGUMENTS is a DockerArgumentError located at the knob's line."""
    config = "DOCKER_NETWORKS = vpn\n\nDOCKER_EXTRA_ARGUMENTS = --cap-add X --user root\n"
    with pytest.raises(DockerArgumentError) as caught:
        _settings(config)
    assert (caught.value.source, caught.value.line) == ("<string>", 3)
    assert "DOCKER_EXTRA_ARGUMENTS" in str(caught.value)
    assert "--user" in str(caught.value)


def test_extra_arguments_are_read_from_the_expanded_knob() -> None:
    """DOCKER_EXTRA_ARGUMENTS is macro-expanded before it is split into words."""
    config = "CAP = SYS_PTRACE\nDOCKER_EXTRA_ARGUMENTS = --cap-add $(CAP) -e 'A=b c'\n"
    expected = parse_extra_arguments("--cap-add SYS_PTRACE -e 'A=b c'")
    assert _settings(config).extra == expected


@pytest.mark.parametrize(
    ("value", "size"),
    [("1", 1), ("20", 20), (" 3 ", 3), ("4 * 2", 8), ("$(BASE) + 1", 5)],
)
def test_image_cache_size(value: str, size: int) -> None:
    """DOCKER_IMAGE_CACHE_SIZE is a whole number of images, expressions and macros allowed."""
    assert _settings(f"BASE = 4\nDOCKER_IMAGE_CACHE_SIZE = {value}\n").image_cache_size == size


@pytest.mark.parametrize(
    ("expression", "job", "dropped", "warned"),
    [
        ("true", "[]", True, False),
        ("false", "[]", False, False),
        ("FALSE", "[]", False, False),
        ('TARGET.Owner != "root"', '[ Owner = "alice" ]', True, False),
        ('TARGET.Owner != "trusted"', '[ Owner = "trusted" ]', False, False),
        ("MY.Cpus < 2", "[]", False, False),
        ("WantCapabilities =!= true", "[ WantCapabilities = true ]", False, False),
        ("NoSuchAttribute", "[]", True, True),
        ("1/0", "[]", True, True),
        ("0", "[]", True, True),
        ('"false"', "[]", True, True),
    ],
)
def test_drop_all_capabilities(expression: str, job: str, dropped: bool, warned: bool) -> None:
    """Only a FALSE DOCKER_DROP_ALL_CAPABILITIES keeps capabilities; anything not boolean drops
    them and warns."""
    options = _options(f"DOCKER_DROP_ALL_CAPABILITIES = {expression}\n", job)
    assert options.drop_all_capabilities is dropped
    assert len(options.warnings) == int(warned)
    if warned:
        assert "DOCKER_DROP_ALL_CAPABILITIES" in options.warnings[0]
        assert expression.replace(" ", "") in options.warnings[0].replace(" ", "")


@pytest.mark.parametrize(
    ("config", "machine", "job", "size"),
    [
        (SEED_SHM_HALF_MEMORY, "[ Memory = 2048 ]", "[]", 1 << 30),
        (SEED_SHM_HALF_MEMORY, "[ Memory = 3 ]", "[]", 1572864),
        (SEED_SHM_USER_VALUE, "[ Memory = 2048 ]", "[]", 2 << 30),
        (SEED_SHM_USER_VALUE, "[ Memory = 2048 ]", "[ DevShmSize = 1048576 ]", 1 << 20),
        (SEED_SHM_USER_VALUE, "[ Memory = 1 ]", "[ DevShmSize = 1048577 ]", 2 << 30),
        (SEED_SHM_USER_VALUE, "[ Memory = 2048 ]", '[ DevShmSize = "1m" ]', 2 << 30),
        ("DOCKER_SHM_SIZE = 1000.9", "[]", "[]", 1000),
        ("DOCKER_SHM_SIZE = 0", "[]", "[]", 0),
        ("DOCKER_SHM_SIZE = TARGET.RequestMemory * 1024", "[]", "[ RequestMemory = 2 ]", 2048),
    ],
)
def test_shm_size(config: str, machine: str, job: str, size: int) -> None:
    """DOCKER_SHM_SIZE, including the seed's two examples verbatim, gives bytes for the job."""
    options = _options(config, job, parse_ad(machine))
    assert (options.shm_size, options.warnings) == (size, ())


@pytest.mark.parametrize(
    "expression", ["-1", "NoSuchAttribute", "1/0", '"64m"', "true", "{1, 2}", "-0.5"]
)
def test_an_unusable_shm_size_is_docker_default_with_a_warning(expression: str) -> None:
    """A DOCKER_SHM_SIZE that is not a non-negative number leaves docker's default and warns."""
    options = _options(f"DOCKER_SHM_SIZE = {expression}\n")
    assert options.shm_size is None
    assert len(options.warnings) == 1
    assert "DOCKER_SHM_SIZE" in options.warnings[0]


@pytest.mark.parametrize(
    ("extra", "size", "fallback"),
    [("", None, "docker's default"), ("--shm-size 1k", 1024, "--shm-size")],
)
def test_an_unusable_shm_size_falls_back_and_says_to_what(
    extra: str, size: int | None, fallback: str
) -> None:
    """A bad DOCKER_SHM_SIZE falls back to --shm-size or docker's default, named in the warning."""
    config = f"DOCKER_SHM_SIZE = -1\nDOCKER_EXTRA_ARGUMENTS = {extra}\n"
    options = _options(config)
    assert options.shm_size == size
    (warning,) = options.warnings
    assert fallback in warning


@pytest.mark.parametrize(
    ("config", "size"),
    [
        ("DOCKER_EXTRA_ARGUMENTS = --shm-size 64m\n", 64 << 20),
        ("DOCKER_EXTRA_ARGUMENTS = --shm-size 64m\nDOCKER_SHM_SIZE = 1024\n", 1024),
        ("", None),
    ],
)
def test_shm_size_falls_back_to_extra_arguments(config: str, size: int | None) -> None:
    """Without DOCKER_SHM_SIZE, --shm-size of DOCKER_EXTRA_ARGUMENTS is the job's size."""
    assert _options(config).shm_size == size


NETWORKS = "DOCKER_NETWORKS = some_virtual_network, another_network\n"


@pytest.mark.parametrize(
    ("job", "network_mode"),
    [
        ("[]", None),
        ('[ DockerNetworkType = "" ]', None),
        ("[ DockerNetworkType = UndefinedThing ]", None),
        ('[ DockerNetworkType = "none" ]', "none"),
        ('[ DockerNetworkType = "host" ]', "host"),
        ('[ DockerNetworkType = "HOST" ]', "host"),
        ('[ DockerNetworkType = "some_virtual_network" ]', "some_virtual_network"),
        ('[ DockerNetworkType = "Another_Network" ]', "another_network"),
        ('[ DockerNetworkType = strcat("another", "_network") ]', "another_network"),
    ],
)
def test_network_type(job: str, network_mode: str | None) -> None:
    """DockerNetworkType picks none, host or an offered network, in the admin's spelling."""
    assert _options(NETWORKS, job).network_mode == network_mode


@pytest.mark.parametrize(
    ("config", "job", "shown"),
    [
        (NETWORKS, '[ DockerNetworkType = "bridge" ]', "'bridge'"),
        ("", '[ DockerNetworkType = "some_virtual_network" ]', "'some_virtual_network'"),
        (NETWORKS, "[ DockerNetworkType = 5 ]", "5"),
        (NETWORKS, "[ DockerNetworkType = 1/0 ]", "ERROR"),
    ],
)
def test_an_unoffered_network_holds_the_job(config: str, job: str, shown: str) -> None:
    """A DockerNetworkType the machine does not offer is a JobSetupError with hold code 6."""
    with pytest.raises(JobSetupError) as caught:
        _options(config, job)
    assert caught.value.hold_code == 6
    message = str(caught.value)
    assert "DockerNetworkType" in message
    assert shown in message
    assert "none, host" in message
    if config:
        assert "some_virtual_network, another_network" in message


def test_networks_are_advertised_in_the_admins_spelling() -> None:
    """DockerNetworks lists DOCKER_NETWORKS once each, comma separated, as written."""
    settings = _settings("DOCKER_NETWORKS = VPN, lab vpn\n")
    assert settings.networks == ("VPN", "lab")
    assert machine_attributes(settings) == [MachineAttribute("DockerNetworks", "VPN,lab")]
