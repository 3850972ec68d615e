"""The lines of an import file: reading them bounded, and the review each one holds.

A line is one JSON object: ``externalId``, ``productId``, ``rating`` (1-5), ``language``,
``title`` (optional), ``body``, ``author`` (the author's token ``sub``), ``authorName``
(optional), ``createdAt`` (ISO-8601 with a timezone, no later than now plus
``FUTURE_SKEW``), ``status`` (PENDING, PUBLISHED or
REJECTED; default PUBLISHED) and ``verified`` (default false). Anything else on a line, or a
value the API would refuse, makes the line invalid (``InvalidInput`` saying why).
"""

from __future__ import annotations

import hashlib
import json
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import IO

from storage.base.errors import InvalidInput
from storage.model import keys
from storage.model.comments import Comment, NewComment, Status

# Longer than any valid line (the longest texts, every character escaped as \uXXXX): a
# longer one is refused without being read whole.
LINE_MAX_BYTES = 256 * 1024
EXTERNAL_ID_MAX = 256
# How far ahead of this machine's clock a createdAt may be (the source's clock may run a
# little fast). A time later than that would sit on top of the newest-first listing, and be
# its product's lastCommentedAt, until the clock caught up: for 9999-12-31, forever.
FUTURE_SKEW = timedelta(minutes=5)

_BOM = b"\xef\xbb\xbf"
_FIELDS = frozenset(
    {
        "externalId",
        "productId",
        "rating",
        "language",
        "title",
        "body",
        "author",
        "authorName",
        "createdAt",
        "status",
        "verified",
    }
)
_REQUIRED = ("externalId", "productId", "rating", "language", "body", "author", "createdAt")


@dataclass(frozen=True, slots=True)
class ImportRecord:
    """A valid line (numbered from 1): the source's id and the comment it becomes."""

    external_id: str
    comment: Comment
    line: int = 0

    @property
    def digest(self) -> str:
        """What the source said about the review, as stored (so ``+01:00`` and the same
        moment in ``Z`` agree): the import record keeps it, and a later line with the same
        ``externalId`` is compared with it."""
        c = self.comment
        said = [
            c.product_id,
            c.language,
            c.rating,
            c.title,
            c.body,
            c.author_id,
            c.author_name,
            c.created_at,
            c.status.value,
            c.verified,
        ]
        text = json.dumps(said, ensure_ascii=False, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()[:32]


@dataclass(frozen=True, slots=True)
class InvalidLine:
    """A line that was skipped (numbered from 1), and why."""

    number: int
    reason: str

    def describe(self) -> str:
        return f"line {self.number}: {self.reason}"


def jsonl_lines(stream: IO[bytes]) -> Iterator[bytes]:
    """The lines of a JSON Lines file without their line breaks (and without a leading
    byte order mark). A line over ``LINE_MAX_BYTES`` is cut just past the limit, so that it
    is refused, instead of being read whole."""
    first = True
    while line := stream.readline(LINE_MAX_BYTES + 2):
        tail = line
        while not tail.endswith(b"\n") and len(tail) == LINE_MAX_BYTES + 2:
            tail = stream.readline(LINE_MAX_BYTES + 2)  # skip the rest of an over-long line
        if first:
            line, first = line.removeprefix(_BOM), False
        yield line.rstrip(b"\r\n")


def external_id_key(external_id: str) -> bytes:
    """A short fixed-size stand-in for an external id, for the set of ids an import has
    seen (16 bytes however long the id is)."""
    return hashlib.blake2b(external_id.encode(), digest_size=16).digest()


def parse_line(line: bytes, number: int = 0, *, now: datetime | None = None) -> ImportRecord:
    """The review on line ``number``, or ``InvalidInput`` saying what is wrong with it (the
    comment is checked as the API checks a new one; ``now`` is the clock's time)."""
    if len(line) > LINE_MAX_BYTES:
        raise InvalidInput(f"line longer than {LINE_MAX_BYTES:,} bytes")
    try:
        value = json.loads(line.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise InvalidInput(f"not UTF-8 text (byte {exc.start + 1})") from exc
    except json.JSONDecodeError as exc:
        raise InvalidInput(f"not JSON: {exc.msg} (column {exc.colno})") from exc
    except RecursionError as exc:
        raise InvalidInput("not JSON: nested too deeply") from exc
    if not isinstance(value, dict):
        raise InvalidInput("not a JSON object")
    unknown = sorted(value.keys() - _FIELDS)
    if unknown:
        names = ", ".join(repr(name[:40]) for name in unknown[:5])
        raise InvalidInput(f"unknown field{'s' if len(unknown) > 1 else ''} {names}")
    missing = [name for name in _REQUIRED if value.get(name) is None]
    if missing:
        raise InvalidInput(f"missing {', '.join(missing)}")
    for name, field in value.items():
        # JSON may escape half of a surrogate pair ("\ud800"), which is no character:
        # no key, digest or stored text can be made of it.
        if isinstance(field, str) and not _encodable(field):
            raise InvalidInput(f"{name} holds an unpaired surrogate, which is not text")
    external_id = _external_id(value["externalId"])
    created_at = _created_at(value["createdAt"], (now or datetime.now(UTC)) + FUTURE_SKEW)
    new = NewComment(
        product_id=value["productId"],
        language=value["language"],
        rating=value["rating"],
        body=value["body"],
        author_id=value["author"],
        title=value.get("title"),
        created_at=created_at,
        author_name=value.get("authorName"),
        verified=_verified(value.get("verified")),
    )
    comment = new.stored_as(
        keys.imported_comment_id(external_id),
        created_at,
        new.author_name,
        _status(value.get("status")),
    )
    return ImportRecord(external_id, comment, number)


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _external_id(value: object) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InvalidInput("externalId must be a non-empty string")
    if len(value) > EXTERNAL_ID_MAX:
        raise InvalidInput(f"externalId must be at most {EXTERNAL_ID_MAX} characters")
    if any(unicodedata.category(ch) == "Cc" for ch in value):
        raise InvalidInput("externalId must not contain control characters")
    return value


def _created_at(value: object, latest: datetime) -> str:
    """Any ISO-8601 time with a timezone up to ``latest``, as stored: UTC with
    milliseconds."""
    moment = _moment(value)
    if moment is None:
        raise InvalidInput(
            "createdAt must be an ISO-8601 time with a timezone, such as 2024-03-01T10:00:00Z"
        )
    stored = keys.format_timestamp(moment)
    if moment > latest:
        minutes = int(FUTURE_SKEW.total_seconds() // 60)
        raise InvalidInput(
            f"createdAt {stored} is in the future (more than {minutes} minutes ahead of "
            "this machine's clock)"
        )
    return stored


def _moment(value: object) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        moment = datetime.fromisoformat(value)
        keys.format_timestamp(moment)  # a time it cannot store is no time
    except (ValueError, OverflowError):
        return None
    return moment if moment.tzinfo is not None else None


def _status(value: object) -> Status:
    if value is None:
        return Status.PUBLISHED
    if isinstance(value, str) and value in Status.__members__:
        return Status[value]
    raise InvalidInput("status must be PENDING, PUBLISHED or REJECTED")


def _verified(value: object) -> bool:
    if value is None:
        return False
    if not isinstance(value, bool):
        raise InvalidInput("verified must be true or false")
    return value
