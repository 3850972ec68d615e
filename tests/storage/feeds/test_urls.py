"""URL templates: only absolute http(s) URLs with known placeholders outside the host, and
values percent-encoded so that an id never changes a URL's structure."""

from __future__ import annotations

import pytest

from storage.ops.feeds.urls import (
    PRODUCT_PLACEHOLDERS,
    REVIEW_PLACEHOLDERS,
    InvalidTemplate,
    UrlTemplate,
)


def test_a_review_template_expands_with_values_percent_encoded() -> None:
    template = UrlTemplate.parse(
        "https://shop.example/p/{productId}?r={commentId}#review-{commentId}", REVIEW_PLACEHOLDERS
    )
    assert template.names_comment
    url = template.expand(productId="a:b/../c d", commentId="x#y&z")
    assert url == "https://shop.example/p/a%3Ab%2F..%2Fc%20d?r=x%23y%26z#review-x%23y%26z"


def test_a_template_without_the_comment_is_a_page_of_several_reviews() -> None:
    template = UrlTemplate.parse("http://shop.example/p/{productId}", REVIEW_PLACEHOLDERS)
    assert not template.names_comment


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("", "1 to"),
        ("/p/{productId}", "absolute"),
        ("ftp://shop.example/{productId}", "absolute"),
        ("https:///p/{productId}", "absolute"),
        ("https://shop.example/p/{productid}", "unknown placeholder"),
        ("https://shop.example/p/{commentId}", "unknown placeholder"),
        ("https://shop.example/p/{productId!r}", "unknown placeholder"),
        ("https://shop.example/p/{productId:>9}", "unknown placeholder"),
        ("https://shop.example/p/{productId", "braces"),
        ("https://shop.example/p/ {productId}", "ASCII"),
        ("https://shop.example/p/\u00e4/{productId}", "ASCII"),
        ("https://{productId}.shop.example/", "host"),
        ("https://user:pw@shop.example/{productId}", "user name"),
        ("https://shop.example/" + "a" * 1_000, "1 to"),
    ],
)
def test_a_bad_product_template_is_refused_saying_why(text: str, why: str) -> None:
    with pytest.raises(InvalidTemplate, match=why):
        UrlTemplate.parse(text, PRODUCT_PLACEHOLDERS)
