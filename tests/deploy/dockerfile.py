"""The Dockerfile as the builder reads it: comments dropped, continued lines joined; the
runtime stage's environment, health check and base images."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

DOCKERFILE = Path(__file__).resolve().parents[2] / "Dockerfile"


def instructions(text: str | None = None) -> list[tuple[str, str]]:
    """Every instruction, in order, as (KEYWORD, arguments)."""
    found: list[tuple[str, str]] = []
    pending = ""
    for line in (DOCKERFILE.read_text() if text is None else text).splitlines():
        stripped = line.strip()
        if not pending and (not stripped or stripped.startswith("#")):
            continue
        if pending and stripped.startswith("#"):
            continue  # a comment inside a continued instruction
        if stripped.endswith("\\"):
            pending += stripped[:-1].rstrip() + " "
            continue
        keyword, _, arguments = (pending + stripped).partition(" ")
        found.append((keyword.upper(), arguments.strip()))
        pending = ""
    return found


def runtime_stage() -> list[tuple[str, str]]:
    """The instructions of the last stage: what the image runs."""
    every = instructions()
    start = max(i for i, (keyword, _) in enumerate(every) if keyword == "FROM")
    return every[start:]


def base_images() -> list[str]:
    """Each stage's image reference, without its AS name."""
    return [arguments.split()[0] for keyword, arguments in instructions() if keyword == "FROM"]


def image_environment() -> dict[str, str]:
    """The variables the image sets (ENV name=value ...)."""
    environment: dict[str, str] = {}
    for keyword, arguments in runtime_stage():
        if keyword == "ENV":
            pairs = (word.partition("=") for word in shlex.split(arguments))
            environment |= {name: value for name, _, value in pairs}
    return environment


def healthcheck() -> tuple[dict[str, str], list[str]]:
    """The HEALTHCHECK's options (--interval=30s ...) and its command, in exec form."""
    (arguments,) = [a for keyword, a in runtime_stage() if keyword == "HEALTHCHECK"]
    options, _, command = arguments.partition(" CMD ")
    settings = dict(option.removeprefix("--").split("=", 1) for option in options.split())
    exec_form: list[str] = json.loads(command)
    return settings, exec_form
