"""Every key of the single-table model, and reading positions back out of them.

Each key part is first held to its rule (``storage.model.rules``): a product id, a
language or a rating that could smuggle a delimiter (``/``, ``#``) into a key never gets
this far, so keys are never escaped and can always be split back into their parts.
"""

from __future__ import annotations

import hashlib
import re
import uuid
from datetime import UTC, datetime

from storage.base.errors import (
    InvalidCursor,
)
from storage.model.rules import (
    validate_comment_id,
    validate_language,
    validate_product_id,
    validate_rating,
)

# Wide enough for any count DynamoDB could hold in practice, fixed so strings sort as numbers.
LEADER_COUNT_WIDTH = 12
# Digits of the helpful count in HSK (more votes than any comment will get).
HELPFUL_WIDTH = 10

# Every comment id this layer generates (see ``new_comment_id``).
_GENERATED_ID = re.compile(r"[0-9a-f]{32}")
_TIMESTAMP = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}Z")

LEADERS = "LEADERS"
STATS_ALL = "S"
COMMENT_PREFIX = "COMMENT#"
PRODUCT_PREFIX = "PRODUCT#"
IDEMPOTENCY_PREFIX = "IDEMPOTENCY#"
AUTHOR_PREFIX = "AUTHOR#"
HOUR_PREFIX = "HOUR#"
RATE_PREFIX = "RATE#"
REPORT_PREFIX = "REPORT#"
VOTE_PREFIX = "VOTE#"
IMPORT_PREFIX = "IMPORT#"
ERASURE_PREFIX = "ERASURE#"
# The sort key of an erasure job's item (``erasure_pk``), and of the fence an erasure keeps
# in its author's partition while it runs (``storage.model.erasure``).
ERASURE_SK = "ERASURE"
ERASING_SK = "ERASING"
# The one partition of the moderation queue index. Every PENDING comment is in it, so it
# takes a write whenever a comment enters or leaves PENDING; a partition absorbs about
# 1,000 writes per second, far above any shop's rate of new reviews, so it is not sharded
# (see DESIGN.md, "The life of a comment").
QUEUE_PK = "MODQUEUE"
QUEUE_COUNT_SK = "COUNT"


def new_comment_id() -> str:
    """A fresh, never reused comment id: 128 random bits as 32 lower-case hex digits.

    Ids are never derived from anything a client sends again (an idempotency key maps to
    an id in a record instead), so a comment id names one comment's life only.
    """
    return uuid.uuid4().hex


def imported_comment_id(external_id: str) -> str:
    """The id of the comment imported from a source's review: 32 lower-case hex digits (the
    shape of ``new_comment_id``), the same on every run, so that an import can be repeated.

    Still never reused: the import record (``import_pk``), written with the comment, stays
    after the comment is deleted and keeps the import from making it again.
    """
    return _digest(IMPORT_PREFIX, external_id)[:32]


def format_timestamp(moment: datetime) -> str:
    """ISO-8601 in UTC with milliseconds: fixed width, so string order is time order."""
    if moment.tzinfo is None:
        raise ValueError("timestamps must be timezone-aware")
    utc = moment.astimezone(UTC)
    if not 1 <= utc.year <= 9999:
        raise ValueError("timestamp out of range")
    return utc.strftime("%Y-%m-%dT%H:%M:%S.") + f"{utc.microsecond // 1000:03d}Z"


def parse_timestamp(text: str) -> datetime:
    """Inverse of ``format_timestamp``."""
    if not _TIMESTAMP.fullmatch(text):
        raise ValueError(f"not a timestamp: {text!r}")
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC)


def _digest(*parts: str) -> str:
    """A fixed-width digest of free text (author ids and keys may hold any character)."""
    return hashlib.sha256("\x00".join(parts).encode()).hexdigest()


def idempotency_pk(author: str, idempotency_key: str) -> str:
    """Key of the record that binds an author's idempotency key to its first request."""
    return IDEMPOTENCY_PREFIX + _digest(author, idempotency_key)


def author_pk(author: str) -> str:
    """Partition of an author's write-limit items."""
    return AUTHOR_PREFIX + _digest(author)[:32]


def erasure_pk(request_id: str) -> str:
    """Key of an erasure job, by its request id (32 lower-case hex digits)."""
    if not _GENERATED_ID.fullmatch(request_id):
        raise ValueError("an erasure request id is 32 lower-case hex digits")
    return ERASURE_PREFIX + request_id


def vote_sk(voter: str) -> str:
    """Sort key, in the comment's partition, of one viewer's helpful vote on it."""
    return VOTE_PREFIX + _digest(voter)[:32]


def report_sk(reporter: str) -> str:
    """Sort key, in the comment's partition, of one viewer's report of it."""
    return REPORT_PREFIX + _digest(reporter)[:32]


def import_pk(external_id: str) -> str:
    """Key of the record that an imported review (by the source's own id) was loaded."""
    return IMPORT_PREFIX + _digest(external_id)


def author_product_sk(product_id: str) -> str:
    """Sort key of the item counting an author's comments on one product."""
    return product_pk(product_id)


def author_hour_sk(hour: str) -> str:
    """Sort key of the item counting an author's comments created in one hour (UTC)."""
    return HOUR_PREFIX + hour


def author_rate_sk(family: str) -> str:
    """Sort key of the item counting an author's writes of one family per hour."""
    if not family.isalpha():
        raise ValueError(f"not a family of writes: {family!r}")
    return RATE_PREFIX + family


def comment_pk(comment_id: str) -> str:
    return COMMENT_PREFIX + validate_comment_id(comment_id)


def product_pk(product_id: str) -> str:
    return PRODUCT_PREFIX + validate_product_id(product_id)


def stats_sk(language: str | None) -> str:
    return STATS_ALL if language is None else f"{STATS_ALL}#{validate_language(language)}"


def lang_rating_pk(product_id: str, language: str, rating: int) -> str:
    """Partition of index byLangAndRating."""
    return f"{product_pk(product_id)}/{validate_language(language)}/{validate_rating(rating)}"


def lang_pk(product_id: str, language: str) -> str:
    """Partition of index byLang."""
    return f"{product_pk(product_id)}/{validate_language(language)}"


def rating_pk(product_id: str, rating: int) -> str:
    """Partition of index byRating."""
    return f"{product_pk(product_id)}/{validate_rating(rating)}"


def all_pk(product_id: str) -> str:
    """Partition of index all."""
    return product_pk(product_id)


def sort_key(created_at: str, comment_id: str) -> str:
    """GSISK of a comment: time first, then the id, so every position is unique."""
    if not _TIMESTAMP.fullmatch(created_at):
        raise ValueError(f"not a timestamp: {created_at!r}")
    return f"{created_at}#{validate_comment_id(comment_id)}"


def helpful_sort_key(helpful: int, sort_key: str) -> str:
    """HSK of a published comment: its helpful count zero-padded, then its GSISK (ties
    are broken as in every other order)."""
    if not 0 <= helpful < 10**HELPFUL_WIDTH:
        raise ValueError("helpful counts are 0 to 10 digits")
    return f"{helpful:0{HELPFUL_WIDTH}d}#{sort_key}"


def validate_helpful_position(value: str) -> str:
    """An HSK that came from a cursor, if it has the full shape of one we write."""
    count, sep, sort_key = value.partition("#")
    if not sep or len(count) != HELPFUL_WIDTH or not count.isascii() or not count.isdigit():
        raise InvalidCursor("cursor does not name a position")
    validate_sort_key(sort_key)
    return value


def validate_position(value: str) -> str:
    """A position of any order (a GSISK or queue key, a rating order's, an HSK), if it
    has the full shape of one we write; which order it belongs to is the cursor's to say."""
    for validate in (validate_sort_key, validate_helpful_position, split_rating_position):
        try:
            validate(value)
        except InvalidCursor:
            continue
        return value
    raise InvalidCursor("cursor does not name a position")


def rating_position(rating: int, sort_key: str) -> str:
    """A position in a rating order: the rating's partition, and the GSISK within it."""
    return f"{validate_rating(rating)}:{sort_key}"


def split_rating_position(value: str) -> tuple[int, str]:
    """(rating, GSISK) of a rating order's position from a cursor, or InvalidCursor."""
    rating, sep, sort_key = value.partition(":")
    if not sep or rating not in ("1", "2", "3", "4", "5"):
        raise InvalidCursor("cursor does not name a position")
    return int(rating), validate_sort_key(sort_key)


def sort_key_time(sort_key: str) -> str:
    """The timestamp part of a comment's GSISK."""
    return sort_key.partition("#")[0]


def validate_sort_key(value: str) -> str:
    """Return a GSISK that came from outside (a cursor) if it has the full shape of one we
    write, else raise: a real UTC timestamp with milliseconds, ``#``, and a generated
    comment id (32 lower-case hex digits), so a truncated or edited position is refused."""
    created_at, sep, comment_id = value.partition("#")
    if not sep or not _GENERATED_ID.fullmatch(comment_id):
        raise InvalidCursor("cursor does not name a position")
    try:
        parse_timestamp(created_at)
    except ValueError as exc:
        raise InvalidCursor("cursor does not name a position") from exc
    return value


# Greater than every character a GSISK can hold (all are ASCII letters, digits and "#-:._").
_ABOVE_KEY_CHARS = "~"
# Smaller than every character a GSISK can hold.
_BELOW_KEY_CHARS = " "


def key_just_below(sort_key: str) -> str:
    """The greatest string no GSISK lies between and ``sort_key``, from below.

    DynamoDB's BETWEEN is inclusive; this turns its upper end exclusive without reading the
    item at ``sort_key`` again.
    """
    return sort_key[:-1] + chr(ord(sort_key[-1]) - 1) + _ABOVE_KEY_CHARS


def key_just_above(sort_key: str) -> str:
    """The least string no GSISK lies between ``sort_key`` and, from above."""
    return sort_key + _BELOW_KEY_CHARS


def leader_sort_key(five_star_count: int) -> str:
    """GSISK of a leaderboard entry: the count as a zero-padded string (GSISK is a string)."""
    if not 0 < five_star_count < 10**LEADER_COUNT_WIDTH:
        raise ValueError("leaderboard entries exist only for positive counts")
    return f"{five_star_count:0{LEADER_COUNT_WIDTH}d}"


def product_id_from_pk(pk: str) -> str:
    if not pk.startswith(PRODUCT_PREFIX):
        raise ValueError(f"not a product key: {pk!r}")
    return pk[len(PRODUCT_PREFIX) :]
