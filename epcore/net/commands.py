"""HTCondor's command numbers and the authorization level each needs, as epcore's data.

The numbers are HTCondor's (src/condor_includes/condor_commands.h); the levels are those
its daemons register the commands with (src/condor_collector.V6/collector.cpp,
src/condor_daemon_core.V6/daemon_core_main.cpp). Where HTCondor asks for a level epcore
does not keep apart (the ADVERTISE_* levels) the command asks for DAEMON, which implies
them. A client names a command by number only; :data:`BY_NUMBER` finds its record.
"""

from __future__ import annotations

from typing import Final

import attrs

# The authorization levels (condor_perms.cpp's names).
ALLOW: Final = "ALLOW"
READ: Final = "READ"
WRITE: Final = "WRITE"
NEGOTIATOR: Final = "NEGOTIATOR"
ADMINISTRATOR: Final = "ADMINISTRATOR"
CONFIG: Final = "CONFIG"
DAEMON: Final = "DAEMON"
CLIENT: Final = "CLIENT"
DEFAULT: Final = "DEFAULT"
#: The levels a command can need, and the levels each implies (condor_perms.cpp's
#: aImpliedNext: DAEMON and ADMINISTRATOR imply WRITE, which implies READ...).
LEVELS: Final = (ALLOW, READ, WRITE, NEGOTIATOR, ADMINISTRATOR, CONFIG, DAEMON)
IMPLIES: Final[dict[str, str]] = {
    WRITE: READ,
    NEGOTIATOR: READ,
    ADMINISTRATOR: WRITE,
    CONFIG: READ,
    DAEMON: WRITE,
}


def implied(level: str) -> tuple[str, ...]:
    """``level`` and every level it implies, in order (DAEMON, WRITE, READ)."""
    chain = [level]
    while chain[-1] in IMPLIES:
        chain.append(IMPLIES[chain[-1]])
    return tuple(chain)


@attrs.frozen
class Command:
    """One command: its number, HTCondor's name for it and the level it needs."""

    number: int
    name: str
    level: str


_DC_BASE = 60000

# -- daemon core (every daemon answers these) ------------------------------------------------
DC_RECONFIG = Command(_DC_BASE + 4, "DC_RECONFIG", ADMINISTRATOR)
DC_OFF_GRACEFUL = Command(_DC_BASE + 5, "DC_OFF_GRACEFUL", ADMINISTRATOR)
DC_OFF_FAST = Command(_DC_BASE + 6, "DC_OFF_FAST", ADMINISTRATOR)
DC_CONFIG_VAL = Command(_DC_BASE + 7, "DC_CONFIG_VAL", READ)
DC_AUTHENTICATE = Command(_DC_BASE + 10, "DC_AUTHENTICATE", ALLOW)
DC_NOP = Command(_DC_BASE + 11, "DC_NOP", ALLOW)
DC_RECONFIG_FULL = Command(_DC_BASE + 12, "DC_RECONFIG_FULL", ADMINISTRATOR)
DC_OFF_PEACEFUL = Command(_DC_BASE + 15, "DC_OFF_PEACEFUL", ADMINISTRATOR)
DC_NOP_READ = Command(_DC_BASE + 20, "DC_NOP_READ", READ)
DC_NOP_WRITE = Command(_DC_BASE + 21, "DC_NOP_WRITE", WRITE)
DC_NOP_NEGOTIATOR = Command(_DC_BASE + 22, "DC_NOP_NEGOTIATOR", NEGOTIATOR)
DC_NOP_ADMINISTRATOR = Command(_DC_BASE + 23, "DC_NOP_ADMINISTRATOR", ADMINISTRATOR)
DC_NOP_OWNER = Command(_DC_BASE + 24, "DC_NOP_OWNER", ADMINISTRATOR)
DC_NOP_CONFIG = Command(_DC_BASE + 25, "DC_NOP_CONFIG", CONFIG)
DC_NOP_DAEMON = Command(_DC_BASE + 26, "DC_NOP_DAEMON", DAEMON)
DC_SEC_QUERY = Command(_DC_BASE + 40, "DC_SEC_QUERY", ALLOW)
DC_QUERY_INSTANCE = Command(_DC_BASE + 45, "DC_QUERY_INSTANCE", ALLOW)

# -- the collector ---------------------------------------------------------------------------
UPDATE_STARTD_AD = Command(0, "UPDATE_STARTD_AD", DAEMON)
UPDATE_SCHEDD_AD = Command(1, "UPDATE_SCHEDD_AD", DAEMON)
UPDATE_MASTER_AD = Command(2, "UPDATE_MASTER_AD", DAEMON)
QUERY_STARTD_ADS = Command(5, "QUERY_STARTD_ADS", READ)
QUERY_SCHEDD_ADS = Command(6, "QUERY_SCHEDD_ADS", READ)
QUERY_MASTER_ADS = Command(7, "QUERY_MASTER_ADS", READ)
QUERY_STARTD_PVT_ADS = Command(10, "QUERY_STARTD_PVT_ADS", NEGOTIATOR)
UPDATE_SUBMITTOR_AD = Command(11, "UPDATE_SUBMITTOR_AD", DAEMON)
QUERY_SUBMITTOR_ADS = Command(12, "QUERY_SUBMITTOR_ADS", READ)
INVALIDATE_STARTD_ADS = Command(13, "INVALIDATE_STARTD_ADS", DAEMON)
INVALIDATE_SCHEDD_ADS = Command(14, "INVALIDATE_SCHEDD_ADS", DAEMON)
INVALIDATE_MASTER_ADS = Command(15, "INVALIDATE_MASTER_ADS", DAEMON)
INVALIDATE_SUBMITTOR_ADS = Command(18, "INVALIDATE_SUBMITTOR_ADS", DAEMON)
UPDATE_COLLECTOR_AD = Command(19, "UPDATE_COLLECTOR_AD", DAEMON)
QUERY_COLLECTOR_ADS = Command(20, "QUERY_COLLECTOR_ADS", READ)
INVALIDATE_COLLECTOR_ADS = Command(21, "INVALIDATE_COLLECTOR_ADS", DAEMON)
QUERY_ANY_ADS = Command(48, "QUERY_ANY_ADS", READ)
UPDATE_NEGOTIATOR_AD = Command(49, "UPDATE_NEGOTIATOR_AD", DAEMON)
QUERY_NEGOTIATOR_ADS = Command(50, "QUERY_NEGOTIATOR_ADS", READ)
INVALIDATE_NEGOTIATOR_ADS = Command(51, "INVALIDATE_NEGOTIATOR_ADS", DAEMON)
UPDATE_AD_GENERIC = Command(58, "UPDATE_AD_GENERIC", DAEMON)
INVALIDATE_ADS_GENERIC = Command(59, "INVALIDATE_ADS_GENERIC", DAEMON)
UPDATE_STARTD_AD_WITH_ACK = Command(60, "UPDATE_STARTD_AD_WITH_ACK", DAEMON)
QUERY_GENERIC_ADS = Command(74, "QUERY_GENERIC_ADS", READ)
UPDATE_ACCOUNTING_AD = Command(77, "UPDATE_ACCOUNTING_AD", DAEMON)
QUERY_ACCOUNTING_ADS = Command(78, "QUERY_ACCOUNTING_ADS", READ)
INVALIDATE_ACCOUNTING_ADS = Command(79, "INVALIDATE_ACCOUNTING_ADS", DAEMON)

# -- the schedd (condor_commands.h: SCHED_VERS + n, QMGMT_BASE + n) --------------------------
NEGOTIATE = Command(416, "NEGOTIATE", NEGOTIATOR)
RESCHEDULE = Command(421, "RESCHEDULE", WRITE)
ACT_ON_JOBS = Command(478, "ACT_ON_JOBS", WRITE)
QUERY_SCHEDD_HISTORY = Command(515, "QUERY_SCHEDD_HISTORY", READ)
QUERY_JOB_ADS = Command(516, "QUERY_JOB_ADS", READ)
QUERY_JOB_ADS_WITH_AUTH = Command(519, "QUERY_JOB_ADS_WITH_AUTH", READ)
QMGMT_READ_CMD = Command(1111, "QMGMT_READ_CMD", READ)
QMGMT_WRITE_CMD = Command(1112, "QMGMT_WRITE_CMD", WRITE)

# -- the startd (condor_startd.V6/startd_main.cpp; the vacates were OWNER's, now
# ADMINISTRATOR's) ---------------------------------------------------------------------------
_SCHED_VERS = 400
GET_HISTORY = Command(_SCHED_VERS + 29, "GET_HISTORY", READ)
# A schedd's calls on its own claims: the claim id (a secret) is the proof of ownership.
DEACTIVATE_CLAIM = Command(_SCHED_VERS + 3, "DEACTIVATE_CLAIM", DAEMON)
DEACTIVATE_CLAIM_FORCIBLY = Command(_SCHED_VERS + 4, "DEACTIVATE_CLAIM_FORCIBLY", DAEMON)
ALIVE = Command(_SCHED_VERS + 41, "ALIVE", DAEMON)
REQUEST_CLAIM = Command(_SCHED_VERS + 42, "REQUEST_CLAIM", DAEMON)
RELEASE_CLAIM = Command(_SCHED_VERS + 43, "RELEASE_CLAIM", DAEMON)
ACTIVATE_CLAIM = Command(_SCHED_VERS + 44, "ACTIVATE_CLAIM", DAEMON)
VACATE_ALL_CLAIMS = Command(_SCHED_VERS + 47, "VACATE_ALL_CLAIMS", ADMINISTRATOR)
VACATE_CLAIM = Command(_SCHED_VERS + 65, "VACATE_CLAIM", ADMINISTRATOR)
VACATE_ALL_FAST = Command(_SCHED_VERS + 74, "VACATE_ALL_FAST", ADMINISTRATOR)
VACATE_CLAIM_FAST = Command(_SCHED_VERS + 75, "VACATE_CLAIM_FAST", ADMINISTRATOR)
DRAIN_JOBS = Command(_SCHED_VERS + 112, "DRAIN_JOBS", ADMINISTRATOR)
CANCEL_DRAIN_JOBS = Command(_SCHED_VERS + 113, "CANCEL_DRAIN_JOBS", ADMINISTRATOR)

# -- the negotiator (condor_negotiator.V6/matchmaker.cpp). HTCondor lets SET_PRIORITYFACTOR
# in at WRITE and then wants ADMINISTRATOR unless a PRIORITY_FACTOR_AUTHORIZATION map says
# otherwise; epcore has no such map, so the command asks for ADMINISTRATOR at the door.
SET_PRIORITY = Command(_SCHED_VERS + 49, "SET_PRIORITY", ADMINISTRATOR)
GET_PRIORITY = Command(_SCHED_VERS + 51, "GET_PRIORITY", READ)
RESET_USAGE = Command(_SCHED_VERS + 58, "RESET_USAGE", ADMINISTRATOR)
SET_PRIORITYFACTOR = Command(_SCHED_VERS + 59, "SET_PRIORITYFACTOR", ADMINISTRATOR)
RESET_ALL_USAGE = Command(_SCHED_VERS + 60, "RESET_ALL_USAGE", ADMINISTRATOR)
GET_RESLIST = Command(_SCHED_VERS + 63, "GET_RESLIST", READ)
DELETE_USER = Command(_SCHED_VERS + 82, "DELETE_USER", ADMINISTRATOR)
SET_ACCUMUSAGE = Command(_SCHED_VERS + 94, "SET_ACCUMUSAGE", ADMINISTRATOR)
SET_BEGINTIME = Command(_SCHED_VERS + 95, "SET_BEGINTIME", ADMINISTRATOR)
SET_LASTTIME = Command(_SCHED_VERS + 96, "SET_LASTTIME", ADMINISTRATOR)
GET_PRIORITY_ROLLUP = Command(_SCHED_VERS + 114, "GET_PRIORITY_ROLLUP", READ)
SET_CEILING = Command(_SCHED_VERS + 125, "SET_CEILING", ADMINISTRATOR)
SET_FLOOR = Command(_SCHED_VERS + 130, "SET_FLOOR", ADMINISTRATOR)

# -- epcore's own (numbers outside every range of condor_commands.h: HTCondor has no such
# conversation) -----------------------------------------------------------------------------
# A schedd asks the startd about a claim it holds (epcore.startd.claim_commands,
# epcore.links.startd): HTCondor's schedd learns the same from REQUEST_CLAIM's answer.
EP_CLAIM_STATUS = Command(65001, "EP_CLAIM_STATUS", DAEMON)
# A startd in another process hands a finished job's result to the schedd that claimed the
# slot (epcore.links.results, epcore.schedd.cedar's result_handlers): in HTCondor the shadow
# on the submit host learns it from its starter, epcore has no shadow.
EP_JOB_RESULT = Command(90001, "EP_JOB_RESULT", DAEMON)

#: Every command above, by number.
BY_NUMBER: Final[dict[int, Command]] = {
    command.number: command for command in list(globals().values()) if isinstance(command, Command)
}

# The negotiator's RESCHEDULE (matchmaker.cpp registers it at DAEMON): a schedd in another
# process asks for a cycle soon. Same number as the schedd's (a tool asks the schedd at
# WRITE); one CEDAR port serves a process's daemons, so only a process without a schedd
# answers it for its negotiator. Kept out of BY_NUMBER, which names the schedd's.
NEGOTIATOR_RESCHEDULE = Command(421, "RESCHEDULE", DAEMON)

#: The MyType of the ads each collector query, update and invalidation is about (the
#: collector's AdTypes, collector_engine.cpp); None: any type (the query's TargetType, or
#: the ad's own MyType, says which).
AD_TYPES: Final[dict[int, str | None]] = {
    QUERY_STARTD_ADS.number: "Machine",
    QUERY_STARTD_PVT_ADS.number: "Machine",
    QUERY_SCHEDD_ADS.number: "Scheduler",
    QUERY_MASTER_ADS.number: "DaemonMaster",
    QUERY_SUBMITTOR_ADS.number: "Submitter",
    QUERY_COLLECTOR_ADS.number: "Collector",
    QUERY_NEGOTIATOR_ADS.number: "Negotiator",
    QUERY_ACCOUNTING_ADS.number: "Accounting",
    QUERY_ANY_ADS.number: None,
    QUERY_GENERIC_ADS.number: None,
    UPDATE_STARTD_AD.number: "Machine",
    UPDATE_STARTD_AD_WITH_ACK.number: "Machine",
    UPDATE_SCHEDD_AD.number: "Scheduler",
    UPDATE_MASTER_AD.number: "DaemonMaster",
    UPDATE_SUBMITTOR_AD.number: "Submitter",
    UPDATE_COLLECTOR_AD.number: "Collector",
    UPDATE_NEGOTIATOR_AD.number: "Negotiator",
    UPDATE_ACCOUNTING_AD.number: "Accounting",
    UPDATE_AD_GENERIC.number: None,
    INVALIDATE_STARTD_ADS.number: "Machine",
    INVALIDATE_SCHEDD_ADS.number: "Scheduler",
    INVALIDATE_MASTER_ADS.number: "DaemonMaster",
    INVALIDATE_SUBMITTOR_ADS.number: "Submitter",
    INVALIDATE_COLLECTOR_ADS.number: "Collector",
    INVALIDATE_NEGOTIATOR_ADS.number: "Negotiator",
    INVALIDATE_ACCOUNTING_ADS.number: "Accounting",
    INVALIDATE_ADS_GENERIC.number: None,
}


def describe(number: int) -> str:
    """``NAME (number)`` for a known command, ``command number`` otherwise (for logs)."""
    command = BY_NUMBER.get(number)
    return f"{command.name} ({number})" if command is not None else f"command {number}"
