"""HTCondor's built-in defaults for the knobs epcore knows, as one documented table.

Each entry is the raw default text exactly as HTCondor 25.14.1 stores it on Linux (macros
unexpanded, so that overriding ``LOCAL_DIR`` moves ``SPOOL`` as it does in HTCondor), the kind
HTCondor reads it as, and a sentence on what the knob does. ``default=None`` documents a knob
HTCondor has no table default for (many are set only by ``use`` templates, or are examples
from the manual): ``Config.get`` returns None for it until a configuration sets it. A knob that
HTCondor does not declare a type for has kind ``"string"``. Names are unique when compared
without regard to case, as HTCondor compares them.

Values that are detected from the machine (``DETECTED_CORES``, ``FULL_HOSTNAME``, ``OPSYS``,
...) are not here: they come from the host object (see ``epcore.config.host``) and are named in
``DETECTED_KNOBS``. Defaults that HTCondor's daemons apply in code rather than in the
configuration table (for example the startd's ``MEMORY`` = detected memory) are listed in
``epcore.config.code_defaults``.
"""

from __future__ import annotations

from typing import Literal

import attrs

KnobKind = Literal["string", "path", "int", "long", "double", "bool"]


@attrs.frozen
class KnobDefault:
    """One knob of the default table.

    ``name`` may carry a subsystem prefix (``STARTD.IsStartd``) when HTCondor's default
    differs for that subsystem; the prefixed entry wins for lookups made as that subsystem.

    ``minimum`` and ``maximum`` are the bounds HTCondor forces a typed read of the knob into:
    a configured number below ``minimum`` is read as ``minimum``, one above ``maximum`` as
    ``maximum``. None means that side is open. Only ``int`` knobs carry bounds: HTCondor
    25.14.1 declares ranges for a few ``double`` knobs too, but its typed read of a double
    ignores them, so they are left out. An ``int`` knob is also held to 32 bits, and that
    comes first: a number that does not fit becomes -2147483648 or 2147483647 whatever the
    bounds (``COLLECTOR_PORT = 99999999999`` reads as 2147483647, not 65535); only a number
    that fits is then moved into the bounds. A declared upper bound of 2147483647 adds nothing
    to the 32-bit limit and is recorded as None.
    """

    name: str
    default: str | None
    kind: KnobKind
    doc: str
    minimum: float | None = None
    maximum: float | None = None


def _k(
    name: str,
    default: str | None,
    kind: KnobKind,
    doc: str,
    *,
    minimum: float | None = None,
    maximum: float | None = None,
) -> KnobDefault:
    return KnobDefault(
        name=name, default=default, kind=kind, doc=doc, minimum=minimum, maximum=maximum
    )


KNOB_DEFAULTS: tuple[KnobDefault, ...] = (
    _k(
        "ABSENT_EXPIRE_ADS_AFTER",
        None,
        "string",
        (
            "How many seconds the collector retains a machine ad it has marked absent (0 keeps it "
            "forever)."
        ),
    ),
    _k(
        "ABSENT_REQUIREMENTS",
        None,
        "string",
        (
            "Expression the collector evaluates on an expiring machine ad; when true the ad is "
            "kept as absent instead of dropped."
        ),
    ),
    _k(
        "ACCOUNTANT_DATABASE_FILE",
        "$(SPOOL)/Accountantnew.log",
        "path",
        "File in which the negotiator's accountant persists usage and priority records.",
    ),
    _k(
        "ACCOUNTANT_HOST",
        None,
        "string",
        "Host of a remote accountant to use instead of the negotiator's own.",
    ),
    _k(
        "ACCOUNTANT_LOCAL_DOMAIN",
        None,
        "string",
        (
            "Domain treated as local by the accountant; submitters outside it receive "
            "REMOTE_PRIO_FACTOR."
        ),
    ),
    _k(
        "ActivationTimer",
        None,
        "string",
        (
            "Policy helper: seconds the current job has been running here (supplied by the policy "
            "templates, no built-in value)."
        ),
    ),
    _k(
        "ActivityTimer",
        "(time() - EnteredCurrentActivity)",
        "string",
        "Policy helper expression: seconds the slot has spent in its current activity.",
    ),
    _k(
        "AfterHours",
        None,
        "string",
        "Example time-of-day policy helper from the manual; HTCondor defines no value for it.",
    ),
    _k(
        "AGGRESSIVE_CLEANUP_REMINDER",
        None,
        "bool",
        "When true the startd retries what a job left at every tick of its timer (default false).",
    ),
    _k(
        "ALIVE_INTERVAL",
        "300",
        "int",
        "Initial seconds between the schedd's keep-alive messages to a claimed startd.",
    ),
    _k(
        "ALLOW_PSLOT_PREEMPTION",
        None,
        "string",
        (
            "When true the negotiator may preempt a partitionable slot's dynamic slots as one "
            "group; unset by default."
        ),
    ),
    _k("ALL_DEBUG", None, "string", "Debug categories added to the log of every daemon."),
    _k("APPEND_RANK", None, "string", "Expression condor_submit appends to every job's Rank."),
    _k(
        "APPEND_REQUIREMENTS",
        None,
        "string",
        "Expression condor_submit ANDs onto every job's Requirements.",
    ),
    _k(
        "ASSIGN_CPU_AFFINITY",
        "false",
        "bool",
        "When true the starter binds each job to the CPU cores assigned to its slot.",
    ),
    _k(
        "BACKFILL_SYSTEM",
        None,
        "string",
        "Name of the backfill system the startd runs on idle slots (only BOINC exists).",
    ),
    _k(
        "BackgroundLoad",
        "0.3",
        "string",
        "Policy helper: non-HTCondor load average below which the CPU counts as idle.",
    ),
    _k(
        "BASE_CGROUP",
        "htcondor",
        "string",
        "Name of the cgroup under which the starter creates one cgroup per job.",
    ),
    _k(
        "BENCHMARKS_JOBLIST",
        "mips kflops",
        "string",
        "Names of the benchmark jobs the startd runs.",
    ),
    _k(
        "BENCHMARKS_KFLOPS_EXECUTABLE",
        "$(LIBEXEC)/condor_kflops",
        "path",
        "Program the startd runs for the kflops floating-point benchmark.",
    ),
    _k(
        "BENCHMARKS_KFLOPS_JOB_LOAD",
        "1.0",
        "string",
        "Load the kflops benchmark counts as while it runs.",
    ),
    _k(
        "BENCHMARKS_MAX_JOB_LOAD",
        "1.0",
        "string",
        "Upper bound on the summed load of benchmark jobs running at once.",
    ),
    _k(
        "BENCHMARKS_MIPS_EXECUTABLE",
        "$(LIBEXEC)/condor_mips",
        "path",
        "Program the startd runs for the mips integer benchmark.",
    ),
    _k(
        "BENCHMARKS_MIPS_JOB_LOAD",
        "1.0",
        "string",
        "Load the mips benchmark counts as while it runs.",
    ),
    _k(
        "BenchmarkTimer",
        "(time() - LastBenchmark)",
        "string",
        "Policy helper expression: seconds since the benchmarks last ran.",
    ),
    _k(
        "BigJob",
        "(TARGET.ImageSize >= (50 * 1024))",
        "string",
        "Policy helper expression: true for jobs whose image size is 50 MiB or more.",
    ),
    _k("BIN", "$(RELEASE_DIR)/bin", "path", "Directory holding HTCondor's user commands."),
    _k(
        "BOINC_Arguments",
        None,
        "string",
        "Arguments passed to the BOINC client when it runs as backfill work; no default.",
    ),
    _k(
        "BOINC_Environment",
        None,
        "string",
        "Environment given to the BOINC backfill client; no default.",
    ),
    _k(
        "BOINC_Error",
        None,
        "string",
        "File receiving the BOINC client's standard error; no default, so it is discarded.",
    ),
    _k(
        "BOINC_Executable",
        None,
        "string",
        "Path of the BOINC client program used for backfill; must be set to use BOINC.",
    ),
    _k(
        "BOINC_HOME",
        None,
        "string",
        "Conventional helper macro naming BOINC's directory in example configurations; no default.",
    ),
    _k(
        "BOINC_InitialDir",
        None,
        "string",
        "Working directory of the BOINC backfill client; must be set to use BOINC.",
    ),
    _k(
        "BOINC_Output",
        None,
        "string",
        "File receiving the BOINC client's standard output; no default, so it is discarded.",
    ),
    _k(
        "BOINC_Owner",
        None,
        "string",
        "Account the BOINC backfill client runs as when the daemons run as root; no default.",
    ),
    _k(
        "BOINC_Universe",
        None,
        "string",
        "Universe of the BOINC backfill job (must be vanilla); no default.",
    ),
    _k(
        "BROKEN_SLOT_CONTEXT_ATTRS",
        "JobId,RemoteUser,RemoteScheddName",
        "string",
        (
            "Job attributes copied into the ad of a slot that has been marked broken, to show "
            "which job broke it."
        ),
    ),
    _k(
        "CATALOG_SPACE",
        (
            "    ifthenelse(\n"
            '        MappingMethod ?: "" != "Copy",\n'
            "        $(SUM_OF_CATALOGS),\n"
            "        0\n"
            ")"
        ),
        "string",
        (
            "Expression for the disk a job's requested catalogs take up, subtracted from its disk "
            "request."
        ),
    ),
    _k(
        "CGROUP_HARD_MEMORY_LIMIT_EXPR",
        None,
        "string",
        (
            "Expression giving a job's hard cgroup memory limit in MB, overriding the policy's "
            "choice when set."
        ),
    ),
    _k(
        "CGROUP_IGNORE_CACHE_MEMORY",
        "true",
        "bool",
        "When true page-cache memory is left out of a job's measured memory usage.",
    ),
    _k(
        "CGROUP_LOW_MEMORY_LIMIT_EXPR",
        None,
        "string",
        "Expression giving a job's cgroup low (protected) memory limit in MB.",
    ),
    _k(
        "CGROUP_MEMORY_LIMIT_POLICY",
        "hard",
        "string",
        "How the starter sets a job's cgroup memory limits: hard, soft, custom or none.",
    ),
    _k(
        "CGROUP_POLLING_INTERVAL",
        "5",
        "int",
        "Seconds between the starter's reads of a job's cgroup usage counters.",
    ),
    _k(
        "CHIRP_DELAYED_UPDATE_MAX_ATTRS",
        "100",
        "int",
        "Most attributes a job may buffer through delayed Chirp updates.",
        minimum=0,
    ),
    _k(
        "CHIRP_DELAYED_UPDATE_PREFIX",
        "Chirp*",
        "string",
        "Patterns of attribute names a job may set through delayed Chirp updates.",
    ),
    _k(
        "CLAIM_PARTITIONABLE_LEFTOVERS",
        "$(NEGOTIATOR_USE_SLOT_WEIGHTS)",
        "string",
        (
            "When true the schedd may reuse what is left of a partitionable slot's claim for "
            "further jobs."
        ),
    ),
    _k(
        "CLAIM_RECYCLING_CONSIDER_LIMITS",
        "true",
        "bool",
        "When true the schedd respects concurrency limits when reusing a claim for another job.",
    ),
    _k(
        "CLAIM_WORKLIFE",
        "1200",
        "int",
        (
            "Seconds after which a claim accepts no new jobs (-1 means never expire, 0 one job per "
            "claim)."
        ),
    ),
    _k(
        "CLASSAD_LIFETIME",
        None,
        "string",
        (
            "Seconds the collector keeps an ad that receives no update; the default lives in the "
            "collector's code."
        ),
    ),
    _k("COLLECTOR", "$(SBIN)/condor_collector", "path", "Path of the condor_collector program."),
    _k(
        "COLLECTOR_ADDRESS_FILE",
        "$(LOG)/.collector_address",
        "path",
        "File in which the collector writes its contact address.",
    ),
    _k("COLLECTOR_DEBUG", None, "string", "Debug categories for the collector's log."),
    _k(
        "COLLECTOR_HOST",
        "$(CONDOR_HOST)",
        "string",
        "Address (host[:port]) of the pool's collector(s) that daemons report to.",
    ),
    _k(
        "COLLECTOR_HOST_FOR_NEGOTIATOR",
        "$(FULL_HOSTNAME)",
        "string",
        "Collector the negotiator queries, by default the one on its own machine.",
    ),
    _k(
        "COLLECTOR_HOST_STRING",
        '"$(COLLECTOR_HOST)"',
        "string",
        "COLLECTOR_HOST quoted as a ClassAd string, so that slots can publish it.",
    ),
    _k("COLLECTOR_LOG", "$(LOG)/CollectorLog", "path", "Log file of the collector."),
    _k(
        "COLLECTOR_NAME",
        "My Pool - $(CONDOR_HOST)",
        "string",
        "Human-readable name of the pool that the collector advertises.",
    ),
    _k(
        "COLLECTOR_PERSISTENT_AD_LOG",
        None,
        "string",
        (
            "File in which the collector persists offline machine ads across restarts; unset by "
            "default."
        ),
    ),
    _k(
        "COLLECTOR_PORT",
        "9618",
        "int",
        "Port the collector listens on when COLLECTOR_HOST names none.",
        minimum=0,
        maximum=65535,
    ),
    _k(
        "CONCURRENCY_LIMIT_DEFAULT",
        "2308032",
        "int",
        "Limit the negotiator applies to a concurrency-limit name that has no limit of its own.",
    ),
    _k(
        "CONDOR_ADMIN",
        "root@$(FULL_HOSTNAME)",
        "string",
        "E-mail address to which the daemons send problem reports.",
    ),
    _k(
        "CONDOR_HOST",
        None,
        "string",
        "Central manager host, used to build COLLECTOR_HOST; no default.",
    ),
    _k(
        "CONDOR_IDS",
        None,
        "string",
        (
            "uid.gid the daemons run as when started by root; unset means the condor account is "
            "looked up."
        ),
    ),
    _k(
        "CONDOR_SUPPORT_EMAIL",
        None,
        "string",
        "Address given to users in e-mail sent about their jobs.",
    ),
    _k(
        "CONDOR_VERSION",
        "25.14.1",
        "string",
        "HTCondor version string this configuration behaves as.",
    ),
    _k(
        "CONDOR_VIEW_HOST",
        None,
        "string",
        "View server(s) to which the collector forwards the ads it receives.",
    ),
    _k(
        "ConsoleBusy",
        None,
        "string",
        (
            "Policy helper: the console has been used in the last minute (supplied by the policy "
            "templates)."
        ),
    ),
    _k(
        "CONSOLE_DEVICES",
        "mouse, console",
        "string",
        "Devices under /dev whose access times the startd watches for console activity.",
    ),
    _k(
        "CONSUMPTION_CPUS",
        "quantize(target.RequestCpus,{1})",
        "string",
        (
            "Expression for the CPUs a match consumes from a partitionable slot under a "
            "consumption policy."
        ),
    ),
    _k(
        "CONSUMPTION_DISK",
        "quantize(target.RequestDisk,{1024})",
        "string",
        (
            "Expression for the disk a match consumes from a partitionable slot under a "
            "consumption policy."
        ),
    ),
    _k(
        "CONSUMPTION_MEMORY",
        "quantize(target.RequestMemory,{128})",
        "string",
        (
            "Expression for the memory a match consumes from a partitionable slot under a "
            "consumption policy."
        ),
    ),
    _k(
        "CONSUMPTION_POLICY",
        "false",
        "bool",
        (
            "When true partitionable slots are split by the negotiator according to consumption "
            "expressions."
        ),
    ),
    _k(
        "CONTAINER_IMAGES_COMMON_BY_DEFAULT",
        "false",
        "bool",
        "When true, container images are treated as common files shared between jobs by default.",
    ),
    _k(
        "CONTAINER_REGEX_COMMON_BY_DEFAULT",
        None,
        "string",
        "Regular expression selecting container images to treat as common files.",
    ),
    _k(
        "CONTAINER_SHARED_FS",
        "/cvmfs",
        "string",
        "Comma-separated paths of shared file systems the starter can pass into containers.",
    ),
    _k("CONTINUE", "True", "string", "Startd policy: resume a suspended job when true."),
    _k(
        "ContinueIdleTime",
        "5 * $(MINUTE)",
        "string",
        "Policy helper: keyboard idle seconds needed before a suspended job resumes.",
    ),
    _k(
        "CONTINUE_TO_ADVERTISE_BROKEN_DYNAMIC_SLOTS",
        "false",
        "bool",
        "When true dynamic slots marked broken stay in the collector.",
    ),
    _k(
        "CONTINUE_VANILLA",
        None,
        "string",
        "Vanilla-universe override of CONTINUE; unset, so CONTINUE applies.",
    ),
    _k(
        "COUNT_HYPERTHREAD_CPUS",
        "true",
        "bool",
        "When true hyperthreads count as CPUs in the detected core count.",
    ),
    _k(
        "CPUBusy",
        None,
        "string",
        (
            "Policy helper: non-HTCondor load is high (supplied by the policy templates, no "
            "built-in value)."
        ),
    ),
    _k(
        "CPUBusyTime",
        None,
        "string",
        "Policy helper: seconds the CPU has been busy; HTCondor defines no value for it.",
    ),
    _k(
        "CpuBusyTimer",
        None,
        "string",
        (
            "Policy helper: seconds since the latched CpuBusy became true (supplied by the desktop "
            "templates)."
        ),
    ),
    _k(
        "CPUIdle",
        None,
        "string",
        (
            "Policy helper: non-HTCondor load is low (supplied by the policy templates, no "
            "built-in value)."
        ),
    ),
    _k(
        "CPUIsBusy",
        None,
        "string",
        "Manual's name for the value of CPUBusy; HTCondor defines no value for it.",
    ),
    _k(
        "CPU_EXCEEDED",
        None,
        "string",
        "Trigger expression set by the CPU-exceeded policy templates; no default.",
    ),
    _k(
        "CURB_MATCHMAKING",
        (
            "(RecentDaemonCoreDutyCycle > 0.98) || (TransferQueueNumWaitingToUpload > "
            "TransferQueueMaxUploading)"
        ),
        "string",
        (
            "Expression on the schedd's ad; while true the schedd asks the negotiator for no new "
            "matches."
        ),
    ),
    _k("DAEMON_LIST", "MASTER", "string", "Daemons condor_master starts and keeps running."),
    _k(
        "DAEMON_SOCKET_DIR",
        "auto",
        "string",
        "Directory for the daemons' local (Unix-domain) command sockets; auto picks one.",
    ),
    _k(
        "DC_DAEMON_LIST",
        None,
        "string",
        "Daemons in DAEMON_LIST that speak DaemonCore; unset means all standard ones.",
    ),
    _k(
        "DEDICATED_EXECUTE_ACCOUNT_REGEXP",
        None,
        "string",
        (
            "Regular expression naming accounts used only to run jobs, allowing process tracking "
            "by account."
        ),
    ),
    _k(
        "DEFAULT_KILL_CHILDREN_ON_EXIT",
        "true",
        "bool",
        "When true a job's leftover processes are killed when its main process exits.",
    ),
    _k(
        "DEFAULT_PRIO_FACTOR",
        "1000",
        "double",
        "Priority factor given to a submitter seen for the first time.",
    ),
    _k("DEFAULT_RANK", None, "string", "Rank condor_submit gives a job that has none."),
    _k("DEFRAG", "$(LIBEXEC)/condor_defrag", "path", "Path of the condor_defrag program."),
    _k(
        "DEFRAG_CANCEL_REQUIREMENTS",
        "$(DEFRAG_WHOLE_MACHINE_EXPR)",
        "string",
        "Expression on a draining machine; when true condor_defrag cancels the drain.",
    ),
    _k(
        "DEFRAG_DRAINING_MACHINES_PER_HOUR",
        "0",
        "int",
        "Rate at which condor_defrag starts draining machines.",
        minimum=0,
    ),
    _k(
        "DEFRAG_DRAINING_SCHEDULE",
        "graceful",
        "string",
        "How condor_defrag drains machines: graceful, quick or fast.",
    ),
    _k(
        "DEFRAG_DRAINING_START_EXPR",
        "FALSE",
        "string",
        "START expression a machine uses while it drains gracefully.",
    ),
    _k("DEFRAG_INTERVAL", "600", "int", "Seconds between condor_defrag's draining decisions."),
    _k("DEFRAG_LOG", "$(LOG)/DefragLog", "path", "Log file of condor_defrag."),
    _k(
        "DEFRAG_MAX_CONCURRENT_DRAINING",
        "-1",
        "int",
        "Most machines condor_defrag drains at once (-1 means no limit).",
        minimum=-1,
    ),
    _k(
        "DEFRAG_MAX_WHOLE_MACHINES",
        "-1",
        "int",
        "condor_defrag stops draining once this many whole machines exist (-1 means no limit).",
        minimum=-1,
    ),
    _k(
        "DEFRAG_NAME",
        None,
        "string",
        "Name condor_defrag advertises; unset uses the default daemon name.",
    ),
    _k(
        "DEFRAG_RANK",
        "-ExpectedMachineGracefulDrainingBadput",
        "string",
        "Expression condor_defrag uses to pick which machines to drain first.",
    ),
    _k(
        "DEFRAG_REQUIREMENTS",
        None,
        "string",
        "Expression selecting the machines condor_defrag may drain.",
    ),
    _k(
        "DEFRAG_UPDATE_INTERVAL",
        "300",
        "int",
        "Seconds between condor_defrag's ad updates to the collector.",
    ),
    _k(
        "DEFRAG_WHOLE_MACHINE_EXPR",
        "Cpus == TotalSlotCpus",
        "string",
        "Expression that is true for a machine counted as whole (fully unclaimed).",
    ),
    _k(
        "DISABLE_EXECUTE_DIRECTORY_ENCRYPTION",
        "false",
        "bool",
        "When true jobs may not ask for an encrypted scratch directory.",
    ),
    _k("DISABLE_SWAP_FOR_JOB", "true", "bool", "When true a job's cgroup may not use swap space."),
    _k(
        "DISCONNECTED_KEYBOARD_IDLE_BOOST",
        "1200",
        "int",
        "Seconds added to KeyboardIdle of slots not connected to the keyboard.",
    ),
    _k(
        "DISK_EXCEEDED",
        None,
        "string",
        "Trigger expression set by the disk-exceeded policy templates; no default.",
    ),
    _k(
        "DOCKER",
        "/usr/bin/docker",
        "string",
        "Path of the docker command the starter uses for docker-universe jobs.",
    ),
    _k(
        "DOCKER_CACHE_ADVERTISE_INTERVAL",
        "1200",
        "int",
        "Seconds between the startd's reports of its cached docker images.",
    ),
    _k(
        "DOCKER_DROP_ALL_CAPABILITIES",
        "true",
        "bool",
        "Expression; when true containers start with all Linux capabilities dropped.",
    ),
    _k(
        "DOCKER_EXTRA_ARGUMENTS",
        None,
        "string",
        "Extra arguments added to the docker create command line.",
    ),
    _k(
        "DOCKER_IMAGE_CACHE_SIZE",
        "8",
        "int",
        "Number of recently used docker images the startd keeps.",
    ),
    _k(
        "DOCKER_LOG_DRIVER_NAME",
        "true",
        "bool",
        "Docker log-driver setting the starter uses when it creates job containers.",
    ),
    _k(
        "DOCKER_MOUNT_VOLUMES",
        None,
        "string",
        "Names of the DOCKER_VOLUMES that are mounted into every container.",
    ),
    _k("DOCKER_NETWORKS", None, "string", "Extra docker networks the machine offers to jobs."),
    _k(
        "DOCKER_PAT_PRODUCER",
        "$(SBIN)/condor_docker_pat_producer",
        "string",
        "Helper program that produces personal access tokens for docker registries.",
    ),
    _k(
        "DOCKER_PERFORM_TEST",
        "true",
        "bool",
        "When true the startd test-runs a container before advertising docker support.",
    ),
    _k(
        "DOCKER_RUN_UNDER_INIT",
        "true",
        "bool",
        "When true containers run with an init process as PID 1.",
    ),
    _k(
        "DOCKER_SHM_SIZE",
        None,
        "string",
        "Expression giving the shared-memory size in bytes for a container; unset by default.",
    ),
    _k(
        "DOCKER_SKIP_IMAGE_ARCH_CHECK",
        "false",
        "bool",
        "When true the image's CPU architecture is not checked against the machine's.",
    ),
    _k(
        "DOCKER_TEST_IMAGE_NAME",
        "htcondor_docker_test",
        "string",
        "Name of the image used for the startd's docker self test.",
    ),
    _k(
        "DOCKER_TEST_IMAGE_PATH",
        "$(LIBEXEC)/htcondor_docker_test",
        "string",
        "File holding the image used for the startd's docker self test.",
    ),
    _k(
        "DOCKER_TRUST_LOCAL_IMAGES",
        "false",
        "bool",
        "When true images already present locally are used without pulling them.",
    ),
    _k(
        "DOCKER_VOLUMES",
        None,
        "string",
        "Names of host directories that may be mounted into docker containers.",
    ),
    _k(
        "EMAIL_DOMAIN",
        None,
        "string",
        "Domain appended to user names when HTCondor e-mails job owners.",
    ),
    _k("ENABLE_BACKFILL", "false", "bool", "When true idle slots may run backfill work."),
    _k(
        "ENABLE_CHIRP",
        "true",
        "bool",
        "When true jobs may use the Chirp protocol to talk to the starter.",
    ),
    _k(
        "ENABLE_CHIRP_DELAYED",
        "true",
        "bool",
        "When true jobs may send delayed (batched) Chirp attribute updates.",
    ),
    _k("ENABLE_CHIRP_IO", "true", "bool", "When true jobs may do remote file I/O through Chirp."),
    _k(
        "ENABLE_CHIRP_UPDATES",
        "true",
        "bool",
        "When true jobs may update their own job ad through Chirp.",
    ),
    _k(
        "ENABLE_CLAIMABLE_PARTITIONABLE_SLOTS",
        "false",
        "bool",
        "When true a partitionable slot itself can be claimed as a whole.",
    ),
    _k(
        "ENABLE_CLASSAD_CACHING",
        "true",
        "bool",
        "When true identical ClassAd expressions are shared in memory.",
    ),
    _k(
        "ENABLE_MULTIFILE_TRANSFER_PLUGINS",
        "true",
        "bool",
        "When true file-transfer plugins may move several files per invocation.",
    ),
    _k(
        "ENABLE_SSH_TO_JOB",
        "true",
        "bool",
        "When true users may condor_ssh_to_job into running jobs.",
    ),
    _k(
        "ENABLE_URL_TRANSFERS",
        "true",
        "bool",
        "When true the starter may transfer files named by URLs through plugins.",
    ),
    _k(
        "ENCRYPT_EXECUTE_DIRECTORY",
        "false",
        "bool",
        "When true every job's scratch directory is encrypted.",
    ),
    _k(
        "ENVIRONMENT_FOR_AssignedGPUs",
        "GPU_DEVICE_ORDINAL=/(CUDA|OCL)//  CUDA_VISIBLE_DEVICES=/CUDA//",
        "string",
        (
            "Environment variables the starter sets to the GPUs assigned to a job, with rewrite "
            "rules for the ids."
        ),
    ),
    _k(
        "ENVIRONMENT_VALUE_FOR_UnAssignedGPUs",
        "10000",
        "string",
        "Value put in GPU environment variables when a job has no GPUs.",
    ),
    _k(
        "ETC",
        "$(LOCAL_DIR)",
        "path",
        "Directory of HTCondor's machine-specific configuration files.",
    ),
    _k("EVENT_LOG", None, "string", "File of the daemon-wide job event log; unset disables it."),
    _k(
        "EVICT_BACKFILL",
        None,
        "string",
        (
            "Startd policy: stop the backfill client and leave the Backfill state when true; no "
            "default."
        ),
    ),
    _k(
        "EXECUTE",
        "$(LOCAL_DIR)/execute",
        "path",
        "Directory under which the starter makes job scratch directories.",
    ),
    _k(
        "EXPIRE_INVALIDATED_ADS",
        None,
        "string",
        "When true the collector treats invalidated ads as expired; no default in the table.",
    ),
    _k(
        "FetchWorkDelay",
        None,
        "string",
        "Expression giving seconds to wait before the next fetch-work hook call; no default.",
    ),
    _k(
        "FILESYSTEM_DOMAIN",
        "$(FULL_HOSTNAME)",
        "string",
        "Name shared by machines that see the same shared file system.",
    ),
    _k(
        "FILETRANSFER_PLUGINS",
        (
            "$(LIBEXEC)/curl_plugin, $(LIBEXEC)/data_plugin, $(LIBEXEC)/box_plugin.py, "
            "$(LIBEXEC)/gdrive_plugin.py, $(LIBEXEC)/onedrive_plugin.py, $(STASH_PLUGIN)"
        ),
        "string",
        "File-transfer plugin programs the starter may use.",
    ),
    _k(
        "FLOCK_BY_DEFAULT",
        "true",
        "bool",
        "When true jobs may flock to other pools unless they say otherwise.",
    ),
    _k(
        "FLOCK_COLLECTOR_HOSTS",
        "$(FLOCK_TO)",
        "string",
        "Collectors of the pools the schedd flocks to.",
    ),
    _k(
        "FLOCK_INCREMENT",
        "1",
        "int",
        "Number of additional flocking pools the schedd adds at a time.",
        minimum=1,
    ),
    _k(
        "FLOCK_NEGOTIATOR_HOSTS",
        "$(FLOCK_TO)",
        "string",
        "Negotiators of the pools the schedd flocks to.",
    ),
    _k(
        "FLOCK_TO",
        None,
        "string",
        "Pools the schedd flocks to; used to build the FLOCK_* lists; no default.",
    ),
    _k(
        "FORCE_NEGOTIATOR_SLOT_WEIGHT",
        "false",
        "bool",
        "When true the negotiator uses SLOT_WEIGHT even for static slots.",
    ),
    _k(
        "GANGLIAD_DEFAULT_CLUSTER",
        None,
        "string",
        "Default ganglia cluster for metrics condor_gangliad publishes; no default.",
    ),
    _k(
        "GANGLIAD_DEFAULT_IP",
        None,
        "string",
        "Default IP address attached to ganglia metrics; no default.",
    ),
    _k(
        "GANGLIAD_DEFAULT_MACHINE",
        None,
        "string",
        "Default machine name attached to ganglia metrics; no default.",
    ),
    _k(
        "GANGLIAD_METRICS_CONFIG_DIR",
        "$(ETC)/ganglia.d",
        "path",
        "Directory of metric definition files read by condor_gangliad.",
    ),
    _k(
        "GANGLIAD_MIN_METRIC_LIFETIME",
        None,
        "string",
        "Minimum lifetime of metrics published to ganglia; no default.",
    ),
    _k(
        "GANGLIAD_PER_EXECUTE_NODE_METRICS",
        "true",
        "bool",
        "When true condor_gangliad publishes metrics for every execute node.",
    ),
    _k(
        "GANGLIAD_REQUIREMENTS",
        None,
        "string",
        "Constraint selecting the daemon ads condor_gangliad queries.",
    ),
    _k(
        "GANGLIAD_VERBOSITY",
        "0",
        "int",
        "Highest metric verbosity level condor_gangliad publishes.",
    ),
    _k(
        "GANGLIA_GSTAT_COMMAND",
        "gstat --all --mpifile --gmond_ip=localhost --gmond_port=8649",
        "string",
        "Command condor_gangliad runs to list the hosts ganglia monitors.",
    ),
    _k(
        "GANGLIA_SEND_DATA_FOR_ALL_HOSTS",
        "false",
        "bool",
        "When true metrics are sent even for hosts ganglia does not monitor.",
    ),
    _k("GPU_DISCOVERY_EXTRA", None, "string", "Extra arguments for condor_gpu_discovery."),
    _k(
        "GPU_MONITOR",
        "$(LIBEXEC)/condor_gpu_utilization",
        "string",
        "Program that measures GPU usage for the GPUs monitor.",
    ),
    _k(
        "GROUP_ACCEPT_SURPLUS",
        "false",
        "bool",
        "When true accounting groups may use resources beyond their quota.",
    ),
    _k(
        "GROUP_AUTOREGROUP",
        "false",
        "bool",
        "When true jobs of a group at its quota may also compete as if ungrouped.",
    ),
    _k("GROUP_NAMES", None, "string", "Accounting groups the negotiator knows."),
    _k(
        "GROUP_QUOTA_MAX_ALLOCATION_ROUNDS",
        "3",
        "int",
        "Most rounds the negotiator uses to hand out group surplus.",
        minimum=1,
        maximum=1000000000,
    ),
    _k(
        "GROUP_QUOTA_ROUND_ROBIN_RATE",
        "1.0e100",
        "double",
        "Largest step by which surplus is handed to a group per round.",
    ),
    _k(
        "GROUP_SORT_EXPR",
        (
            'ifThenElse(AccountingGroup=?="<none>",3.4e+38,ifThenElse(GroupQuota>0,'
            "GroupResourcesInUse/GroupQuota,3.3e+38))"
        ),
        "string",
        "Expression ordering accounting groups for negotiation, smallest first.",
    ),
    _k("HAD_ARGS", "-sock $(HAD_SOCKET_NAME)", "string", "Command-line arguments for condor_had."),
    _k(
        "HAD_LIST",
        None,
        "string",
        "host:port list of condor_had daemons in a highly available central manager.",
    ),
    _k("HAD_PORT", None, "string", "Port of condor_had in example configurations; no default."),
    _k("HAD_SOCKET_NAME", "had", "string", "Shared-port socket name of condor_had."),
    _k(
        "HAD_USE_PRIMARY",
        "false",
        "bool",
        "When true the first machine in HAD_LIST is preferred as the active one.",
    ),
    _k(
        "HAD_USE_REPLICATION",
        "false",
        "bool",
        "When true condor_had replicates the accountant's state.",
    ),
    _k(
        "HIBERNATE",
        None,
        "string",
        "Per-slot expression naming the sleep state the machine should enter; unset by default.",
    ),
    _k(
        "HibernateState",
        None,
        "string",
        "Example power-management helper macro; HTCondor defines no value for it.",
    ),
    _k(
        "HIBERNATE_CHECK_INTERVAL",
        None,
        "string",
        "Seconds between evaluations of HIBERNATE; unset disables power management.",
    ),
    _k(
        "HighLoad",
        "0.5",
        "string",
        "Policy helper: non-HTCondor load average above which the CPU counts as busy.",
    ),
    _k("HISTORY", "$(SPOOL)/history", "string", "File in which the schedd records completed jobs."),
    _k(
        "HOLD_REASON_CPU_EXCEEDED",
        None,
        "string",
        "Hold reason text set by the CPU-exceeded hold template; no default.",
    ),
    _k(
        "HOLD_REASON_DISK_EXCEEDED",
        None,
        "string",
        "Hold reason text set by the disk-exceeded hold template; no default.",
    ),
    _k(
        "HOLD_REASON_MEMORY_EXCEEDED",
        None,
        "string",
        "Hold reason text set by the memory-exceeded hold template; no default.",
    ),
    _k(
        "HOLD_SUBCODE_CPU_EXCEEDED",
        None,
        "string",
        (
            "Hold subcode for the CPU-exceeded hold template; unset, so the template's fallback "
            "applies."
        ),
    ),
    _k(
        "HOLD_SUBCODE_DISK_EXCEEDED",
        None,
        "string",
        (
            "Hold subcode for the disk-exceeded hold template; unset, so the template's fallback "
            "applies."
        ),
    ),
    _k(
        "HOLD_SUBCODE_MEMORY_EXCEEDED",
        None,
        "string",
        (
            "Hold subcode for the memory-exceeded hold template; unset, so the template's fallback "
            "applies."
        ),
    ),
    _k("HOUR", "3600", "string", "Policy helper: seconds in an hour."),
    _k(
        "IMMUTABLE_JOB_ATTRS",
        None,
        "string",
        "Job attributes no one may change once the job is submitted.",
    ),
    _k("INCLUDE", "$(RELEASE_DIR)/include", "path", "Directory of HTCondor's C header files."),
    _k("IsCollector", "false", "bool", "True inside the collector, false in every other program."),
    _k(
        "IsDesktop",
        None,
        "string",
        "Custom attribute used in manual examples to mark desktop machines; no default.",
    ),
    _k("IsMaster", "false", "bool", "True inside condor_master, false in every other program."),
    _k(
        "IsMPI",
        "(TARGET.JobUniverse == $(MPI))",
        "string",
        "Policy helper expression: the candidate job is an MPI-universe job.",
    ),
    _k(
        "IsNegotiator", "false", "bool", "True inside the negotiator, false in every other program."
    ),
    _k(
        "IsOwner",
        None,
        "string",
        "Older spelling used in manuals; distinct from IS_OWNER and undefined by default.",
    ),
    _k(
        "IsPVM",
        None,
        "string",
        "Obsolete policy helper for PVM jobs; HTCondor defines no value for it.",
    ),
    _k("IsSchedd", "false", "bool", "True inside the schedd, false in every other program."),
    _k("IsShadow", "false", "bool", "True inside the shadow, false in every other program."),
    _k(
        "IsStandard",
        "(TARGET.JobUniverse == $(STANDARD))",
        "string",
        "Policy helper expression: the candidate job is a standard-universe job.",
    ),
    _k("IsStartd", "false", "bool", "True inside the startd, false in every other program."),
    _k("IsStarter", "false", "bool", "True inside the starter, false in every other program."),
    _k("IsSubmit", "false", "bool", "True inside condor_submit, false in every other program."),
    _k(
        "IsSuspendableSlot",
        None,
        "string",
        "Helper from the manual's suspension example; HTCondor defines no value for it.",
    ),
    _k("IsTool", "false", "bool", "True inside command-line tools, false in the daemons."),
    _k(
        "IsVanilla",
        "(TARGET.JobUniverse == $(VANILLA))",
        "string",
        "Policy helper expression: the candidate job is a vanilla-universe job.",
    ),
    _k(
        "IsVM",
        "(TARGET.JobUniverse == $(VM))",
        "string",
        "Policy helper expression: the candidate job is a VM-universe job.",
    ),
    _k("IsWindows", "false", "bool", "True when HTCondor runs on Windows."),
    _k(
        "IS_OWNER",
        "False",
        "string",
        "Startd policy: while true the slot stays in the Owner state.",
    ),
    _k(
        "IS_VALID_CHECKPOINT_PLATFORM",
        None,
        "string",
        (
            "Obsolete expression for platforms that could run standard-universe checkpoints; no "
            "default."
        ),
    ),
    _k(
        "JOB_DEFAULT_LEASE_DURATION",
        "2400",
        "string",
        "Job lease, in seconds, condor_submit gives a job that sets none.",
    ),
    _k(
        "JOB_DEFAULT_REQUESTCPUS",
        "1",
        "string",
        "CPUs condor_submit requests for a job that names none.",
    ),
    _k(
        "JOB_DEFAULT_REQUESTDISK",
        "MAX({1024, (TransferInputSizeMB+1) * 1.25}) * 1024",
        "string",
        "Disk (KiB) condor_submit requests for a job that names none.",
    ),
    _k(
        "JOB_DEFAULT_REQUESTMEMORY",
        "128",
        "string",
        "Memory (MB) condor_submit requests for a job that names none.",
    ),
    _k(
        "JOB_EXECDIR_PERMISSIONS",
        "user",
        "string",
        "Permissions of job scratch directories: user, group or world.",
    ),
    _k(
        "JOB_INHERITS_STARTER_ENVIRONMENT",
        "false",
        "string",
        (
            "Which of the starter's environment variables a job inherits: true, false or name "
            "patterns."
        ),
    ),
    _k(
        "JOB_QUEUE_LOG",
        "$(SPOOL)/job_queue.log",
        "path",
        "Transaction log file holding the schedd's job queue.",
    ),
    _k("JOB_RENICE_INCREMENT", "0", "string", "Nice increment applied to job processes."),
    _k(
        "JOB_START_COUNT",
        "1",
        "int",
        "Number of jobs the schedd starts per JOB_START_DELAY period.",
        minimum=1,
    ),
    _k("JOB_START_DELAY", "0", "int", "Seconds the schedd waits between starting batches of jobs."),
    _k(
        "JOB_TRANSFORM_NAMES",
        None,
        "string",
        (
            "Job transforms the schedd applies, in order; the schedd gets PelicanRetry from an "
            "automatically used feature."
        ),
    ),
    _k(
        "JustCpu",
        None,
        "string",
        (
            "Policy helper: CPU busy while keyboard idle (supplied by the policy templates, no "
            "built-in value)."
        ),
    ),
    _k("KBDD", "$(SBIN)/condor_kbdd", "path", "Path of the condor_kbdd program."),
    _k("KBDD_LOG", "$(LOG)/KbdLog", "path", "Log file of condor_kbdd."),
    _k(
        "KeyboardBusy",
        None,
        "string",
        (
            "Policy helper: the keyboard has been used in the last minute (supplied by the policy "
            "templates)."
        ),
    ),
    _k(
        "KeyboardNotBusy",
        None,
        "string",
        "Policy helper: the negation of KeyboardBusy (supplied by the policy templates).",
    ),
    _k(
        "KEYBOARD_CPUS",
        "1",
        "int",
        "Older setting for how many CPUs (slots) see keyboard activity.",
    ),
    _k(
        "KILL",
        "False",
        "string",
        "Startd policy: stop a vacating job's graceful shutdown and kill it when true.",
    ),
    _k(
        "KILLING_TIMEOUT",
        "30",
        "int",
        "Seconds a job may take to die in Preempting/Killing before it is forcibly killed.",
        minimum=0,
    ),
    _k(
        "KILL_VANILLA", None, "string", "Vanilla-universe override of KILL; unset, so KILL applies."
    ),
    _k(
        "LastCkpt",
        None,
        "string",
        (
            "Policy helper: seconds since the last periodic checkpoint (supplied by the policy "
            "templates)."
        ),
    ),
    _k("LIB", "$(RELEASE_DIR)/lib", "path", "Directory of HTCondor's libraries."),
    _k("LIBEXEC", "$(RELEASE_DIR)/libexec", "string", "Directory of HTCondor's helper programs."),
    _k(
        "LINUX_HIBERNATION_METHOD",
        None,
        "string",
        "Forces how Linux machines are put to sleep (pm-utils, /sys or /proc); unset auto-detects.",
    ),
    _k(
        "LOCAL_CONFIG_DIR",
        None,
        "string",
        "Directory whose files are read as further configuration.",
    ),
    _k(
        "LOCAL_CONFIG_DIR_EXCLUDE_REGEXP",
        (
            "^((\\..*)|(.*\\.pl)|(.*\\.py)|(.*\\.sh)|(.*~)|(#.*)|(.*\\.rpmsave)|(.*\\.rpmnew)|"
            "(.*\\.dpkg-old)|(.*\\.dpkg-dist)|(.*\\.cfsaved))$"
        ),
        "string",
        "Regular expression of file names skipped in LOCAL_CONFIG_DIR.",
    ),
    _k(
        "LOCAL_CONFIG_FILE",
        None,
        "string",
        "Further configuration file(s) read after the main one.",
    ),
    _k(
        "LOCAL_DIR",
        "$(TILDE)",
        "string",
        "Root of the machine-specific directories (log, spool, execute).",
    ),
    _k(
        "LOCAL_UNIVERSE_CGROUP_ENFORCEMENT",
        "false",
        "bool",
        "When true local-universe jobs are confined by cgroups.",
    ),
    _k(
        "LOCAL_UNIVERSE_JOB_CLEANUP_RETRY_DELAY",
        "30",
        "int",
        "Seconds between attempts to clean up after a local-universe job.",
    ),
    _k(
        "LOCAL_UNIVERSE_MAX_JOB_CLEANUP_RETRIES",
        "5",
        "int",
        "Attempts made to clean up after a local-universe job.",
    ),
    _k(
        "LOCAL_UNIV_EXECUTE",
        "$(SPOOL)/local_univ_execute",
        "path",
        "Scratch directory for local-universe jobs.",
    ),
    _k("LOCK", "$(LOG)", "string", "Directory of HTCondor's lock files."),
    _k("LOG", "$(LOCAL_DIR)/log", "path", "Directory of the daemons' log files."),
    _k(
        "LVM_BACKING_FILE",
        "$(SPOOL)/startd_disk.img",
        "string",
        "File backing the loopback LVM volume group when none is configured.",
    ),
    _k("LVM_BACKING_FILE_SIZE_MB", "10240", "int", "Size in MB of the LVM backing file."),
    _k(
        "LVM_CLEANUP_FAILURE_MAKES_BROKEN_SLOT",
        None,
        "bool",
        "When true (the default) a job's scratch volume that cannot be removed breaks its slot.",
    ),
    _k(
        "LVM_HIDE_MOUNT",
        "auto",
        "string",
        "Whether a job's LVM scratch mount is hidden from other processes (auto, true, false).",
    ),
    _k(
        "LVM_THICK_LV_MARGIN",
        "0.98",
        "double",
        "Safety-margin fraction applied when sizing thick per-job logical volumes.",
    ),
    _k(
        "LVM_THINPOOL_NAME",
        None,
        "string",
        "Thin pool used for per-job logical volumes; no default.",
    ),
    _k(
        "LVM_THIN_LV_EXTRA_SIZE_MB",
        "2000",
        "int",
        "Extra MB given to each thin logical volume beyond the job's request.",
    ),
    _k(
        "LVM_USE_THIN_PROVISIONING",
        "false",
        "bool",
        "When true per-job logical volumes are thin provisioned.",
    ),
    _k(
        "LVM_VOLUME_GROUP_NAME",
        None,
        "string",
        "LVM volume group used for per-job scratch volumes; no default.",
    ),
    _k(
        "MachineBusy",
        None,
        "string",
        (
            "Policy helper: CPU or keyboard busy (supplied by the policy templates, no built-in "
            "value)."
        ),
    ),
    _k(
        "MachineMaxVacateTime",
        "$(MaxVacateTime)",
        "int",
        (
            "Seconds a job is given to exit gracefully after being asked to vacate, before it is "
            "killed."
        ),
    ),
    _k(
        "MACHINE_RESOURCE_INVENTORY_GPUs",
        None,
        "string",
        "Command whose output lists the machine's GPUs; set by the GPUs feature, no default.",
    ),
    _k(
        "MACHINE_RESOURCE_NAMES",
        None,
        "string",
        (
            "Custom machine resource names the startd provisions; unset means all "
            "MACHINE_RESOURCE_* names."
        ),
    ),
    _k("MAIL", "/usr/bin/mail", "path", "Mail program the daemons use to send e-mail."),
    _k("MASTER", "$(SBIN)/condor_master", "path", "Path of the condor_master program."),
    _k(
        "MASTER_ADDRESS_FILE",
        "$(LOG)/.master_address",
        "path",
        "File in which condor_master writes its contact address.",
    ),
    _k("MASTER_DEBUG", None, "string", "Debug categories for condor_master's log."),
    _k(
        "MASTER_HAD_BACKOFF_CONSTANT",
        None,
        "string",
        "Restart back-off base the master uses for condor_had; no default in the table.",
    ),
    _k("MASTER_LOG", "$(LOG)/MasterLog", "path", "Log file of condor_master."),
    _k("MASTER_NAME", None, "string", "Name condor_master advertises; unset uses the host name."),
    _k(
        "MATCH_TIMEOUT",
        "120",
        "int",
        "Seconds a slot may stay Matched without being claimed before it gives the match up.",
    ),
    _k(
        "MAXJOBRETIREMENTTIME",
        None,
        "string",
        (
            "Startd policy: seconds of retirement a running job is guaranteed before preemption; "
            "no default."
        ),
    ),
    _k(
        "MaxSuspendTime",
        "10 * $(MINUTE)",
        "string",
        "Policy helper: seconds a job may stay suspended before stronger action is taken.",
    ),
    _k(
        "MaxVacateTime",
        "10 * $(MINUTE)",
        "string",
        "Policy helper: seconds a vacating job is given before it is killed.",
    ),
    _k(
        "MAX_ACCOUNTANT_DATABASE_SIZE",
        "1000000",
        "int",
        "Size in bytes at which the accountant's log file is compacted.",
    ),
    _k(
        "MAX_CLAIM_ALIVES_MISSED",
        "6",
        "int",
        "Keep-alives a startd may miss from the schedd before it ends the claim.",
    ),
    _k(
        "MAX_COLLECTOR_LOG",
        "$(MAX_DEFAULT_LOG)",
        "string",
        "Size at which the collector's log is rotated.",
    ),
    _k(
        "MAX_CONCURRENT_DOWNLOADS",
        "100",
        "int",
        "Most simultaneous output transfers the schedd allows (0 means no limit).",
        minimum=0,
    ),
    _k(
        "MAX_CONCURRENT_UPLOADS",
        "100",
        "int",
        "Most simultaneous input transfers the schedd allows (0 means no limit).",
        minimum=0,
    ),
    _k(
        "MAX_CONCURRENT_UPLOADS_PER_USER",
        "$(MAX_CONCURRENT_UPLOADS:100)/5",
        "int",
        "Most simultaneous input transfers the schedd allows one user.",
        minimum=0,
    ),
    _k("MAX_DEFAULT_LOG", "10 Mb", "string", "Default size at which daemon logs are rotated."),
    _k(
        "MAX_DRAINING_ACTIVATION_DELAY",
        "20",
        "string",
        (
            "Seconds a claimed slot may wait to activate a job while draining; draining waits that "
            "much longer."
        ),
    ),
    _k(
        "MAX_JOB_RUNTIME",
        None,
        "string",
        "Run-time limit in seconds used by the job-runtime policy template; no default.",
    ),
    _k(
        "MAX_JOBS_PER_OWNER",
        "100000",
        "int",
        "Most jobs one owner may have in the schedd's queue; a submission beyond it is refused.",
    ),
    _k(
        "MAX_JOBS_PER_SUBMISSION",
        "20000",
        "int",
        "Most jobs one submission (cluster) may add to the queue; more is refused.",
    ),
    _k(
        "MAX_JOBS_RUNNING",
        "MIN({$(DETECTED_MEMORY), 10000})",
        "int",
        "Most jobs the schedd runs at once; beyond it, it claims no more slots.",
    ),
    _k(
        "MAX_JOBS_SUBMITTED",
        "2147483647",
        "int",
        "Most jobs the schedd's queue holds; a submission beyond it is refused.",
    ),
    _k(
        "MAX_MASTER_LOG",
        "$(MAX_DEFAULT_LOG)",
        "string",
        "Size at which condor_master's log is rotated.",
    ),
    _k(
        "MAX_NEGOTIATOR_LOG",
        "$(MAX_DEFAULT_LOG)",
        "string",
        "Size at which the negotiator's log is rotated.",
    ),
    _k(
        "MAX_PARTITIONABLE_SLOT_CLAIM_TIME",
        "3600",
        "int",
        "Longest time in seconds a claimed partitionable slot stays claimed.",
    ),
    _k(
        "MAX_PERIODIC_EXPR_INTERVAL",
        "1200",
        "int",
        "Longest time in seconds between two evaluations of the queue's periodic expressions.",
    ),
    _k("MAX_PROCD_LOG", "1000000", "string", "Size at which condor_procd's log is rotated."),
    _k(
        "MAX_SCHEDD_LOG",
        "$(MAX_DEFAULT_LOG)",
        "string",
        "Size at which the schedd's log is rotated.",
    ),
    _k(
        "MAX_STARTD_LOG",
        "$(MAX_DEFAULT_LOG)",
        "string",
        "Size at which the startd's log is rotated.",
    ),
    _k(
        "MAX_STARTER_LOG", "$(MAX_DEFAULT_LOG)", "string", "Size at which starter logs are rotated."
    ),
    _k(
        "MAX_TRACKING_GID", "0", "int", "Highest group id available for GID-based process tracking."
    ),
    _k(
        "MediumJob",
        "(TARGET.ImageSize >= (15 * 1024) && TARGET.ImageSize < (50 * 1024))",
        "string",
        "Policy helper expression: true for jobs whose image size is between 15 and 50 MiB.",
    ),
    _k(
        "MEMORY",
        None,
        "string",
        (
            "Memory in MB the startd advertises instead of the detected amount; unset means "
            "detected memory."
        ),
    ),
    _k(
        "MEMORY_EXCEEDED",
        None,
        "string",
        "Trigger expression set by the memory-exceeded policy templates; no default.",
    ),
    _k(
        "MEMORY_USAGE_METRIC",
        "((ResidentSetSize+1023)/1024)",
        "string",
        "Expression computing a job's MemoryUsage in MB from its measured sizes.",
    ),
    _k(
        "MEMORY_USAGE_METRIC_VM",
        "((ImageSize+1023)/1024)",
        "string",
        "Expression computing MemoryUsage for VM-universe jobs.",
    ),
    _k("MINUTE", "60", "string", "Policy helper: seconds in a minute."),
    _k("MIN_TRACKING_GID", "0", "int", "Lowest group id available for GID-based process tracking."),
    _k(
        "MODIFY_REQUEST_EXPR_REQUESTCPUS",
        "quantize(RequestCpus,{1})",
        "string",
        "Expression the startd uses to round a job's CPU request when carving a dynamic slot.",
    ),
    _k(
        "MODIFY_REQUEST_EXPR_REQUESTDISK",
        "quantize(RequestDisk - $(CATALOG_SPACE),{Target.DiskQuantum?:1024})",
        "string",
        "Expression the startd uses to round a job's disk request when carving a dynamic slot.",
    ),
    _k(
        "MODIFY_REQUEST_EXPR_REQUESTMEMORY",
        "quantize(RequestMemory,{128})",
        "string",
        "Expression the startd uses to round a job's memory request when carving a dynamic slot.",
    ),
    _k("MODULES", None, "string", "Helper macro in the manual's startd cron example; no default."),
    _k("MOUNT_PRIVATE_DEV_SHM", "true", "bool", "When true each job gets a private /dev/shm."),
    _k(
        "MOUNT_UNDER_SCRATCH",
        '"/tmp,/var/tmp"',
        "string",
        "Directories given each job as private copies inside its scratch directory.",
    ),
    _k("MPI", "8", "string", "Universe number of the MPI (parallel) universe."),
    _k(
        "MUST_MODIFY_REQUEST_EXPRS",
        "false",
        "bool",
        (
            "When true the startd applies the MODIFY_REQUEST_EXPR rounding even if the job then no "
            "longer matches."
        ),
    ),
    _k(
        "MyNonSuspendableSlotIsIdle",
        None,
        "string",
        "Helper from the manual's suspension example; HTCondor defines no value for it.",
    ),
    _k(
        "NEGOTIATE_ALL_JOBS_IN_CLUSTER",
        None,
        "string",
        "When true the schedd keeps offering jobs of a cluster after one fails to match.",
    ),
    _k(
        "NEGOTIATION_CYCLE_STATS_LENGTH",
        "3",
        "int",
        "Number of past negotiation cycles whose statistics the negotiator publishes.",
        minimum=0,
        maximum=100,
    ),
    _k("NEGOTIATOR", "$(SBIN)/condor_negotiator", "path", "Path of the condor_negotiator program."),
    _k(
        "NEGOTIATOR_ALLOW_QUOTA_OVERSUBSCRIPTION",
        "true",
        "bool",
        "When true child group quotas may add up to more than their parent's quota.",
    ),
    _k(
        "NEGOTIATOR_CONSIDER_EARLY_PREEMPTION",
        "false",
        "bool",
        "When true the negotiator may match jobs to slots whose retirement time has not run out.",
    ),
    _k(
        "NEGOTIATOR_CONSIDER_PREEMPTION",
        "true",
        "bool",
        "When false the negotiator never considers claimed slots, skipping preemption work.",
    ),
    _k(
        "NEGOTIATOR_CROSS_SLOT_PRIOS",
        "false",
        "bool",
        "When true the negotiator publishes user priorities in every slot ad.",
    ),
    _k("NEGOTIATOR_DEBUG", "D_MATCH", "string", "Debug categories for the negotiator's log."),
    _k(
        "NEGOTIATOR_DEBUG_WAIT",
        "false",
        "bool",
        "Developer switch: the negotiator waits for a debugger at start-up.",
    ),
    _k(
        "NEGOTIATOR_DEPTH_FIRST",
        "false",
        "bool",
        "When true the negotiator matches each submitter fully before moving to the next.",
    ),
    _k(
        "NEGOTIATOR_DISCOUNT_SUSPENDED_RESOURCES",
        "false",
        "bool",
        "When true suspended slots do not count against a user's usage.",
    ),
    _k(
        "NEGOTIATOR_IGNORE_USER_PRIORITIES",
        "false",
        "bool",
        "When true the negotiator ignores user priorities when choosing whom to serve.",
    ),
    _k(
        "NEGOTIATOR_INFORM_STARTD",
        "false",
        "bool",
        "When true the negotiator tells the startd about each match it makes.",
    ),
    _k("NEGOTIATOR_INTERVAL", "60", "int", "Seconds between the starts of negotiation cycles."),
    _k(
        "NEGOTIATOR_JOB_CONSTRAINT",
        None,
        "string",
        "Constraint restricting which job requests the negotiator considers.",
    ),
    _k("NEGOTIATOR_LOG", "$(LOG)/NegotiatorLog", "path", "Log file of the negotiator."),
    _k(
        "NEGOTIATOR_MATCHLIST_CACHING",
        "true",
        "bool",
        "When true the negotiator caches sorted candidate slot lists between similar requests.",
    ),
    _k(
        "NEGOTIATOR_MATCH_EXPRS",
        None,
        "string",
        "Names of configuration expressions the negotiator inserts into matched jobs.",
    ),
    _k(
        "NEGOTIATOR_MATCH_LOG",
        "$(LOG)/MatchLog",
        "path",
        "File recording the negotiator's matches.",
    ),
    _k(
        "NEGOTIATOR_MAX_TIME_PER_CYCLE",
        "1200",
        "int",
        "Longest a negotiation cycle may take, in seconds.",
    ),
    _k(
        "NEGOTIATOR_MAX_TIME_PER_PIESPIN",
        "120",
        "int",
        "Longest one pie spin of a cycle may take, in seconds.",
    ),
    _k(
        "NEGOTIATOR_MAX_TIME_PER_SCHEDD",
        "120",
        "int",
        "Longest the negotiator spends with one schedd per cycle, in seconds.",
    ),
    _k(
        "NEGOTIATOR_MAX_TIME_PER_SUBMITTER",
        "60",
        "int",
        "Longest the negotiator spends with one submitter per cycle, in seconds.",
    ),
    _k(
        "NEGOTIATOR_MIN_INTERVAL",
        "5",
        "int",
        "Fewest seconds between the starts of two negotiation cycles.",
    ),
    _k("NEGOTIATOR_NUM_THREADS", "1", "int", "Threads the negotiator uses for matchmaking."),
    _k(
        "NEGOTIATOR_POST_JOB_RANK",
        (
            "(RemoteOwner =?= UNDEFINED) * (ifthenElse(isUndefined(KFlops), 1000, Kflops) - SlotID "
            "- 1.0e10*(Offline=?=True))"
        ),
        "string",
        "Expression ranking candidate slots after the job's own Rank.",
    ),
    _k(
        "NEGOTIATOR_PREFETCH_REQUESTS",
        "true",
        "bool",
        "When true the negotiator fetches resource requests from all schedds before matching.",
    ),
    _k(
        "NEGOTIATOR_PREFETCH_REQUESTS_MAX_TIME",
        "60",
        "int",
        "Longest the request prefetch phase may take, in seconds.",
        minimum=0,
    ),
    _k(
        "NEGOTIATOR_PRE_JOB_RANK",
        "(10000000 * My.Rank) + (1000000 * (RemoteOwner =?= UNDEFINED)) - (100000 * Cpus) - Memory",
        "string",
        "Expression ranking candidate slots before the job's own Rank.",
    ),
    _k(
        "NEGOTIATOR_READ_CONFIG_BEFORE_CYCLE",
        "false",
        "bool",
        "When true the negotiator rereads its configuration before each cycle.",
    ),
    _k(
        "NEGOTIATOR_RESOURCE_REQUEST_LIST_SIZE",
        "200",
        "int",
        "Number of resource requests the negotiator asks a schedd for at once.",
        minimum=1,
    ),
    _k(
        "NEGOTIATOR_SLOT_CONSTRAINT",
        None,
        "string",
        "Constraint restricting which slot ads the negotiator fetches.",
    ),
    _k(
        "NEGOTIATOR_SLOT_POOLSIZE_CONSTRAINT",
        None,
        "string",
        "Constraint selecting the slots counted as the pool size for group quotas.",
    ),
    _k(
        "NEGOTIATOR_SOCKET_CACHE_SIZE",
        "500",
        "int",
        "Number of schedd connections the negotiator keeps open between uses.",
        minimum=1,
    ),
    _k(
        "NEGOTIATOR_STATE_FILE",
        None,
        "string",
        "File holding the negotiator's state for high-availability replication.",
    ),
    _k(
        "NEGOTIATOR_TIMEOUT",
        "30",
        "int",
        "Seconds the negotiator waits on a schedd before giving up on it.",
    ),
    _k(
        "NEGOTIATOR_TRIM_SHUTDOWN_THRESHOLD",
        "0",
        "int",
        "Slot-count threshold for trimming slots that are shutting down from negotiation.",
    ),
    _k(
        "NEGOTIATOR_UPDATE_AFTER_CYCLE",
        "false",
        "bool",
        "When true the negotiator updates its collector ad after every cycle.",
    ),
    _k(
        "NEGOTIATOR_UPDATE_INTERVAL",
        "300",
        "int",
        "Seconds between the negotiator's ad updates to the collector.",
    ),
    _k(
        "NEGOTIATOR_USE_NONBLOCKING_STARTD_CONTACT",
        "true",
        "bool",
        "When true the negotiator contacts startds without blocking.",
    ),
    _k(
        "NEGOTIATOR_USE_SLOT_WEIGHTS",
        "true",
        "bool",
        "When true slots count by SLOT_WEIGHT instead of as one each.",
    ),
    _k(
        "NEGOTIATOR_USE_WEIGHTED_DEMAND",
        "true",
        "bool",
        "When true submitter demand is measured in slot weight rather than job count.",
    ),
    _k(
        "NICE_USER_ACCOUNTING_GROUP_NAME",
        "nice-user",
        "string",
        "Accounting group given to jobs submitted as nice_user.",
    ),
    _k("NICE_USER_PRIO_FACTOR", "1e10", "double", "Priority factor applied to nice_user jobs."),
    _k(
        "NonCondorLoadAvg",
        None,
        "string",
        "Policy helper: load not caused by HTCondor jobs (supplied by the policy templates).",
    ),
    _k(
        "NonSuspendableSlotState",
        None,
        "string",
        "Helper from the manual's suspension example; HTCondor defines no value for it.",
    ),
    _k(
        "NOT_RESPONDING_TIMEOUT",
        "3600",
        "int",
        "Seconds after which a daemon that stops responding is considered hung.",
        minimum=1,
    ),
    _k(
        "NUM_CPUS",
        "$(DETECTED_CPUS_LIMIT)",
        "int",
        "Number of CPUs the startd provisions, by default the detected limit.",
    ),
    _k(
        "NUM_SLOTS",
        None,
        "string",
        "Number of static slots to create; the startd's code supplies the default.",
    ),
    _k(
        "OFFLINE_EXPIRE_ADS_AFTER",
        None,
        "string",
        "Seconds offline machine ads are kept by the collector; no default in the table.",
    ),
    _k(
        "PeriodicCheckpoint",
        None,
        "string",
        (
            "Older spelling found in manuals; distinct from PERIODIC_CHECKPOINT and undefined by "
            "default."
        ),
    ),
    _k(
        "PERIODIC_CHECKPOINT",
        "((time() - LastPeriodicCheckpoint)/60.0) > (180.0 + $RANDOM_INTEGER(-30,30,1))",
        "string",
        "Startd policy: start a periodic checkpoint of a running job when true.",
    ),
    _k(
        "PERIODIC_EXPR_INTERVAL",
        "60",
        "int",
        (
            "Seconds between two evaluations of the jobs' periodic_* and SYSTEM_PERIODIC_* "
            "expressions; 0 turns the evaluation off."
        ),
    ),
    _k(
        "PERIODIC_EXPR_TIMESLICE",
        "0.01",
        "double",
        "Largest share of the schedd's time the periodic expressions may take (0 to 1).",
    ),
    _k(
        "PER_JOB_NAMESPACES",
        "true",
        "bool",
        "When true each job gets its own mount namespace for private directories.",
    ),
    _k(
        "PID_SNAPSHOT_INTERVAL",
        "15",
        "int",
        "Seconds between scans of the process table for job process families.",
    ),
    _k(
        "PolicyExprFragments",
        None,
        "string",
        "Marker set once the policy expression fragments template has been read; no default.",
    ),
    _k(
        "POLLING_INTERVAL",
        "5",
        "int",
        "Seconds between the startd's evaluations of its policy expressions.",
    ),
    _k("POOL_HISTORY_DIR", None, "string", "Directory where the view server keeps pool history."),
    _k(
        "POOL_HISTORY_MAX_STORAGE",
        "10000000",
        "int",
        "Most bytes of pool history the view server keeps.",
    ),
    _k("PREEMPT", "False", "string", "Startd policy: begin evicting the running job when true."),
    _k(
        "PREEMPTION_RANK",
        "(RemoteUserPrio * 1000000) - ifThenElse(isUndefined(TotalJobRuntime), 0, TotalJobRuntime)",
        "string",
        "Negotiator expression choosing which claimed slot to preempt first.",
    ),
    _k(
        "PREEMPTION_RANK_STABLE",
        None,
        "string",
        (
            "Tells the negotiator PREEMPTION_RANK does not change within a cycle; no default in "
            "the table."
        ),
    ),
    _k(
        "PREEMPTION_REQUIREMENTS",
        "False",
        "string",
        "Negotiator expression; a claimed slot may be preempted for user priority only when true.",
    ),
    _k(
        "PREEMPTION_REQUIREMENTS_STABLE",
        None,
        "string",
        (
            "Tells the negotiator PREEMPTION_REQUIREMENTS does not change within a cycle; no "
            "default in the table."
        ),
    ),
    _k(
        "PREEMPT_VANILLA",
        None,
        "string",
        "Vanilla-universe override of PREEMPT; unset, so PREEMPT applies.",
    ),
    _k(
        "PRIORITY_HALFLIFE",
        "86400",
        "double",
        "Half-life in seconds of the decay of a user's resource usage.",
    ),
    _k("PROCD", "$(SBIN)/condor_procd", "path", "Path of the condor_procd program."),
    _k(
        "PROCD_ADDRESS",
        "$(RUN)/procd_pipe",
        "string",
        "Address (named pipe) on which condor_procd listens.",
    ),
    _k("PROCD_DEBUG", "false", "bool", "When true condor_procd writes debug output."),
    _k("PROCD_LOG", "$(LOG)/ProcLog", "path", "Log file of condor_procd."),
    _k(
        "PROCD_MAX_SNAPSHOT_INTERVAL",
        "60",
        "string",
        "Longest time in seconds between condor_procd's process table scans.",
    ),
    _k(
        "PROTECTED_JOB_ATTRS",
        None,
        "string",
        "Job attributes that only queue super users may change once set.",
    ),
    _k(
        "RANK",
        None,
        "string",
        "Startd policy: preference for jobs; a higher-ranked request can preempt the current job.",
    ),
    _k(
        "REAL_TIME_JOB_SUSPEND_UPDATES",
        None,
        "string",
        "When true suspend and resume updates reach the job queue immediately.",
    ),
    _k("RELEASE_DIR", "/usr", "string", "Directory where HTCondor is installed."),
    _k(
        "REMOTE_PRIO_FACTOR",
        "1e7",
        "double",
        "Priority factor applied to users outside ACCOUNTANT_LOCAL_DOMAIN.",
    ),
    _k("REPLICATION_LIST", None, "string", "host:port list of condor_replication daemons."),
    _k(
        "REQUIRE_LOCAL_CONFIG_FILE",
        "true",
        "bool",
        "When true a missing LOCAL_CONFIG_FILE is an error.",
    ),
    _k(
        "RESERVED_DISK",
        None,
        "string",
        "Disk space kept back from jobs; the startd's code supplies the default.",
    ),
    _k("RESERVED_MEMORY", "0", "int", "Memory in MB kept back from jobs."),
    _k(
        "RESERVED_SWAP",
        "0",
        "int",
        "Swap in MB the schedd keeps free when deciding how many shadows to run.",
    ),
    _k(
        "RESTART_PROCD_ON_ERROR",
        "true",
        "bool",
        "When true condor_master restarts condor_procd after it fails.",
    ),
    _k("ROOSTER", "$(LIBEXEC)/condor_rooster", "path", "Path of the condor_rooster program."),
    _k("ROOSTER_DEBUG", None, "string", "Debug categories for condor_rooster's log."),
    _k(
        "ROOSTER_INTERVAL",
        "300",
        "int",
        "Seconds between condor_rooster's checks for machines to wake.",
        minimum=0,
    ),
    _k("ROOSTER_LOG", "$(LOG)/RoosterLog", "path", "Log file of condor_rooster."),
    _k(
        "ROOSTER_MAX_UNHIBERNATE",
        "0",
        "int",
        "Most machines condor_rooster wakes per cycle (0 means no limit).",
        minimum=0,
    ),
    _k(
        "ROOSTER_UNHIBERNATE",
        "Offline && Unhibernate",
        "string",
        "Expression on offline machine ads; condor_rooster wakes machines for which it is true.",
    ),
    _k(
        "ROOSTER_UNHIBERNATE_RANK",
        None,
        "string",
        "Expression ordering which machines condor_rooster wakes first.",
    ),
    _k(
        "ROOSTER_WAKEUP_CMD",
        '"$(BIN)/condor_power -d -i"',
        "string",
        "Command condor_rooster runs to wake a machine.",
    ),
    _k(
        "ROOT",
        None,
        "string",
        "Helper macro in manual examples naming a top directory; no default.",
    ),
    _k("RUN", "$(LOCK)", "path", "Directory for run-time files such as pipes and pid files."),
    _k(
        "RunBenchmarks",
        "LastBenchmark == 0",
        "string",
        "Startd policy: run the benchmarks while unclaimed when true.",
    ),
    _k("SBIN", "$(RELEASE_DIR)/sbin", "path", "Directory of HTCondor's daemon programs."),
    _k("SCHEDD", "$(SBIN)/condor_schedd", "path", "Path of the condor_schedd program."),
    _k(
        "SCHEDD_ADDRESS_FILE",
        "$(SPOOL)/.schedd_address",
        "path",
        "File in which the schedd writes its contact address.",
    ),
    _k(
        "SCHEDD_CLASSAD_USER_MAP_NAMES",
        None,
        "string",
        "Names of user map files the schedd loads; set by templates, no default.",
    ),
    _k(
        "SCHEDD_CRON_CONFIG_VAL",
        None,
        "string",
        "condor_config_val program handed to schedd cron jobs; no default.",
    ),
    _k("SCHEDD_CRON_JOBLIST", None, "string", "Names of the schedd's cron jobs; none by default."),
    _k("SCHEDD_CRON_NAME", None, "string", "Obsolete name for the schedd's cron manager."),
    _k("SCHEDD_DEBUG", "D_PID", "string", "Debug categories for the schedd's log."),
    _k("SCHEDD_LOG", "$(LOG)/SchedLog", "path", "Log file of the schedd."),
    _k("SCHEDD_NAME", None, "string", "Name the schedd advertises; unset uses the host name."),
    _k(
        "SCHEDD_SLOT_WEIGHT",
        None,
        "string",
        "Slot weight expression used by the schedd instead of SLOT_WEIGHT.",
    ),
    _k(
        "SCHEDD_USE_SLOT_WEIGHT",
        "true",
        "bool",
        "When true the schedd counts running jobs by slot weight.",
    ),
    _k("SECURE_JOB_ATTRS", None, "string", "Job attributes that only the schedd itself may set."),
    _k("SENDMAIL", "sendmail", "path", "sendmail program the daemons may use to send e-mail."),
    _k("SHADOW", "$(SBIN)/condor_shadow", "path", "Path of the condor_shadow program."),
    _k("SHADOW_LOG", "$(LOG)/ShadowLog", "path", "Log file shared by the shadows."),
    _k(
        "SHARED_PORT",
        "$(LIBEXEC)/condor_shared_port",
        "path",
        "Path of the condor_shared_port program.",
    ),
    _k("SHARED_PORT_LOG", "$(LOG)/SharedPortLog", "path", "Log file of condor_shared_port."),
    _k(
        "ShouldHibernate",
        None,
        "string",
        "Example power-management helper macro; HTCondor defines no value for it.",
    ),
    _k(
        "SIGNIFICANT_ATTRIBUTES",
        None,
        "string",
        "Job attributes the schedd uses to group jobs into autoclusters; computed when unset.",
    ),
    _k(
        "SINGULARITY",
        "$(LIBEXEC)/apptainer",
        "string",
        "Path of the Apptainer/Singularity program the starter runs.",
    ),
    _k(
        "SINGULARITY_ADD_ROCM_FLAG",
        "false",
        "bool",
        "When true the starter asks Apptainer to expose AMD ROCm GPUs.",
    ),
    _k(
        "SINGULARITY_ALLOWED_JOB_ENV_VARS",
        None,
        "string",
        "Job environment variables passed into Apptainer containers.",
    ),
    _k(
        "SINGULARITY_BIND_EXPR",
        None,
        "string",
        "Expression giving extra bind mounts for Apptainer jobs; no default.",
    ),
    _k(
        "SINGULARITY_EXTRA_ARGUMENTS",
        None,
        "string",
        "Expression giving extra arguments for the Apptainer command; no default.",
    ),
    _k(
        "SINGULARITY_IGNORE_MISSING_BIND_TARGET",
        None,
        "string",
        (
            "When true binds whose target is missing in the image are skipped; no default in the "
            "table."
        ),
    ),
    _k(
        "SINGULARITY_IMAGE_EXPR",
        "SingularityImage",
        "string",
        "Expression giving the image an Apptainer job runs in.",
    ),
    _k("SINGULARITY_JOB", "false", "bool", "Expression; when true the job runs inside Apptainer."),
    _k(
        "SINGULARITY_MOUNT_HOME",
        "false",
        "bool",
        "When true the user's home directory is mounted into Apptainer containers.",
    ),
    _k(
        "SINGULARITY_RUN_TEST_BEFORE_JOB",
        None,
        "string",
        "When true a trivial command is run in the image before the job; no default in the table.",
    ),
    _k(
        "SINGULARITY_TARGET_DIR",
        None,
        "string",
        "Path inside the container where the scratch directory appears; no default.",
    ),
    _k(
        "SINGULARITY_TEST_SANDBOX",
        "$(LIBEXEC)/singularity_test_sandbox",
        "string",
        "Sandbox directory used to test that Apptainer works.",
    ),
    _k(
        "SINGULARITY_USE_PID_NAMESPACES",
        "auto",
        "string",
        "Whether Apptainer jobs get their own PID namespace (auto, true, false).",
    ),
    _k("SINGULARITY_VERBOSITY", "-s", "string", "Verbosity flag passed to Apptainer."),
    _k(
        "SLOTS_CONNECTED_TO_CONSOLE",
        "0",
        "int",
        "Number of slots whose ConsoleIdle tracks console activity.",
    ),
    _k(
        "SLOTS_CONNECTED_TO_KEYBOARD",
        "0",
        "int",
        "Number of slots whose KeyboardIdle tracks keyboard activity.",
    ),
    _k(
        "SLOT_WEIGHT",
        "Cpus",
        "string",
        "Expression giving how much a slot counts for accounting and fair share.",
    ),
    _k(
        "SmallJob",
        "(TARGET.ImageSize <  (15 * 1024))",
        "string",
        "Policy helper expression: true for jobs whose image size is under 15 MiB.",
    ),
    _k("SMTP_SERVER", None, "string", "SMTP server used for e-mail on platforms that need one."),
    _k(
        "SOFT_UID_DOMAIN",
        None,
        "string",
        "When true jobs may run under a uid that has no account on the execute machine.",
    ),
    _k(
        "SPOOL",
        "$(LOCAL_DIR)/spool",
        "path",
        "Directory for the schedd's job queue, history and spooled job files.",
    ),
    _k("SSHD", None, "string", "sshd program used by condor_ssh_to_job."),
    _k("SSHD_ARGS", None, "string", "Arguments for the sshd used by condor_ssh_to_job."),
    _k("SSH_KEYGEN", None, "string", "ssh-keygen program used by condor_ssh_to_job."),
    _k("SSH_KEYGEN_ARGS", None, "string", "Arguments for ssh-keygen used by condor_ssh_to_job."),
    _k("STANDARD", "1", "string", "Universe number of the former standard universe."),
    _k("START", "True", "string", "Startd policy: the slot is willing to start a job when true."),
    _k("STARTD", "$(SBIN)/condor_startd", "path", "Path of the condor_startd program."),
    _k(
        "STARTD_ADDRESS_FILE",
        "$(LOG)/.startd_address",
        "path",
        "File in which the startd writes its contact address.",
    ),
    _k(
        "STARTD_AD_REEVAL_EXPR",
        None,
        "string",
        "Expression that decides when the negotiator re-evaluates a slot ad during a cycle.",
    ),
    _k(
        "STARTD_ATTRS",
        None,
        "string",
        "Names of configuration values the startd publishes in its slot ads.",
    ),
    _k("STARTD_CLAIM_ID_FILE", None, "string", "File in which the startd records claim ids."),
    _k(
        "STARTD_CLEANUP_REMINDER_TIMER_INTERVAL",
        None,
        # Not in HTCondor's param table (the startd reads it with a default in its code), so
        # untyped to htcondor2.param: an integer all the same.
        "string",
        "Seconds between the startd's retries of what a job left (default 62; 0: never).",
    ),
    _k("STARTD_CONTACT_TIMEOUT", "45", "int", "Seconds the schedd waits when contacting a startd."),
    _k(
        "STARTD_CRON_AUTOPUBLISH",
        None,
        "string",
        "When startd cron output triggers an immediate collector update.",
    ),
    _k(
        "STARTD_CRON_CONFIG_VAL",
        None,
        "string",
        "condor_config_val program handed to startd cron jobs; no default.",
    ),
    _k("STARTD_CRON_JOBLIST", None, "string", "Names of the startd's cron jobs; none by default."),
    _k(
        "STARTD_CRON_LOG_NON_ZERO_EXIT",
        None,
        "string",
        "When true failing startd cron jobs have their output logged; no default in the table.",
    ),
    _k(
        "STARTD_CRON_MAX_JOB_LOAD",
        None,
        "string",
        "Most total load startd cron jobs may put on the machine; the code supplies the default.",
    ),
    _k("STARTD_CRON_NAME", None, "string", "Obsolete name for the startd's cron manager."),
    _k("STARTD_DEBUG", None, "string", "Debug categories for the startd's log."),
    _k(
        "STARTD_DETECT_GPUS",
        "-properties $(GPU_DISCOVERY_EXTRA)",
        "string",
        "Arguments the startd passes to condor_gpu_discovery.",
    ),
    _k(
        "STARTD_ENFORCE_DISK_LIMITS",
        "false",
        "bool",
        "When true each job gets its own LVM volume sized to its disk request.",
    ),
    _k(
        "STARTD_ENFORCE_FISK_LIMITS",
        None,
        "string",
        (
            "Misspelling of STARTD_ENFORCE_DISK_LIMITS found in the manual; HTCondor gives it no "
            "value."
        ),
    ),
    _k("STARTD_EXPRS", None, "string", "Older name for STARTD_ATTRS."),
    _k(
        "STARTD_HAS_BAD_UTMP",
        "0",
        "int",
        "When nonzero the startd does not trust utmp for login activity.",
    ),
    _k(
        "STARTD_HISTORY",
        "$(LOG)/startd_history",
        "string",
        "File in which the startd records jobs that finished on it.",
    ),
    _k(
        "STARTD_JOB_ATTRS",
        None,
        "string",
        "Job attributes the startd copies into the slot ad of the slot running the job.",
    ),
    _k(
        "STARTD_JOB_HOOK_KEYWORD",
        None,
        "string",
        "Keyword selecting the startd's fetch-work hooks.",
    ),
    _k(
        "STARTD_LATCH_EXPRS",
        None,
        "string",
        "Startd expressions whose value changes are timestamped in the slot ad.",
    ),
    _k(
        "STARTD_LEFTOVER_PROCS_BREAK_SLOTS",
        "false",
        "bool",
        "When true a slot whose job leaves processes behind is marked broken.",
    ),
    _k("STARTD_LOG", "$(LOG)/StartLog", "path", "Log file of the startd."),
    _k("STARTD_NAME", None, "string", "Name the startd advertises; unset uses the host name."),
    _k(
        "STARTD_NOCLAIM_SHUTDOWN",
        "0",
        "int",
        "Seconds without a claim after which the startd shuts down (0 means never).",
    ),
    _k(
        "STARTD_REBOOT_COMMAND",
        "/sbin/reboot",
        "string",
        "Command the startd runs to reboot the machine when asked.",
    ),
    _k(
        "STARTD_RECOMPUTE_DISK_FREE",
        "false",
        "bool",
        "When true the startd measures free disk on every update.",
    ),
    _k("STARTD_RESOURCE_PREFIX", None, "string", "Prefix of slot names; unset means slot."),
    _k(
        "STARTD_SHOULD_WRITE_CLAIM_ID_FILE",
        "true",
        "bool",
        "When true the startd writes claim ids to a file.",
    ),
    _k(
        "STARTD_SLOT_ATTRS",
        None,
        "string",
        "Slot attributes cross-published into every other slot's ad.",
    ),
    _k("STARTD_VM_EXPRS", None, "string", "Obsolete name for STARTD_SLOT_ATTRS."),
    _k("STARTER", "$(SBIN)/condor_starter", "path", "Path of the condor_starter program."),
    _k(
        "STARTER_ALLOW_RUNAS_OWNER",
        None,
        "string",
        "When true jobs may run as their submitting user; no default in the table.",
    ),
    _k(
        "STARTER_ALWAYS_HOLD_ON_OOM",
        "true",
        "bool",
        "When true a job killed for exceeding its memory is put on hold.",
    ),
    _k("STARTER_DEBUG", "D_PID ", "string", "Debug categories for starter logs."),
    _k(
        "STARTER_DEBUG_WAIT",
        "false",
        "bool",
        "Developer switch: the starter waits for a debugger at start-up.",
    ),
    _k(
        "STARTER_DEFAULT_JOB_HOOK_KEYWORD",
        None,
        "string",
        "Hook keyword the starter uses when a job names no valid one.",
    ),
    _k(
        "STARTER_DIAGNOSTIC_send_ep_logs",
        "$(LIBEXEC)/condor_diagnostic_send_ep_logs",
        "string",
        "Diagnostic program that sends execution point logs back with a job.",
    ),
    _k(
        "STARTER_DISABLE_USER_SUPPLIED_TRANSFER_PLUGINS",
        None,
        "string",
        "When true jobs may not bring their own file-transfer plugins.",
    ),
    _k(
        "STARTER_FILE_XFER_STALL_TIMEOUT",
        "3600",
        "int",
        "Seconds without progress after which the starter aborts a file transfer.",
    ),
    _k(
        "STARTER_FIRST_CHILDALIVE_DELAY",
        "30",
        "int",
        "Seconds before the starter sends its first keep-alive to the startd.",
        minimum=0,
    ),
    _k(
        "STARTER_HIDE_GPU_DEVICES",
        "true",
        "bool",
        "When true jobs cannot see GPUs not assigned to them.",
    ),
    _k(
        "STARTER_INITIAL_UPDATE_INTERVAL",
        "8",
        "int",
        "Seconds after a job starts before the starter's first job update.",
    ),
    _k(
        "STARTER_JOB_ENVIRONMENT",
        None,
        "string",
        "Environment variables the starter adds to every job.",
    ),
    _k(
        "STARTER_JOB_HOOK_KEYWORD",
        None,
        "string",
        "Hook keyword the starter always uses, whatever the job asks.",
    ),
    _k("STARTER_LIST", "STARTER", "string", "Starter programs the startd knows."),
    _k(
        "STARTER_LOCAL",
        "$(SBIN)/condor_starter",
        "path",
        "Path of the starter used for local-universe jobs.",
    ),
    _k("STARTER_LOG", "$(LOG)/StarterLog", "path", "Log file of the starters."),
    _k(
        "STARTER_LOG_NAME_APPEND",
        None,
        "string",
        "What distinguishes per-slot starter log names (Slot, Cluster, JobId, true or false).",
    ),
    _k(
        "STARTER_NESTED_SCRATCH",
        "true",
        "bool",
        "When true the job's working directory is a subdirectory of its scratch directory.",
    ),
    _k(
        "STARTER_NUM_THREADS_ENV_VARS",
        (
            "CUBACORES GOMAXPROCS JULIA_NUM_THREADS MKL_NUM_THREADS NUMEXPR_NUM_THREADS "
            "OMP_NUM_THREADS OMP_THREAD_LIMIT OPENBLAS_NUM_THREADS PYTHON_CPU_COUNT "
            "ROOT_MAX_THREADS TF_LOOP_PARALLEL_ITERATIONS TF_NUM_THREADS"
        ),
        "string",
        "Environment variables the starter sets to the slot's CPU count.",
    ),
    _k("STARTER_RLIMIT_AS", "0", "int", "Virtual-memory limit applied to jobs (0 means none)."),
    _k(
        "STARTER_SETS_HOME_ENV",
        "true",
        "bool",
        "When true the starter sets HOME in the job's environment.",
    ),
    _k(
        "STARTER_STATS_LOG",
        "$(LOG)/XferStatsLog",
        "path",
        "File recording the starter's file-transfer statistics.",
    ),
    _k(
        "STARTER_UPDATE_INTERVAL",
        None,
        "string",
        "Seconds between the starter's job updates; the starter's code supplies the default.",
    ),
    _k(
        "STARTER_UPLOAD_TIMEOUT",
        "300",
        "int",
        "Seconds the starter waits for output transfer to finish.",
    ),
    _k(
        "StartIdleTime",
        "15 * $(MINUTE)",
        "string",
        "Policy helper: keyboard idle seconds needed before a job may start.",
    ),
    _k(
        "START_BACKFILL",
        None,
        "string",
        "Startd policy: enter the Backfill state when true; no default.",
    ),
    _k("START_DAEMONS", None, "string", "When false condor_master starts no daemons."),
    _k(
        "START_LOCAL_UNIVERSE",
        "TotalLocalJobsRunning < 200",
        "string",
        "Schedd expression; a local-universe job may start only when true.",
    ),
    _k("START_MASTER", None, "string", "When false condor_master exits at once."),
    _k(
        "START_SCHEDULER_UNIVERSE",
        "TotalSchedulerJobsRunning < 500",
        "string",
        "Schedd expression; a scheduler-universe job may start only when true.",
    ),
    _k(
        "STASH_PLUGIN", "$(LIBEXEC)/stash_plugin", "path", "Path of the stash file-transfer plugin."
    ),
    _k(
        "StateTimer",
        "(time() - EnteredCurrentState)",
        "string",
        "Policy helper expression: seconds the slot has spent in its current state.",
    ),
    _k(
        "STATE_FILE",
        None,
        "string",
        "Accountant state file replicated in a highly available central manager; no default.",
    ),
    _k(
        "SUBMIT_REQUIREMENT_NAMES",
        None,
        "string",
        "Names of the submit requirements the schedd checks.",
    ),
    _k(
        "SUM_OF_CATALOGS",
        (
            "    ifthenelse(\n"
            "        RequestedCatalogs is undefined || catalogs is undefined,\n"
            "        0,\n"
            "        sum(\n"
            "            evalInEachContext(\n"
            "                member(CatalogID, RequestedCatalogIDs)\n"
            "                ? CatalogSize : 0,\n"
            "                catalogs\n"
            "            )\n"
            "        )\n"
            "    )"
        ),
        "string",
        "Expression adding up the sizes of the catalogs a job requests.",
    ),
    _k("SUSPEND", "False", "string", "Startd policy: suspend the running job when true."),
    _k(
        "SUSPEND_VANILLA",
        None,
        "string",
        "Vanilla-universe override of SUSPEND; unset, so SUSPEND applies.",
    ),
    _k(
        "SYSTEM_IMMUTABLE_JOB_ATTRS",
        "Owner ClusterId JobUniverse ProcId MyType TargetType User OsUser",
        "string",
        "Built-in list of job attributes that may never change once set.",
    ),
    _k(
        "SYSTEM_JOB_MACHINE_ATTRS",
        "Cpus,SlotWeight",
        "string",
        "Machine attributes copied into a job's ad when it starts.",
    ),
    _k(
        "SYSTEM_JOB_MACHINE_ATTRS_HISTORY_LENGTH",
        "1",
        "int",
        "Number of past machines whose attributes a job remembers.",
        minimum=0,
    ),
    _k(
        "SYSTEM_MAX_RELEASES",
        "-1",
        "int",
        "Holds after which SYSTEM_PERIODIC_RELEASE and periodic_release no longer release a job.",
    ),
    _k(
        "SYSTEM_ON_VACATE_COOL_DOWN",
        None,
        "string",
        (
            "Schedd expression giving a cool-down before rerunning an evicted job; set only by "
            "templates."
        ),
    ),
    _k(
        "SYSTEM_PERIODIC_HOLD",
        None,
        "string",
        "Schedd expression putting matching jobs on hold; no default.",
    ),
    _k(
        "SYSTEM_PERIODIC_RELEASE",
        None,
        "string",
        "Schedd expression releasing matching held jobs; no default.",
    ),
    _k(
        "SYSTEM_PERIODIC_REMOVE",
        None,
        "string",
        "Schedd expression removing matching jobs; no default.",
    ),
    _k(
        "SYSTEM_PERIODIC_VACATE",
        None,
        "string",
        "Schedd expression evicting matching running jobs back to idle; no default.",
    ),
    _k(
        "SYSTEM_PROTECTED_JOB_ATTRS",
        None,
        "string",
        "Built-in list of job attributes only queue super users may change.",
    ),
    _k(
        "SYSTEM_SECURE_JOB_ATTRS",
        (
            "x509userProxySubject x509UserProxyEmail x509UserProxyVOName x509UserProxyFirstFQAN "
            "x509UserProxyFQAN TotalSubmitProcs AuthTokenSubject AuthTokenIssuer AuthTokenGroups "
            "AuthTokenId AuthTokenScopes AuthTokenProject OsUser"
        ),
        "string",
        "Built-in list of job attributes only the schedd may set.",
    ),
    _k(
        "SYSTEM_STARTD_ATTRS",
        "COLLECTOR_HOST_STRING DedicatedScheduler",
        "string",
        "Built-in list of configuration values the startd publishes.",
    ),
    _k(
        "SYSTEM_STARTD_JOB_ATTRS",
        (
            "ImageSize, ExecutableSize, JobUniverse, NiceUser, CPUsUsage, ResidentSetSize, "
            "ProportionalSetSizeKb, MemoryUsage, DiskUsage, StdoutMtime, StderrMtime, "
            "ScratchDirFileCount"
        ),
        "string",
        "Built-in list of job attributes the startd copies into slot ads.",
    ),
    _k(
        "SYSTEM_STARTD_LATCH_EXPRS",
        "NumDynamicSlots",
        "string",
        "Built-in list of startd expressions whose changes are timestamped.",
    ),
    _k(
        "SYSTEM_STARTD_SLOT_ATTRS",
        None,
        "string",
        "Built-in list of slot attributes cross-published between slots.",
    ),
    _k("TEMP_DIR", None, "string", "Directory for temporary files (same role as TMP_DIR)."),
    _k(
        "TimeToWait",
        None,
        "string",
        "Example power-management helper macro; HTCondor defines no value for it.",
    ),
    _k("TMP_DIR", None, "string", "Directory for temporary files."),
    _k(
        "TRANSFER_IO_REPORT_INTERVAL",
        "10",
        "int",
        "Seconds between file-transfer I/O reports to the transfer queue.",
        minimum=0,
    ),
    _k(
        "TRANSFER_IO_REPORT_TIMESPANS",
        "1m:60 5m:300 1h:3600 1d:86400",
        "string",
        "Time windows over which transfer I/O statistics are published.",
    ),
    _k(
        "TRUST_UID_DOMAIN",
        None,
        "string",
        "When true the shadow accepts the UID_DOMAIN a submit machine claims.",
    ),
    _k(
        "UID_DOMAIN",
        "$(FULL_HOSTNAME)",
        "string",
        "Name shared by machines on which a user name means the same account.",
    ),
    _k(
        "UNHIBERNATE",
        None,
        "string",
        "Expression condor_rooster evaluates to decide to wake an offline machine; no default.",
    ),
    _k(
        "UNUSED_CLAIM_TIMEOUT",
        "600",
        "int",
        "Seconds the dedicated scheduler keeps an unused claim.",
    ),
    _k(
        "UPDATE_COLLECTOR_WITH_TCP",
        "true",
        "bool",
        "When true daemons send collector updates over TCP.",
    ),
    _k("UPDATE_INTERVAL", "300", "int", "Seconds between the startd's updates to the collector."),
    _k(
        "UPDATE_SPREAD_TIME",
        "$(UPDATE_COLLECTOR_WITH_TCP:0) ? 0 : 8",
        "int",
        "Seconds over which the startd spreads its updates (0 when updating over TCP).",
    ),
    _k(
        "UPDATE_VIEW_COLLECTOR_WITH_TCP",
        "false",
        "bool",
        "When true the collector forwards to view servers over TCP.",
    ),
    _k(
        "USER_JOB_WRAPPER",
        None,
        "string",
        "Program the starter runs in place of the job, passing the job's command line.",
    ),
    _k(
        "USE_CLONE_TO_CREATE_PROCESSES",
        "true",
        "bool",
        "When true daemons use clone() rather than fork() to start children.",
    ),
    _k(
        "USE_GID_PROCESS_TRACKING",
        "false",
        "bool",
        "When true job processes are tracked by a dedicated supplementary group id.",
    ),
    _k("USE_PID_NAMESPACES", "false", "bool", "When true each job runs in its own PID namespace."),
    _k(
        "USE_PROCD", "true", "bool", "When true daemons use condor_procd to track process families."
    ),
    _k(
        "USE_RESOURCE_REQUEST_COUNTS",
        "true",
        "bool",
        "When true schedds report how many jobs each resource request stands for.",
    ),
    _k(
        "USE_SHARED_PORT",
        "true",
        "bool",
        "When true daemons share one network port through condor_shared_port.",
    ),
    _k(
        "UWCS_CLAIM_WORKLIFE",
        None,
        "string",
        "CLAIM_WORKLIFE of the UWCS desktop policy; set by its template, no default.",
    ),
    _k(
        "UWCS_CONTINUE",
        None,
        "string",
        "CONTINUE of the UWCS desktop policy; set by its template, no default.",
    ),
    _k(
        "UWCS_KILL",
        None,
        "string",
        "KILL of the UWCS desktop policy; set by its template, no default.",
    ),
    _k(
        "UWCS_MaxJobRetirementTime",
        None,
        "string",
        "Retirement time of the UWCS desktop policy; set by its template, no default.",
    ),
    _k(
        "UWCS_NEGOTIATOR_POST_JOB_RANK",
        None,
        "string",
        "NEGOTIATOR_POST_JOB_RANK of the UWCS desktop policy; set by its template, no default.",
    ),
    _k(
        "UWCS_NEGOTIATOR_PRE_JOB_RANK",
        None,
        "string",
        "NEGOTIATOR_PRE_JOB_RANK of the UWCS desktop policy; set by its template, no default.",
    ),
    _k(
        "UWCS_PERIODIC_CHECKPOINT",
        None,
        "string",
        "PERIODIC_CHECKPOINT of the UWCS desktop policy; set by its template, no default.",
    ),
    _k(
        "UWCS_PREEMPT",
        None,
        "string",
        "PREEMPT of the UWCS desktop policy; set by its template, no default.",
    ),
    _k(
        "UWCS_PREEMPTION_RANK",
        None,
        "string",
        "PREEMPTION_RANK of the UWCS desktop policy; set by its template, no default.",
    ),
    _k(
        "UWCS_PREEMPTION_REQUIREMENTS",
        None,
        "string",
        "PREEMPTION_REQUIREMENTS of the UWCS desktop policy; set by its template, no default.",
    ),
    _k(
        "UWCS_START",
        None,
        "string",
        "START of the UWCS desktop policy; set by its template, no default.",
    ),
    _k(
        "UWCS_SUSPEND",
        None,
        "string",
        "SUSPEND of the UWCS desktop policy; set by its template, no default.",
    ),
    _k(
        "UWCS_WANT_SUSPEND",
        None,
        "string",
        "WANT_SUSPEND of the UWCS desktop policy; set by its template, no default.",
    ),
    _k(
        "UWCS_WANT_VACATE",
        None,
        "string",
        "WANT_VACATE of the UWCS desktop policy; set by its template, no default.",
    ),
    _k("VANILLA", "5", "string", "Universe number of the vanilla universe."),
    _k(
        "VIEWSERV01_ARGS",
        None,
        "string",
        "Arguments of a locally named view server in the manual's example; no default.",
    ),
    _k(
        "VIEWSERV02_ARGS",
        None,
        "string",
        "Arguments of a second locally named view server in the manual's example; no default.",
    ),
    _k(
        "VIEW_SERVER_ARGS",
        None,
        "string",
        "Arguments of a second collector run as a view server; no default.",
    ),
    _k("VM", "13", "string", "Universe number of the VM universe."),
    _k(
        "VM1_START",
        None,
        "string",
        "Obsolete per-slot helper from old suspension examples; no default.",
    ),
    _k(
        "VM2_START",
        None,
        "string",
        "Obsolete per-slot helper from old suspension examples; no default.",
    ),
    _k("VM_GAHP_LOG", "$(LOG)/VMGahpLog", "path", "Log file of condor_vm-gahp."),
    _k(
        "VM_GAHP_REQ_TIMEOUT",
        "300",
        "int",
        "Seconds the starter waits for a reply from condor_vm-gahp.",
    ),
    _k(
        "VM_GAHP_SEND_ALL_CLASSAD",
        "true",
        "bool",
        "When true the starter sends the whole job ad to condor_vm-gahp.",
    ),
    _k("VM_GAHP_SERVER", "$(SBIN)/condor_vm-gahp", "path", "Path of the condor_vm-gahp program."),
    _k(
        "VM_HARDWARE_VT",
        "false",
        "bool",
        "When true the machine advertises hardware virtualization support.",
    ),
    _k(
        "VM_KILLING_TIMEOUT",
        "60",
        "int",
        "Seconds a virtual machine is given to stop before it is killed.",
    ),
    _k("VM_MAX_MEMORY", "0", "int", "Most memory in MB all VM-universe jobs together may use."),
    _k("VM_MAX_NUMBER", None, "string", "Most VM-universe jobs that may run at once."),
    _k("VM_MEMORY", None, "string", "Memory in MB available to VM-universe jobs."),
    _k("VM_NETWORKING", "false", "bool", "When true virtual machines may have networking."),
    _k(
        "VM_NETWORKING_DEFAULT_TYPE",
        None,
        "string",
        "Networking type used when a VM job names none.",
    ),
    _k("VM_NETWORKING_MAC_PREFIX", None, "string", "MAC address prefix given to virtual machines."),
    _k(
        "VM_NETWORKING_TYPE",
        None,
        "string",
        "Networking types (nat, bridge) the machine supports for VMs.",
    ),
    _k(
        "VM_RECHECK_INTERVAL",
        "600",
        "int",
        "Seconds between the startd's rechecks of a failed VM setup.",
    ),
    _k(
        "VM_SOFT_SUSPEND",
        "false",
        "bool",
        "When true suspending a VM job only pauses it instead of saving it.",
    ),
    _k(
        "VM_STATUS_INTERVAL",
        "60",
        "int",
        "Seconds between status checks of a running virtual machine.",
    ),
    _k(
        "VM_STATUS_MAX_ERROR",
        "5",
        "int",
        "Failed status checks tolerated before a VM job is stopped.",
    ),
    _k(
        "VM_TYPE",
        None,
        "string",
        "Hypervisor the machine offers to VM-universe jobs (xen or kvm); no default.",
    ),
    _k(
        "WANT_HOLD",
        None,
        "string",
        "Startd expression; when true an evicted job is put on hold; set only by templates.",
    ),
    _k(
        "WANT_HOLD_REASON",
        None,
        "string",
        "Startd expression giving the hold reason when WANT_HOLD fires; set only by templates.",
    ),
    _k(
        "WANT_HOLD_SUBCODE",
        None,
        "string",
        "Startd expression giving the hold subcode when WANT_HOLD fires; set only by templates.",
    ),
    _k(
        "WANT_SUSPEND",
        "False",
        "string",
        "Startd policy: when true SUSPEND is evaluated instead of going straight to PREEMPT.",
    ),
    _k(
        "WANT_SUSPEND_VANILLA",
        None,
        "string",
        "Vanilla-universe override of WANT_SUSPEND; unset, so WANT_SUSPEND applies.",
    ),
    _k(
        "WANT_VACATE",
        "True",
        "string",
        "Startd policy: when true an evicted job may vacate gracefully instead of being killed.",
    ),
    _k(
        "WANT_VACATE_VANILLA",
        None,
        "string",
        "Vanilla-universe override of WANT_VACATE; unset, so WANT_VACATE applies.",
    ),
    _k(
        "WorkHours",
        None,
        "string",
        "Example time-of-day policy helper from the manual; HTCondor defines no value for it.",
    ),
    # Defaults HTCondor keeps per subsystem: a lookup made as that subsystem sees these values.
    _k("STARTD.IsStartd", "true", "bool", "Inside the startd IsStartd is true."),
    _k("NEGOTIATOR.IsNegotiator", "true", "bool", "Inside the negotiator IsNegotiator is true."),
    _k("SCHEDD.IsSchedd", "true", "bool", "Inside the schedd IsSchedd is true."),
    _k("COLLECTOR.IsCollector", "true", "bool", "Inside the collector IsCollector is true."),
    _k("MASTER.IsMaster", "true", "bool", "Inside condor_master IsMaster is true."),
    _k("STARTER.IsStarter", "true", "bool", "Inside the starter IsStarter is true."),
    _k("SHADOW.IsShadow", "true", "bool", "Inside the shadow IsShadow is true."),
    _k("SUBMIT.IsSubmit", "true", "bool", "Inside condor_submit IsSubmit is true."),
    _k("TOOL.IsTool", "true", "bool", "Inside command-line tools IsTool is true."),
    _k(
        "MASTER.ENABLE_CLASSAD_CACHING",
        "false",
        "bool",
        "ClassAd expression caching is off in this program.",
    ),
    _k(
        "STARTER.ENABLE_CLASSAD_CACHING",
        "false",
        "bool",
        "ClassAd expression caching is off in this program.",
    ),
    _k(
        "SHADOW.ENABLE_CLASSAD_CACHING",
        "false",
        "bool",
        "ClassAd expression caching is off in this program.",
    ),
    _k(
        "MASTER.PID_SNAPSHOT_INTERVAL",
        "60",
        "int",
        "condor_master scans the process table less often than other daemons.",
    ),
    _k(
        "AUTO_USE_FEATURE_PelicanRetryPolicy",
        "false",
        "bool",
        "Whether a daemon reads FEATURE:PelicanRetryPolicy by itself (only the schedd does).",
    ),
    _k(
        "SCHEDD.AUTO_USE_FEATURE_PelicanRetryPolicy",
        "true",
        "bool",
        "Makes every schedd read FEATURE:PelicanRetryPolicy after its configuration files.",
    ),
    _k(
        "CHECKPOINT_DESTINATION_MAPFILE",
        "$(LOCAL_DIR)/checkpoint-destination-mapfile",
        "path",
        "Map file of the checkpoint destinations a schedd accepts.",
    ),
    _k(
        "LIBRARIAN_MAX_DATABASE_SIZE",
        "2 * 1024 * 1024 * 1024",
        "string",
        "Largest size in bytes the librarian's job-history database may grow to.",
    ),
    _k(
        "LIBRARIAN_DATABASE",
        "$(SPOOL)/library.db",
        "path",
        "Where the librarian keeps its job-history database.",
    ),
    _k(
        "PROMETHEUS_HTTP_PORT",
        "$(COLLECTOR_PORT)",
        "int",
        "Port of the metrics daemon's Prometheus endpoint.",
    ),
    _k(
        "SHARED_PORT_PORT",
        "$(COLLECTOR_PORT)",
        "int",
        "Port on which the shared-port daemon listens.",
    ),
    _k(
        "SEC_TOKEN_AP_SIGNING_KEY_NAME",
        "AP",
        "string",
        "Name of the signing key an access point uses for the tokens it issues.",
    ),
    _k(
        "SEC_DEFAULT_AUTHENTICATION_METHODS",
        "FS,IDTOKENS,KERBEROS,SCITOKENS,SSL",
        "string",
        "Authentication methods tried when a daemon's own list is not set.",
    ),
)

#: Knobs whose values describe the machine or the running program rather than the configuration
#: (the host supplies them; CONFIG_ROOT is set by the reader to the top configuration file's
#: directory). They have no entry in KNOB_DEFAULTS.
DETECTED_KNOBS: tuple[str, ...] = (
    "ARCH",
    "OPSYS",
    "OPSYSVER",
    "OPSYSANDVER",
    "OPSYSMAJORVER",
    "OPSYSLONGNAME",
    "OPSYSSHORTNAME",
    "OPSYSNAME",
    "OPSYSLEGACY",
    "UNAME_ARCH",
    "UNAME_OPSYS",
    "UTSNAME_SYSNAME",
    "UTSNAME_NODENAME",
    "UTSNAME_RELEASE",
    "UTSNAME_VERSION",
    "UTSNAME_MACHINE",
    "HOSTNAME",
    "FULL_HOSTNAME",
    "IP_ADDRESS",
    "IPV4_ADDRESS",
    "IPV6_ADDRESS",
    "IP_ADDRESS_IS_IPV6",
    "TILDE",
    "USERNAME",
    "PID",
    "PPID",
    "REAL_UID",
    "REAL_GID",
    "SUBSYSTEM",
    "LOCALNAME",
    "CondorIsAdmin",
    "CONFIG_ROOT",
    "DETECTED_CORES",
    "DETECTED_CPUS",
    "DETECTED_PHYSICAL_CPUS",
    "DETECTED_MEMORY",
    "DETECTED_CPUS_LIMIT",
)
