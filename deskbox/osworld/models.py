"""Request models of the OSWorld-compatible server: every body (JSON or form) is
validated here before a handler acts on it.

The field names and defaults are OSWorld's own (its in-VM server and the
``PythonController`` / ``SetupController`` that call it): ``command`` + ``shell``,
``file_path``, ``app_class_name``, ``window_name`` + ``strict`` + ``by_class``..."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, field_validator

__all__ = [
    "CommandRequest",
    "LaunchRequest",
    "RunPythonRequest",
    "RunBashRequest",
    "PathRequest",
    "OpenFileRequest",
    "FileForm",
    "UploadForm",
    "WindowSizeForm",
    "WindowRequest",
    "ChromeRequest",
    "VerifiedCommandRequest",
    "DownloadRequest",
    "MAX_COMMAND_CHARS",
    "EXECUTE_TIMEOUT_S",
]

MAX_COMMAND_CHARS = 256 * 1024
# OSWorld's /execute waits 120 s; run_python 30 s by default; run_bash_script 100 s.
EXECUTE_TIMEOUT_S = 120.0
MAX_TIMEOUT_S = 600.0
OPEN_FILE_TIMEOUT_S = 1800.0


class _Lenient(BaseModel):
    """OSWorld clients send fields this server does not use (``verification``,
    ``conda_env``...): they are ignored, as OSWorld's server ignores them."""

    model_config = ConfigDict(extra="ignore", str_max_length=MAX_COMMAND_CHARS)


class CommandRequest(_Lenient):
    """``POST /execute``, ``/setup/execute``: a list of arguments, or a string that is
    split like a shell would (``shell`` false) or given to ``/bin/sh -c`` (``shell`` true)."""

    command: list[str] | str = Field(default_factory=list, max_length=4096, validate_default=True)
    shell: bool = False
    # A deskbox addition (OSWorld's server always waits 120 s): seconds to wait.
    timeout: float = Field(EXECUTE_TIMEOUT_S, gt=0, le=MAX_TIMEOUT_S)

    @field_validator("command")
    @classmethod
    def _not_empty(cls, value: list[str] | str) -> list[str] | str:
        if not value or (isinstance(value, str) and not value.strip()):
            raise ValueError("command is empty")
        return value


class LaunchRequest(CommandRequest):
    """``POST /setup/launch``: started, not waited for."""


class Verification(_Lenient):
    """What must hold after the command: a window whose title holds ``window_exists``
    (any case), and/or a shell command ``command_success`` that exits 0."""

    window_exists: str | None = Field(None, max_length=1024)
    command_success: str | None = Field(None, max_length=MAX_COMMAND_CHARS)


class VerifiedCommandRequest(CommandRequest):
    """``POST /execute_with_verification``: run, then check ``verification`` every
    ``check_interval`` seconds for up to ``max_wait_time``."""

    verification: Verification | None = None
    max_wait_time: float = Field(10.0, gt=0, le=MAX_TIMEOUT_S)
    check_interval: float = Field(1.0, ge=0.05, le=60)


class DownloadRequest(_Lenient):
    """``POST /setup/download_file``: fetch ``url`` (http or https) into ``path``."""

    url: str = Field(min_length=1, max_length=8192, pattern=r"^https?://")
    path: str = Field(min_length=1, max_length=4096)


class RunPythonRequest(_Lenient):
    code: str = Field(min_length=1)
    timeout: float = Field(30.0, gt=0, le=MAX_TIMEOUT_S)
    working_dir: str | None = Field(None, max_length=4096)


class RunBashRequest(_Lenient):
    script: str = Field(min_length=1)
    timeout: float = Field(100.0, gt=0, le=MAX_TIMEOUT_S)
    working_dir: str | None = Field(None, max_length=4096)


class PathRequest(_Lenient):
    """``POST /list_directory`` and ``/setup/open_file``."""

    path: str = Field(min_length=1, max_length=4096)


class OpenFileRequest(PathRequest):
    """``POST /setup/open_file``. ``timeout`` (seconds, a deskbox addition) bounds the
    wait for the file's window; OSWorld's server waits 1800 s."""

    timeout: float = Field(OPEN_FILE_TIMEOUT_S, gt=0, le=OPEN_FILE_TIMEOUT_S)


class FileForm(_Lenient):
    """``POST /file`` (form field ``file_path``)."""

    file_path: str = Field(min_length=1, max_length=4096)


class UploadForm(_Lenient):
    """``POST /setup/upload``: form field ``file_path``; the file part ``file_data`` is
    streamed, not held in the model."""

    file_path: str = Field(min_length=1, max_length=4096)


class WindowSizeForm(_Lenient):
    """``POST /window_size`` (form field ``app_class_name``)."""

    app_class_name: str = Field(min_length=1, max_length=256)


class WindowRequest(_Lenient):
    """``POST /setup/activate_window`` and ``/setup/close_window``: ``window_name`` is
    part of the title (any case), or the whole title with ``strict``; with
    ``by_class`` it names the window's class instead (X11's ``res_name.res_class``, as
    ``Mail.thunderbird``, or a Wayland app id)."""

    window_name: str = Field(min_length=1, max_length=1024)
    strict: bool = False
    by_class: bool = False


class ChromeRequest(BaseModel):
    """``POST /deskbox/chrome``: what the session's ``google-chrome`` wrapper was
    called with."""

    model_config = ConfigDict(extra="forbid")
    args: list[str] = Field(default_factory=list, max_length=256)
