"""Sinful strings: how HTCondor writes a daemon's address, ``<host:port?param=value&...>``.

A daemon ad's MyAddress, COLLECTOR_HOST's resolved form and every address on the wire use
it. The host is an IPv4 address, a bracketed IPv6 address (``<[::1]:9618>``) or a name; the
parameters after ``?`` (``addrs``, ``alias``, ``sock``, ``noUDP``...) are kept in order and
percent-decoded, so that formatting a parsed string gives it back. A string that is not one
raises :class:`SinfulError` naming the character where it goes wrong.
"""

from __future__ import annotations

import urllib.parse

import attrs

from epcore.errors import EpError


class SinfulError(EpError):
    """A sinful string that does not parse; ``column`` is 1-based in ``text``."""

    def __init__(self, text: str, column: int, reason: str) -> None:
        super().__init__(f"bad sinful string {text!r} at column {column}: {reason}")
        self.text = text
        self.column = column
        self.reason = reason


@attrs.frozen
class Sinful:
    """A parsed sinful string: host, port and the parameters in their order."""

    host: str
    port: int
    params: tuple[tuple[str, str], ...] = ()

    def param(self, name: str) -> str | None:
        """The first value of parameter ``name`` (None when absent)."""
        for key, value in self.params:
            if key == name:
                return value
        return None

    def with_param(self, name: str, value: str) -> Sinful:
        """This address with ``name`` set to ``value`` (replacing earlier values)."""
        kept = tuple((key, old) for key, old in self.params if key != name)
        return attrs.evolve(self, params=(*kept, (name, value)))

    @property
    def ip_and_port(self) -> str:
        """``host:port`` (``[v6]:port`` for IPv6), as HTCondor's FS channel binding writes
        the server's endpoint."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}"

    def __str__(self) -> str:
        text = "<" + self.ip_and_port
        if self.params:
            text += "?" + "&".join(f"{_quote(key)}={_quote(value)}" for key, value in self.params)
        return text + ">"


def _quote(text: str) -> str:
    # HTCondor escapes what would end a parameter; the rest (,[]:) stays readable.
    return urllib.parse.quote(text, safe="[]:,.-_+/@")


def parse_sinful(text: str) -> Sinful:
    """Parse ``<host:port?k=v&...>`` (the brackets may be left off, as COLLECTOR_HOST
    allows); SinfulError naming the column of the first fault."""
    body = text.strip()
    offset = len(text) - len(text.lstrip()) + 1
    if body.startswith("<"):
        if not body.endswith(">"):
            raise SinfulError(text, offset + len(body), "missing the closing '>'")
        body = body[1:-1]
        offset += 1
    if not body:
        raise SinfulError(text, offset, "no host")
    address, _, query = body.partition("?")
    host, port_text, port_column = _split_host(text, address, offset)
    if not port_text.isdigit() or not 0 < int(port_text) < 65536:
        raise SinfulError(text, port_column, f"port {port_text!r} is not a number in 1..65535")
    params: list[tuple[str, str]] = []
    column = offset + len(address) + 1
    if query:
        for item in query.split("&"):
            key, equals, value = item.partition("=")
            if not key or not equals:
                raise SinfulError(text, column, f"parameter {item!r} is not name=value")
            params.append((urllib.parse.unquote(key), urllib.parse.unquote(value)))
            column += len(item) + 1
    return Sinful(host, int(port_text), tuple(params))


def _split_host(text: str, address: str, offset: int) -> tuple[str, str, int]:
    if address.startswith("["):
        close = address.find("]")
        if close < 0:
            raise SinfulError(text, offset, "IPv6 address without its ']'")
        host, rest = address[1:close], address[close + 1 :]
        if not rest.startswith(":"):
            raise SinfulError(text, offset + close + 1, "expected ':' and the port")
        return host, rest[1:], offset + close + 2
    host, colon, port = address.rpartition(":")
    if not colon or not host:
        raise SinfulError(text, offset, "expected host:port")
    if any(char in host for char in "<>[] ") or ":" in host:
        raise SinfulError(text, offset, f"host {host!r} holds a character hosts cannot")
    return host, port, offset + len(host) + 1
