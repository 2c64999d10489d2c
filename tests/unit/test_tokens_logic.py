"""Which sessions have a token (pure logic): a listening address beyond loopback, and a
provider's environments, each with one of its own. Sessions themselves: tests/test_tokens.py."""

from __future__ import annotations

import pytest

from deskbox.provider import EnvironmentSpec, parse_target
from deskbox.provider.osworld import spec_from_target
from deskbox.session.layout import beyond_loopback


@pytest.mark.parametrize("host", ["127.0.0.1", "127.0.0.2", "::1", "[::1]", "localhost", "LOCALHOST",
                                  "session.localhost"])
def test_loopback_addresses_are_not_beyond_it(host):
    assert not beyond_loopback(host)


@pytest.mark.parametrize("host", ["0.0.0.0", "", None, "::", "10.0.0.5", "192.168.1.2", "example.org", "my-host"])
def test_the_any_address_interfaces_and_names_are(host):
    assert beyond_loopback(host)


def test_every_environment_has_a_token_of_its_own_unless_told_none():
    a, b = EnvironmentSpec(), EnvironmentSpec()
    assert a.token and b.token and a.token != b.token
    assert a.environment()["DESKBOX_TOKEN"] == a.token and "DESKBOX_NO_TOKEN" not in a.environment()
    # None is no token at all, said to the image (which would otherwise make one nobody here knows).
    bare = EnvironmentSpec(token=None).environment()
    assert "DESKBOX_TOKEN" not in bare and bare["DESKBOX_NO_TOKEN"] == "1"


def test_osworld_s_desktopenv_sessions_have_tokens_of_their_own():
    first, second = (spec_from_target(parse_target("podman:deskbox-apps")) for _ in range(2))
    assert first.token and second.token and first.token != second.token


def test_a_container_drops_every_capability_and_setuid_unless_its_user_may_sudo():
    from deskbox.provider.podman import MEMORY_LIMIT, PIDS_LIMIT, hardening

    plain = hardening(EnvironmentSpec(osworld=False))
    assert {"--cap-drop=ALL", "--cap-add=SYS_CHROOT", "--security-opt=no-new-privileges"} <= set(plain)
    # OSWorld's tasks sudo with its password: OSWorld mode keeps podman's default capabilities.
    for spec in (EnvironmentSpec(osworld=True), EnvironmentSpec(osworld=False, sudo=True)):
        assert spec.may_sudo and not any(f.startswith(("--cap-drop", "--security-opt")) for f in hardening(spec))
    assert not EnvironmentSpec(osworld=True, sudo=False).may_sudo
    # The caps against a runaway, always.
    for spec in (EnvironmentSpec(osworld=False), EnvironmentSpec(osworld=True)):
        assert {f"--pids-limit={PIDS_LIMIT}", f"--memory={MEMORY_LIMIT}"} <= set(hardening(spec))
