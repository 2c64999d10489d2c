"""One decoding of a service's error answer, for every internal caller."""

from __future__ import annotations

import json

from deskbox.common.errors import (
    ActionFailed,
    InvalidRequest,
    NotFoundError,
    TooLarge,
    Unavailable,
    error_body,
    from_answer,
)


def _answer(code: str, message: str, **extra) -> bytes:
    return json.dumps({"error": {"code": code, "message": message, "recoverable": True, **extra}}).encode()


def test_another_services_error_keeps_its_status_class_code_and_hints():
    err = from_answer(404, _answer("unknown_window", "no window w9", suggested_next_tool="windows",
                                   context={"window": "w9"}), "desktopd /api/v1/windows/w9/focus")
    assert isinstance(err, NotFoundError) and err.status == 404 and err.code == "unknown_window"
    assert err.message == "desktopd /api/v1/windows/w9/focus: no window w9"
    assert err.suggested_next_tool == "windows" and err.context == {"window": "w9"} and err.recoverable is True
    assert isinstance(from_answer(409, _answer("occluded", "x"), "a"), ActionFailed)
    assert type(from_answer(422, _answer("too_large", "x"), "a")) is TooLarge
    assert type(from_answer(418, _answer("teapot", "x"), "a")) is InvalidRequest


def test_an_internal_error_there_is_unavailability_here_and_a_foreign_body_is_kept_short():
    err = from_answer(500, b"<html>" + b"x" * 1000, "bridge /layout")
    assert isinstance(err, Unavailable) and err.status == 503 and err.code == "http_error"
    assert err.message.startswith("bridge /layout: 500 <html>") and len(err.message) < 260
    assert error_body(b"not json") is None and error_body(b'{"error": "text"}') is None
    assert error_body(_answer("a", "b"))["code"] == "a"

