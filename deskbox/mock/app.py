"""Mock mode: ``deskbox up --mock SCENARIO`` serves the scene aggregator's API (the Scene,
/act, the toolset, MCP at /mcp) from a scenario instead of a desktop, so that agent code
is tested in milliseconds, with no Sway or browser. desktopd's input and window routes
are served on the same port (a click at a point acts on the element there), so that
OS Screen Observer's API (``--observer``) and the MCP server's pointer and keyboard tools
work too. ``GET /api/v1/oracle`` says whether the scenario's task succeeded or failed;
``POST /api/v1/mock/reset`` starts it over."""

from __future__ import annotations

from aiohttp import web

from ..aggregator.app import DESKTOP, ENGINE, Parts, SceneConfig
from ..aggregator.app import create_app as create_scene_app
from ..answers import DisplayList, InputDone, WindowTree
from ..api.toolset import AssertRequest
from ..common.openapi import Route, add_routes
from ..common.web import json_ok, read_body
from ..desktopd.models import KeyboardRequest, PointerRequest
from ..toolset.checks import Look, check
from .scenario import Scenario
from .world import MockActor, MockDesktop, MockEngine, World

__all__ = ["create_app", "WORLD"]

WORLD = web.AppKey("world", World)


def create_app(scenario: Scenario, *, token: str | None = None) -> web.Application:
    world = World(scenario)
    engine = MockEngine(world)
    # (desktopd "": this app serves desktopd's input routes itself, and /mcp calls them here.)
    app = create_scene_app(SceneConfig(desktopd="", bridge=None, atspi=False, token=token, watch=False),
                           parts=Parts(engine=engine, actor=MockActor(engine), desktop=MockDesktop(engine)))
    app[WORLD] = world
    add_routes(app, ROUTES)
    return app


async def _nothing(*_: object) -> None:
    raise NotImplementedError("a mock scene has no tabs, pixels or tokens for its oracles")


async def oracle(request: web.Request) -> web.Response:
    world = request.app[WORLD]
    look = Look(await request.app[ENGINE].scene("active"), tabs=_nothing, screenshot=_nothing, ocr=_nothing,
                kept=_nothing)
    answer = {"scenario": world.scenario.name, "state": world.state, "steps": len(world.steps)}
    for kind in ("success", "failure"):
        listed = getattr(world.scenario.oracles, kind)
        predicates = AssertRequest.model_validate({"predicates": listed}).predicates if listed else []
        results = [{"kind": p.kind, "passed": (await check(p, look))[0]} for p in predicates]
        answer[kind] = bool(results) and all(r["passed"] for r in results)
        answer[f"{kind}_results"] = results
    return json_ok(answer)


async def reset(request: web.Request) -> web.Response:
    world = request.app[WORLD]
    version = world.version
    world.__init__(world.scenario)
    world.version = version + 1  # (a new state: the next scene is built afresh)
    return json_ok({"state": world.state})


async def pointer(request: web.Request) -> web.Response:
    req = await read_body(request, PointerRequest)
    await request.app[DESKTOP].pointer(**req.model_dump())
    at = {"display": req.display, "x": req.x, "y": req.y} if req.x is not None else None
    return json_ok({"ok": True, "action": req.action, "pointer": at, "ms": 0.0})


async def keyboard(request: web.Request) -> web.Response:
    req = await read_body(request, KeyboardRequest)
    await request.app[DESKTOP].keyboard(**req.model_dump(exclude_none=True))
    return json_ok({"ok": True, "action": req.action, "pointer": None, "ms": 0.0})


def _display_json(engine) -> dict:
    d = engine.display
    return {"id": d.id, "name": d.name, "bounds": d.layout.as_list(), "scale": d.scale, "primary": d.primary,
            "size": list(d.size)}


async def displays(request: web.Request) -> web.Response:
    return json_ok({"displays": [_display_json(request.app[ENGINE])]})


async def tree(request: web.Request) -> web.Response:
    engine = request.app[ENGINE]
    scene = await engine.scene("active")
    return json_ok({"displays": [_display_json(engine)], "windows": [w.to_json() for w in scene.windows],
                    "focused": scene.focused_window.id if scene.focused_window else None})


ROUTES = [
    Route("GET", "/api/v1/oracle", oracle, "Whether the scenario's success and failure oracles hold now"),
    Route("POST", "/api/v1/mock/reset", reset, "Start the scenario over"),
    Route("POST", "/api/v1/pointer", pointer, "desktopd's pointer: a click acts on the element at the point",
          body=PointerRequest, answer=InputDone),
    Route("POST", "/api/v1/keyboard", keyboard, "desktopd's keyboard: to the focused element", body=KeyboardRequest,
          answer=InputDone),
    Route("GET", "/api/v1/displays", displays, "The scenario's one display", answer=DisplayList),
    Route("GET", "/api/v1/tree", tree, "The scenario's windows", answer=WindowTree),
]
