"""One exception family and one decoding of a service's error answer, for the public
client and every internal caller."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import deskbox
from deskbox.common.errors import (
    ActionFailedError,
    ConnectError,
    DeskboxError,
    InvalidRequestError,
    NotFoundError,
    TooLargeError,
    UnavailableError,
    error_body,
    from_answer,
)


def _answer(code: str, message: str, **extra) -> bytes:
    return json.dumps({"error": {"code": code, "message": message, "recoverable": True, **extra}}).encode()


PACKAGE = Path(deskbox.__file__).parent


def test_another_services_error_keeps_its_status_class_code_and_hints():
    err = from_answer(404, _answer("unknown_window", "no window w9", suggested_next_tool="windows",
                                   context={"window": "w9"}), "desktopd /api/v1/windows/w9/focus", relayed=True)
    assert isinstance(err, NotFoundError) and err.status == 404 and err.code == "unknown_window"
    assert err.message == "desktopd /api/v1/windows/w9/focus: no window w9"
    assert err.suggested_next_tool == "windows" and err.context == {"window": "w9"} and err.recoverable is True
    assert isinstance(from_answer(409, _answer("occluded", "x"), "a"), ActionFailedError)
    assert type(from_answer(422, _answer("too_large", "x"), "a")) is TooLargeError
    assert type(from_answer(418, _answer("teapot", "x"), "a")) is InvalidRequestError


def test_an_internal_error_there_is_unavailability_here_and_a_foreign_body_is_kept_short():
    err = from_answer(500, b"<html>" + b"x" * 1000, "bridge /layout", relayed=True)
    assert isinstance(err, UnavailableError) and err.status == 503 and err.code == "http_error"
    assert err.message.startswith("bridge /layout: 500 <html>") and len(err.message) < 260
    assert error_body(b"not json") is None and error_body(b'{"error": "text"}') is None
    assert error_body(_answer("a", "b"))["code"] == "a"



def test_the_client_keeps_the_answers_own_status_and_message():
    err = from_answer(418, _answer("teapot", "short and stout"), "scene GET /api/v1/tea")
    assert type(err) is InvalidRequestError and err.status == 418 and err.message == "short and stout"
    internal = from_answer(500, _answer("internal", "boom"), "scene GET /api/v1/scene")
    assert type(internal) is DeskboxError and internal.status == 500 and str(internal) == "500 internal: boom"
    # The family's JSON is the services' body, whoever raised it.
    assert internal.to_json() == {"error": {"code": "internal", "message": "boom", "recoverable": True,
                                            "suggested_next_tool": None, "context": None}}


def test_an_error_with_no_answer_has_no_status_and_a_service_answers_it_as_its_class():
    gone = ConnectError("scene at http://127.0.0.1:9 is not answering", code="unreachable", status=None)
    assert gone.status is None and isinstance(gone, UnavailableError) and gone.http_status == 503
    assert from_answer(418, _answer("teapot", "x"), "a").http_status == 418
    assert str(gone) == "- unreachable: scene at http://127.0.0.1:9 is not answering"
    assert NotFoundError("x").status == 404 and NotFoundError("x", status=None).status is None


def test_one_family_the_public_client_raises_what_the_services_raise():
    names = [n for n in deskbox.__all__ if n.endswith("Error")]
    assert len(names) >= 12
    for name in names:
        assert getattr(deskbox, name) is getattr(__import__("deskbox.common.errors", fromlist=[name]), name), name
    # One class per name in the whole package: no second NotFoundError, no second root.
    defined: dict[str, list[str]] = {}
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef):
                defined.setdefault(node.name, []).append(str(path.relative_to(PACKAGE)))
    twice = {name: where for name, where in defined.items() if name.endswith("Error") and len(where) > 1}
    assert twice == {}
    assert defined["NotFoundError"] == ["common/errors.py"] and "ServiceError" not in defined
