"""Run the scene aggregator: ``python -m deskbox.aggregator --listen 127.0.0.1:8000
--desktopd http://127.0.0.1:8080 --bridge http://127.0.0.1:8122``."""

from __future__ import annotations

import argparse
import os

from aiohttp import web

from ..common.logging import configure_logging, get_logger
from ..common.memory import tune_gc
from ..common.net import parse_listen
from ..common.options import (
    BUDGET_FLAGS,
    OCR_MODES,
    VLM_KEY_ENV,
    internal_secret_from_env,
    ocr_mode_from_env,
    vlm_key_from_env,
)
from ..common.settings import env
from ..policy import Policy, load_policy
from ..scene.vlm import config_problem
from .app import SceneConfig, create_app


def default_traces_dir() -> str:
    state = os.environ.get("XDG_STATE_HOME") or os.path.expanduser("~/.local/state")
    return os.path.join(state, "deskbox", "traces")


def _policy(args: argparse.Namespace, parser: argparse.ArgumentParser) -> Policy | None:
    budgets = {flag: getattr(args, flag) for flag in BUDGET_FLAGS if getattr(args, flag)}
    if not args.policy and not budgets:
        return None
    try:
        policy = load_policy(args.policy) if args.policy else Policy()
        return policy.merged({"budgets": budgets}) if budgets else policy
    except (OSError, ValueError) as exc:
        parser.error(f"--policy: {exc}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m deskbox.aggregator", description=__doc__)
    parser.add_argument("--listen", default=env("DESKBOX_SCENE_LISTEN"),
                        help="host:port to serve on (default 127.0.0.1:8000)")
    parser.add_argument("--desktopd", default=env("DESKBOX_DESKTOPD"),
                        help="desktopd's base URL")
    parser.add_argument("--bridge", default=env("DESKBOX_BRIDGE"),
                        help="the CDP bridge's base URL; without it the scene has no page content")
    parser.add_argument("--no-atspi", action="store_true", help="do not read native apps over AT-SPI")
    parser.add_argument("--ocr", nargs="?", const="all", choices=OCR_MODES, default=ocr_mode_from_env(),
                        help="fill the scene's ocr list with Tesseract (when installed): 'all' of the screen "
                             "(--ocr alone), or 'fill' where native apps expose nothing (a canvas, a video); "
                             "default: off, or DESKBOX_OCR"),
    parser.add_argument("--control", default=env("DESKBOX_CONTROL"),
                        help="deskbox up's control socket: serves /api/v1/session/* (reset, snapshots)")
    parser.add_argument("--ids-file", default=None,
                        help="keep element ids in this file, so that a restarted scene honours them")
    parser.add_argument("--view", default=None, help="the live view's base URL, whose control its health reports")
    parser.add_argument("--traces", default=default_traces_dir(), metavar="DIR",
                        help="where traces are kept, a folder each (default: %(default)s)")
    parser.add_argument("--trace-at-start", action="store_true", help="record a trace from the start")
    parser.add_argument("--policy", default=None, metavar="FILE",
                        help="guard rails: budgets, redaction, allowed actions, confirmation, audit (JSON or YAML)")
    for flag in BUDGET_FLAGS:
        parser.add_argument(f"--{flag.replace('_', '-')}", type=int, default=None, metavar="N",
                            help=f"budget {flag} (over the policy file's)")
    parser.add_argument("--vlm-url", default=None, metavar="URL",
                        help="a vision model for GET /api/v1/description?vlm=1: an OpenAI-compatible "
                             "chat-completions endpoint (http://host:port/v1, or .../chat/completions); its key, "
                             f"if it needs one, in {VLM_KEY_ENV}. Without it nothing is sent anywhere")
    parser.add_argument("--vlm-model", default=None, metavar="NAME", help="the model --vlm-url is to run")
    parser.add_argument("--log-level", default=env("DESKBOX_LOG_LEVEL"))
    args = parser.parse_args(argv)
    problem = config_problem(args.vlm_url, args.vlm_model)
    if problem is not None:
        parser.error(problem)
    configure_logging("scene", args.log_level)
    tune_gc()
    host, port = parse_listen(args.listen)
    config = SceneConfig(
        desktopd=args.desktopd.rstrip("/"),
        bridge=args.bridge.rstrip("/") if args.bridge else None,
        atspi=not args.no_atspi,
        ocr=args.ocr,
        token=env("DESKBOX_TOKEN"),
        control=args.control,
        ids_file=args.ids_file,
        view=args.view.rstrip("/") if args.view else None,
        traces=args.traces,
        trace_label="deskbox up --trace" if args.trace_at_start else None,
        secret=internal_secret_from_env(),
        policy=_policy(args, parser),
        vlm_url=args.vlm_url,
        vlm_model=args.vlm_model if args.vlm_url else None,
        vlm_key=vlm_key_from_env() if args.vlm_url else None,
    )
    get_logger("deskbox.scene").info("starting", url=f"http://{host}:{port}", desktopd=config.desktopd,
                                     bridge=config.bridge, vlm_model=config.vlm_model)
    web.run_app(create_app(config), host=host, port=port, print=None, access_log=None, handle_signals=True)


if __name__ == "__main__":
    main()
