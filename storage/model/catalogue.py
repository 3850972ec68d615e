"""The catalogue file: the shop's products, the group each belongs to, and the identifiers
the product ratings feed names them by.

The format is JSON Lines (https://jsonlines.org): UTF-8 text, one product per line, each
line one JSON object::

    {"productId": "shoe-red-42", "groupId": "shoe", "gtin": "4006381333931", "brand": "Acme"}
    {"productId": "shoe-blue-42", "groupId": "shoe", "sku": "8812-B42", "name": "Shoe, blue, 42"}
    {"productId": "mug", "mpn": "MG-1", "url": "https://shop.example/p/mug"}

=============  =========  ============================================================
field          required   what it holds
=============  =========  ============================================================
``productId``  yes        the product's id, by the rule of every product id
                          (``rules.validate_product_id``: 1-128 letters, digits and
                          ``. _ : -``, starting with a letter or digit)
``groupId``    no         the group the product belongs to, by the same rule; a product
                          belongs to at most one group, so it has one line, no more
``gtin``       no         its GTIN: 8, 12, 13 or 14 digits (GTIN-8, UPC-A, EAN-13,
                          GTIN-14) whose last is GS1's check digit, as a string
                          (a number would lose a UPC's leading zero)
``mpn``        no         the manufacturer's part number, at most 70 characters
``sku``        no         the shop's own stock keeping unit, at most 70 characters
``brand``      no         the brand, at most 70 characters
``name``       no         the product's name, at most 150 characters
``url``        no         the product's page: an absolute ``http`` or ``https`` URL of
                          at most 2,000 characters, ASCII (percent-encode the rest),
                          with a host and without a user name or password
=============  =========  ============================================================

A line states everything about its product: a field left out, or null, means the product
has none (a product without ``groupId`` belongs to no group). Texts (``mpn``, ``sku``,
``brand``, ``name``) are stored in NFC without the spaces around them, and may hold no
control or bidirectional control characters and no line break. Fields beyond these are
refused, so that a misspelt ``"GTIN"`` is not silently lost. Blank lines are skipped, a
line may end with ``\\n`` or ``\\r\\n``, and a byte order mark before the first line is
ignored. Lines are numbered from 1, blank ones included, as an editor numbers them.

``parse_catalogue`` reads the lines one at a time and yields each product or, for a bad
line, a ``LineProblem`` with the line's number and every problem in it, then goes on: a
file with a bad line still gives its good ones. A ``productId`` on an earlier line makes a
later line with it bad (DUPLICATE_PRODUCT), whatever else is wrong with either. Nothing
holds the file: a line is at most ``LINE_MAX`` characters (``split_lines`` cuts longer
ones while reading, without holding them), and the ids seen so far are held as 16-byte
digests, for at most ``PRODUCTS_MAX`` products.

Pure: it reads strings, not files.
"""

from __future__ import annotations

import enum
import hashlib
import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from storage.base.errors import InvalidCommentText, InvalidProductId, TextMissing, TextTooLong
from storage.model import problems
from storage.model.problems import Collector, Path, Problem, expect_object
from storage.model.rules import _check_text, validate_product_id

# Field limits in characters. mpn and brand follow Google Merchant Center's limits for
# them (70), sku the same; name its limit for a title (150), url its limit for a link
# (2,000). Bytes are bounded at four per character, the most UTF-8 takes.
MPN_MAX = 70
SKU_MAX = 70
BRAND_MAX = 70
NAME_MAX = 150
URL_MAX = 2_000
# A line's characters, its ending aside (LINE_TOO_LONG): every field at its longest, as a
# JSON encoder writes it with every non-ASCII character escaped (an astral character as
# two \uXXXX escapes, 12 characters), is about 6,700; this leaves room for spaces.
LINE_MAX = 8_192
# Products per file (TOO_MANY_PRODUCTS): the duplicate check holds a 16-byte digest of
# each id seen, about 100 bytes each with the set's own, so at most about 100 MB for the
# largest file, however long its ids; a larger catalogue is split into files.
PRODUCTS_MAX = 1_000_000

_GTIN = re.compile(r"[0-9]{8}|[0-9]{12,14}")
# RFC 3986's characters: unreserved, reserved, and '%' for escapes.
_URL = re.compile(r"[A-Za-z0-9\-._~:/?#\[\]@!$&'()*+,;=%]+")
_LINE_BREAKS = frozenset("\n\r\t\v\f\x85\u2028\u2029")


class Code(enum.StrEnum):
    """Why a catalogue line was refused. Stable."""

    LINE_TOO_LONG = "LINE_TOO_LONG"
    NOT_JSON = "NOT_JSON"
    SHAPE = problems.SHAPE
    UNKNOWN_FIELD = problems.UNKNOWN_FIELD
    DUPLICATE_FIELD = "DUPLICATE_FIELD"  # the object names a field twice
    REQUIRED = problems.REQUIRED
    ID_INVALID = "ID_INVALID"
    DUPLICATE_PRODUCT = "DUPLICATE_PRODUCT"
    TOO_MANY_PRODUCTS = "TOO_MANY_PRODUCTS"
    GTIN_INVALID = "GTIN_INVALID"  # not 8, 12, 13 or 14 digits
    GTIN_CHECK_DIGIT = "GTIN_CHECK_DIGIT"
    TEXT_EMPTY = "TEXT_EMPTY"
    TEXT_TOO_LONG = "TEXT_TOO_LONG"
    TEXT_INVALID = "TEXT_INVALID"
    URL_INVALID = "URL_INVALID"


@dataclass(frozen=True, slots=True)
class CatalogueLine:
    """One product of the file, as it stated it (None: it has none)."""

    line: int
    product_id: str
    group_id: str | None = None
    gtin: str | None = None
    mpn: str | None = None
    sku: str | None = None
    brand: str | None = None
    name: str | None = None
    url: str | None = None


@dataclass(frozen=True, slots=True)
class LineProblem:
    """A line refused, with every problem found in it (paths name the fields)."""

    line: int
    problems: tuple[Problem, ...]

    @property
    def reason(self) -> str:
        return "; ".join(f"{p.dotted}: {p.message}" if p.path else p.message for p in self.problems)

    @property
    def codes(self) -> tuple[str, ...]:
        return tuple(p.code for p in self.problems)


def gtin_valid(gtin: str) -> bool:
    """Whether ``gtin`` is 8, 12, 13 or 14 ASCII digits ending with GS1's check digit:
    from the right, the digits before it weigh 3, 1, 3, 1...; the check digit brings the
    weighted sum up to a multiple of 10."""
    if not _GTIN.fullmatch(gtin):
        return False
    body = [int(d) for d in reversed(gtin[:-1])]
    total = sum(d * (3 if i % 2 == 0 else 1) for i, d in enumerate(body))
    return (10 - total % 10) % 10 == int(gtin[-1])


def split_lines(chunks: Iterable[str]) -> Iterator[str]:
    """The lines of a text read in chunks (``file.read(65536)``), each with its ending.

    A line longer than ``parse_catalogue`` takes is cut after ``LINE_MAX + 3`` characters
    (which it refuses as too long) and the rest of it skipped unread into memory: at most
    that much of one line is held, however long the line or the file."""
    cut = LINE_MAX + 3
    held: list[str] = []
    size = 0
    for chunk in chunks:
        start = 0
        while start < len(chunk):
            end = chunk.find("\n", start)
            stop = len(chunk) if end < 0 else end + 1
            if size < cut:  # past the cut, the rest of the line is not even sliced
                piece = chunk[start : min(stop, start + cut - size)]
                held.append(piece)
                size += len(piece)
            if end < 0:
                break
            yield "".join(held)
            held, size = [], 0
            start = stop
    if held:
        yield "".join(held)


def parse_catalogue(lines: Iterable[str]) -> Iterator[CatalogueLine | LineProblem]:
    """Each product of the file in order, or a LineProblem for a bad line; reads one line
    per result (blank lines aside), never ahead."""
    seen: set[bytes] = set()
    for number, raw in enumerate(lines, start=1):
        text = raw
        if number == 1:
            text = text.removeprefix("\ufeff")
        text = text.removesuffix("\n").removesuffix("\r")
        if len(text) > LINE_MAX:
            yield _too_long(number)
        elif text.strip():
            yield _line(number, text, seen)


def _too_long(number: int) -> LineProblem:
    message = f"a line is at most {LINE_MAX:,} characters"
    return LineProblem(number, (Problem((), Code.LINE_TOO_LONG, message),))


_FIELDS = ("productId", "groupId", "gtin", "mpn", "sku", "brand", "name", "url")


class _Object(list[tuple[str, Any]]):
    """A JSON object's fields in order, repeats kept: what the decoder gives for ``{}``."""


def _line(number: int, text: str, seen: set[bytes]) -> CatalogueLine | LineProblem:
    out = Collector()
    try:
        decoded = json.loads(text, object_pairs_hook=_Object, parse_constant=_no_constant)
    except (ValueError, RecursionError) as exc:
        why = f": {exc.msg} at column {exc.colno}" if isinstance(exc, json.JSONDecodeError) else ""
        out.add((), Code.NOT_JSON, f"not JSON{why}")
        return LineProblem(number, out.problems)
    if not isinstance(decoded, _Object):
        out.add((), Code.SHAPE, "must be a JSON object")
        return LineProblem(number, out.problems)
    fields: dict[str, Any] = {}
    for field, value in decoded:
        if field in fields:
            out.add((field,), Code.DUPLICATE_FIELD, f"{field!r} is given twice")
        fields[field] = value
    expect_object(fields, (), _FIELDS, out)
    product_id = _product_id(fields.get("productId"), seen, out)
    group_id = _id(fields.get("groupId"), ("groupId",), out)
    gtin = _gtin(fields.get("gtin"), out)
    texts = {
        name: _text(fields.get(name), (name,), maximum, out)
        for name, maximum in (("mpn", MPN_MAX), ("sku", SKU_MAX), ("brand", BRAND_MAX))
    }
    name = _text(fields.get("name"), ("name",), NAME_MAX, out)
    url = _url(fields.get("url"), out)
    if out or product_id is None:
        return LineProblem(number, out.problems)
    return CatalogueLine(number, product_id, group_id, gtin, name=name, url=url, **texts)


def _no_constant(name: str) -> None:
    raise ValueError(f"{name} is not JSON")


def _product_id(raw: object, seen: set[bytes], out: Collector) -> str | None:
    if raw is None:
        out.add(("productId",), Code.REQUIRED, "the product's id is required", TextMissing)
        return None
    product_id = _id(raw, ("productId",), out)
    if product_id is None:
        return None
    digest = hashlib.blake2b(product_id.encode(), digest_size=16).digest()
    if digest in seen:
        message = f"{product_id!r} is on an earlier line: a product has one line"
        out.add(("productId",), Code.DUPLICATE_PRODUCT, message)
        return None
    if len(seen) >= PRODUCTS_MAX:
        message = f"a file holds at most {PRODUCTS_MAX:,} products: split it"
        out.add(("productId",), Code.TOO_MANY_PRODUCTS, message)
        return None
    seen.add(digest)
    return product_id


def _id(raw: object, path: Path, out: Collector) -> str | None:
    if raw is None:
        return None
    try:
        return validate_product_id(raw)
    except InvalidProductId as exc:
        out.add(path, Code.ID_INVALID, str(exc) if isinstance(raw, str) else "must be a string")
        return None


def _gtin(raw: object, out: Collector) -> str | None:
    if raw is None:
        return None
    if not isinstance(raw, str):
        out.add(("gtin",), Code.SHAPE, "must be a string of digits (a number loses zeros)")
    elif not _GTIN.fullmatch(raw):
        out.add(("gtin",), Code.GTIN_INVALID, "a GTIN is 8, 12, 13 or 14 digits")
    elif not gtin_valid(raw):
        out.add(("gtin",), Code.GTIN_CHECK_DIGIT, "the last digit is not the GTIN's check digit")
    else:
        return raw
    return None


def _text(raw: object, path: Path, maximum: int, out: Collector) -> str | None:
    if raw is None:
        return None
    if not isinstance(raw, str):
        out.add(path, Code.SHAPE, "must be a string")
        return None
    what = str(path[0])
    try:
        text = _check_text(what, raw.strip(), maximum, maximum * 4, optional=False)
    except TextTooLong:
        out.add(path, Code.TEXT_TOO_LONG, f"at most {maximum} characters", TextTooLong)
        return None
    except TextMissing:
        out.add(path, Code.TEXT_EMPTY, "must not be blank (leave it out)", TextMissing)
        return None
    except InvalidCommentText as exc:
        out.add(path, Code.TEXT_INVALID, str(exc))
        return None
    assert text is not None
    if any(ch in _LINE_BREAKS for ch in text):
        out.add(path, Code.TEXT_INVALID, f"{what} must be one line, without tabs")
        return None
    return text


def _url(raw: object, out: Collector) -> str | None:
    if raw is None:
        return None
    path: Path = ("url",)
    if not isinstance(raw, str):
        out.add(path, Code.SHAPE, "must be a string")
        return None
    if len(raw) > URL_MAX:
        out.add(path, Code.TEXT_TOO_LONG, f"at most {URL_MAX:,} characters", TextTooLong)
        return None
    if not _URL.fullmatch(raw):
        message = "an ASCII URL without spaces (percent-encode other characters)"
        out.add(path, Code.URL_INVALID, message)
        return None
    parts = urlsplit(raw)
    try:
        parts.port  # noqa: B018 (read for its check: a port that is not a number raises)
    except ValueError:
        out.add(path, Code.URL_INVALID, "the port is not a number from 0 to 65535")
        return None
    if parts.scheme not in ("http", "https"):
        out.add(path, Code.URL_INVALID, "an absolute http:// or https:// URL")
    elif not parts.hostname:
        out.add(path, Code.URL_INVALID, "the URL names no host")
    elif parts.username is not None or parts.password is not None:
        out.add(path, Code.URL_INVALID, "a user name or password has no place in a page's URL")
    else:
        return raw
    return None
