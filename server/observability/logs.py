"""The server's log lines: text (the default) or JSON lines (``LOG_FORMAT=json``).

As JSON, every line is one object with ``time`` (UTC, ISO 8601), ``level``, ``logger``,
``message``, the process's ``pid`` and the server's ``version``, the ``trace_id`` and
``span_id`` of the traced request it was written for (``TRACE``), and whatever fields the
line carries (``extra={"fields": {...}}``); uvicorn's lines are formatted the same way. The
request line (``server.observability.middleware``) is one of them.
"""

from __future__ import annotations

import logging
from contextvars import ContextVar
from datetime import UTC, datetime
from typing import Any, Literal

import orjson

from server.observability.build import version

LogFormat = Literal["text", "json"]
TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s %(message)s"

# The trace and span ids (hex) of the request being served, while its span is sampled: set
# by server.observability.tracing around the request, so that every line written for it
# leads to its trace (a request not sampled has no trace to lead to).
TRACE: ContextVar[tuple[str, str] | None] = ContextVar("comments_trace", default=None)


class JsonFormatter(logging.Formatter):
    """One JSON object per record, on one line."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
            "pid": record.process,
            "version": version(),
        }
        trace = TRACE.get()
        if trace is not None:
            entry["trace_id"], entry["span_id"] = trace
        fields = getattr(record, "fields", None)
        if isinstance(fields, dict):
            entry.update(fields)
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        # default=str: a field of another type is written as text rather than lost.
        return orjson.dumps(entry, default=str).decode()


def configure_logging(log_format: LogFormat = "text") -> None:
    """The server's log lines (``serve``, and each worker process): time, level, logger."""
    if log_format == "json":
        handler = logging.StreamHandler()
        handler.setFormatter(JsonFormatter())
        logging.basicConfig(level=logging.INFO, handlers=[handler])
    else:
        logging.basicConfig(level=logging.INFO, format=TEXT_FORMAT)


def uvicorn_log_config(log_format: LogFormat) -> dict[str, Any] | None:
    """uvicorn's logging configuration for the format; None: uvicorn's own (text)."""
    if log_format != "json":
        return None
    handler = {"class": "logging.StreamHandler", "formatter": "json", "stream": "ext://sys.stderr"}
    logger = {"handlers": ["default"], "level": "INFO", "propagate": False}
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {"json": {"()": JsonFormatter}},
        "handlers": {"default": handler},
        "loggers": {
            "uvicorn": logger,
            "uvicorn.error": {"level": "INFO"},
            "uvicorn.access": logger,
        },
    }
