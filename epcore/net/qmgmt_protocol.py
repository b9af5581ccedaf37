"""The numbers of the schedd's protocols, shared by its server side (:mod:`epcore.schedd`)
and epcore's client (:mod:`epcore.net.schedd_client`).

- The queue-management calls after QMGMT_WRITE_CMD / QMGMT_READ_CMD (qmgmt_constants.h)
  and SetAttribute's flags on the wire (condor_qmgr.h: one byte).
- ACT_ON_JOBS: the JobAction numbers (enum_utils.h), the result types and outcomes
  (dc_schedd.h), and HTCondor's OK (condor_commands.h).
- CEDAR's double: a mantissa scaled by :data:`FRAC_CONST` and an exponent (stream.cpp).
"""

from __future__ import annotations

import math
from typing import Final

# -- the queue-management calls --------------------------------------------------------------
INITIALIZE_CONNECTION: Final = 10001
NEW_CLUSTER: Final = 10002
NEW_PROC: Final = 10003
DESTROY_CLUSTER: Final = 10004
SET_ATTRIBUTE: Final = 10006
COMMIT_NO_FLAGS: Final = 10007
GET_ATTRIBUTE_FLOAT: Final = 10008
GET_ATTRIBUTE_INT: Final = 10009
GET_ATTRIBUTE_STRING: Final = 10010
GET_ATTRIBUTE_EXPR: Final = 10011
DELETE_ATTRIBUTE: Final = 10012
GET_JOB_AD: Final = 10018
GET_NEXT_JOB_BY_CONSTRAINT: Final = 10020
SET_ATTRIBUTE_BY_CONSTRAINT: Final = 10021
INITIALIZE_READ_ONLY: Final = 10022
BEGIN_TRANSACTION: Final = 10023
ABORT_TRANSACTION: Final = 10024
GET_ALL_JOBS_BY_CONSTRAINT: Final = 10026
SET_ATTRIBUTE2: Final = 10027
CLOSE_SOCKET: Final = 10028
SET_EFFECTIVE_OWNER: Final = 10030
COMMIT: Final = 10031
SET_ATTRIBUTE_BY_CONSTRAINT2: Final = 10032
SET_ALLOW_PROTECTED: Final = 10035
GET_CAPABILITIES: Final = 10036
SET_JOB_FACTORY: Final = 10037
SEND_MATERIALIZE_DATA: Final = 10039

# SetAttribute's flags.
NO_ACK: Final = 1 << 1
QUERY_ONLY: Final = 1 << 5

# -- ACT_ON_JOBS -----------------------------------------------------------------------------
OK: Final = 1
HOLD_JOBS: Final = 1
RELEASE_JOBS: Final = 2
REMOVE_JOBS: Final = 3
REMOVE_X_JOBS: Final = 4
VACATE_JOBS: Final = 5
VACATE_FAST_JOBS: Final = 6
#: ActionResultType: one outcome per job (``job_<cluster>_<proc>``), or totals
#: (``result_total_<outcome>``).
AR_LONG: Final = 1
AR_TOTALS: Final = 2
AR_ERROR: Final = 0
AR_SUCCESS: Final = 1
AR_NOT_FOUND: Final = 2
AR_BAD_STATUS: Final = 3
AR_ALREADY_DONE: Final = 4
AR_PERMISSION_DENIED: Final = 5
AR_LIMIT_EXCEEDED: Final = 6
#: What each outcome means, for messages.
OUTCOMES: Final = {
    AR_ERROR: "error",
    AR_SUCCESS: "done",
    AR_NOT_FOUND: "not found",
    AR_BAD_STATUS: "not in a state for this action",
    AR_ALREADY_DONE: "already done",
    AR_PERMISSION_DENIED: "permission denied",
    AR_LIMIT_EXCEEDED: "limit exceeded",
}

# -- doubles ---------------------------------------------------------------------------------
FRAC_CONST: Final = 2147483647


def double_parts(value: float) -> tuple[int, int]:
    """A double as CEDAR sends it: the scaled mantissa, then the exponent."""
    mantissa, exponent = math.frexp(value)
    return int(mantissa * FRAC_CONST), exponent


def double_of(mantissa: int, exponent: int) -> float:
    """The double CEDAR's two integers stand for."""
    return math.ldexp(mantissa / FRAC_CONST, exponent)
