"""Who may call a service (deskbox.common.callers): the decision alone, on headers as
browsers and other clients send them. The services in a real session are tested in
tests/test_web_origins.py."""

from __future__ import annotations

import socket

import pytest
from multidict import CIMultiDict

from deskbox.common.callers import Callers, refusal

OPEN = Callers.parse(None, None)


def headers(**given: str) -> CIMultiDict:
    return CIMultiDict({k.replace("_", "-"): v for k, v in given.items()})


@pytest.mark.parametrize("host", ["127.0.0.1:8080", "127.0.0.1", "[::1]:8080", "10.42.0.17:5000", "localhost:8000",
                                  "LOCALHOST:8000", "session-3.localhost:8000", f"{socket.gethostname()}:8080"])
def test_a_client_that_is_not_a_browser_calls_by_any_of_the_service_s_names(host):
    assert refusal(OPEN, headers(Host=host)) is None


def test_a_request_without_a_host_header_is_let_through():
    # (HTTP/1.0 clients; a browser always sends Host.)
    assert refusal(OPEN, headers()) is None


@pytest.mark.parametrize("host", ["rebind.example:8080", "127.0.0.1.nip.io:5000", "evil.localhost.example:8000",
                                  "a b:80", "user@127.0.0.1:80", "127.0.0.1:80/x"])
def test_a_name_that_only_resolves_to_the_service_is_refused(host):
    reason = refusal(OPEN, headers(Host=host))
    assert reason is not None and "DESKBOX_ALLOWED_HOSTS" in reason


def test_allowed_host_names_exact_and_by_suffix():
    callers = Callers.parse("deskbox.evals.svc, .cluster.local", None)
    assert refusal(callers, headers(Host="deskbox.evals.svc:8000")) is None
    assert refusal(callers, headers(Host="s1.deskbox.evals.svc.cluster.local:8000")) is None
    assert refusal(callers, headers(Host="other.svc:8000")) is not None
    assert refusal(callers, headers(Host="evilcluster.local:8000")) is not None  # (a suffix is a whole label)
    assert refusal(Callers.parse("*", None), headers(Host="anything.example")) is None


def test_the_service_s_own_pages_may_call_it():
    own = headers(Host="127.0.0.1:18000", Origin="http://127.0.0.1:18000", Sec_Fetch_Site="same-origin")
    assert refusal(OPEN, own) is None
    assert refusal(OPEN, headers(Host="localhost", Origin="http://localhost:80")) is None
    assert refusal(OPEN, headers(Host="[::1]:8006", Origin="http://[::1]:8006")) is None
    # Behind a proxy that ends TLS and passes Host on, the page's origin says https.
    assert refusal(Callers.parse("view.example.org", None),
                   headers(Host="view.example.org", Origin="https://view.example.org")) is None


@pytest.mark.parametrize("origin", ["http://127.0.0.1:18001", "http://localhost:18000", "https://127.0.0.1",
                                    "null", "http://attacker.example", "file://", "chrome-extension://abc",
                                    "http://127.0.0.1:notaport"])
def test_another_origin_is_refused_with_or_without_fetch_metadata(origin):
    for site in ({}, {"Sec_Fetch_Site": "cross-site"}, {"Sec_Fetch_Site": "same-site"}):
        reason = refusal(OPEN, headers(Host="127.0.0.1:18000", Origin=origin, **site))
        assert reason is not None and "DESKBOX_ALLOWED_ORIGINS" in reason, (origin, site)


def test_a_page_of_another_site_with_no_origin_is_refused():
    # A link, an image or a no-cors GET from another page: no Origin, but the browser's
    # fetch metadata says where it comes from.
    for site in ("cross-site", "same-site", "Cross-Site"):
        assert refusal(OPEN, headers(Host="127.0.0.1:8080", Sec_Fetch_Site=site)) is not None
    for site in ("same-origin", "none"):  # the service's own page; an address typed in the bar
        assert refusal(OPEN, headers(Host="127.0.0.1:8080", Sec_Fetch_Site=site)) is None


def test_allowed_origins_exact_or_any():
    callers = Callers.parse(None, "https://dash.example.org/ http://127.0.0.1:3000")
    assert refusal(callers, headers(Host="127.0.0.1:8000", Origin="https://dash.example.org",
                                    Sec_Fetch_Site="cross-site")) is None
    assert refusal(callers, headers(Host="127.0.0.1:8000", Origin="http://127.0.0.1:3000")) is None
    assert refusal(callers, headers(Host="127.0.0.1:8000", Origin="https://dash.example.org.evil")) is not None
    anyone = Callers.parse(None, "*")
    assert refusal(anyone, headers(Host="127.0.0.1:8000", Origin="http://x.example", Sec_Fetch_Site="cross-site")) is None
    # "*" for origins does not open the Host check: a rebinding page is its own origin.
    assert refusal(anyone, headers(Host="x.example:8000", Origin="http://x.example:8000")) is not None
