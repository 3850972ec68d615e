"""Reading the API's answers to writes, as the load drivers need."""

from __future__ import annotations

from typing import Any


def refusal(body: dict[str, Any], field: str) -> str | None:
    """The code a write was refused with: a top-level error's, or its payload's first
    userError's (input problems and product rules); None when it went through."""
    if body.get("errors"):
        return str(body["errors"][0]["extensions"]["code"])
    problems = body["data"][field]["userErrors"]
    return str(problems[0]["code"]) if problems else None
