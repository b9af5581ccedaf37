"""The configuration templates (metaknobs) reached with ``use CATEGORY : NAME[(args)]``.

This table holds every template of the POLICY, FEATURE, ROLE and SECURITY categories that
HTCondor 25.14.1 knows. (HTCondor also has EXPERIMENTAL templates for collector trees and HAD,
and an internal UPGRADE category that cannot be used; neither is here.) Each body holds the same
statements in the same order as HTCondor's; only comments and indentation differ.

A ``use`` line names a category and one or more templates separated by commas or white space;
categories and names are matched without regard to case. A template name may be followed by an
argument list in parentheses, which runs to the matching ``)`` (nested ``()`` and ``[]`` are
balanced). The body is then read as if it had been written in place of the ``use`` line: it may
hold assignments, ``NAME @=tag`` ... ``@tag`` values, further ``use`` lines, ``if`` / ``elif`` /
``else`` / ``endif``, and ``error :`` or ``warning :`` lines (the templates that need arguments
test for them and stop the load with ``error :``).

Before the body is read its argument references are substituted. This happens when an argument
list was written (even an empty ``()``) or when the body contains ``$(`` followed by a digit.

The argument text is cut at every comma, without regard to quotes or parentheses. Pieces that
are empty or only white space are dropped and do not count: ``(a,,c)`` and ``(a, ,c)`` both have
two arguments, the second being ``c``. The remaining pieces, trimmed, are arguments 1, 2, ...

An argument reference is ``$(`` then digits, then at most one of ``?``, ``#`` or ``+``, then
optionally ``:`` and a default, then ``)``. Before the colon nothing else may appear (``$(1x)``
is an ordinary macro reference, left for normal expansion). After the colon anything but ``)``
may appear; a ``(`` in the default skips ahead to the next ``)`` without counting nesting, so
a default may hold one level of ``$(...)``, while a deeper one ends the reference early and
leaves its last ``)`` in the text. What a reference becomes (always trimmed):

- ``$(0)``: the whole argument text, commas and empty pieces included; a default is ignored.
- ``$(0#)`` and ``$(0+)``: the number of arguments.
- ``$(0?)``: ``1`` when the argument text is not blank, else ``0``.
- ``$(N)``: argument N; when there are fewer than N arguments, the default (or nothing).
- ``$(N?)``: ``1`` when ``$(N)`` with the same default would not be blank, else ``0``.
- ``$(N+)`` (``$(N#)`` is the same): the raw text after argument N-1, starting past the comma
  that follows it (for N = 1, the whole text less one leading comma), so later empty pieces and
  commas are kept: ``(a,b,,d)`` gives ``$(3+)`` = ``,d``. With fewer than N-1 arguments it is
  empty. The default replaces it only when that raw text is empty before trimming: for
  ``(2,)`` ``$(2+:100%)`` is ``100%``, for ``(2, )`` it is blank.

After each substitution the scan starts again from the beginning of the body, so an argument
that itself contains ``$(N)`` is substituted in turn (one that refers to itself never ends in
HTCondor). Other ``$(NAME)`` references are left alone for the usual expansion.

Bodies are checked against HTCondor's in tests/config/test_templates_oracle.py.
"""

# The bodies are HTCondor statements, which cannot be wrapped without changing them.
# ruff: noqa: E501

from __future__ import annotations

import attrs


@attrs.frozen
class Template:
    """One template: ``use <category> : <name>`` reads ``body``. Names are case-insensitive."""

    category: str
    name: str
    body: str
    doc: str


TEMPLATES: tuple[Template, ...] = (
    # -- POLICY ------------------------------------------------------------------------------------
    Template(
        category="POLICY",
        name="ALWAYS_RUN_JOBS",
        body="""\
WANT_SUSPEND=False
WANT_VACATE=True
SUSPEND=False
CONTINUE=True
PREEMPT=False
START=True
KILL=False
PREEMPTION_REQUIREMENTS=False
NEGOTIATOR_CONSIDER_PREEMPTION=False
MaxJobRetirementTime=2147483647
CLAIM_WORKLIFE=1200
""",
        doc=(
            "Never suspends, preempts or kills: jobs start at once and run to completion (the old "
            "testing-mode policy). No arguments."
        ),
    ),
    Template(
        category="POLICY",
        name="DESKTOP",
        body="""\
if ! defined PolicyExprFragments
    use FEATURE : POLICY_EXPR_FRAGMENTS
endif
STARTD_LATCH_EXPRS = $(STARTD_LATCH_EXPRS) CpuBusy
CpuBusyTimer=IfThenElse(CpuBusyValue is 1, time() - CpuBusyTime, 0)
WANT_SUSPEND=($(SmallJob) || $(KeyboardNotBusy) || $(IsVanilla) ) && ( $(SUSPEND))
WANT_VACATE=$(ActivationTimer) > 600 || $(IsVanilla)
SUSPEND=($(KeyboardBusy) || ( ($(CpuBusyTimer) > 120) && $(ActivationTimer) > 90))
CONTINUE=($(CPUIdle) && ($(ActivityTimer) > 10) && (KeyboardIdle > $(ContinueIdleTime)))
PREEMPT=(((Activity == "Suspended") && ($(ActivityTimer) > $(MaxSuspendTime))) || (SUSPEND && (WANT_SUSPEND == False)))
START=((KeyboardIdle > $(StartIdleTime)) && ( $(CPUIdle) || (State != "Unclaimed" && State != "Owner")) )
KILL=False
MaxJobRetirementTime=0
CLAIM_WORKLIFE=
SLOTS_CONNECTED_TO_KEYBOARD=1000000
SLOTS_CONNECTED_TO_CONSOLE=1000000
IS_OWNER=(START =?= False)
""",
        doc=(
            "Cycle scavenging for desktops: start when keyboard and CPU are idle, suspend on "
            "owner activity, evict after a long suspension. No arguments."
        ),
    ),
    Template(
        category="POLICY",
        name="DESKTOP_HOURS",
        body="""\
use FEATURE : POLICY_HOURS_TO_START($(1+))
NonCondorLoadAvg=(LoadAvg - CondorLoadAvg)
CpuBusy=($(NonCondorLoadAvg) >= $(HighLoad))
STARTD_LATCH_EXPRS = $(STARTD_LATCH_EXPRS) CpuBusy
CpuBusyTimer=(CpuBusyValue * (time() - CpuBusyTime))
PREEMPT = $(NoJobsHours)
START = $(RunJobsHours)
WANT_SUSPEND=False
WANT_VACATE=True
SUSPEND=False
CONTINUE=True
KILL=False
MaxJobRetirementTime=0
CLAIM_WORKLIFE=
SLOTS_CONNECTED_TO_KEYBOARD=1000000
SLOTS_CONNECTED_TO_CONSOLE=1000000
IS_OWNER=(START =?= False)
""",
        doc=(
            "Runs jobs only outside working hours and evicts them when the working day begins. "
            "Optional arguments as for FEATURE:POLICY_HOURS_TO_START."
        ),
    ),
    Template(
        category="POLICY",
        name="DESKTOP_IDLE",
        body="""\
if $(1?)
    use FEATURE : POLICY_HOURS_TO_START($(1+))
endif
NonCondorLoadAvg=(LoadAvg - CondorLoadAvg)
CpuBusy=($(NonCondorLoadAvg) >= $(HighLoad))
CpuIdle=($(NonCondorLoadAvg) <= $(BackgroundLoad))
STARTD_LATCH_EXPRS = $(STARTD_LATCH_EXPRS) CpuBusy
CpuBusyTimer=(CpuBusyValue * (time() - CpuBusyTime))
PreemptKeyboardIdleTime=60
PreemptCpuBusyTime=120
PREEMPT=(KeyboardIdle < $(PreemptKeyboardIdleTime)) || ($(CpuBusyTimer) > $(PreemptCpuBusyTime))
if defined NoJobsHours
    PREEMPT = ($(PREEMPT)) && ($(NoJobsHours))
endif
START=(KeyboardIdle > $(StartIdleTime)) && $(CPUIdle)
if defined RunJobsHours
    START = ($(START)) || ($(RunJobsHours))
endif
WANT_SUSPEND=False
WANT_VACATE=True
SUSPEND=False
CONTINUE=True
KILL=False
MaxJobRetirementTime=0
CLAIM_WORKLIFE=
SLOTS_CONNECTED_TO_KEYBOARD=1000000
SLOTS_CONNECTED_TO_CONSOLE=1000000
IS_OWNER=(START =?= False)
""",
        doc=(
            "Runs jobs while nobody uses the desktop (idle keyboard, low non-HTCondor load) and "
            "evicts them on activity. Optional arguments as for FEATURE:POLICY_HOURS_TO_START add "
            "working hours."
        ),
    ),
    Template(
        category="POLICY",
        name="HOLD_IF_CPUS_EXCEEDED",
        body="""\
use POLICY : STARTD_PUBLISH_CpusUsage
CPU_EXCEEDED = (CpusUsage > Cpus + 0.8)
HOLD_REASON_CPU_EXCEEDED = CPU usage exceeded request_cpus
use POLICY : WANT_HOLD_IF( CPU_EXCEEDED, $(HOLD_SUBCODE_CPU_EXCEEDED:101), $(HOLD_REASON_CPU_EXCEEDED) )
""",
        doc=(
            "Publishes CpusUsage and holds a job (subcode 101 by default) that uses more than 0.8 "
            "cores beyond its slot. No arguments."
        ),
    ),
    Template(
        category="POLICY",
        name="HOLD_IF_DISK_EXCEEDED",
        body="""\
DISK_EXCEEDED = (JobUniverse != 13 && DiskUsage =!= UNDEFINED && DiskUsage > Disk)
HOLD_REASON_DISK_EXCEEDED = disk usage exceeded allocated disk
use POLICY : WANT_HOLD_IF( DISK_EXCEEDED, $(HOLD_SUBCODE_DISK_EXCEEDED:104), $(HOLD_REASON_DISK_EXCEEDED) )
""",
        doc=(
            "Holds a job (subcode 104 by default) whose disk usage exceeds the disk of its slot; "
            "VM-universe jobs are exempt. No arguments."
        ),
    ),
    Template(
        category="POLICY",
        name="HOLD_IF_MEMORY_EXCEEDED",
        body="""\
MEMORY_EXCEEDED = (JobUniverse != 13 && MemoryUsage =!= UNDEFINED && MemoryUsage > Memory)
HOLD_REASON_MEMORY_EXCEEDED = memory usage exceeded request_memory
use POLICY : WANT_HOLD_IF( MEMORY_EXCEEDED, $(HOLD_SUBCODE_MEMORY_EXCEEDED:102), $(HOLD_REASON_MEMORY_EXCEEDED) )
""",
        doc=(
            "Holds a job (subcode 102 by default) whose memory usage exceeds the memory of its "
            "slot; VM-universe jobs are exempt. No arguments."
        ),
    ),
    Template(
        category="POLICY",
        name="HOLD_IF_RUNTIME_EXCEEDS",
        body="""\
MAX_JOB_RUNTIME = $(1:24*3600)
HOLD_REASON_RUNTIME_EXCEEDS = runtime exceeded maximum ($(MAX_JOB_RUNTIME) seconds)
HOLD_RUNTIME_EXCEEDS = (JobState == "Running") && ((time() - JobCurrentStartDate) > $(MAX_JOB_RUNTIME))
use policy : WANT_HOLD_IF( HOLD_RUNTIME_EXCEEDS, $(HOLD_SUBCODE_RUNTIME_EXCEEDS:103), $(HOLD_REASON_RUNTIME_EXCEEDS) )
""",
        doc=(
            "Holds a job (subcode 103 by default) that has run longer than the optional argument, "
            "in seconds (24 hours when omitted)."
        ),
    ),
    Template(
        category="POLICY",
        name="LIMIT_JOB_RUNTIMES",
        body="""\
MAX_JOB_RUNTIME=$(1:24*3600)
MaxJobRetirementTime=$(MAX_JOB_RUNTIME)+120
PREEMPT=(Activity == "Busy") && ((time() - EnteredCurrentActivity) > $(MAX_JOB_RUNTIME))
""",
        doc=(
            "Evicts a job busy for longer than the optional argument, in seconds (24 hours when "
            "omitted), with two minutes of retirement time."
        ),
    ),
    Template(
        category="POLICY",
        name="OnlyRegisteredCheckpointDestinations",
        body="""\
TOOL_CLASSAD_USER_MAP_NAMES = $(TOOL_CLASSAD_USER_MAP_NAMES) checkpoint_destination_map
SCHEDD_CLASSAD_USER_MAP_NAMES = $(SCHEDD_CLASSAD_USER_MAP_NAMES) checkpoint_destination_map
CLASSAD_USER_MAPFILE_checkpoint_destination_map = $(CHECKPOINT_DESTINATION_MAPFILE)
CLASSAD_USER_MAP_PREFIX_checkpoint_destination_map = TRUE
JOB_TRANSFORM_NAMES = $(JOB_TRANSFORM_NAMES) ValidateCheckpointDestination
JOB_TRANSFORM_ValidateCheckpointDestination @=end
    EVALSET CheckpointDestinationValid = ifthenelse(undefined =?= userMap("checkpoint_destination_map", CheckpointDestination), undefined, True)
@end
IMMUTABLE_JOB_ATTRS = $(IMMUTABLE_JOB_ATTRS) CheckpointDestinationValid
SUBMIT_REQUIREMENT_NAMES = $(SUBMIT_REQUIREMENT_NAMES) RejectInvalidCheckpointDestination
SUBMIT_REQUIREMENT_RejectInvalidCheckpointDestination = CheckpointDestination =?= undefined || CheckpointDestinationValid =?= True
SUBMIT_REQUIREMENT_RejectInvalidCheckpointDestination_REASON = "You specified a checkpoint_destination this AP does not know how to clean up.  You may need to add a trailing / to the URL."
""",
        doc=(
            "Access-point policy rejecting jobs whose checkpoint destination is not in "
            "CHECKPOINT_DESTINATION_MAPFILE, via a job transform and a submit requirement. No "
            "arguments."
        ),
    ),
    Template(
        category="POLICY",
        name="PREEMPT_IF",
        body="""\
if !$(1?)
    error : use POLICY : PREEMPT_IF requires an argument. It should be the name of a config variable that has the trigger expression.
endif
if defined PREEMPT
    PREEMPT = $($(1)) || $(PREEMPT)
else
    PREEMPT = $($(1))
endif
MAXJOBRETIREMENTTIME = ifthenelse($($(1)),-1,$(MAXJOBRETIREMENTTIME:0))
if defined WANT_SUSPEND
    WANT_SUSPEND = $($(1)) =!= true && $(WANT_SUSPEND)
else
    WANT_SUSPEND = $($(1)) =!= true
endif
""",
        doc=(
            "Ors the expression stored in the knob named by the single, required argument into "
            "PREEMPT; while it holds, retirement time is dropped and suspension refused."
        ),
    ),
    Template(
        category="POLICY",
        name="PREEMPT_IF_CPUS_EXCEEDED",
        body="""\
use POLICY : STARTD_PUBLISH_CpusUsage
CPU_EXCEEDED = (CpusUsage > Cpus + 0.8)
use POLICY : PREEMPT_IF(CPU_EXCEEDED)
""",
        doc=(
            "Publishes CpusUsage and preempts at once a job that uses more than 0.8 cores beyond "
            "its slot. No arguments."
        ),
    ),
    Template(
        category="POLICY",
        name="PREEMPT_IF_DISK_EXCEEDED",
        body="""\
DISK_EXCEEDED = (JobUniverse != 13 && DiskUsage =!= UNDEFINED && DiskUsage > Disk)
use POLICY : PREEMPT_IF(DISK_EXCEEDED)
""",
        doc=(
            "Preempts at once a job whose disk usage exceeds the disk of its slot; VM-universe "
            "jobs are exempt. No arguments."
        ),
    ),
    Template(
        category="POLICY",
        name="PREEMPT_IF_MEMORY_EXCEEDED",
        body="""\
MEMORY_EXCEEDED = (JobUniverse != 13 && MemoryUsage =!= UNDEFINED && MemoryUsage > Memory)
use POLICY : PREEMPT_IF(MEMORY_EXCEEDED)
""",
        doc=(
            "Preempts at once a job whose memory usage exceeds the memory of its slot; VM- "
            "universe jobs are exempt. No arguments."
        ),
    ),
    Template(
        category="POLICY",
        name="PREEMPT_IF_RUNTIME_EXCEEDS",
        body="""\
MAX_JOB_RUNTIME = $(1:24*3600)
PREEMPT_RUNTIME_EXCEEDS = (JobState == "Running") && ((time() - JobCurrentStartDate) > $(MAX_JOB_RUNTIME))
use policy : PREEMPT_IF( PREEMPT_RUNTIME_EXCEEDS )
""",
        doc=(
            "Preempts a job that has run longer than the optional argument, in seconds (24 hours "
            "when omitted)."
        ),
    ),
    Template(
        category="POLICY",
        name="STARTD_PUBLISH_CpusUsage",
        body="""\
CpusUsage = ifthenelse(TotalLoadAvg > 0.0 && Activity!="Idle", CondorLoadAvg/TotalLoadAvg*MIN({TotalLoadAvg, $(DETECTED_CORES)}), 0)
STARTD_ATTRS = $(STARTD_ATTRS) CpusUsage
""",
        doc=(
            "Adds the slot attribute CpusUsage, the job's share of the load average counted in "
            "cores. No arguments."
        ),
    ),
    Template(
        category="POLICY",
        name="UWCS_DESKTOP",
        body="""\
use FEATURE : UWCS_DESKTOP_POLICY_VALUES
WANT_SUSPEND=$(UWCS_WANT_SUSPEND)
WANT_VACATE=$(UWCS_WANT_VACATE)
SUSPEND=$(UWCS_SUSPEND)
CONTINUE=$(UWCS_CONTINUE)
PREEMPT=$(UWCS_PREEMPT)
START=$(UWCS_START)
KILL=$(UWCS_KILL)
PERIODIC_CHECKPOINT=$(UWCS_PERIODIC_CHECKPOINT)
PREEMPTION_REQUIREMENTS=$(UWCS_PREEMPTION_REQUIREMENTS)
PREEMPTION_RANK=$(UWCS_PREEMPTION_RANK)
NEGOTIATOR_PRE_JOB_RANK=$(UWCS_NEGOTIATOR_PRE_JOB_RANK)
NEGOTIATOR_POST_JOB_RANK=$(UWCS_NEGOTIATOR_POST_JOB_RANK)
MaxJobRetirementTime=$(UWCS_MaxJobRetirementTime)
CLAIM_WORKLIFE=$(UWCS_CLAIM_WORKLIFE)
SLOTS_CONNECTED_TO_KEYBOARD=1024*1024
IS_OWNER=(START =?= False)
""",
        doc=(
            "The HTCondor 7.x University of Wisconsin desktop policy, applied from the values of "
            "FEATURE:UWCS_DESKTOP_POLICY_VALUES. No arguments."
        ),
    ),
    Template(
        category="POLICY",
        name="WANT_HOLD_IF",
        body="""\
use POLICY : PREEMPT_IF($(1))
if ! $(3?)
    error : use POLICY : WANT_HOLD_IF requires 3 arguments: policy_variable, subcode, reason_text
endif
if defined WANT_HOLD
    WANT_HOLD = (JobUniverse != 1 && $($(1))) || $(WANT_HOLD)
else
    WANT_HOLD = (JobUniverse != 1 && $($(1)))
endif
WANT_HOLD_SUBCODE = ifThenElse($($(1)), $(2) , $(WANT_HOLD_SUBCODE:UNDEFINED))
WANT_HOLD_REASON = ifThenElse($($(1)), "$(3+)", $(WANT_HOLD_REASON:UNDEFINED))
""",
        doc=(
            "Preempts and holds a job while the expression in the knob named by argument 1 is "
            "true; argument 2 is the hold subcode and the rest the reason text. All three are "
            "required."
        ),
    ),
    # -- FEATURE -----------------------------------------------------------------------------------
    Template(
        category="FEATURE",
        name="ADSTASH",
        body="""\
ADSTASH_SCHEDD_HISTORY=True
DAEMON_LIST=$(DAEMON_LIST) ADSTASH
""",
        doc="Adds the condor_adstash daemon and has it read the schedd job history. No arguments.",
    ),
    Template(
        category="FEATURE",
        name="AssignAccountingGroup",
        body="""\
if ! $(1?)
    error : use FEATURE : AssignAccountingGroup requires a map_file argument
endif
use FEATURE : ScheddUsermapFile(AssignAccountingGroup, $(1))
JOB_TRANSFORM_NAMES = $(JOB_TRANSFORM_NAMES) AssignAccountingGroup
JOB_TRANSFORM_AssignAccountingGroup @=end
    COPY Owner = AcctGroupUser
    COPY AcctGroup = RequestedAcctGroup
    EVALSET AcctGroup = usermap("AssignAccountingGroup",AcctGroupUser,AcctGroup)
    EVALSET AccountingGroup = join(".",AcctGroup,AcctGroupUser)
@end
IMMUTABLE_JOB_ATTRS = $(IMMUTABLE_JOB_ATTRS) AcctGroup AcctGroupUser AccountingGroup
if $(2:True)
    SUBMIT_REQUIREMENT_NAMES = $(SUBMIT_REQUIREMENT_NAMES) CheckRequestedGroup
    SUBMIT_REQUIREMENT_CheckRequestedGroup = RequestedAcctGroup is undefined || RequestedAcctGroup == AcctGroup
    SUBMIT_REQUIREMENT_CheckRequestedGroup_REASON = strcat("Permission denied setting accounting_group to ", RequestedAcctGroup)
endif
SUBMIT_REQUIREMENT_NAMES = $(SUBMIT_REQUIREMENT_NAMES) AssignAccountingGroup
SUBMIT_REQUIREMENT_AssignAccountingGroup = AcctGroup isnt undefined && AccountingGroup isnt undefined
SUBMIT_REQUIREMENT_AssignAccountingGroup_REASON = strcat("Submit requirement AssignAccountingGroup not met - Could not map '", Owner, "' to an accounting group ", RequestedAcctGroup)
""",
        doc=(
            "Schedd transform setting the accounting group from a map of the job owner; argument "
            "1 (required) is the map file, a false argument 2 skips checking a requested group."
        ),
    ),
    Template(
        category="FEATURE",
        name="AssignProjectName",
        body="""\
if ! $(1?)
    error : use FEATURE : AssignProjectName requires a map_name argument
endif
use FEATURE : SetJobAttrFromUsermap(ProjectName, Owner, $(1+))
""",
        doc=(
            "Sets ProjectName by mapping Owner through a schedd user map; argument 1 (required) "
            "names the map, optional argument 2 is its file."
        ),
    ),
    Template(
        category="FEATURE",
        name="ChildCollector",
        body="""\
COLLECTOR$(1)=$(COLLECTOR)
if $(2?)
    COLLECTOR$(1)_ARGS= -p $(2)
else
    COLLECTOR$(1)_ARGS= -sock collector$(1)
endif
COLLECTOR$(1).COLLECTOR_NAME=Collector$(1)
COLLECTOR$(1).CONDOR_VIEW_HOST=$(TOP_COLLECTOR_HOST)
COLLECTOR$(1).CCB_RECONNECT_FILE=$(SPOOL)/Collector$(1).ccb_reconnect
DAEMON_LIST=$(DAEMON_LIST) COLLECTOR$(1)
TOP_COLLECTOR_HOST=$(COLLECTOR_HOST)
""",
        doc=(
            "Adds a child collector COLLECTOR<id> that forwards to TOP_COLLECTOR_HOST; arguments "
            "are the id and an optional port (a shared-port socket otherwise)."
        ),
    ),
    Template(
        category="FEATURE",
        name="CommonCloudAttributesAWS",
        body="""\
use FEATURE : StartdCronOneShot(cloud, $(LIBEXEC)/common-cloud-attributes-aws.py, $(0))
STARTD_CRON_cloud_PREFIX = Cloud
""",
        doc=(
            "Runs the AWS cloud-attribute script once as startd cron job 'cloud' publishing "
            "Cloud* attributes; arguments are passed to the script."
        ),
    ),
    Template(
        category="FEATURE",
        name="CommonCloudAttributesGoogle",
        body="""\
use FEATURE : StartdCronOneShot(cloud, $(LIBEXEC)/common-cloud-attributes-google.py, $(0))
STARTD_CRON_cloud_PREFIX = Cloud
""",
        doc=(
            "Runs the Google cloud-attribute script once as startd cron job 'cloud' publishing "
            "Cloud* attributes; arguments are passed to the script."
        ),
    ),
    Template(
        category="FEATURE",
        name="ContinuousCronHook",
        body="""\
if ! $(3?)
    error : use FEATURE : ContinuousCronHook requires at least 3 arguments: STARTD_CRON | SCHEDD_CRON, tag, hook_exe [,hook_args]
endif
$(1)_JOBLIST=$($(1)_JOBLIST) $(2)
$(1)_$(2)_MODE=WaitForExit
$(1)_$(2)_PERIOD=0
$(1)_$(2)_EXECUTABLE=$(3)
if $(4?)
    $(1)_$(2)_ARGS=$(4)
endif
""",
        doc=(
            "Declares a cron job that is restarted whenever it exits. Arguments: STARTD_CRON or "
            "SCHEDD_CRON, tag, executable (all required), then optional arguments for it."
        ),
    ),
    Template(
        category="FEATURE",
        name="DefaultCheckpointDestination",
        body="""\
if ! defined DEFAULT_CHECKPOINT_DESTINATION
    if defined DEFAULT_CHECKPOINT_DESTINATION_PREFIX
        DEFAULT_CHECKPOINT_DESTINATION = "$(DEFAULT_CHECKPOINT_DESTINATION_PREFIX)/$(MY.Owner)"
    else
        warning: You must set DEFAULT_CHECKPOINT_DESTINATION_PREFIX or DEFAULT_CHECKPOINT_DESTINATION to use feature:DefaultCheckpointDestination.
    endif
endif
if defined DEFAULT_CHECKPOINT_DESTINATION
    EXTENDED_SUBMIT_COMMANDS @=end
        checkpoint_storage = "'default' or 'spool' or a checkpoint_destination"
        $(EXTENDED_SUBMIT_COMMANDS)
    @end
    JOB_TRANSFORM_CheckpointStorage @=end
        REQUIREMENTS (MY.CheckpointDestination =?= undefined) && (MY.SuccessCheckpointExitCode =!= undefined)

        ShouldSetCheckpointDestination = TRUE
        SetCheckpointDestination = $(DEFAULT_CHECKPOINT_DESTINATION)

        if defined MY.checkpoint_storage
            EVALMACRO IsSpool (checkpoint_storage == "spool")
            EVALMACRO IsDefault (checkpoint_storage == "default")

            if $(IsSpool)
                ShouldSetCheckpointDestination = FALSE
            elif ! $(IsDefault)
                SetCheckpointDestination = checkpoint_storage
            endif
        endif

        if $(ShouldSetCheckpointDestination)
            EVALSET CheckpointDestination $(SetCheckpointDestination)
        endif
    @end
    JOB_TRANSFORM_NAMES = CheckpointStorage $(JOB_TRANSFORM_NAMES)
endif
""",
        doc=(
            "Gives self-checkpointing jobs a default checkpoint destination (submit command plus "
            "transform) when DEFAULT_CHECKPOINT_DESTINATION or its _PREFIX is set; warns "
            "otherwise. No arguments."
        ),
    ),
    Template(
        category="FEATURE",
        name="GANGLIA",
        body="""\
DAEMON_LIST=$(DAEMON_LIST) GANGLIAD
""",
        doc="Adds the condor_gangliad daemon. No arguments.",
    ),
    Template(
        category="FEATURE",
        name="GPUs",
        body="""\
MACHINE_RESOURCE_INVENTORY_GPUs=$(LIBEXEC)/condor_gpu_discovery $(1) -properties $(GPU_DISCOVERY_EXTRA)
ENVIRONMENT_FOR_AssignedGPUs=GPU_DEVICE_ORDINAL=/(CUDA|OCL)//  CUDA_VISIBLE_DEVICES=/CUDA//
ENVIRONMENT_VALUE_FOR_UnAssignedGPUs=10000
use feature : GPUsMonitor
""",
        doc=(
            "Detects GPUs as a machine resource (the optional argument goes to "
            "condor_gpu_discovery), sets the GPU environment of jobs and turns on "
            "FEATURE:GPUsMonitor."
        ),
    ),
    Template(
        category="FEATURE",
        name="GPUsMonitor",
        body="""\
use feature : Monitor( GPUs, WaitForExit, 300, $(GPU_MONITOR), SUM:GPUs, PEAK:GPUsMemory )
STARTD_CRON_GPUs_MONITOR_CONDITION = TotalGPUs > 0 && OpSys =!= "WINDOWS"
STARTD_JOB_ATTRS = $(STARTD_JOB_ATTRS) GPUsUsage GPUsMemoryUsage
""",
        doc=(
            "Runs the GPU utilization monitor as a startd cron job reporting GPU usage and "
            "memory. No arguments."
        ),
    ),
    Template(
        category="FEATURE",
        name="HPC_ANNEX",
        body="""\
HPC_ANNEX_ENABLED = true
ispersonal = "127.0.0.1:0"=="$(COLLECTOR_HOST)"
if $INT(ispersonal)
    COLLECTOR_HOST = $(FULL_HOSTNAME):$(COLLECTOR_PORT)
endif
ispersonal = "$(FULL_HOSTNAME):0"=="$(COLLECTOR_HOST)"
if $INT(ispersonal)
    COLLECTOR_HOST = $(FULL_HOSTNAME):$(COLLECTOR_PORT)
endif
AP_COLLECTOR = $(COLLECTOR)
AP_COLLECTOR.COLLECTOR_LOG = $(LOG)/AP_Collector.log
AP_COLLECTOR.CCB_RECONNECT_FILE = $(SPOOL)/AP_Collector.ccb_reconnect
DAEMON_LIST = $(DAEMON_LIST) AP_COLLECTOR
AP_COLLECTOR_ARGS = -f -local-name AP_COLLECTOR -sock ap_collector
ANNEX_COLLECTOR = $(TCP_FORWARDING_HOST:$(FULL_HOSTNAME)):$(SHARED_PORT_PORT)?sock=ap_collector
AP_COLLECTOR.ALLOW_ADVERTISE_STARTD = $(ALLOW_ADVERTISE_STARTD) $(ALLOW_WRITE)
AP_COLLECTOR.ALLOW_ADVERTISE_MASTER = $(ALLOW_ADVERTISE_MASTER) $(ALLOW_WRITE)
if defined COLLECTOR_HOST
    SCHEDD.COLLECTOR_HOST = $(COLLECTOR_HOST) $(ANNEX_COLLECTOR)
else
    SCHEDD.COLLECTOR_HOST = $(ANNEX_COLLECTOR)
endif
ANNEX_TOKEN_KEY_NAME = $(SEC_TOKEN_AP_SIGNING_KEY_NAME)
ANNEX_TOKEN_DOMAIN = $(UID_DOMAIN)
JOB_TRANSFORM_NAMES = $(JOB_TRANSFORM_NAMES) AssignAnnex
JOB_TRANSFORM_AssignAnnex @=end
    REQUIREMENTS TargetAnnexName =!= undefined
    my_identity = "$(MY.Owner)@$(ANNEX_TOKEN_DOMAIN)"
    addl_reqs = ifThenElse(TARGET.AuthenticatedIdentity is undefined, true, $(my_identity) == TARGET.AuthenticatedIdentity) && (MY.TargetAnnexName == TARGET.AnnexName)
    if defined MY.JobMachineAttrs
        SET JobMachineAttrs "$(MY.JobMachineAttrs),AnnexName"
    else
        SET JobMachineAttrs "AnnexName"
    endif
    if defined MY.Requirements
        SET Requirements $(addl_reqs) && ($(MY.Requirements))
    else
        SET Requirements $(addl_reqs)
    endif
@end
if $(ANNEX_JOBS_EXCLUSIVELY:FALSE)
    JOB_TRANSFORM_NAMES = $(JOB_TRANSFORM_NAMES) AnnexJobsExclusively
    JOB_TRANSFORM_AnnexJobsExclusively @=end
        REQUIREMENTS TargetAnnexName =?= undefined
        addl_reqs = ifThenElse(TARGET.AuthenticatedIdentity is undefined, true, regexp("^condor(_pool)?@.*$", TARGET.AuthenticatedIdentity))
        if defined MY.Requirements
            SET Requirements $(addl_reqs) && ($(MY.Requirements))
        else
            SET Requirements $(addl_reqs)
        endif
    @end
endif
""",
        doc=(
            "Access-point setup for HPC annexes: a second collector for annex execute points, its "
            "permissions and the transforms that bind jobs to their annex. No arguments."
        ),
    ),
    Template(
        category="FEATURE",
        name="JobsHaveInstanceIDs",
        body="""\
SYSTEM_JOB_MACHINE_ATTRS = $(SYSTEM_JOB_MACHINE_ATTRS) CloudInstanceID
""",
        doc="Copies the cloud instance ID of the execute machine into the job ad. No arguments.",
    ),
    Template(
        category="FEATURE",
        name="KRB",
        body="""\
SEC_CREDENTIAL_DIRECTORY_KRB=/var/lib/condor/krb_credentials
DAEMON_LIST=$(DAEMON_LIST) CREDMON_KRB
SEC_CREDENTIAL_PRODUCER=$(LIBEXEC)/cred_producer_krb
SEC_CREDENTIAL_MONITOR_KRB_LOG=$(LOG)/CredMonKrbLog
AUTO_INCLUDE_CREDD_IN_DAEMON_LIST=True
USE_KEYRING_SESSIONS=True
""",
        doc=(
            "Adds the Kerberos credential monitor and the settings for jobs that need Kerberos "
            "tickets or AFS tokens. No arguments."
        ),
    ),
    Template(
        category="FEATURE",
        name="LIBRARIAN",
        body="""\
DAEMON_LIST=$(DAEMON_LIST) LIBRARIAN
USING_LIBRARIAN=True
if $(1?)
    LIBRARIAN_MAX_DATABASE_SIZE=$(1)
endif
if $(2?)
    LIBRARIAN_DATABASE=$(2)
endif
""",
        doc=(
            "Adds the librarian daemon; optional arguments are the maximum database size and the "
            "database path."
        ),
    ),
    Template(
        category="FEATURE",
        name="METRICD",
        body="""\
DAEMON_LIST=$(DAEMON_LIST) METRICD
metricd_port_is_shared_port = $(PROMETHEUS_HTTP_PORT:0) == $(SHARED_PORT_PORT:0)
if $INT(metricd_port_is_shared_port)
    METRICD_ARGS=-sock metricd
    SHARED_PORT_HTTP_FORWARDING_ID=metricd
endif
""",
        doc=(
            "Adds the metrics daemon, served through the shared port when PROMETHEUS_HTTP_PORT "
            "equals SHARED_PORT_PORT. No arguments."
        ),
    ),
    Template(
        category="FEATURE",
        name="Monitor",
        body="""\
if ! $(5?)
    error: use feature : monitor requires five or more arguments
endif
STARTD_CRON_JOBLIST = $(STARTD_CRON_JOBLIST) $(1)_MONITOR
STARTD_CRON_$(1)_MONITOR_MODE = $(2)
STARTD_CRON_$(1)_MONITOR_PERIOD = $(3)
STARTD_CRON_$(1)_MONITOR_EXECUTABLE = $(4)
STARTD_CRON_$(1)_MONITOR_METRICS = $(5+)
""",
        doc=(
            "Declares a startd cron resource monitor. Arguments (five or more): resource name, "
            "mode, period, executable, then the metrics."
        ),
    ),
    Template(
        category="FEATURE",
        name="OAUTH",
        body="""\
SEC_CREDENTIAL_DIRECTORY_OAUTH=/var/lib/condor/oauth_credentials
CREDMON_OAUTH_LOG=$(LOG)/CredMonOAuthLog
DAEMON_LIST=$(DAEMON_LIST) CREDMON_OAUTH
AUTO_INCLUDE_CREDD_IN_DAEMON_LIST=True
TRUST_CREDENTIAL_DIRECTORY=True
""",
        doc=(
            "Adds the OAuth credential monitor and the settings for jobs that use OAuth tokens. "
            "No arguments."
        ),
    ),
    Template(
        category="FEATURE",
        name="OneShotCronHook",
        body="""\
if ! $(3?)
    error : use FEATURE : OneShotCronHook requires at least 3 arguments: STARTD_CRON | SCHEDD_CRON, tag, hook_exe [,hook_args]
endif
$(1)_JOBLIST=$($(1)_JOBLIST) $(2)
$(1)_$(2)_MODE=OneShot
$(1)_$(2)_KILL=true
$(1)_$(2)_RECONFIG_RERUN=true
$(1)_$(2)_EXECUTABLE=$(3)
if $(4?)
    $(1)_$(2)_ARGS=$(4)
endif
""",
        doc=(
            "Declares a cron job run once at start-up and again on reconfiguration. Arguments: "
            "STARTD_CRON or SCHEDD_CRON, tag, executable (all required), then optional arguments "
            "for it."
        ),
    ),
    Template(
        category="FEATURE",
        name="PartitionableSlot",
        body="""\
NUM_SLOTS_TYPE_$(1:1)=1
SLOT_TYPE_$(1:1)_PARTITIONABLE=true
SLOT_TYPE_$(1:1)=$(2+:100%)
""",
        doc=(
            "Defines one partitionable slot of a slot type. Optional arguments: the type number "
            "(1) and its resources (100%)."
        ),
    ),
    Template(
        category="FEATURE",
        name="PelicanCache",
        body="""\
PELICANCACHE=/usr/bin/pelican
DAEMON_LIST=$(DAEMON_LIST) PELICANCACHE
PELICANCACHE_LOG=$(LOG)/PelicanCacheLog
PELICANCACHE_SIZE=$(1:256GB)
PELICANCACHE_RUNLOCATION=$(2:$(LOCAL_DIR)/localcache)
PELICANCACHE_FEDERATION=$(3:osg-htc.org)
PELICANCACHE_HIGHWATERMARKPERCENTAGE=95
PELICANCACHE_LOWWATERMARKPERCENTAGE=85
PELICANCACHE_ARGS=serve -d --module localcache -L $(PELICANCACHE_LOG) -f $(PELICANCACHE_FEDERATION)
PELICANCACHE_ENVIRONMENT @=end
    PELICAN_SERVER_ENABLEUI=false
    PELICAN_LOCALCACHE_SIZE=$(PELICANCACHE_SIZE)
    PELICAN_LOCALCACHE_RUNLOCATION=$(PELICANCACHE_RUNLOCATION)
    PELICAN_LOCALCACHE_HIGHWATERMARKPERCENTAGE=$(PELICANCACHE_HIGHWATERMARKPERCENTAGE)
    PELICAN_LOCALCACHE_LOWWATERMARKPERCENTAGE=$(PELICANCACHE_LOWWATERMARKPERCENTAGE)
@end
STARTD_ENVIRONMENT=;NEAREST_CACHE=unix:/$(PELICANCACHE_RUNLOCATION)/cache.sock;$(STARTD_ENVIRONMENT)
""",
        doc=(
            "Runs a local Pelican cache and points jobs at it. Optional arguments: cache size "
            "(256GB), cache directory and federation."
        ),
    ),
    Template(
        category="FEATURE",
        name="PelicanRetryPolicy",
        body="""\
PelicanRetry_MaxRetries = 4
PelicanRetry_MinimumDelay = 300
PelicanRetry_RandomDelay = 300
pelican_error_subcode_retriable = 2816
pelican_error_subcode_stopped = 1280
PelicanRetryCondition = ((VacateReasonCode == 12 || VacateReasonCode == 13) && ((VacateReasonSubCode == $(pelican_error_subcode_retriable)) || (VacateReasonSubCode == $(pelican_error_subcode_stopped)))) ?: false
JOB_TRANSFORM_NAMES = $(JOB_TRANSFORM_NAMES) PelicanRetry
JOB_TRANSFORM_PelicanRetry @=jt
    REQUIREMENTS (stringListIMember("pelican",WantTransferPluginMethods) || stringListIMember("osdf",WantTransferPluginMethods) || stringListIMember("stash",WantTransferPluginMethods)) && isUndefined(PelicanRetryEnabled)
    EVALMACRO retry_delay = $(PelicanRetry_MinimumDelay) + random($(PelicanRetry_RandomDelay))
    SET PelicanRetryEnabled true
    SET PelicanRetryDelay $(retry_delay)
@jt
SYSTEM_ON_VACATE_COOL_DOWN = ((PelicanRetryEnabled?:false) && $(PelicanRetryCondition) && ((NumJobCoolDowns?:0) < $(PelicanRetry_MaxRetries)) ? PelicanRetryDelay : ($(SYSTEM_ON_VACATE_COOL_DOWN:0)))
""",
        doc=(
            "Schedd transform letting jobs whose pelican, osdf or stash transfer failed in a "
            "retryable way run again after a random cool-down, at most four times. No arguments."
        ),
    ),
    Template(
        category="FEATURE",
        name="PeriodicCronHook",
        body="""\
if ! $(4?)
    error : use FEATURE : PeriodicCronHook requires at least 4 arguments: STARTD_CRON | SCHEDD_CRON, tag, period, hook_exe [,hook_args]
endif
$(1)_JOBLIST=$($(1)_JOBLIST) $(2)
$(1)_$(2)_MODE=Periodic
$(1)_$(2)_PERIOD=$(3)
$(1)_$(2)_EXECUTABLE=$(4)
if $(5?)
    $(1)_$(2)_ARGS=$(5)
endif
""",
        doc=(
            "Declares a cron job run at a fixed period. Arguments: STARTD_CRON or SCHEDD_CRON, "
            "tag, period, executable (all required), then optional arguments for it."
        ),
    ),
    Template(
        category="FEATURE",
        name="POLICY_EXPR_FRAGMENTS",
        body="""\
PolicyExprFragments=1
KeyboardBusy=(KeyboardIdle < $(MINUTE))
ConsoleBusy=(ConsoleIdle  < $(MINUTE))
KeyboardNotBusy=($(KeyboardBusy) == False)
JustCPU=($(CPUBusy) && ($(KeyboardBusy) == False))
MachineBusy=($(CPUBusy) || $(KeyboardBusy))
NonCondorLoadAvg=(LoadAvg - CondorLoadAvg)
CpuIdle=($(NonCondorLoadAvg) <= $(BackgroundLoad))
CpuBusy=($(NonCondorLoadAvg) >= $(HighLoad))
ActivationTimer=ifThenElse(JobStart =!= UNDEFINED, (time() - JobStart), 0)
LastCkpt=(time() - LastPeriodicCheckpoint)
""",
        doc=(
            "Helper expressions (KeyboardBusy, CpuIdle, ActivationTimer...) that the desktop "
            "policies build on. No arguments."
        ),
    ),
    Template(
        category="FEATURE",
        name="POLICY_HOURS_TO_START",
        body="""\
WorkdayBeginHour=$(1:8)
WorkdayEndHour=$(2:12+5)
WorkdayBeginMinuteStartJobs=($(WorkdayBeginHour))*60 - 29.5
WorkdayBeginMinuteStopJobs=($(WorkdayBeginHour))*60 - 9.5
WorkdayEndMinute=($(WorkdayEndHour))*60 + 0.5
RunJobsHours=ClockMin < $INT(WorkdayBeginMinuteStartJobs) || ClockMin > $INT(WorkdayEndMinute)
NoJobsHours=ClockMin > $INT(WorkdayBeginMinuteStopJobs) && ClockMin < $INT(WorkdayEndMinute)
if $(3?)
    WorkweekFirstDay=$(3:1)
    WorkweekLastDay=$(4:5)
    IsWeekend=ClockDay < $INT(WorkweekFirstDay) || ClockDay > $INT(WorkWeekLastDay)
    IsWorkday=ClockDay >= $INT(WorkweekFirstDay) && ClockDay <= $INT(WorkWeekLastDay)
    RunJobsHours=$(IsWeekend) || $(RunJobsHours)
    NoJobsHours=$(IsWorkday) && $(NoJobsHours)
endif
RunJobsHours=($(RunJobsHours))
NoJobsHours=($(NoJobsHours))
""",
        doc=(
            "Defines RunJobsHours and NoJobsHours from a working day. Optional arguments: first "
            "hour (8), last hour (17) and, to honour weekends, first (1) and last (5) working "
            "day."
        ),
    ),
    Template(
        category="FEATURE",
        name="REMOTE_CONFIG",
        body="""\
ENABLE_PERSISTENT_CONFIG=True
PERSISTENT_CONFIG_DIR=$(SPOOL)
use FEATURE : REMOTE_RUNTIME_CONFIG($(0))
""",
        doc=(
            "Enables persistent and run-time remote configuration; the arguments are knob names "
            "that may be set remotely."
        ),
    ),
    Template(
        category="FEATURE",
        name="REMOTE_RUNTIME_CONFIG",
        body="""\
ENABLE_RUNTIME_CONFIG=True
ALLOW_CONFIG=$(ALLOW_ADMINISTRATOR)
if $(0#)
    SETTABLE_ATTRS_CONFIG=$(SETTABLE_ATTRS_CONFIG) $(0)
endif
""",
        doc=(
            "Lets administrators change configuration at run time; the arguments are knob names "
            "added to SETTABLE_ATTRS_CONFIG."
        ),
    ),
    Template(
        category="FEATURE",
        name="ScheddCronContinuous",
        body="""\
use FEATURE : ContinuousCronHook(SCHEDD_CRON, $(0))
""",
        doc=(
            "FEATURE:ContinuousCronHook for the schedd. Arguments: tag, executable, then optional "
            "arguments for it."
        ),
    ),
    Template(
        category="FEATURE",
        name="ScheddCronOneShot",
        body="""\
use FEATURE : OneShotCronHook(SCHEDD_CRON, $(0))
""",
        doc=(
            "FEATURE:OneShotCronHook for the schedd. Arguments: tag, executable, then optional "
            "arguments for it."
        ),
    ),
    Template(
        category="FEATURE",
        name="ScheddCronPeriodic",
        body="""\
use FEATURE : PeriodicCronHook(SCHEDD_CRON, $(0))
""",
        doc=(
            "FEATURE:PeriodicCronHook for the schedd. Arguments: tag, period, executable, then "
            "optional arguments for it."
        ),
    ),
    Template(
        category="FEATURE",
        name="ScheddUsermapFile",
        body="""\
if ! $(2?)
    error : use FEATURE : ScheddUsermapFile requires 2 arguments: map_name, map_file
endif
SCHEDD_CLASSAD_USER_MAP_NAMES = $(SCHEDD_CLASSAD_USER_MAP_NAMES) $(1)
CLASSAD_USER_MAPFILE_$(1) = $(2)
""",
        doc=(
            "Declares a schedd ClassAd user map. Two required arguments: the map name and its file."
        ),
    ),
    Template(
        category="FEATURE",
        name="SetJobAttrFromUsermap",
        body="""\
if ! $(3?)
    error : use FEATURE : SetJobAttrFromUsermap requires at least 3 arguments: dest_attr, src_attr, map_name [,map_file]
endif
if $(4?)
    use FEATURE : ScheddUsermapFile($(3), $(4))
endif
JOB_TRANSFORM_NAMES += Set$(1)
JOB_TRANSFORM_Set$(1) = EVALSET $(1) usermap("$(3)",$(2),$(1))
SUBMIT_REQUIREMENT_NAMES += Require$(1)
SUBMIT_REQUIREMENT_Require$(1) = $(1) isnt undefined
SUBMIT_REQUIREMENT_Require$(1)_REASON = strcat("Submit requirement Require$(1) not met - Could not map '", $(2)?:"undefined", "' to a $(1)")
""",
        doc=(
            "Schedd transform setting a job attribute from a user-map lookup of another and "
            "requiring a result. Arguments: target attribute, source attribute, map name "
            "(required), map file (optional)."
        ),
    ),
    Template(
        category="FEATURE",
        name="StartdCronContinuous",
        body="""\
use FEATURE : ContinuousCronHook(STARTD_CRON, $(0))
""",
        doc=(
            "FEATURE:ContinuousCronHook for the startd. Arguments: tag, executable, then optional "
            "arguments for it."
        ),
    ),
    Template(
        category="FEATURE",
        name="StartdCronOneShot",
        body="""\
use FEATURE : OneShotCronHook(STARTD_CRON, $(0))
""",
        doc=(
            "FEATURE:OneShotCronHook for the startd. Arguments: tag, executable, then optional "
            "arguments for it."
        ),
    ),
    Template(
        category="FEATURE",
        name="StartdCronPeriodic",
        body="""\
use FEATURE : PeriodicCronHook(STARTD_CRON, $(0))
""",
        doc=(
            "FEATURE:PeriodicCronHook for the startd. Arguments: tag, period, executable, then "
            "optional arguments for it."
        ),
    ),
    Template(
        category="FEATURE",
        name="StaticSlots",
        body="""\
NUM_SLOTS_TYPE_$(1:1)=$(2:$(NUM_CPUS))
SLOT_TYPE_$(1:1)_PARTITIONABLE=false
SLOT_TYPE_$(1:1)=$(3+:1/$(NUM_SLOTS_TYPE_$(1:1)))
SLOT_TYPE_$(1:1)=$(3+)
""",
        doc=(
            "Defines static slots of one slot type. Optional arguments: the type number (1), the "
            "number of slots (NUM_CPUS) and the resources of each slot."
        ),
    ),
    Template(
        category="FEATURE",
        name="TESTINGMODE_POLICY_VALUES",
        body="""\
TESTINGMODE_WANT_SUSPEND=False
TESTINGMODE_WANT_VACATE=True
TESTINGMODE_START=True
TESTINGMODE_SUSPEND=False
TESTINGMODE_CONTINUE=True
TESTINGMODE_PREEMPT=False
TESTINGMODE_KILL=False
TESTINGMODE_PERIODIC_CHECKPOINT=False
TESTINGMODE_PREEMPTION_REQUIREMENTS=False
TESTINGMODE_PREEMPTION_RANK=0
TESTINGMODE_CLAIM_WORKLIFE=1200
""",
        doc=(
            "Defines, without applying them, the TESTINGMODE_* never-preempt values of HTCondor "
            "7.x. No arguments."
        ),
    ),
    Template(
        category="FEATURE",
        name="UWCS_DESKTOP_POLICY_VALUES",
        body="""\
if ! defined PolicyExprFragments
    use FEATURE : POLICY_EXPR_FRAGMENTS
endif
STARTD_LATCH_EXPRS = $(STARTD_LATCH_EXPRS) CpuBusy
CpuBusyTimer=IfThenElse(CpuBusyValue is 1, time() - CpuBusyTime, 0)
UWCS_WANT_SUSPEND=( $(SmallJob) || $(KeyboardNotBusy) || $(IsVanilla) ) && ( $(SUSPEND) )
UWCS_WANT_VACATE=( $(ActivationTimer) > 10 * $(MINUTE) || $(IsVanilla) )
UWCS_START=( (KeyboardIdle > $(StartIdleTime)) && ( $(CPUIdle) || (State != "Unclaimed" && State != "Owner")) )
UWCS_SUSPEND=( $(KeyboardBusy) || ( ($(CpuBusyTimer) > 2 * $(MINUTE)) && $(ActivationTimer) > 90 ) )
UWCS_CONTINUE=( $(CPUIdle) && ($(ActivityTimer) > 10) && (KeyboardIdle > $(ContinueIdleTime)) )
UWCS_PREEMPT=( ((Activity == "Suspended") && ($(ActivityTimer) > $(MaxSuspendTime))) || (SUSPEND && (WANT_SUSPEND == False)) )
UWCS_MaxJobRetirementTime=0
UWCS_KILL=false
UWCS_PERIODIC_CHECKPOINT=$(LastCkpt) > (3 * $(HOUR) + $RANDOM_INTEGER(-30,30,1) * $(MINUTE) )
UWCS_NEGOTIATOR_PRE_JOB_RANK=(10000000 * My.Rank) + (1000000 * (RemoteOwner =?= UNDEFINED)) - (100000 * Cpus) - Memory
UWCS_NEGOTIATOR_POST_JOB_RANK=(RemoteOwner =?= UNDEFINED) * (ifthenElse(isUndefined(KFlops), 1000, Kflops) - SlotID - 1.0e10*(Offline=?=True))
UWCS_PREEMPTION_REQUIREMENTS=((SubmitterGroup =?= RemoteGroup) && ($(StateTimer) > (1 * $(HOUR))) && (RemoteUserPrio > TARGET.SubmitterUserPrio * 1.2)) || (MY.NiceUser == True)
UWCS_PREEMPTION_RANK=(RemoteUserPrio * 1000000) - ifThenElse(isUndefined(TotalJobRuntime), 0, TotalJobRuntime)
""",
        doc=(
            "Defines, without applying them, the UWCS_* desktop policy values of HTCondor 7.x. No "
            "arguments."
        ),
    ),
    # -- ROLE --------------------------------------------------------------------------------------
    Template(
        category="ROLE",
        name="CentralManager",
        body="""\
DAEMON_LIST=$(DAEMON_LIST) COLLECTOR NEGOTIATOR
""",
        doc="Adds the collector and the negotiator to DAEMON_LIST. No arguments.",
    ),
    Template(
        category="ROLE",
        name="Execute",
        body="""\
DAEMON_LIST=$(DAEMON_LIST) STARTD
""",
        doc="Adds the startd to DAEMON_LIST. No arguments.",
    ),
    Template(
        category="ROLE",
        name="get_htcondor_central_manager",
        body="""\
use security:get_htcondor_idtokens
use role:CentralManager
""",
        doc=(
            "Central manager as installed by get_htcondor: SECURITY:get_htcondor_idtokens plus "
            "ROLE:CentralManager. No arguments."
        ),
    ),
    Template(
        category="ROLE",
        name="get_htcondor_execute",
        body="""\
use security:get_htcondor_idtokens
use role:execute
""",
        doc=(
            "Execute point as installed by get_htcondor: SECURITY:get_htcondor_idtokens plus "
            "ROLE:Execute. No arguments."
        ),
    ),
    Template(
        category="ROLE",
        name="get_htcondor_submit",
        body="""\
use security:get_htcondor_idtokens
use role:submit
""",
        doc=(
            "Access point as installed by get_htcondor: SECURITY:get_htcondor_idtokens plus "
            "ROLE:Submit. No arguments."
        ),
    ),
    Template(
        category="ROLE",
        name="Personal",
        body="""\
CONDOR_HOST=127.0.0.1
COLLECTOR_HOST=$(CONDOR_HOST):0
DAEMON_LIST=MASTER COLLECTOR NEGOTIATOR STARTD SCHEDD
RunBenchmarks=0
""",
        doc=(
            "A whole pool on one machine: collector on 127.0.0.1 with a dynamic port, every "
            "daemon, no benchmarks. No arguments."
        ),
    ),
    Template(
        category="ROLE",
        name="Submit",
        body="""\
DAEMON_LIST=$(DAEMON_LIST) SCHEDD
""",
        doc="Adds the schedd to DAEMON_LIST. No arguments.",
    ),
    # -- SECURITY ----------------------------------------------------------------------------------
    Template(
        category="SECURITY",
        name="FIPS",
        body="""\
FIPS = True
use security:strong
SEC_DEFAULT_CRYPTO_METHODS = AES,3DES
""",
        doc="SECURITY:STRONG restricted to FIPS-approved ciphers. No arguments.",
    ),
    Template(
        category="SECURITY",
        name="get_htcondor_idtokens",
        body="""\
use security:recommended
SEC_READ_AUTHENTICATION_METHODS = $(SEC_DEFAULT_AUTHENTICATION_METHODS),ANONYMOUS
SEC_CLIENT_AUTHENTICATION_METHODS = $(SEC_DEFAULT_AUTHENTICATION_METHODS),ANONYMOUS
TRUST_DOMAIN = $(CONDOR_HOST)
""",
        doc=(
            "The security of get_htcondor installs: SECURITY:recommended, ANONYMOUS allowed for "
            "reads and clients, TRUST_DOMAIN set to CONDOR_HOST. No arguments."
        ),
    ),
    Template(
        category="SECURITY",
        name="HOST_BASED",
        body="""\
ALLOW_ADMINISTRATOR=$(CONDOR_HOST)
ALLOW_READ=*
ALLOW_WRITE=$(FULL_HOSTNAME) $(IPV4_ADDRESS) $(IPV6_ADDRESS)
ALLOW_DAEMON=$(FULL_HOSTNAME) $(IPV4_ADDRESS) $(IPV6_ADDRESS)
ALLOW_NEGOTIATOR=$(CONDOR_HOST)
ALLOW_NEGOTIATOR_SCHEDD=$(ALLOW_NEGOTIATOR) $(FLOCK_NEGOTIATOR_HOSTS)
ALLOW_WRITE_COLLECTOR=$(ALLOW_WRITE) $(FLOCK_FROM)
ALLOW_WRITE_STARTD=$(ALLOW_WRITE) $(FLOCK_FROM)
ALLOW_READ_COLLECTOR=$(ALLOW_READ) $(FLOCK_FROM)
ALLOW_READ_STARTD=$(ALLOW_READ) $(FLOCK_FROM)
LEGACY_ALLOW_SEMANTICS = TRUE
""",
        doc=(
            "Authorization by host name and address: administration from CONDOR_HOST, writes from "
            "this machine, reads from anywhere. No arguments."
        ),
    ),
    Template(
        category="SECURITY",
        name="recommended",
        body="""\
use security:recommended_v24_0($(1+))
""",
        doc=(
            "The current recommended security, SECURITY:recommended_v24_0; takes the same "
            "optional arguments."
        ),
    ),
    Template(
        category="SECURITY",
        name="recommended_v24_0",
        body="""\
SECURITY_MODEL = 24.0
use security:strong
SEC_READ_AUTHENTICATION = OPTIONAL
SEC_CLIENT_AUTHENTICATION = OPTIONAL
ALLOW_ADMINISTRATOR = $(1:condor)@* condor@password $(2:root@*) $(3+)
ALLOW_DAEMON = $(1:condor)@*  condor@password
ALLOW_NEGOTIATOR = $(1:condor)@* condor@password
ALLOW_WRITE = *
ALLOW_READ = *
""",
        doc=(
            "Strong security except for reads, as recommended since 24.0. Optional arguments: "
            "daemon user (condor), administrator (root@*), then further administrators."
        ),
    ),
    Template(
        category="SECURITY",
        name="recommended_v9_0",
        body="""\
SECURITY_MODEL = 9.0
use security:strong
SEC_READ_AUTHENTICATION = OPTIONAL
SEC_READ_ENCRYPTION = OPTIONAL
SEC_READ_INTEGRITY = OPTIONAL
ALLOW_ADMINISTRATOR = $(1:condor)@* condor_pool@* $(2:root@*) $(3+)
ALLOW_DAEMON = $(1:condor)@*  condor_pool@*
ALLOW_NEGOTIATOR = $(1:condor)@* condor_pool@*
ALLOW_WRITE = *
ALLOW_READ = *
""",
        doc=(
            "Strong security except for reads, as recommended since 9.0. Optional arguments: "
            "daemon user (condor), administrator (root@*), then further administrators."
        ),
    ),
    Template(
        category="SECURITY",
        name="STRONG",
        body="""\
SEC_DEFAULT_ENCRYPTION=required
SEC_DEFAULT_INTEGRITY=required
SEC_DEFAULT_AUTHENTICATION=required
""",
        doc=(
            "Requires authentication, encryption and integrity checks on every connection. No "
            "arguments."
        ),
    ),
    Template(
        category="SECURITY",
        name="USER_BASED",
        body="""\
if $(CondorIsAdmin)
    authuser=condor
else
    authuser=$(USERNAME)
endif
use security:recommended($(authuser))
if ! $(CondorIsAdmin)
    ALLOW_WRITE = $(authuser)@$(UID_DOMAIN)
endif
""",
        doc=(
            "SECURITY:recommended for the daemon account (condor when run as root, the current "
            "user otherwise), limiting writes to that user when not run as root. No arguments."
        ),
    ),
    Template(
        category="SECURITY",
        name="WITH_AUTHENTICATION",
        body="""\
SEC_DEFAULT_AUTHENTICATION=required
SEC_DEFAULT_INTEGRITY=required
""",
        doc="Requires authentication and integrity checks on every connection. No arguments.",
    ),
)
