"""What a change of a scope's attribute definitions does to the answers stored under them.

Nothing here rewrites an answer. When a value (or a whole attribute) leaves the definitions,
the answers that chose it stay stored and counted under it, and the value is *retired*:
moderators see it as such (with the labels it had), shoppers no longer can answer it, and
``validate_answers`` lets an edit keep it unchanged. A *remap*, asked for later by a
moderator, moves the answers of retired values to a current value of the same attribute,
or drops them; a resumable backfill (not here) applies ``Remap.apply`` to one comment at a
time, in the comment's own transaction, and the remapped values leave the retired ones
when it completes (``Retired.without``).

A key keeps its kind for as long as it has answers that count: current or retired
(KIND_CHANGED). A fit measured on a SCALE is not the same question as a CHOICE of sizes,
and reading one's answers as the other's would rewrite them in all but name; a new kind
takes a new key.

Pure: it computes, it stores nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from storage.base.errors import TextMissing
from storage.model.attributes import (
    ATTRIBUTES_MAX,
    DEFINITIONS_MAX_BYTES,
    VALUES_MAX,
    Answer,
    AttributeKind,
    Code,
    DefinitionSet,
    Labels,
)
from storage.model.problems import Collector, Path, expect_list, expect_object, expect_string

# Retired values per scope, at most (TOO_MANY_RETIRED): each keeps its counter item in the
# scope's partition until a remap moves its answers, and ``attributeSummary`` reads those
# too; as many as a full definition set has values keeps that read within one Query page.
# A change that would retire more is refused until a remap settles some.
RETIRED_MAX = ATTRIBUTES_MAX * VALUES_MAX
# The retired values in UTF-8 bytes of their texts, labels included (RETIRED_TOO_LARGE):
# they are kept beside the definitions and read with them, and as many values each with
# its attribute's labels in 24 languages could reach megabytes. The definitions' own bound.
RETIRED_MAX_BYTES = DEFINITIONS_MAX_BYTES
# A remap names each retired value at most once (TOO_MANY_MOVES above that).
MOVES_MAX = RETIRED_MAX


@dataclass(frozen=True, slots=True)
class RetiredValue:
    """A value no longer offered whose stored answers still count under it."""

    key: str
    kind: AttributeKind
    value: str
    label: Labels  # the value's labels when it was retired
    attribute_label: Labels  # its attribute's labels then

    @property
    def size(self) -> int:
        """UTF-8 bytes of every text it holds."""
        own = len(f"{self.key}{self.kind.value}{self.value}".encode())
        return own + self.label.size + self.attribute_label.size


@dataclass(frozen=True, slots=True)
class Retired:
    """A scope's retired values, sorted by key and value."""

    values: tuple[RetiredValue, ...] = ()

    def __post_init__(self) -> None:
        pairs = [(r.key, r.value) for r in self.values]
        if pairs != sorted(set(pairs)):
            raise ValueError("retired values: sorted by key and value, each once")

    def __iter__(self) -> Iterator[RetiredValue]:
        return iter(self.values)

    def __len__(self) -> int:
        return len(self.values)

    def get(self, key: str, value: str) -> RetiredValue | None:
        return next((r for r in self.values if (r.key, r.value) == (key, value)), None)

    def of(self, key: str) -> tuple[RetiredValue, ...]:
        """The retired values of one attribute (all of them when it was removed)."""
        return tuple(r for r in self.values if r.key == key)

    def to_data(self) -> list[dict[str, object]]:
        """The retired values as data, which ``retired_from_data`` reads back equal."""
        return [
            {
                "key": r.key,
                "kind": r.kind.value,
                "value": r.value,
                "label": _labels_data(r.label),
                "attributeLabel": _labels_data(r.attribute_label),
            }
            for r in self.values
        ]

    def without(self, pairs: Iterable[tuple[str, str]]) -> Retired:
        """Retired values less those a completed remap settled."""
        settled = set(pairs)
        return Retired(tuple(r for r in self.values if (r.key, r.value) not in settled))


NOTHING_RETIRED = Retired()


def _labels_data(labels: Labels) -> dict[str, object]:
    return {"default": labels.default, "texts": dict(labels.texts)}


def _labels_of(data: Mapping[str, Any]) -> Labels:
    return Labels(str(data["default"]), tuple(sorted(dict(data["texts"]).items())))


def retired_from_data(data: object) -> Retired:
    """The retired values ``Retired.to_data`` wrote (stored by this code: trusted in shape,
    its invariants checked again by ``Retired``); ValueError for anything else."""
    if not isinstance(data, list):
        raise ValueError("retired values: a list")
    try:
        return Retired(
            tuple(
                RetiredValue(
                    str(item["key"]),
                    AttributeKind(item["kind"]),
                    str(item["value"]),
                    _labels_of(item["label"]),
                    _labels_of(item["attributeLabel"]),
                )
                for item in data
            )
        )
    except (KeyError, TypeError) as exc:
        raise ValueError(f"retired values: malformed ({exc!r})") from None


def retire(
    old: DefinitionSet,
    new: DefinitionSet,
    retired: Retired = NOTHING_RETIRED,
    *,
    field: str = "definitions",
) -> Retired:
    """The scope's retired values once ``new`` replaces ``old``: those of ``retired`` that
    ``new`` does not offer again, and every value of ``old`` it no longer offers. Or
    InvalidFields: a key whose kind changes (KIND_CHANGED), or more retired values than
    the bounds allow (TOO_MANY_RETIRED, RETIRED_TOO_LARGE). A value is retired whether or
    not an answer chose it: the caller may settle those its counters show unused."""
    out = Collector()
    kinds = {r.key: r.kind for r in retired}
    kinds.update((d.key, d.kind) for d in old)
    for i, definition in enumerate(new):
        was = kinds.get(definition.key)
        if was is not None and was is not definition.kind:
            message = (
                f"{definition.key!r} was a {was.value} and has answers that count: a "
                f"{definition.kind.value} takes a new key"
            )
            out.add((field, i, "kind"), Code.KIND_CHANGED, message)
    out.raise_any()
    entries = {(r.key, r.value): r for r in retired if not new.allows(r.key, r.value)}
    for definition in old:
        for value in definition.values:
            if not new.allows(definition.key, value.value):
                entries[definition.key, value.value] = RetiredValue(
                    definition.key, definition.kind, value.value, value.labels, definition.labels
                )
    if len(entries) > RETIRED_MAX:
        message = (
            f"the change would leave {len(entries)} values retired, more than {RETIRED_MAX}: "
            "remap the answers of some first"
        )
        out.add((field,), Code.TOO_MANY_RETIRED, message)
    elif sum(r.size for r in entries.values()) > RETIRED_MAX_BYTES:
        message = (
            f"the values left retired would hold more than {RETIRED_MAX_BYTES:,} bytes of "
            "labels: remap the answers of some first"
        )
        out.add((field,), Code.RETIRED_TOO_LARGE, message)
    out.raise_any()
    return Retired(tuple(entries[pair] for pair in sorted(entries)))


@dataclass(frozen=True, slots=True, order=True)
class Move:
    """Answers ``key=value`` become ``key=to``, or are dropped (``to`` None)."""

    key: str
    value: str
    to: str | None


@dataclass(frozen=True, slots=True)
class Remap:
    """The moves of one remap, sorted by key and value, each retired value at most once."""

    moves: tuple[Move, ...] = ()

    def __post_init__(self) -> None:
        pairs = [(m.key, m.value) for m in self.moves]
        if pairs != sorted(set(pairs)):
            raise ValueError("remap: moves sorted by key and value, each once")

    def moved(self, answer: Answer) -> Answer | None:
        """The answer after the remap: moved, dropped (None), or as it was."""
        move = next((m for m in self.moves if (m.key, m.value) == (answer.key, answer.value)), None)
        if move is None:
            return answer
        return None if move.to is None else Answer(answer.key, move.to)

    def apply(self, answers: Iterable[Answer]) -> tuple[Answer, ...]:
        """A comment's answers after the remap, sorted by key (a move keeps its key, so no
        key is answered twice)."""
        return tuple(sorted(a for a in map(self.moved, answers) if a is not None))

    def touches(self, answers: Iterable[Answer]) -> bool:
        """Whether the remap changes these answers: the backfill's work for this comment."""
        return any(self.moved(a) != a for a in answers)

    @property
    def pairs(self) -> tuple[tuple[str, str], ...]:
        """The retired values this remap settles."""
        return tuple((m.key, m.value) for m in self.moves)

    def to_data(self) -> list[dict[str, str | None]]:
        return [{"key": m.key, "value": m.value, "to": m.to} for m in self.moves]


_MOVE_FIELDS = ("key", "value", "to")


def parse_remap(
    data: object, definitions: DefinitionSet, retired: Retired, *, field: str = "remap"
) -> Remap:
    """The remap ``data`` asks for (``[{"key", "value", "to"}]``, ``to`` null to drop), or
    InvalidFields naming every problem: only a retired value moves (NOT_RETIRED), once
    (DUPLICATE_MOVE), to a value ``definitions`` offer for the same key
    (TARGET_NOT_ALLOWED). A backfill that resumes checks it again against the definitions
    of that moment."""
    out = Collector()
    items = expect_list(data, (field,), out)
    out.raise_any()
    assert items is not None
    if len(items) > MOVES_MAX:
        out.add((field,), Code.TOO_MANY_MOVES, f"at most {MOVES_MAX} moves")
    seen: dict[tuple[str, str], int] = {}
    moves: list[Move] = []
    for i, raw in enumerate(items):
        mark = len(out)
        path: Path = (field, i)
        item = expect_object(raw, path, _MOVE_FIELDS, out)
        if item is None:
            continue
        key = expect_string(item.get("key"), (*path, "key"), out)
        value = expect_string(item.get("value"), (*path, "value"), out)
        _, to = _target(item, (*path, "to"), out)
        if key is None or value is None:
            continue
        if (key, value) in seen:
            message = f"{key}={value} is moved already at {field}[{seen[key, value]}]"
            out.add(path, Code.DUPLICATE_MOVE, message)
        elif retired.get(key, value) is None:
            message = f"{key}={value} is not retired: only retired values are remapped"
            out.add((*path, "value"), Code.NOT_RETIRED, message)
        seen.setdefault((key, value), i)
        if to is not None and not definitions.allows(key, to):
            definition = definitions.get(key)
            offered = ", ".join(repr(v.value) for v in definition.values) if definition else ""
            message = f"{key!r} offers {offered}" if offered else f"{key!r} is retired: only drop"
            out.add((*path, "to"), Code.TARGET_NOT_ALLOWED, message)
        if len(out) == mark:
            moves.append(Move(key, value, to))
    out.raise_any()
    return Remap(tuple(sorted(moves)))


def _target(item: Mapping[str, object], path: Path, out: Collector) -> tuple[bool, str | None]:
    """Whether ``to`` is sound, and the value it names (None: drop). Absent is not null: a
    drop is asked for by name, never by a field left out."""
    if "to" not in item:
        out.add(path, Code.REQUIRED, "'to' is required: a value, or null to drop", TextMissing)
        return False, None
    raw = item["to"]
    if raw is None or isinstance(raw, str):
        return True, raw
    out.add(path, Code.SHAPE, "must be a string, or null to drop")
    return False, None
