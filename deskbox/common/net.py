"""Listen addresses, and the one way to fetch a URL that a caller chose."""

from __future__ import annotations

from aiohttp import ClientSession, ClientTimeout, DummyCookieJar

__all__ = ["parse_listen", "outside_session"]


def parse_listen(value: str) -> tuple[str, int]:
    """"127.0.0.1:8080", "[::1]:8080" or ":8080" (loopback) -> (host, port)."""
    host, sep, port = value.rpartition(":")
    if not sep or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"listen address {value!r} is not host:port")
    host = host.strip("[]") or "127.0.0.1"
    return host, int(port)


def outside_session(timeout: ClientTimeout) -> ClientSession:
    """A client for URLs that a caller chose (a task's download, say), which may be any
    host: it carries no credential of the session's, no default header, keeps no cookie
    between requests and reads no proxy settings from the environment. A session's
    clients of its own services carry its bearer token; they must never be handed such
    a URL, or the token goes with it."""
    return ClientSession(timeout=timeout, cookie_jar=DummyCookieJar(), trust_env=False)
