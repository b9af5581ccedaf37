"""Submit snippets to job attributes: the commands condor_submit users write."""

from __future__ import annotations

import pytest
from submit_support import NOW, SUBMIT_DIR, Builder

from epcore.classad import UNDEFINED, parse_expr
from epcore.config import Config, MemoryHost

EXE = "executable = /bin/true\n"

# (snippet without executable/queue, attribute, expected evaluated value)
ATTRIBUTE_CASES = [
    ("", "MyType", "Job"),
    ("", "TargetType", "Machine"),
    ("", "Owner", "alice"),
    ("", "User", "alice@example.org"),
    ("", "QDate", NOW),
    ("", "EnteredCurrentStatus", NOW),
    ("", "JobStatus", 1),
    ("", "JobUniverse", 5),
    ("", "ClusterId", 12),
    ("", "ProcId", 0),
    ("", "Cmd", "/bin/true"),
    ("", "Iwd", SUBMIT_DIR),
    ("", "In", "/dev/null"),
    ("", "Out", "/dev/null"),
    ("", "Err", "/dev/null"),
    ("", "Arguments", ""),
    ("", "Environment", ""),
    ("", "RequestCpus", 1),
    ("", "RequestMemory", 128),
    ("", "JobPrio", 0),
    ("", "Rank", 0.0),
    ("", "OnExitRemove", True),
    ("", "OnExitHold", False),
    ("", "PeriodicHold", False),
    ("", "PeriodicRemove", False),
    ("", "PeriodicRelease", False),
    ("", "JobNotification", 0),
    ("", "JobLeaseDuration", 2400),
    ("", "ShouldTransferFiles", "IF_NEEDED"),
    ("", "WhenToTransferOutput", "ON_EXIT"),
    ("", "ExecutableSize", 2),
    ("", "UserLog", UNDEFINED),
    ("", "NiceUser", UNDEFINED),
    ("universe = VANILLA", "JobUniverse", 5),
    ("arguments = a b  c", "Arguments", "a b c"),
    ("arguments = \"a 'b c' d\"", "Arguments", "a 'b c' d"),
    ('arguments = "say ""hi"""', "Arguments", 'say "hi"'),
    ("arguments = \"'it''s' x\"", "Arguments", "'it''s' x"),
    ("arguments = it's", "Arguments", "'it''s'"),
    ("environment = A=1;B=two", "Environment", "A=1 B=two"),
    ("environment = \"A=1 B='x y'\"", "Environment", "A=1 B='x y'"),
    ("env = A=1", "Environment", "A=1"),
    ("input = in.txt", "In", "in.txt"),
    ("output = out.$(Cluster).$(Process)", "Out", "out.12.0"),
    ("error = err", "Err", "err"),
    ("log = job.log", "UserLog", f"{SUBMIT_DIR}/job.log"),
    ("log = /tmp/job.log", "UserLog", "/tmp/job.log"),
    ("log = l\nlog_xml = true", "UserLogUseXML", True),
    ("initialdir = run1", "Iwd", f"{SUBMIT_DIR}/run1"),
    ("initialdir = /data", "Iwd", "/data"),
    ("initialdir = /data\nlog = x.log", "UserLog", "/data/x.log"),
    ("request_cpus = 4", "RequestCpus", 4),
    ("request_memory = 2048", "RequestMemory", 2048),
    ("request_memory = 2G", "RequestMemory", 2048),
    ("request_memory = 2 GB", "RequestMemory", 2048),
    ("request_memory = 1.5g", "RequestMemory", 1536),
    ("request_memory = 512K", "RequestMemory", 1),
    ("request_memory = 1T", "RequestMemory", 1048576),
    ("request_memory = 100MB", "RequestMemory", 100),
    ("request_disk = 1G", "RequestDisk", 1048576),
    ("request_disk = 2048", "RequestDisk", 2048),
    ("request_disk = 3 MB", "RequestDisk", 3072),
    ("request_disk = 10KB", "RequestDisk", 10),
    ("request_gpus = 2", "RequestGPUs", 2),
    ("request_FooBar = 3", "RequestFooBar", 3),
    ("RequestMemory = 64", "RequestMemory", 64),
    ("priority = 7", "JobPrio", 7),
    ("priority = -3", "JobPrio", -3),
    ("hold = true", "JobStatus", 5),
    ("hold = true", "HoldReason", "submitted on hold"),
    ("hold = true", "HoldReasonCode", 15),
    ("hold = false", "JobStatus", 1),
    ("nice_user = true", "NiceUser", True),
    ("nice_user = true", "AccountingGroup", "nice-user.alice"),
    ("accounting_group = physics", "AcctGroup", "physics"),
    ("accounting_group = physics", "AcctGroupUser", "alice"),
    ("accounting_group = physics", "AccountingGroup", "physics.alice"),
    ("accounting_group = g\naccounting_group_user = bob", "AccountingGroup", "g.bob"),
    ("accounting_group_user = bob", "AcctGroupUser", "bob"),
    ("concurrency_limits = Zeta, alpha:2  Beta", "ConcurrencyLimits", "alpha:2,beta,zeta"),
    ('concurrency_limits_expr = strcat("a", "b")', "ConcurrencyLimits", "ab"),
    ("on_exit_hold = ExitCode != 0", "OnExitHold", UNDEFINED),
    ("periodic_remove = true", "PeriodicRemove", True),
    ("notification = Complete", "JobNotification", 2),
    ("notification = always", "JobNotification", 1),
    ("notification = error", "JobNotification", 3),
    ("notify_user = a@b", "NotifyUser", "a@b"),
    ("should_transfer_files = yes", "ShouldTransferFiles", "YES"),
    ("should_transfer_files = NO", "WhenToTransferOutput", UNDEFINED),
    ("when_to_transfer_output = on_exit_or_evict", "WhenToTransferOutput", "ON_EXIT_OR_EVICT"),
    ("transfer_input_files = a, b", "TransferInput", "a, b"),
    ("transfer_executable = false", "TransferExecutable", False),
    ("rank = Memory", "Rank", UNDEFINED),
    ('+Project = "astro"', "Project", "astro"),
    ("+Weight = 2 * 3", "Weight", 6),
    ("My.Weight = 5", "Weight", 5),
    ('+Tag = "p$(Process)"', "Tag", "p0"),
    ('+Memo = "$$(Memory)"', "Memo", "$$(Memory)"),
    ("universe = docker\ndocker_image = debian:12", "WantDocker", True),
    ("universe = docker\ndocker_image = debian:12", "DockerImage", "debian:12"),
    ("universe = docker\ndocker_image = debian:12", "JobUniverse", 5),
    ("universe = container\ncontainer_image = /img/os.sif", "WantContainer", True),
    ("universe = container\ncontainer_image = /img/os.sif", "WantSIF", True),
    ("universe = container\ncontainer_image = /img/os.sif", "ContainerImage", "/img/os.sif"),
    ("universe = container\ncontainer_image = /img/os.sif", "JobUniverse", 5),
    ("universe = container\ncontainer_image = /img/root/", "WantSandboxImage", True),
    ("universe = container\ncontainer_image = docker://a/b:1", "WantDockerImage", True),
    ("container_image = /img/os.sif", "WantContainer", True),
    ("container_image = x.sif\ncontainer_target_dir = /srv", "ContainerTargetDir", "/srv"),
    ("container_image = x.sif\nmount_under_scratch = /scratch", "MountUnderScratch", "/scratch"),
    ("universe = vm\nvm_type = kvm\nvm_memory = 512\nvm_disk = a:vda:r", "JobUniverse", 13),
    ("universe = vm\nvm_type = KVM\nvm_memory = 512\nvm_disk = a:vda:r", "JobVMType", "kvm"),
    ("universe = vm\nvm_type = kvm\nvm_memory = 512\nvm_disk = a:vda:r", "JobVMMemory", 512),
    ("kill_sig = SIGINT", "KillSig", "SIGINT"),
    ("batch_name = nightly", "JobBatchName", "nightly"),
    ('batch_name = "quoted name"', "JobBatchName", "quoted name"),
    ("description = my job", "JobDescription", "my job"),
    ("allowed_job_duration = 3600", "AllowedJobDuration", 3600),
    ("job_lease_duration = 60", "JobLeaseDuration", 60),
    ("leave_in_queue = true", "LeaveJobInQueue", True),
    ("coresize = 0", "CoreSize", 0),
    ("run_as_owner = false", "RunAsOwner", False),
    ('transfer_output_remaps = "a = b"', "TransferOutputRemaps", "a = b"),
    ("X = 4\nrequest_cpus = $(X)", "RequestCpus", 4),
    ("X = 4\nrequest_cpus = $(Y:2)", "RequestCpus", 2),
    ("N = 1\nN = $(N)0\nrequest_cpus = $(N)", "RequestCpus", 10),
]


@pytest.mark.parametrize(("snippet", "attribute", "expected"), ATTRIBUTE_CASES)
def test_command_sets_attribute(
    build: Builder, snippet: str, attribute: str, expected: object
) -> None:
    """Each submit command yields the job attribute and value condor_submit produces."""
    cluster = build(f"{EXE}{snippet}\nqueue\n")
    assert cluster.procs[0].evaluate(attribute) == expected


# (snippet, attribute, expected unparsed expression)
EXPRESSION_CASES = [
    ("", "RequestDisk", "MAX({ 1024,(TransferInputSizeMB + 1) * 1.25 }) * 1024"),
    ("on_exit_hold = ExitCode != 0", "OnExitHold", "ExitCode != 0"),
    ("rank = Memory", "Rank", "Memory"),
    ("request_memory = ifThenElse(a, 1, 2)", "RequestMemory", "ifThenElse(a,1,2)"),
]


@pytest.mark.parametrize(("snippet", "attribute", "expected"), EXPRESSION_CASES)
def test_expression_attributes_keep_their_expression(
    build: Builder, snippet: str, attribute: str, expected: str
) -> None:
    """Expression-valued commands and defaults are stored as expressions, not values."""
    ad = build(f"{EXE}{snippet}\nqueue\n").procs[0]
    assert ad[attribute] == parse_expr(expected)


ARCH_OS = '(TARGET.Arch == "X86_64") && (TARGET.OpSys == "LINUX")'
RESOURCES = "(TARGET.Disk >= RequestDisk) && (TARGET.Memory >= RequestMemory)"
IF_NEEDED = "((TARGET.FileSystemDomain == MY.FileSystemDomain) || (TARGET.HasFileTransfer))"

#: A docker job, for the docker_network_type cases.
DOCKER_X = "universe = docker\ndocker_image = x\n"

REQUIREMENT_CASES = [
    ("", f"{ARCH_OS} && {RESOURCES} && {IF_NEEDED}"),
    ("should_transfer_files = YES", f"{ARCH_OS} && {RESOURCES} && (TARGET.HasFileTransfer)"),
    (
        "should_transfer_files = NO",
        f"{ARCH_OS} && {RESOURCES} && (TARGET.FileSystemDomain == MY.FileSystemDomain)",
    ),
    (
        "requirements = HasFoo\nshould_transfer_files = YES",
        f"(HasFoo) && {ARCH_OS} && {RESOURCES} && (TARGET.HasFileTransfer)",
    ),
    (
        "requirements = Memory > 9\nshould_transfer_files = YES",
        f"(Memory > 9) && {ARCH_OS} && (TARGET.Disk >= RequestDisk) && (TARGET.HasFileTransfer)",
    ),
    (
        'requirements = TARGET.OpSys == "WINDOWS"\nshould_transfer_files = YES',
        '(TARGET.OpSys == "WINDOWS") && (TARGET.Arch == "X86_64") && '
        f"{RESOURCES} && (TARGET.HasFileTransfer)",
    ),
    (
        "request_cpus = 2\nrequest_gpus = 1\nshould_transfer_files = YES",
        f"{ARCH_OS} && {RESOURCES} && (TARGET.Cpus >= RequestCpus) && "
        "(TARGET.GPUs >= RequestGPUs) && (TARGET.HasFileTransfer)",
    ),
    (
        "request_Licenses = 1\nshould_transfer_files = YES",
        f"{ARCH_OS} && {RESOURCES} && (TARGET.Licenses >= RequestLicenses) && "
        "(TARGET.HasFileTransfer)",
    ),
    (
        "universe = docker\ndocker_image = x\nshould_transfer_files = YES",
        f"{ARCH_OS} && (TARGET.HasDocker) && {RESOURCES} && (TARGET.HasFileTransfer)",
    ),
    (
        "universe = container\ncontainer_image = /i.sif\nshould_transfer_files = YES",
        f"{ARCH_OS} && (TARGET.HasContainer) && (TARGET.HasSIF) && {RESOURCES} && "
        "(TARGET.HasFileTransfer)",
    ),
    (
        "universe = container\ncontainer_image = /i/\nshould_transfer_files = YES",
        f"{ARCH_OS} && (TARGET.HasContainer) && (TARGET.HasSandboxImage) && {RESOURCES} && "
        "(TARGET.HasFileTransfer)",
    ),
    (
        "container_image = docker://r/i:1\nshould_transfer_files = YES",
        f"{ARCH_OS} && (TARGET.HasContainer) && (TARGET.HasDockerURL) && {RESOURCES} && "
        "(TARGET.HasFileTransfer)",
    ),
    (
        "container_image = /i.sif\nrequirements = HasSIF\nshould_transfer_files = YES",
        f"(HasSIF) && {ARCH_OS} && (TARGET.HasContainer) && {RESOURCES} && "
        "(TARGET.HasFileTransfer)",
    ),
    (
        f"{DOCKER_X}docker_network_type = host\nshould_transfer_files = YES",
        f"{ARCH_OS} && (TARGET.HasDocker) && {RESOURCES} && (TARGET.HasFileTransfer)",
    ),
    (
        f"{DOCKER_X}docker_network_type = NONE\nshould_transfer_files = YES",
        f"{ARCH_OS} && (TARGET.HasDocker) && {RESOURCES} && (TARGET.HasFileTransfer)",
    ),
    (
        f"{DOCKER_X}docker_network_type = vpn\nshould_transfer_files = YES",
        f'{ARCH_OS} && (TARGET.HasDocker) && stringListIMember("vpn",TARGET.DockerNetworks)'
        f" && {RESOURCES} && (TARGET.HasFileTransfer)",
    ),
    (
        f'{DOCKER_X}docker_network_type = a"b\nshould_transfer_files = YES',
        f"{ARCH_OS} && (TARGET.HasDocker) && "
        'stringListIMember("a\\"b",TARGET.DockerNetworks)'
        f" && {RESOURCES} && (TARGET.HasFileTransfer)",
    ),
]


@pytest.mark.parametrize(("snippet", "expected"), REQUIREMENT_CASES)
def test_requirements_get_condor_submit_defaults(
    build: Builder, snippet: str, expected: str
) -> None:
    """The user's requirements are ANDed with the clauses condor_submit adds, minus those the
    user's expression already covers."""
    ad = build(f"{EXE}{snippet}\nqueue\n").procs[0]
    assert str(ad["Requirements"]) == expected


def test_vm_requirements_ask_for_a_vm_slot(build: Builder) -> None:
    """A vm job requires a slot with HasVM, the right VM_Type and enough VM memory."""
    text = "universe = vm\nvm_type = kvm\nvm_memory = 512\nvm_disk = a:vda:r\nqueue\n"
    requirements = str(build(text).procs[0]["Requirements"])
    assert '(TARGET.VM_Type == "kvm")' in requirements
    assert "(TARGET.HasVM)" in requirements


def test_getenv_copies_the_submitters_environment(build: Builder) -> None:
    """getenv = true copies the context's environment; the environment command wins."""
    text = f"{EXE}getenv = true\nenvironment = B=mine\nqueue\n"
    ad = build(text, environ={"A": "1", "B": "theirs"}).procs[0]
    assert ad.evaluate("Environment") == "A=1 B=mine"


def test_getenv_list_selects_variables(build: Builder) -> None:
    """getenv with names and wildcards copies only the matching variables."""
    text = f"{EXE}getenv = PATH, LC_*\nqueue\n"
    ad = build(text, environ={"PATH": "/bin", "LC_ALL": "C", "HOME": "/h"}).procs[0]
    assert ad.evaluate("Environment") == "LC_ALL=C PATH=/bin"


def test_env_macro_reads_the_context_environment(build: Builder) -> None:
    """$ENV(NAME) reads the context's environment, not the process's."""
    ad = build(f"{EXE}arguments = $ENV(WHO)\nqueue\n", environ={"WHO": "me"}).procs[0]
    assert ad.evaluate("Arguments") == "me"


def test_relative_executable_is_made_absolute_against_iwd(build: Builder) -> None:
    """A relative executable is found and stored under the initial directory."""
    ad = build("executable = run.sh\nqueue\n", files={"run.sh": "#!/bin/sh\n"}).procs[0]
    assert ad.evaluate("Cmd") == f"{SUBMIT_DIR}/run.sh"


def test_transfer_input_size_counts_input_files(build: Builder) -> None:
    """TransferInputSizeMB sums the executable and input files the host reports, rounded up."""
    files = {"big": "z" * (3 * 1024 * 1024)}
    ad = build(f"{EXE}transfer_input_files = big\nqueue\n", files=files).procs[0]
    assert ad.evaluate("TransferInputSizeMB") == 4


def test_job_defaults_come_from_the_configuration(build: Builder) -> None:
    """JOB_DEFAULT_REQUESTCPUS/MEMORY and JOB_DEFAULT_LEASE_DURATION are used when not given."""
    text = (
        "UID_DOMAIN = d\nJOB_DEFAULT_REQUESTCPUS = 2\nJOB_DEFAULT_REQUESTMEMORY = 300\n"
        "JOB_DEFAULT_LEASE_DURATION = 60\n"
    )
    config = Config.from_text(text, host=MemoryHost())
    ad = build(f"{EXE}queue\n", config=config).procs[0]
    assert (ad.evaluate("RequestCpus"), ad.evaluate("RequestMemory")) == (2, 300)
    assert ad.evaluate("JobLeaseDuration") == 60
    assert ad.evaluate("User") == "alice@d"
