"""The schema's changelog and deprecation policy (CHANGELOG.md): schema.graphql does not change
without a new entry, and every deprecation names its removal date and is listed."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

from graphql import (
    GraphQLEnumType,
    GraphQLInputObjectType,
    GraphQLInterfaceType,
    GraphQLObjectType,
    build_schema,
)

ROOT = Path(__file__).resolve().parent.parent
CHANGELOG = ROOT / "CHANGELOG.md"
SCHEMA = ROOT / "schema.graphql"
REMOVAL = re.compile(r"Removed after (\d{4}-\d{2}-\d{2})\.")
DIGEST = re.compile(r"<!-- schema\.graphql sha256: ([0-9a-f]{64}) -->")


def deprecations(sdl: str) -> dict[str, str]:
    """Every deprecated field, argument, input field and enum value, by its coordinate
    (``Type.field``, ``Type.field(arg:)``, ``Enum.VALUE``), with its reason."""
    schema = build_schema(sdl)
    found: dict[str, str] = {}
    for name, type_ in schema.type_map.items():
        if name.startswith("__"):
            continue
        if isinstance(type_, GraphQLObjectType | GraphQLInterfaceType):
            for field_name, field in type_.fields.items():
                if field.deprecation_reason is not None:
                    found[f"{name}.{field_name}"] = field.deprecation_reason
                for arg_name, arg in field.args.items():
                    if arg.deprecation_reason is not None:
                        found[f"{name}.{field_name}({arg_name}:)"] = arg.deprecation_reason
        elif isinstance(type_, GraphQLInputObjectType):
            for field_name, input_field in type_.fields.items():
                if input_field.deprecation_reason is not None:
                    found[f"{name}.{field_name}"] = input_field.deprecation_reason
        elif isinstance(type_, GraphQLEnumType):
            for value_name, value in type_.values.items():
                if value.deprecation_reason is not None:
                    found[f"{name}.{value_name}"] = value.deprecation_reason
    return found


def policy_problems(sdl: str, changelog: str) -> list[str]:
    """What breaks the deprecation policy: a reason without its removal date, or a
    deprecation the changelog does not list."""
    listed = " ".join(
        line for line in changelog.splitlines() if line.lstrip("- ").startswith("Deprecated")
    )
    problems = []
    for coordinate, reason in sorted(deprecations(sdl).items()):
        if not REMOVAL.search(reason):
            problems.append(f"{coordinate}: the reason names no 'Removed after YYYY-MM-DD.'")
        if f"`{coordinate}`" not in listed:
            problems.append(f"{coordinate}: not listed under Deprecated in CHANGELOG.md")
    return problems


def test_every_deprecation_follows_the_policy() -> None:
    assert policy_problems(SCHEMA.read_text(), CHANGELOG.read_text()) == []


def test_the_policy_check_finds_what_breaks_it() -> None:
    sdl = """
    type Query {
      old: Int @deprecated(reason: "Use new.")
      kept: Int @deprecated(reason: "Use new. Removed after 2027-03-01.")
      new(first: Int @deprecated(reason: "Use limit. Removed after 2027-03-01."), limit: Int): Int
    }
    enum Order { NEWEST OLDEST @deprecated(reason: "Gone.") }
    """
    changelog = "## 2026-12-01\n\nDeprecated: `Query.kept`, `Query.new(first:)`.\n"
    assert policy_problems(sdl, changelog) == [
        "Order.OLDEST: the reason names no 'Removed after YYYY-MM-DD.'",
        "Order.OLDEST: not listed under Deprecated in CHANGELOG.md",
        "Query.old: the reason names no 'Removed after YYYY-MM-DD.'",
        "Query.old: not listed under Deprecated in CHANGELOG.md",
    ]


def test_the_schema_does_not_change_without_an_entry() -> None:
    recorded = DIGEST.findall(CHANGELOG.read_text())
    assert recorded, "CHANGELOG.md records no schema digest"
    current = hashlib.sha256(SCHEMA.read_bytes()).hexdigest()
    assert recorded[0] == current, (
        "schema.graphql changed since the newest CHANGELOG.md entry: add an entry saying "
        f"what changed for clients, with <!-- schema.graphql sha256: {current} -->"
    )
