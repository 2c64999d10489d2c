"""Options that ``deskbox up`` and a service both take, parsed the same way in both."""

from __future__ import annotations

from .settings import SETTINGS, env, given

# The policy's budgets that deskbox up and the scene aggregator take as flags too
# (--max-actions ...), over the policy file's.
BUDGET_FLAGS = ("max_actions", "max_screenshots", "max_vlm_tokens", "max_session_seconds", "actions_per_minute")

# The scene's OCR: off; "fill", only where native apps expose nothing (a canvas, a
# video, a window without accessibility); "all", the whole screen.
OCR_MODES = ("off", "fill", "all")


def ocr_mode_from_env() -> str:
    """DESKBOX_OCR as an OCR mode: ``1`` or ``all``, ``fill``; anything else is off."""
    value = (env("DESKBOX_OCR") or "").strip().lower()
    return {"1": "all", "all": "all", "fill": "fill"}.get(value, "off")


# How a client of a session (``deskbox.Client``, ``deskbox mcp``) finds it when it is not
# told: the state file ``deskbox up --state-file`` writes, or the services' URLs. The
# token is never in the state file.
CLIENT_ENV = {
    "state_file": "DESKBOX_STATE_FILE",
    "scene": "DESKBOX_SCENE",
    "desktopd": "DESKBOX_DESKTOPD",  # (the pyautogui shim reads it too)
    "bridge": "DESKBOX_BRIDGE",
    "token": "DESKBOX_TOKEN",
}
# Where ``deskbox up`` puts the services by default.
DEFAULT_URLS: dict[str, str] = {
    "scene": SETTINGS["DESKBOX_SCENE"].default or "",
    "desktopd": SETTINGS["DESKBOX_DESKTOPD"].default or "",
    "bridge": "http://127.0.0.1:8122",  # (DESKBOX_BRIDGE unset means no browser to a service)
}


def client_env(name: str) -> str | None:
    """The value of the client setting ``name`` (a key of ``CLIENT_ENV``), None when unset."""
    return given(CLIENT_ENV[name])


# The secret ``deskbox up`` gives desktopd and the scene aggregator (in their environment,
# never on a command line): the scene's own requests to desktopd carry it, and desktopd's
# questions to the scene's gate do. Unset when the services run on their own.
INTERNAL_SECRET_ENV = "DESKBOX_INTERNAL_SECRET"


def internal_secret_from_env() -> str | None:
    return given(INTERNAL_SECRET_ENV)


# A vision model the scene asks to describe a window (``--vlm-url``, ``--vlm-model``):
# its API key comes from this variable only, never a flag (a command line is readable by
# every user of the machine), and only the scene aggregator is given it.
VLM_KEY_ENV = "DESKBOX_VLM_KEY"
# How long one call of the model may take (connecting, sending the picture, its answer);
# a client of the scene waits this long on top of its own timeout.
VLM_TIMEOUT_S = 60.0


def vlm_key_from_env() -> str | None:
    return given(VLM_KEY_ENV)
