"""What valid input is: the one home of every rule a value from outside must meet before
it reaches a key or an item (ids, languages, ratings, texts, tokens' identifiers).

Each rule raises a typed ``InvalidInput`` error (``storage.base.errors``) whose message is
written for the client; the API reports it as ``BAD_USER_INPUT`` or a ``userErrors`` code
(the tree is drawn in ``resolvers/errors.py``). A product id, a language or a rating that
could smuggle a delimiter (``/``, ``#``) into a key is refused here: keys are never
escaped, so a key can always be split back into its parts and no two inputs share a
partition. Texts are stored in NFC and measured in characters and in UTF-8 bytes.
"""

from __future__ import annotations

import re
import unicodedata

from storage.base.errors import (
    InvalidCommentId,
    InvalidCommentText,
    InvalidLanguage,
    InvalidProductId,
    InvalidRating,
    TextMissing,
    TextTooLong,
)

RATINGS: tuple[int, ...] = (1, 2, 3, 4, 5)
PRODUCT_ID_MAX = 128
COMMENT_ID_MAX = 64
LANGUAGE_MAX = 35
# Letters, digits and a few punctuation marks that never act as delimiters in our keys.
_PRODUCT_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]*")
_COMMENT_ID = re.compile(r"[A-Za-z0-9_-]+")
# BCP 47 shape (primary subtag plus optional subtags), compared in lower case.
_LANGUAGE = re.compile(r"[a-z]{2,3}(?:-[a-z0-9]{1,8})*")

TITLE_MAX = 200
BODY_MAX = 10_000
AUTHOR_MAX = 128
IDEMPOTENCY_KEY_MAX = 128
# Limits in UTF-8 bytes beside those in characters: 10,000 emoji would be 40 kB.
TITLE_MAX_BYTES = 800
BODY_MAX_BYTES = 20_000
AUTHOR_MAX_BYTES = 512
NOTE_MAX = 1_000
NOTE_MAX_BYTES = 4_000
REPLY_MAX = 5_000
REPLY_MAX_BYTES = 10_000


def validate_product_id(product_id: object) -> str:
    """Return the product id unchanged if it is safe to put in a key, else raise."""
    if (
        not isinstance(product_id, str)
        or not 0 < len(product_id) <= PRODUCT_ID_MAX
        or not _PRODUCT_ID.fullmatch(product_id)
    ):
        raise InvalidProductId(
            f"product id must be 1-{PRODUCT_ID_MAX} characters of letters, digits and . _ : -"
            ", starting with a letter or digit"
        )
    return product_id


def validate_comment_id(comment_id: object) -> str:
    """Return the comment id unchanged if it is well formed, else raise."""
    if (
        not isinstance(comment_id, str)
        or not 0 < len(comment_id) <= COMMENT_ID_MAX
        or not _COMMENT_ID.fullmatch(comment_id)
    ):
        raise InvalidCommentId(
            f"comment id must be 1-{COMMENT_ID_MAX} characters of letters, digits, _ and -"
        )
    return comment_id


def validate_language(language: object) -> str:
    """Return the language tag in lower case (tags are case-insensitive), else raise."""
    if not isinstance(language, str) or not 0 < len(language) <= LANGUAGE_MAX:
        raise InvalidLanguage("language must be a BCP 47 tag such as 'en' or 'pt-BR'")
    lowered = language.lower()
    if not _LANGUAGE.fullmatch(lowered):
        raise InvalidLanguage("language must be a BCP 47 tag such as 'en' or 'pt-BR'")
    return lowered


def canonical_language(tag: str) -> str:
    """A valid tag in the case BCP 47 recommends (RFC 5646, 2.1.1): ``pt-BR``, ``zh-Hant``,
    ``es-419``, ``en-US-x-twain``. Tags are case-insensitive, so keys use lower case; this
    is the case people expect to read."""
    parts = tag.lower().split("-")
    out = [parts[0]]
    # After a singleton (an extension or private use, "x-..."), everything stays lower case;
    # a tag that starts with one ("x-klingon", "i-enochian") is lower case throughout.
    verbatim = len(parts[0]) == 1
    for part in parts[1:]:
        if verbatim or len(part) == 1:
            verbatim = True
        elif len(part) == 2 and part.isalpha():
            part = part.upper()  # region
        elif len(part) == 4 and part.isalpha():
            part = part.title()  # script
        out.append(part)
    return "-".join(out)


def validate_rating(rating: object) -> int:
    """Return the rating if it is an integer from 1 to 5, else raise."""
    if isinstance(rating, bool) or not isinstance(rating, int) or rating not in RATINGS:
        raise InvalidRating("rating must be an integer from 1 to 5")
    return rating


def validate_ratings(ratings: object) -> frozenset[int] | None:
    """Normalise a rating filter: None or empty means no filter, as does naming all five."""
    if ratings is None:
        return None
    if isinstance(ratings, str | bytes) or not hasattr(ratings, "__iter__"):
        raise InvalidRating("ratings must be a list of integers from 1 to 5")
    chosen = frozenset(validate_rating(r) for r in ratings)
    if not chosen or chosen == frozenset(RATINGS):
        return None
    return chosen


# Characters that reorder or hide text (bidi embeddings, overrides and isolates): they let a
# comment display as something other than what it says, so they are refused.
_BIDI_CONTROLS = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
# Letters that render as nothing (Hangul fillers, the braille blank) though not categorised so.
_BLANK_LETTERS = frozenset("\u115f\u1160\u3164\uffa0\u2800")
# Categories that show nothing on their own: separators, controls, format characters
# (zero-width spaces and joiners, soft hyphens, tags), combining marks without a base.
_INVISIBLE_CATEGORIES = frozenset({"Zs", "Zl", "Zp", "Cc", "Cf", "Mn", "Me"})


def _visible(ch: str) -> bool:
    return unicodedata.category(ch) not in _INVISIBLE_CATEGORIES and ch not in _BLANK_LETTERS


def _check_text(
    name: str, value: object, maximum: int, max_bytes: int, *, optional: bool
) -> str | None:
    """A text in NFC, or the reason it is refused.

    Refused: C0 and C1 control characters (tab and line breaks aside), bidi embedding,
    override and isolate controls, texts with nothing visible, and texts over the limit in
    characters or in UTF-8 bytes (bytes are what storage and responses cost).
    """
    if value is None and optional:
        return None
    if not isinstance(value, str):
        raise InvalidCommentText(f"{name} must be a string")
    if any(unicodedata.category(ch) == "Cs" for ch in value):
        # A lone surrogate (JSON admits "\ud800") is not text: it cannot be encoded.
        raise InvalidCommentText(f"{name} must be valid Unicode text (it has a lone surrogate)")
    value = unicodedata.normalize("NFC", value)
    if not any(_visible(ch) for ch in value):
        if optional and not value.strip():
            return None
        raise TextMissing(f"{name} must not be empty or invisible")
    if len(value) > maximum:
        raise TextTooLong(f"{name} must be at most {maximum:,} characters")
    if len(value.encode("utf-8")) > max_bytes:
        raise TextTooLong(f"{name} must be at most {max_bytes:,} bytes in UTF-8")
    for ch in value:
        if unicodedata.category(ch) == "Cc" and ch not in "\n\r\t":
            raise InvalidCommentText(f"{name} must not contain control characters")
        if ch in _BIDI_CONTROLS:
            raise InvalidCommentText(f"{name} must not contain bidirectional control characters")
    return value


def clean_body(value: object) -> str:
    """The body as stored (NFC), or InvalidCommentText saying why not."""
    body = _check_text("body", value, BODY_MAX, BODY_MAX_BYTES, optional=False)
    assert body is not None  # not optional: refused rather than None
    return body


def clean_title(value: object) -> str | None:
    """The title as stored (NFC; None for none or a blank one), or InvalidCommentText."""
    return _check_text("title", value, TITLE_MAX, TITLE_MAX_BYTES, optional=True)


def clean_note(value: object) -> str | None:
    """A moderator's or a reporter's note as stored (NFC; None for none or a blank one)."""
    return _check_text("note", value, NOTE_MAX, NOTE_MAX_BYTES, optional=True)


def clean_reply(value: object) -> str:
    """A merchant reply's body as stored (NFC), or InvalidCommentText saying why not."""
    body = _check_text("body", value, REPLY_MAX, REPLY_MAX_BYTES, optional=False)
    assert body is not None  # not optional: refused rather than None
    return body


def clean_author_name(value: object) -> str | None:
    """A display name as stored (NFC; None for none)."""
    return _check_text("author name", value, AUTHOR_MAX, AUTHOR_MAX_BYTES, optional=True)


def check_idempotency_key(value: object) -> None:
    """None, or a key of at most IDEMPOTENCY_KEY_MAX characters without controls."""
    if value is not None:
        _check_token("idempotency key", value, IDEMPOTENCY_KEY_MAX)


def check_identifier(name: str, value: object, maximum: int) -> str:
    """An identifier-like text (an author id, a role, a product id from a token): non-blank,
    at most ``maximum`` characters, and nothing invisible or unencodable in it: no
    control, format (bidi, zero-width) or surrogate characters."""
    _check_token(name, value, maximum)
    assert isinstance(value, str)
    return value


def _check_token(name: str, value: object, maximum: int) -> None:
    """An identifier-like text: non-blank, at most ``maximum`` characters, no controls."""
    if not isinstance(value, str):
        raise InvalidCommentText(f"{name} must be a string")
    if not value.strip():
        raise TextMissing(f"{name} must be a non-empty string")
    if len(value) > maximum:
        raise TextTooLong(f"{name} must be at most {maximum:,} characters")
    if any(unicodedata.category(ch) in ("Cc", "Cf", "Cs") for ch in value):
        raise InvalidCommentText(f"{name} must not contain control, format or surrogate characters")
