"""``deskbox.Client`` against a real session: built from the state file, it reads the
scene, finds and clicks a button, lists windows and tabs, takes a screenshot, and turns
the services' error bodies into ``DeskboxError``s with their codes."""

from __future__ import annotations

import asyncio
import inspect
import io
import typing

import pytest
from PIL import Image
from pydantic import TypeAdapter

import deskbox
from deskbox import AsyncClient, Client, answers
from deskbox.client import SyncBase
from tests.conftest import open_fixture
from tests.support import Process, wait_until
from tests.test_mcp import scene_with_token
from tests.test_toolset import GTK_APP, SYSTEM_PYTHON

pytestmark = pytest.mark.desktop


async def test_the_client_reads_the_session_and_clicks_a_button(single, pages):
    open_fixture(single, pages, "input.html")
    async with AsyncClient.from_state_file(single.state_file) as desk:
        assert desk.urls == {"scene": single.scene, "desktopd": single.desktopd, "bridge": single.bridge}
        text = await desk.text(interactive=True)
        assert "Submit" in text
        found = await desk.find('button[name="Submit"]')
        assert isinstance(found, answers.Matches) and found.count == 1
        button = found.matches[0]
        assert button.id in text and button.role == "button"
        receipt = await desk.act(button.id)
        assert isinstance(receipt, answers.Receipt) and receipt.ok is True and receipt.target.id == button.id
        x, y, w, h = receipt.target.bbox
        assert x <= receipt.point[0] < x + w and y <= receipt.point[1] < y + h
        await asyncio.to_thread(pages.wait_for, type="click", target="submit")
        assert any(w.app_id == "chromium" for w in await desk.windows())
        assert any(t.url.endswith("/input.html") for t in await desk.tabs())
        scene = await desk.scene("agent-turn")
        assert isinstance(scene, answers.Scene) and scene.element(button.id).name == "Submit"
        assert scene.displays[0].size == [1280, 800] and scene.focused_window.app == "chromium"
        png = Image.open(io.BytesIO(await desk.screenshot(marks=True)))
        assert png.format == "PNG" and png.size == (1280, 800)
        observed = await desk.observe()
        assert (await desk.observe(since=observed.token)).base_token == observed.token


async def test_http_errors_raise_deskbox_errors_with_the_services_codes(single, pages):
    open_fixture(single, pages, "input.html")
    async with AsyncClient.from_state_file(single.state_file) as desk:
        with pytest.raises(deskbox.NotFoundError) as unknown:
            await desk.act("a0-999999")
        assert isinstance(unknown.value, deskbox.DeskboxError)
        assert unknown.value.status == 404 and unknown.value.code == "unknown_element"
        assert unknown.value.recoverable is True and "a0-999999" in unknown.value.message
        with pytest.raises(deskbox.InvalidRequestError) as invalid:
            await desk.pointer("click", x=10)  # x without y
        assert invalid.value.status == 400 and invalid.value.code == "validation_error"
        with pytest.raises(deskbox.NotFoundError) as never:
            await desk.observe(since="o999999")
        assert never.value.code == "unknown_token"
        kept = await desk.snapshot_save(label="gone soon")
        assert (await desk.snapshot_delete(kept.id)).dropped is True
        with pytest.raises(deskbox.ExpiredError) as expired:
            await desk.snapshot(kept.id)
        assert expired.value.status == 410 and expired.value.code == "snapshot_expired"
        assert expired.value.context == {"snapshot": kept.id} and expired.value.suggested_next_tool
    async with AsyncClient("http://127.0.0.1:9", None, None) as nowhere:
        with pytest.raises(deskbox.ConnectError) as unreachable:
            await nowhere.scene()
        assert unreachable.value.status is None and unreachable.value.code == "unreachable"
        with pytest.raises(deskbox.UnavailableError) as no_desktopd:
            await nowhere.windows()
        assert no_desktopd.value.code == "no_desktopd"


async def test_the_token_goes_with_every_call(single):
    async with scene_with_token(single, "s3cret") as scene:
        async with AsyncClient(scene, single.desktopd, single.bridge) as anonymous:
            with pytest.raises(deskbox.UnauthorizedError) as refused:
                await anonymous.scene()
            assert refused.value.status == 401 and refused.value.code == "unauthorized"
        async with AsyncClient(scene, single.desktopd, single.bridge, token="s3cret") as desk:
            assert (await desk.scene()).displays[0].size == [1280, 800]


def public_methods() -> set[str]:
    return {n for n, m in vars(AsyncClient).items() if not n.startswith("_") and inspect.iscoroutinefunction(m)}


REPLIES = {"anthropic": answers.AnthropicReply, "openai": answers.OpenAIReply, "gemini": answers.GeminiReply}


def fits_its_model(name: str, args: tuple, answer) -> None:
    """An answer has every field its model has and none it lacks: a service that grows a
    field fails here until ``deskbox.answers`` (and so the client and the OpenAPI
    documents) declares it."""
    if isinstance(answer, list):
        for item in answer:
            fits_its_model(name, args, item)
    elif isinstance(answer, answers.Answer):
        assert answers.undeclared(answer) == [], f"{name}: fields its model lacks"
    elif name == "computer":
        reply = REPLIES[args[0]]
        assert set(answer) == set(typing.get_type_hints(reply)), f"computer/{args[0]}: {sorted(answer)}"
        TypeAdapter(reply).validate_python(answer)


async def every_method(call, session, pages) -> set[str]:
    """Each public method of the client, once, against the real session; ``call(name,
    *args, **kwargs)`` runs it (async, or the sync client in a thread), and every answer is
    held to its model. Answers the names called, which the tests compare with the
    client's methods."""
    called: set[str] = set()

    async def c(name: str, *args, **kwargs):
        called.add(name)
        answer = await call(name, *args, **kwargs)
        fits_its_model(name, args, answer)
        return answer

    await asyncio.to_thread(open_fixture, session, pages, "toolset.html")
    assert (await c("health")).ok is True
    assert (await c("request", "scene", "GET", "/api/v1/health"))["ok"] is True  # (request: the JSON itself)
    assert (await c("scene", "agent-turn")).displays[0].size == [1280, 800]
    assert "Add item" in await c("text")
    add = (await c("find", 'button[name="Add item"]')).matches[0]
    first = await c("observe")
    assert first.format == "full"
    assert (await c("act", add.id, settle_ms=0)).ok
    assert (await c("wait_for", [{"type": "element_appears", "selector": 'text[name="Item 1"]'}])).matched
    assert (await c("assert_state", [{"kind": "element_exists", "selector": 'text[name="Item 1"]'}])).all_passed
    png = Image.open(io.BytesIO(await c("screenshot")))
    assert png.size == (1280, 800)
    assert add.window_id in [w.id for w in await c("windows")]
    assert (await c("sketch", window=add.window_id)).elements > 3
    assert "Add item" in await c("description", window=add.window_id)
    size = (await c("find", "combobox[name=Size]")).matches[0].id
    await c("act", size, "select", option="Large")
    await asyncio.to_thread(pages.wait_for, type="change", target="size", value="Large")
    hide = (await c("find", 'button[name="Hide banner"]')).matches[0].id
    observed = await c("act_and_observe", hide)
    assert "Welcome banner" in [e["name"] for e in observed.changes["removed"]]
    email = (await c("find", "textbox[name=Email]")).matches[0].id
    await c("act", email, "clear_text")
    typed = await c("type_and_observe", "x@y.z")
    assert typed.receipt.action == "type"
    assert (await c("key_and_observe", "BackSpace")).receipt.action == "key"
    await asyncio.to_thread(pages.wait_for, type="input", target="email", value="x@y.")
    saved = await c("snapshot_save", label="client")
    assert saved.id in [s.id for s in (await c("snapshots")).snapshots]
    assert (await c("snapshot", saved.id)).label == "client"
    assert "unchanged" in await c("snapshot_diff", saved.id)
    assert (await c("snapshot_delete", saved.id)).dropped is True
    # The provider's own reply, as its SDK takes it back: a dict.
    shot = await c("computer", "anthropic", {"action": "screenshot"})
    assert shot["content"][0]["type"] == "image"
    assert (await c("computer", "openai", {"type": "screenshot"}))["type"] == "computer_call_output"
    assert (await c("computer", "gemini", {"name": "wait_5_seconds", "args": {}}))["parts"]
    assert (await c("health", "desktopd")).backend == "wayland" and (await c("health", "bridge")).attached
    await c("pointer", "move", 10, 10)
    assert (await c("pointer_position")).x == 10
    await c("keyboard", "key", keys="Escape")
    assert (await c("tree")).windows
    assert (await c("displays")).displays[0].size == [1280, 800]
    await c("focus_window", add.window_id)
    await c("move_window", add.window_id, 0)
    tabs = await c("tabs")
    opened = await c("new_tab", pages.url("input.html"))
    await c("activate_tab", opened.id)
    await c("navigate", pages.url("toolset.html"), tab=opened.id)
    await asyncio.to_thread(pages.wait_for, type="load", page="/toolset.html", timeout=20)
    await c("close_tab", opened.id)
    await c("activate_tab", tabs[0].id)
    # The last: a window closed (the GTK fixture's, started for it).
    app = Process(session, [SYSTEM_PYTHON, str(GTK_APP), "--title", "closed by the client"])
    try:
        window = await asyncio.to_thread(wait_until, lambda: next(
            (w for w in session.windows() if w["title"] == "closed by the client"), None), 30, what="the window")
        await c("close_window", window["id"])
        await asyncio.to_thread(wait_until, lambda: app.proc.poll() is not None, 20, what="the app to end")
    finally:
        app.stop()
    # The session API: a snapshot kept and dropped, a claim taken and let go, the quiet
    # waited for; and last a reset, after which the browser is back.
    assert (await c("session")).children["sway"].state == "up"
    assert (await c("session_snapshot", "by-the-client")).name == "by-the-client"
    assert "by-the-client" in [s.name for s in (await c("session")).snapshots]
    assert (await c("session_snapshot_delete", "by-the-client")).deleted == "by-the-client"
    assert (await c("session_claim", "client-test", 30)).holder == "client-test"
    assert (await c("session_release", "client-test")).released is True
    assert (await c("session_settle", timeout_s=20)).waited_s is not None
    with pytest.raises(deskbox.ActionFailedError, match="no lifetime"):  # (this session has no --ttl)
        await c("session_extend", 60)
    reset = await c("session_reset")
    assert reset.healthy is True and reset.snapshot == "start"
    await asyncio.to_thread(session.browser_window)
    return called


async def test_every_method_of_the_async_client(single, pages):
    async with AsyncClient.from_state_file(single.state_file) as desk:
        async def call(name, *args, **kwargs):
            return await getattr(desk, name)(*args, **kwargs)
        assert await every_method(call, single, pages) == public_methods() - {"close"}


async def test_every_method_of_the_sync_client(single, pages):
    with Client.from_state_file(single.state_file) as desk:
        async def call(name, *args, **kwargs):
            return await asyncio.to_thread(getattr(desk, name), *args, **kwargs)
        assert await every_method(call, single, pages) == public_methods() - {"close"}
        assert desk.urls["scene"] == single.scene
    with Client("http://127.0.0.1:9") as nowhere, pytest.raises(AttributeError):
        nowhere.no_such_method()
    # Declared, not forwarded: every method is the class's own, with AsyncClient's signature.
    for name in public_methods():
        assert name in vars(Client) or name in vars(SyncBase), name
        assert inspect.signature(getattr(Client, name)) == inspect.signature(getattr(AsyncClient, name)), name
    with pytest.warns(DeprecationWarning, match="SyncClient is now deskbox.Client"):
        assert deskbox.SyncClient is Client
