"""URL templates for the pages a feed links to: ``https://shop.example/p/{productId}#r-{commentId}``.

A template is checked once, when it is made: an absolute ``http``/``https`` URL with a
host, ASCII characters that may stand in a URL, and no placeholder but the ones its use
allows (``{productId}`` and ``{commentId}`` for a review's page, ``{productId}`` for a
product's). Values are percent-encoded as they are put in (every character outside RFC
3986's unreserved ones), so an id never changes the URL's structure.
"""

from __future__ import annotations

import re
import string
from dataclasses import dataclass
from urllib.parse import quote, urlsplit

from storage.base.errors import InvalidInput

PRODUCT_ID = "productId"
COMMENT_ID = "commentId"
REVIEW_PLACEHOLDERS = frozenset({PRODUCT_ID, COMMENT_ID})
PRODUCT_PLACEHOLDERS = frozenset({PRODUCT_ID})
TEMPLATE_MAX = 1_000  # characters; expanded URLs stay under Google's 2,000 for a link
# RFC 3986's characters: unreserved, reserved, and '%' for escapes (braces are placeholders).
_URL_TEXT = re.compile(r"[A-Za-z0-9\-._~:/?#\[\]@!$&'()*+,;=%]*")


class InvalidTemplate(InvalidInput):
    """A URL template that cannot make valid URLs (the message says why)."""


@dataclass(frozen=True, slots=True)
class UrlTemplate:
    """A checked template; ``expand`` fills it in."""

    text: str
    placeholders: frozenset[str]

    @classmethod
    def parse(cls, text: str, allowed: frozenset[str]) -> UrlTemplate:
        """The template ``text``, or ``InvalidTemplate`` saying what is wrong with it."""
        if not text or len(text) > TEMPLATE_MAX:
            raise InvalidTemplate(f"a URL template is 1 to {TEMPLATE_MAX:,} characters")
        used: set[str] = set()
        literal: list[str] = []
        try:
            parts = list(string.Formatter().parse(text))
        except ValueError as exc:
            raise InvalidTemplate(f"unbalanced braces in {text!r}: {exc}") from exc
        for before, name, spec, conversion in parts:
            literal.append(before)
            if name is None:
                continue
            if name not in allowed or spec or conversion:
                known = ", ".join("{" + n + "}" for n in sorted(allowed))
                raise InvalidTemplate(f"unknown placeholder {{{name}}} (known: {known})")
            used.add(name)
            literal.append("x")  # a stand-in value for the checks below
        sample = "".join(literal)
        if not _URL_TEXT.fullmatch(sample):
            raise InvalidTemplate(
                "a URL template holds ASCII URL characters only (percent-encode the rest)"
            )
        parts_ = urlsplit(sample)
        if parts_.scheme not in ("http", "https") or not parts_.hostname:
            raise InvalidTemplate(f"{text!r} is not an absolute http:// or https:// URL")
        if parts_.username is not None or parts_.password is not None:
            raise InvalidTemplate("a page's URL holds no user name or password")
        if "{" in urlsplit(text).netloc:
            raise InvalidTemplate(
                "placeholders may not stand in the host: an id must not pick the site"
            )
        return cls(text, frozenset(used))

    @property
    def names_comment(self) -> bool:
        """Whether each review gets a page of its own (Google's ``singleton``)."""
        return COMMENT_ID in self.placeholders

    def expand(self, **values: str) -> str:
        """The URL with each placeholder replaced by its value, percent-encoded."""
        return self.text.format_map({k: quote(v, safe="") for k, v in values.items()})
