"""Every method of the public client returns the model its route declares: the services'
routes name their answers (``Route.answer``, published in their OpenAPI), the client's
methods return the same classes, and this test fails when the two drift apart. Whether
the services' answers still fit their models is checked against a real session
(tests/test_client.py: no field a model does not declare; tests/unit/test_answers.py has
the models themselves)."""

from __future__ import annotations

import ast
import inspect
import json
import re
import textwrap
import types
import typing

import pytest

from deskbox import answers
from deskbox.client import AsyncClient
from deskbox.common.openapi import Route, openapi_document

SERVICES = {"scene": "deskbox.aggregator.app", "desktopd": "deskbox.desktopd.app", "bridge": "deskbox.bridge.app"}
# Methods that answer one field of their route's answer, by design.
PARTS = {"description": "text"}
# Methods that call another method and answer one of its fields.
DERIVED = {"windows": ("tree", "windows")}
# The one generic method: a call of any route, answering its JSON.
GENERIC = {"request"}


def routes(service: str) -> list[Route]:
    return __import__(SERVICES[service], fromlist=["ROUTES"]).ROUTES


def public_methods() -> dict[str, typing.Callable]:
    return {n: m for n, m in vars(AsyncClient).items()
            if not n.startswith("_") and inspect.iscoroutinefunction(m) and n not in {"close", *GENERIC}}


def calls(method: typing.Callable) -> list[tuple[list[str], str, str]]:
    """The ``self.request(service, method, path ...)`` calls in a method's source: the
    services it may call (all three when the service is an argument), the HTTP method and
    the path with each f-string field as ``{}``."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(method)))
    found = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "request"):
            continue
        service, http, path = node.args[:3]
        services = [service.value] if isinstance(service, ast.Constant) else list(SERVICES)
        if isinstance(path, ast.JoinedStr):
            path_text = "".join(p.value if isinstance(p, ast.Constant) else "{}" for p in path.values)
        else:
            path_text = path.value
        found.append((services, http.value, path_text))
    return found


def routes_of(service: str, http: str, path: str) -> list[Route]:
    """The routes a call may reach: a field of its path (``/computer/{provider}``) matches
    any one segment."""
    pattern = re.compile("".join("[^/]+" if part == "{}" else re.escape(part) for part in re.split(r"({})", path)))
    matching = [r for r in routes(service) if r.method == http and pattern.fullmatch(r.path)]
    assert matching, f"{service} has no route for {http} {path}"
    return matching


def answered(annotation: typing.Any) -> set:
    """The types a return annotation names: a union's members, each as written."""
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        return set(typing.get_args(annotation))
    return {annotation}


@pytest.mark.parametrize("name", sorted(public_methods()))
def test_each_method_returns_its_routes_declared_answer(name: str) -> None:
    method = public_methods()[name]
    returns = answered(typing.get_type_hints(method)["return"])
    assert answers.Answer not in returns and dict not in {typing.get_origin(t) or t for t in returns}, \
        f"{name} returns an untyped answer: {returns}"
    if name in DERIVED:
        other, field = DERIVED[name]
        assert not calls(method)
        (model,) = answered(typing.get_type_hints(public_methods()[other])["return"])
        assert returns == {typing.get_type_hints(model)[field]}
        return
    used = calls(method)
    assert used, f"{name} calls no route"
    expected: set = set()
    for services, http, path in used:
        for route in [r for service in services for r in routes_of(service, http, path)]:
            if route.responses.startswith("text/"):
                expected.add(str)
            elif route.responses.startswith("image/"):
                expected.add(bytes)
            else:
                assert route.answer is not None, f"{http} {route.path} declares no answer"
                expected.add(route.answer)
    if name in PARTS:
        (model,) = expected
        expected |= {typing.get_type_hints(model)[PARTS[name]]}
    assert returns == expected, f"{name} returns {returns}, its routes answer {expected}"


def test_every_method_is_checked() -> None:
    """A method added to the client lands in one of the cases above (no silent skip)."""
    names = set(public_methods())
    assert set(PARTS) <= names and set(DERIVED) <= names
    assert {n for n in names if not calls(public_methods()[n])} == set(DERIVED)


@pytest.mark.parametrize("service", sorted(SERVICES))
def test_the_documents_publish_the_answers_and_every_reference_resolves(service: str) -> None:
    doc = openapi_document(service, "0", routes(service))
    schemas = doc["components"]["schemas"]
    assert set(re.findall(r'"#/components/schemas/([^"]+)"', json.dumps(doc))) <= set(schemas)
    for route in routes(service):
        content = doc["paths"][route.path][route.method.lower()]["responses"]["200"]["content"] \
            if 200 in route.success else {}
        if route.answer is not None:
            assert content[route.responses]["schema"], route.path
    # Two models of one name (two providers' Click) are two components, each referred to.
    if service == "scene":
        clicks = [name for name in schemas if name.endswith("Click")]
        assert len(clicks) >= 2 and len({json.dumps(schemas[c], sort_keys=True) for c in clicks}) == len(clicks)


def test_the_mock_answers_desktopds_routes_as_desktopd_does() -> None:
    """``deskbox up --mock`` serves desktopd's input and window routes itself: the same
    answers, so the client (and the observer over it) reads both alike."""
    from deskbox.mock.app import ROUTES as MOCK
    served = {(r.method, r.path): r for r in routes("desktopd")}
    shared = [r for r in MOCK if (r.method, r.path) in served]
    assert len(shared) == 4
    for route in shared:
        assert route.answer is served[route.method, route.path].answer, route.path
