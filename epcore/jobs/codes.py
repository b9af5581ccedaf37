"""HTCondor's hold and vacate reason codes, defined once for the whole of epcore.

A job ad carries these as plain integers (``HoldReasonCode``, ``VacateReasonCode``); the enums
name them in code, and ``int(code)`` is what goes into an ad. Numbers and names follow
HTCondor's table of hold codes, so that a job held by epcore reads as one held by HTCondor.
"""

from __future__ import annotations

import enum

__all__ = ["HoldCode", "OutOfResourcesSubcode", "VacateCode"]


class HoldCode(enum.IntEnum):
    """Why a job is held: the value of its ``HoldReasonCode`` (``HoldReasonSubCode`` is
    mostly the Unix errno of the failure, or a hook's exit status)."""

    UNSPECIFIED = 0
    #: condor_hold (``ep hold``): never released by a periodic release.
    USER_REQUEST = 1
    GLOBUS_GRAM_ERROR = 2
    #: The job's own policy expression (PeriodicHold, OnExitHold).
    JOB_POLICY = 3
    CORRUPTED_CREDENTIAL = 4
    JOB_POLICY_UNDEFINED = 5
    #: The job could not be started: its executable, arguments, environment, universe or
    #: container (image, runtime) is unusable.
    FAILED_TO_CREATE_PROCESS = 6
    UNABLE_TO_OPEN_OUTPUT = 7
    UNABLE_TO_OPEN_INPUT = 8
    UNABLE_TO_OPEN_OUTPUT_STREAM = 9
    UNABLE_TO_OPEN_INPUT_STREAM = 10
    INVALID_TRANSFER_ACK = 11
    #: Named from the submit side: the job's output files could not be received or written.
    DOWNLOAD_FILE_ERROR = 12
    #: Named from the submit side: the job's input files could not be read or sent.
    UPLOAD_FILE_ERROR = 13
    #: The job's initial working directory cannot be made or used.
    IWD_ERROR = 14
    SUBMITTED_ON_HOLD = 15
    SPOOLING_INPUT = 16
    JOB_SHADOW_MISMATCH = 17
    INVALID_TRANSFER_GO_AHEAD = 18
    #: A prepare hook failed; the subcode is its status (negative: the signal that killed it).
    HOOK_PREPARE_JOB_FAILURE = 19
    MISSED_DEFERRED_EXECUTION_TIME = 20
    STARTD_HELD_JOB = 21
    UNABLE_TO_INIT_USER_LOG = 22
    FAILED_TO_ACCESS_USER_ACCOUNT = 23
    NO_COMPATIBLE_SHADOW = 24
    INVALID_CRON_SETTINGS = 25
    #: A SYSTEM_PERIODIC_HOLD expression.
    SYSTEM_POLICY = 26
    SYSTEM_POLICY_UNDEFINED = 27
    MAX_TRANSFER_INPUT_SIZE_EXCEEDED = 32
    MAX_TRANSFER_OUTPUT_SIZE_EXCEEDED = 33
    #: The job used more of a resource (memory) than its slot has.
    JOB_OUT_OF_RESOURCES = 34
    INVALID_DOCKER_IMAGE = 35
    FAILED_TO_CHECKPOINT = 36
    PRE_SCRIPT_FAILED = 43
    POST_SCRIPT_FAILED = 44
    SINGULARITY_TEST_FAILED = 45
    JOB_DURATION_EXCEEDED = 46
    JOB_EXECUTE_EXCEEDED = 47


class OutOfResourcesSubcode(enum.IntEnum):
    """Which resource a job held with JOB_OUT_OF_RESOURCES (34) went over: its
    ``HoldReasonSubCode``. HTCondor 23.9 gave 0 for memory and disk alike; 24.x and 25.x
    name the resource, and epcore follows them (wave2-requirements, "Hold codes")."""

    MEMORY = 102
    DISK = 104


class VacateCode(enum.IntEnum):
    """Why a running job was evicted by policy: the value of its ``VacateReasonCode``."""

    #: The job's own PeriodicVacate expression.
    JOB_POLICY = 1000
    #: A SYSTEM_PERIODIC_VACATE expression.
    SYSTEM_POLICY = 1001
    #: The starter could not start the job (a container runtime's setup failed); requeued.
    JOB_NOT_STARTED = 1003
    #: The startd ended the claim to put the machine to sleep (HTCondor's StartdHibernate).
    STARTD_HIBERNATE = 1016
    #: The machine failed a VM job's hypervisor, not the job (HTCondor's VMError); requeued.
    VM_ERROR = 1020
    #: The job's scratch filesystem could not be made (HTCondor 24's ScratchDirError).
    SCRATCH_DIR_ERROR = 1024
