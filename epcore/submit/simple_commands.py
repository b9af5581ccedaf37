"""Submit commands that map one to one onto a job attribute, with the kind of value each takes.

Only given commands set their attribute; these have no default in the job ad (or their
default is set elsewhere and a given value replaces it).
"""

from __future__ import annotations

from collections.abc import Callable

from epcore.classad import ClassAd
from epcore.submit.macros import Located
from epcore.submit.values import parse_bool, parse_expression, parse_integer

#: (command, job attribute, kind): "string" is stored as text, "expr" as a ClassAd expression,
#: "bool" and "int" as those values.
SIMPLE_COMMANDS: tuple[tuple[str, str, str], ...] = (
    ("batch_name", "JobBatchName", "string"),
    ("description", "JobDescription", "string"),
    ("job_machine_attrs", "JobMachineAttrs", "string"),
    ("transfer_output_remaps", "TransferOutputRemaps", "string"),
    ("output_destination", "OutputDestination", "string"),
    ("leave_in_queue", "LeaveJobInQueue", "expr"),
    ("allowed_job_duration", "AllowedJobDuration", "expr"),
    ("allowed_execute_duration", "AllowedExecuteDuration", "expr"),
    ("periodic_vacate", "PeriodicVacate", "expr"),
    ("periodic_hold_reason", "PeriodicHoldReason", "expr"),
    ("periodic_hold_subcode", "PeriodicHoldSubCode", "expr"),
    ("on_exit_hold_reason", "OnExitHoldReason", "expr"),
    ("on_exit_hold_subcode", "OnExitHoldSubCode", "expr"),
    ("want_graceful_removal", "WantGracefulRemoval", "expr"),
    ("job_lease_duration", "JobLeaseDuration", "expr"),
    ("require_gpus", "RequireGPUs", "expr"),
    ("coresize", "CoreSize", "int"),
    ("run_as_owner", "RunAsOwner", "bool"),
    ("encrypt_execute_directory", "EncryptExecuteDirectory", "bool"),
)

Lookup = Callable[[str], Located | None]
Fault = Callable[[str, Located], Exception]


def _unquoted(text: str) -> str:
    # condor_submit accepts these values with or without surrounding double quotes.
    if len(text) >= 2 and text[0] == text[-1] == '"':
        return text[1:-1]
    return text


def apply_simple_commands(ad: ClassAd, lookup: Lookup, fault: Fault) -> None:
    """Set the attribute of every simple command that was given."""
    for command, attribute, kind in SIMPLE_COMMANDS:
        found = lookup(command)
        if found is None:
            continue
        try:
            if kind == "string":
                ad[attribute] = _unquoted(found.text)
            elif kind == "expr":
                ad[attribute] = parse_expression(found.text)
            elif kind == "bool":
                ad[attribute] = parse_bool(found.text)
            else:
                ad[attribute] = parse_integer(found.text)
        except ValueError as error:
            raise fault(f"{command}: {error}", found) from error
