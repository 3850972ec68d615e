"""What a comment keeps of its tagging: spans in its title or body, a round trip through
the item, and a size bound whatever the comment's length."""

from __future__ import annotations

from storage.model.tagging import (
    DROPPED_NAMED_MAX,
    MATCHES_PER_TOPIC,
    RECORD_MAX_BYTES,
    TagRecord,
    tagged_text,
)
from storage.model.topics import Tagger, Taxonomy


def _tagger(keys: list[str]) -> Tagger:
    topics = [{"key": k, "labels": {"en": k}, "words": {"en": [k]}} for k in keys]
    document = {"format": 1, "defaultLanguage": "en", "topics": topics}
    return Tagger.for_taxonomy(Taxonomy.from_document(document))


def test_spans_name_the_title_or_the_body_and_round_trip() -> None:
    tagger = _tagger(["battery", "screen"])
    title, body = "Battery", "The screen.\nA battery"
    tagging = tagger.tag(tagged_text(title, body), "en")
    record = TagRecord.of(tagging, tagger.fingerprint, title)
    assert [(m.topic, m.field, m.start, m.end) for m in record.matches] == [
        ("battery", "title", 0, 7),
        ("battery", "body", 14, 21),
        ("screen", "body", 4, 10),
    ]
    assert body[14:21] == "battery"
    assert TagRecord.from_json(record.fingerprint, record.to_json()) == record
    untitled = TagRecord.of(tagger.tag(body, "en"), tagger.fingerprint, None)
    assert {(m.field, m.start) for m in untitled.matches} == {("body", 4), ("body", 14)}


def test_the_record_is_bounded_whatever_the_comment_says() -> None:
    keys = [f"topic-{n:02d}-{'x' * 28}" for n in range(40)]
    tagger = _tagger(keys)
    body = " ".join(keys * 50)
    record = TagRecord.of(tagger.tag(body, "en"), tagger.fingerprint, None)
    assert len(record.topics) == 4
    assert all(n == 50 for _, n in record.topics)
    assert len(record.matches) == 4 * MATCHES_PER_TOPIC
    assert (len(record.dropped), record.dropped_count) == (DROPPED_NAMED_MAX, 36)
    text = record.to_json()
    assert len(text.encode()) <= RECORD_MAX_BYTES
    assert TagRecord.from_json(record.fingerprint, text) == record
