"""The tools' half of the startd's and negotiator's commands: what condor_drain,
condor_vacate and condor_userprio send to any HTCondor-compatible pool (``ep drain / vacate /
userprio -pool HOST[:PORT]``).

A tool finds its daemon as HTCondor's do: it asks the collector at ``-pool`` for the
daemon's ad (the startd whose Name or Machine is ``-name``, the negotiator named ``-name``,
else the first), and connects to the ad's MyAddress. Each command is then one blocking
conversation (:mod:`epcore.net.client`), authenticated and authorized by the daemon as any
HTCondor client is. A refusal, a failure the daemon reports, or a daemon that cannot be
found raises :class:`~epcore.errors.EpError` saying which.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from typing import Final, TypeVar

from epcore.classad import ClassAd, parse_expr
from epcore.config import Config
from epcore.errors import EpError
from epcore.net import commands
from epcore.net.client import connect, query_collector, start_command
from epcore.net.codec import Writer
from epcore.net.conversation import Refused, Step, Stream, receive, run_blocking, send
from epcore.net.frames import FrameError
from epcore.net.keyexchange import EcdhClientKeyExchange
from epcore.net.sinful import Sinful, SinfulError, parse_sinful

Result = TypeVar("Result")
#: What a command sends after its start, written into the stream's own writer (whose coding
#: of strings depends on whether the session turned out encrypted).
Payload = Callable[[Writer], object]

#: The collector's port when ``-pool`` names a host alone.
DEFAULT_PORT: Final = 9618
#: htcondor2's DrainType values by the names ``ep drain`` takes.
DRAIN_SPEEDS: Final = {"graceful": 0, "quick": 10, "fast": 20}
#: ``ep userprio``'s changes and the commands (and value kinds) that carry them.
CHANGES: Final[dict[str, tuple[commands.Command, str | None]]] = {
    "SetFactor": (commands.SET_PRIORITYFACTOR, "double"),
    "SetPriority": (commands.SET_PRIORITY, "double"),
    "SetAccumulatedUsage": (commands.SET_ACCUMUSAGE, "double"),
    "SetCeiling": (commands.SET_CEILING, "int"),
    "SetFloor": (commands.SET_FLOOR, "int"),
    "ResetUsage": (commands.RESET_USAGE, None),
    "DeleteSubmitter": (commands.DELETE_USER, None),
}


def parse_pool(text: str) -> tuple[str, int]:
    """``-pool``'s ``HOST[:PORT]`` (or a sinful string) as host and port."""
    body = text.strip()
    if not body:
        raise EpError("-pool names no host")
    if body.startswith("<") or (":" in body and not body.startswith("[")):
        try:
            where = parse_sinful(body)
        except SinfulError as error:
            raise EpError(f"-pool {text!r}: {error}") from None
        return where.host, where.port
    return body.strip("[]"), DEFAULT_PORT


def locate(
    pool: str, config: Config, daemon: str, name: str | None = None
) -> tuple[str, int, ClassAd]:
    """The address (host, port) and ad of the ``daemon`` ("startd" or "negotiator") the
    collector at ``pool`` knows, named ``name`` when given (module docstring)."""
    host, port = parse_pool(pool)
    if daemon == "startd":
        command = commands.QUERY_STARTD_ADS
        constraint = (
            None if name is None else f"Name == {_quoted(name)} || Machine == {_quoted(name)}"
        )
    else:
        command = commands.QUERY_NEGOTIATOR_ADS
        constraint = None if name is None else f"Name == {_quoted(name)}"
    ads = _blocking(
        host,
        port,
        lambda: query_collector(host, port, command.number, config, constraint=constraint),
    )
    for ad in ads:
        address = ad.evaluate("MyAddress")
        if isinstance(address, str):
            try:
                where: Sinful = parse_sinful(address)
            except SinfulError:
                continue
            return where.host, where.port, ad
    which = f" named {name}" if name else ""
    raise EpError(f"the collector at {host}:{port} knows no {daemon}{which} with an address")


def _quoted(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _blocking(host: str, port: int, call: Callable[[], Result]) -> Result:
    # One place turns a connection's failures into the EpError a tool prints.
    try:
        return call()
    except Refused as error:
        raise EpError(f"refused by {host}:{port}: {error}") from None
    except FrameError as error:
        raise EpError(f"{host}:{port} broke off: {error}") from None
    except OSError as error:
        raise EpError(f"cannot reach {host}:{port}: {error.strerror or error}") from None


def call(
    address: tuple[str, int],
    command: commands.Command,
    config: Config,
    payload: Payload | None = None,
    *,
    answer: bool = False,
    types: bool = True,
) -> ClassAd | None:
    """Run ``command`` on the daemon at ``address``: start it, send ``payload``, and read
    the answer ad when the command has one (``types``: the ad ends with its two type
    strings)."""
    host, port = address

    def conversation(stream: Stream) -> Generator[Step, bytes | None, ClassAd | None]:
        # As HTCondor's tools, offer the ECDH key exchange: a daemon that wants encryption
        # (or takes it when offered) seals the session with AES-GCM.
        yield from start_command(
            stream, command.number, config, key_exchange=EcdhClientKeyExchange()
        )
        if payload is not None:
            writer = stream.writer()
            payload(writer)
            yield from send(writer)
        if not answer:
            return None
        reader = yield from receive(stream, f"the answer to {command.name}")
        return reader.get_classad(f"the answer to {command.name}", types=types)

    def run() -> ClassAd | None:
        sock, stream = connect(host, port)
        with sock:
            return run_blocking(sock, stream, conversation(stream))

    return _blocking(host, port, run)


# -- the startd ------------------------------------------------------------------------------


def _result(reply: ClassAd | None, what: str) -> None:
    if reply is None or reply.evaluate("Result") is not True:
        error = None if reply is None else reply.evaluate("ErrorString")
        raise EpError(f"{what} failed: {error if isinstance(error, str) else 'no reason given'}")


def drain(
    address: tuple[str, int], config: Config, how: str, check: str | None, start: str | None
) -> None:
    """DRAIN_JOBS (condor_drain)."""
    request = ClassAd()
    request["HowFast"] = DRAIN_SPEEDS[how]
    request["ResumeOnCompletion"] = 0
    request["DrainReason"] = "by ep drain"
    for attribute, text in (("CheckExpr", check), ("StartExpr", start)):
        if text is not None:
            request[attribute] = parse_expr(text)
    reply = call(
        address, commands.DRAIN_JOBS, config, lambda w: w.put_classad(request), answer=True
    )
    _result(reply, "DRAIN_JOBS")


def cancel_drain(address: tuple[str, int], config: Config) -> None:
    """CANCEL_DRAIN_JOBS (condor_drain -cancel)."""
    empty = ClassAd()
    reply = call(
        address, commands.CANCEL_DRAIN_JOBS, config, lambda w: w.put_classad(empty), answer=True
    )
    _result(reply, "CANCEL_DRAIN_JOBS")


def vacate(address: tuple[str, int], config: Config, slot: str | None, fast: bool) -> None:
    """VACATE_CLAIM(_FAST) of ``slot``, or VACATE_ALL_CLAIMS/FAST (condor_vacate); HTCondor's
    startd answers neither, so only a refusal at the start is seen."""
    if slot is None:
        command = commands.VACATE_ALL_FAST if fast else commands.VACATE_ALL_CLAIMS
        call(address, command, config)
    else:
        command = commands.VACATE_CLAIM_FAST if fast else commands.VACATE_CLAIM
        call(address, command, config, lambda w: w.put_string(slot))


# -- the negotiator --------------------------------------------------------------------------


def priorities(address: tuple[str, int], config: Config) -> list[ClassAd]:
    """GET_PRIORITY's numbered report as one Accounting ad per submitter."""
    report = call(address, commands.GET_PRIORITY, config, answer=True, types=False)
    return [] if report is None else split_report(report)


def split_report(report: ClassAd) -> list[ClassAd]:
    """A numbered report (``Name1``, ``Priority1``... up to NumSubmittors) as one
    Accounting ad per accounting group and submitter (the views leave the groups out unless
    asked for, as condor_userprio does), and the unnumbered ``ConcurrencyLimit_<name>``
    counts as one Accountant ad, as the local request answers them."""
    by_number: dict[int, ClassAd] = {}
    for name in report:
        stem = name.rstrip("0123456789")
        if stem == name or not stem.isalpha():
            continue
        expr = report.lookup(name)
        if expr is not None:
            by_number.setdefault(int(name[len(stem) :]), ClassAd())[stem] = expr
    count = report.evaluate("NumSubmittors")
    found: list[ClassAd] = []
    for number in sorted(by_number):
        ad = by_number[number]
        if type(count) is int and number > count:
            continue
        if "Name" in ad:
            ad["MyType"] = "Accounting"
            found.append(ad)
    limits = [name for name in report if name.lower().startswith("concurrencylimit")]
    if limits:
        summary = ClassAd()
        summary["MyType"] = "Accountant"
        for name in limits:
            expr = report.lookup(name)
            if expr is not None:
                summary[name] = expr
        found.append(summary)
    return found


def set_submitter(
    address: tuple[str, int], config: Config, change: str, submitter: str, value: float | None
) -> None:
    """One of :data:`CHANGES` for ``submitter``; SET_PRIORITYFACTOR's answer is checked."""
    command, kind = CHANGES[change]
    number = 0.0 if value is None else value

    def payload(writer: Writer) -> None:
        writer.put_string(submitter)
        if kind == "double":
            writer.put_double(float(number))
        elif kind == "int":
            writer.put_int(int(number))

    answered = command is commands.SET_PRIORITYFACTOR
    reply = call(address, command, config, payload, answer=answered)
    if reply is not None and reply.evaluate("ErrorCode") not in (0, None):
        error = reply.evaluate("ErrorString")
        raise EpError(f"{command.name} failed: {error if isinstance(error, str) else 'refused'}")
