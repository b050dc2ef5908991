"""A cluster address given on the command line (``--scheduler``, ``--ray-address``)
must answer within a bounded time: :func:`reach` waits until it accepts a TCP
connection, at most :func:`timeout` seconds (``--connect-timeout``, else
``RAGFRAME_CONNECT_TIMEOUT``, else :data:`CONNECT_TIMEOUT`), before the engine's own
client connects. Without it, an address nobody answers kept Ray's client retrying for
minutes (twenty attempts of about 36 s each) and Dask's for 30 s."""

from __future__ import annotations

import os
import socket
import time

from ragframe.errors import ConfigError

CONNECT_TIMEOUT = 30.0
"""Seconds a given cluster address has to answer, by default."""
ENVIRONMENT = "RAGFRAME_CONNECT_TIMEOUT"
"""The environment variable that changes :data:`CONNECT_TIMEOUT`."""
_RETRY = 0.2
"""Seconds between two tries of an address that refused (a cluster still starting)."""


def timeout(given: float | str | None) -> float:
    """The connect timeout: ``given`` (a number, or its text as typed: ``--connect-timeout``),
    else :data:`ENVIRONMENT`, else the default. A bad value is quoted as given.

    Raises:
        ConfigError: not a positive number of seconds.
    """
    shown = "--connect-timeout" if given is not None else ENVIRONMENT
    value: object = given if given is not None else os.environ.get(ENVIRONMENT, CONNECT_TIMEOUT)
    try:
        seconds = float(value)  # type: ignore[arg-type]
    except ValueError:
        seconds = -1.0
    if not seconds > 0 or seconds == float("inf"):
        raise ConfigError(f"{shown} must be a number of seconds > 0, got {value!r}")
    return seconds


def host_port(address: str, default_port: int) -> tuple[str, int] | None:
    """``address`` (``[scheme://]HOST[:PORT]``) as a host and port; ``None`` for one that
    names no TCP host (``auto``, ``local``, ``inproc://...``): left to the engine.

    Example:
        >>> host_port("tcp://10.0.0.5:8786", 8786), host_port("ray://[::1]", 10001)
        (('10.0.0.5', 8786), ('::1', 10001))
    """
    scheme, found, rest = address.partition("://")
    if not found:
        scheme, rest = "tcp", address
    if scheme not in ("tcp", "tls", "ray") or rest in ("", "auto", "local"):
        return None
    rest = rest.split("/", 1)[0]
    if rest.startswith("["):  # [IPv6]:PORT
        host, _, port = rest[1:].partition("]")
        port = port.removeprefix(":")
    elif rest.count(":") > 1:  # not HOST:PORT (an IPv6 address wants brackets)
        return None
    else:
        host, _, port = rest.partition(":")
    if not port:
        return host, default_port
    return (host, int(port)) if port.isdigit() else None


def reach(address: str, default_port: int, seconds: float) -> None:
    """Return once ``address`` accepts a TCP connection; try again while it refuses (a
    cluster starting), at most ``seconds`` in all.

    Raises:
        OSError: its host does not resolve, or it did not answer in time (the reason).
    """
    found = host_port(address, default_port)
    if found is None:
        return
    deadline = time.monotonic() + seconds
    while True:
        left = deadline - time.monotonic()
        try:
            with socket.create_connection(found, timeout=max(left, 0.01)):
                return
        except socket.gaierror:
            raise OSError(f"cannot resolve the host {found[0]!r}") from None
        except OSError as exc:  # refused, unreachable, or no answer before the deadline
            if time.monotonic() + _RETRY >= deadline:
                timed_out = isinstance(exc, TimeoutError)
                reason = "timed out" if timed_out else exc.strerror or type(exc).__name__
                raise OSError(f"no answer within {seconds:g} s ({reason})") from None
        time.sleep(_RETRY)
