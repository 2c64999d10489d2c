"""Who may call a service: the defence against web pages.

A session browses pages nobody here wrote, and a page can send requests to any address
its browser reaches: the session's own services on loopback included. Without a token
nothing else stands in the way, so every service refuses, before any handler runs:

- a request whose ``Origin`` is not the service's own (the origin its ``Host`` names,
  which is where its own pages, the inspector and the live view, come from) nor one the
  user allows (``DESKBOX_ALLOWED_ORIGINS``). Browsers send ``Origin`` with every request
  a page makes but a plain GET: every POST, ``fetch(..., {mode: "no-cors"})`` and a form
  included, and every websocket;
- a request a browser marks as sent by another site (``Sec-Fetch-Site: cross-site`` or
  ``same-site``, another port of the machine being the same site) that carries no
  ``Origin``: a plain GET from a link, an image or a no-cors fetch of another page;
- a request whose ``Host`` is a name the service does not go by: a page whose own name
  the attacker points at 127.0.0.1 after it has loaded (DNS rebinding) sends requests
  the browser counts as same-origin, with that name in ``Host``. IP addresses,
  ``localhost`` (and ``*.localhost``), this machine's host name and the names in
  ``DESKBOX_ALLOWED_HOSTS`` are the service's names.

Clients that are not browsers (deskbox's own, OSWorld's, curl) send no ``Origin`` and
no ``Sec-Fetch-Site`` and call by address, so none of this touches them. A JSON body
must also say it is JSON (``common.web.read_body``): the types a page may send without
asking first (``text/plain``, a form) are refused with 415.

The pure decision is :func:`refusal`; :func:`callers_middleware` applies it."""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

from aiohttp import web

from .errors import DeskboxError
from .settings import env

__all__ = ["Callers", "ForbiddenCaller", "callers_middleware", "refusal"]

_DEFAULT_PORTS = {"http": 80, "https": 443, "ws": 80, "wss": 443}
_OTHER_SITE = frozenset({"cross-site", "same-site"})


class ForbiddenCaller(DeskboxError):
    status = 403
    code = "forbidden_origin"


def _split_host(host: str) -> tuple[str, int | None] | None:
    """``Host``'s name (lower case, no trailing dot, an IPv6 address without brackets)
    and port; None when it is not a host at all."""
    try:
        parts = urlsplit("//" + host.strip())
        name, port = parts.hostname, parts.port
    except ValueError:
        return None
    if not name or parts.path or parts.username is not None or parts.query:
        return None
    return name.rstrip("."), port


def _is_address(name: str) -> bool:
    try:
        ipaddress.ip_address(name.split("%", 1)[0])
    except ValueError:
        return False
    return True


@dataclass(frozen=True)
class Callers:
    """The names a service goes by and the origins it lets call it, beside its own."""

    hosts: frozenset[str] = frozenset()  # exact names; ".example.org" allows its subdomains
    origins: frozenset[str] = frozenset()  # "https://dash.example.org"
    any_host: bool = False  # "*": no Host check (a proxy in front checks it)
    any_origin: bool = False  # "*": no Origin check (a token is then the only defence)

    @classmethod
    def parse(cls, hosts: str | None, origins: str | None) -> "Callers":
        host_items = {h.strip().lower().rstrip(".") for h in (hosts or "").replace(",", " ").split() if h.strip()}
        origin_items = {o.strip().rstrip("/").lower() for o in (origins or "").replace(",", " ").split() if o.strip()}
        machine = socket.gethostname().lower()
        return cls(hosts=frozenset(host_items - {"*"} | ({machine} if machine else set())),
                   origins=frozenset(origin_items - {"*"}),
                   any_host="*" in host_items, any_origin="*" in origin_items)

    @classmethod
    def from_env(cls) -> "Callers":
        return cls.parse(env("DESKBOX_ALLOWED_HOSTS"), env("DESKBOX_ALLOWED_ORIGINS"))

    def host_allowed(self, name: str) -> bool:
        if self.any_host or _is_address(name) or name == "localhost" or name.endswith(".localhost"):
            return True
        return name in self.hosts or any(h.startswith(".") and name.endswith(h) for h in self.hosts)

    def origin_allowed(self, origin: str, host: tuple[str, int | None] | None) -> bool:
        """``origin`` is the service's own (it names the host and port the request was
        sent to) or one allowed."""
        if self.any_origin or origin.rstrip("/").lower() in self.origins:
            return True
        try:
            parts = urlsplit(origin)
            name, port = parts.hostname, parts.port or _DEFAULT_PORTS.get(parts.scheme)
        except ValueError:
            return False
        if host is None or not name or parts.scheme not in _DEFAULT_PORTS:
            return False
        host_name, host_port = host
        return name.rstrip(".") == host_name and port == (host_port or _DEFAULT_PORTS[parts.scheme])


def refusal(callers: Callers, headers: Mapping[str, str]) -> str | None:
    """Why a request with these headers (looked up without regard to case, as aiohttp's
    are) is refused, or None when it may go on."""
    raw_host = headers.get("Host")
    host = _split_host(raw_host) if raw_host is not None else None
    if raw_host is not None and (host is None or not callers.host_allowed(host[0])):
        return (f"Host {raw_host!r} is not a name this service goes by (an address, localhost, or a name in "
                "DESKBOX_ALLOWED_HOSTS): a page that renamed 127.0.0.1 cannot call it")
    origin = headers.get("Origin")
    if origin is not None:
        if not callers.origin_allowed(origin, host):
            return (f"requests from the page at {origin!r} are refused: only the service's own pages and the "
                    "origins in DESKBOX_ALLOWED_ORIGINS may call it from a browser")
    elif headers.get("Sec-Fetch-Site", "").lower() in _OTHER_SITE and not callers.any_origin:
        return "requests a browser sends for another site's page are refused"
    return None


def callers_middleware(callers: Callers | None = None):
    """Refuses (403 ``forbidden_origin``) what :func:`refusal` refuses, before any
    handler and any token check; ``callers`` from the environment when not given."""
    allowed = callers if callers is not None else Callers.from_env()

    @web.middleware
    async def middleware(request: web.Request, handler) -> web.StreamResponse:
        reason = refusal(allowed, request.headers)
        if reason is not None:
            raise ForbiddenCaller(reason)
        return await handler(request)

    return middleware
