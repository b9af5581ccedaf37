"""The hold and vacate codes: HTCondor's numbers, and plain integers in job ads."""

from __future__ import annotations

from epcore.classad import ClassAd
from epcore.errors import JobSetupError
from epcore.jobs.codes import HoldCode, VacateCode


def test_codes_have_htcondors_numbers() -> None:
    """The codes epcore uses have the numbers of HTCondor's table."""
    assert [
        HoldCode.USER_REQUEST,
        HoldCode.JOB_POLICY,
        HoldCode.FAILED_TO_CREATE_PROCESS,
        HoldCode.UNABLE_TO_OPEN_OUTPUT,
        HoldCode.UNABLE_TO_OPEN_INPUT,
        HoldCode.DOWNLOAD_FILE_ERROR,
        HoldCode.UPLOAD_FILE_ERROR,
        HoldCode.IWD_ERROR,
        HoldCode.SUBMITTED_ON_HOLD,
        HoldCode.HOOK_PREPARE_JOB_FAILURE,
        HoldCode.UNABLE_TO_INIT_USER_LOG,
        HoldCode.FAILED_TO_ACCESS_USER_ACCOUNT,
        HoldCode.SYSTEM_POLICY,
        HoldCode.JOB_OUT_OF_RESOURCES,
        HoldCode.SINGULARITY_TEST_FAILED,
        VacateCode.JOB_POLICY,
        VacateCode.SYSTEM_POLICY,
        VacateCode.JOB_NOT_STARTED,
    ] == [1, 3, 6, 7, 8, 12, 13, 14, 15, 19, 22, 23, 26, 34, 45, 1000, 1001, 1003]


def test_a_setup_error_carries_a_plain_integer_code() -> None:
    """A JobSetupError made with a HoldCode keeps the plain int, which a ClassAd can hold."""
    error = JobSetupError("cannot start", HoldCode.FAILED_TO_CREATE_PROCESS)
    ad = ClassAd()
    ad["HoldReasonCode"] = error.hold_code
    assert type(error.hold_code) is int
    assert str(ad) == "[ HoldReasonCode = 6 ]"
