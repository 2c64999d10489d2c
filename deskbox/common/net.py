"""Listen addresses, and the one way to fetch a URL that a caller chose."""

from __future__ import annotations

import socket

from aiohttp import ClientSession, ClientTimeout, DummyCookieJar

__all__ = ["parse_listen", "outside_session", "free_ports"]


def parse_listen(value: str) -> tuple[str, int]:
    """"127.0.0.1:8080", "[::1]:8080" or ":8080" (loopback) -> (host, port)."""
    host, sep, port = value.rpartition(":")
    if not sep or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"listen address {value!r} is not host:port")
    host = host.strip("[]") or "127.0.0.1"
    return host, int(port)


def free_ports(n: int) -> list[int]:
    """``n`` loopback ports nothing listens on, all different: their sockets are held open
    together until every one is chosen (one at a time, the kernel may hand the same port
    out twice: a session's Chromium then took its bridge's port). Free when answered, not
    reserved: another process may still take one before its user binds it."""
    sockets = [socket.socket() for _ in range(n)]
    try:
        for s in sockets:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def outside_session(timeout: ClientTimeout) -> ClientSession:
    """A client for URLs that a caller chose (a task's download, say), which may be any
    host: it carries no credential of the session's, no default header, keeps no cookie
    between requests and reads no proxy settings from the environment. A session's
    clients of its own services carry its bearer token; they must never be handed such
    a URL, or the token goes with it."""
    return ClientSession(timeout=timeout, cookie_jar=DummyCookieJar(), trust_env=False)
