"""One structlog pipeline for every service: JSON lines when stderr is not a terminal,
readable console lines when it is; stdlib and aiohttp loggers go through it too."""

from __future__ import annotations

import logging
import sys

import structlog

__all__ = ["configure_logging", "get_logger"]

_configured = False


def configure_logging(service: str, level: str = "info") -> None:
    global _configured
    shared = [
        structlog.contextvars.merge_contextvars,
        structlog.processors.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
    ]
    tty = sys.stderr.isatty()
    renderer = structlog.dev.ConsoleRenderer(colors=False) if tty else structlog.processors.JSONRenderer()
    # A logged exception's traceback, as a string in the JSON line (the console renderer
    # prints its own).
    tracebacks = [] if tty else [structlog.processors.format_exc_info]
    structlog.configure(
        processors=[*shared, structlog.stdlib.ProcessorFormatter.wrap_for_formatter],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.stdlib.BoundLogger,
        cache_logger_on_first_use=True,
    )
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(
        structlog.stdlib.ProcessorFormatter(
            foreign_pre_chain=shared,
            processors=[
                structlog.stdlib.ProcessorFormatter.remove_processors_meta,
                *tracebacks,
                renderer,
            ],
        )
    )
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    # aiohttp's own access log duplicates our canonical request line.
    logging.getLogger("aiohttp.access").setLevel(logging.WARNING)
    structlog.contextvars.bind_contextvars(service=service)
    _configured = True


def get_logger(name: str | None = None) -> structlog.stdlib.BoundLogger:
    return structlog.stdlib.get_logger(name)
