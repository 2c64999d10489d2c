"""Checks schemathesis runs on every response of the fuzz tests (loaded through
SCHEMATHESIS_HOOKS=tests.support.fuzz_checks).

Every operation's answer comes within its documented longest time
(``x-deskbox-longest-s``, deskbox.common.openapi.Longest), give or take the way there and
back.

A service may answer 503 while a part it needs is coming back (with Retry-After), 504
when work ran past its deadline, and 501 on a route the OS Screen Observer-compatible API
keeps for what is not served yet: all are documented. Anything else in 5xx, and
any 503 without Retry-After, is a server error."""

from __future__ import annotations

import schemathesis

DOCUMENTED_5XX = (501, 502, 503, 504)


@schemathesis.check
def no_internal_error(ctx, response, case):
    status = response.status_code
    if status >= 500 and status not in DOCUMENTED_5XX:
        raise AssertionError(f"{status}: {response.text[:300]}")
    if status == 503 and "retry-after" not in {k.lower() for k in response.headers}:
        raise AssertionError(f"503 without Retry-After: {response.text[:300]}")


# The request's way to the service and back on a loaded machine, beyond the service's own bound.
TRANSIT_S = 5.0


@schemathesis.check
def within_its_longest_time(ctx, response, case):
    longest = case.operation.definition.raw.get("x-deskbox-longest-s")
    if not isinstance(longest, (int, float)) or longest <= 0:
        raise AssertionError(f"{case.operation.label} documents no longest time (x-deskbox-longest-s)")
    if response.elapsed > longest + TRANSIT_S:
        raise AssertionError(f"answered in {response.elapsed:.1f} s; its documented longest time is {longest:g} s")
