"""What a comment keeps of its topic tagging: the fingerprint of the taxonomy it was tagged
with, and why it has its topics, compactly, for moderators.

A comment's topics are its ``t:`` facet values (``storage.model.facets``); this record says
where they came from. Its ``fingerprint`` is the tagger's (``topics.Tagger.fingerprint``):
a comment whose fingerprint is not the stored taxonomy's is re-tagged by the backfill
(``storage.ops.retag``). The explanation keeps, per topic tagged, how many times it matched
and the first ``MATCHES_PER_TOPIC`` matches (the taxonomy's word, its list's language, and
the span of the title or body it matched), and names the topics dropped past the maximum:
a few hundred bytes, whatever the comment's length (``RECORD_MAX_BYTES``).

The text tagged is the title and the body, a line break between them (a phrase never
matches across it, so a span lies in one of the two).

Pure: no I/O.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from storage.model.topics import TOPICS_PER_COMMENT_MAX, Method, Tagging

# Matches kept per topic: enough to show a moderator why, never the whole comment's.
MATCHES_PER_TOPIC = 3
# Topics named as dropped (the rest are only counted).
DROPPED_NAMED_MAX = 8
# The explanation as stored, at most (UTF-8): topic keys and words are at most 40
# characters, a language tag 35; 4 topics x 3 matches and 8 dropped keys stay far below.
RECORD_MAX_BYTES = 4 * 1024

TITLE = "title"
BODY = "body"


def tagged_text(title: str | None, body: str) -> str:
    """The text a comment is tagged by: its title, a line break, its body."""
    return body if not title else f"{title}\n{body}"


@dataclass(frozen=True, slots=True, order=True)
class TopicMatch:
    """One match as moderators see it: the topic, the taxonomy's word (in its list's
    language), and where in the title or body (``text[start:end]``)."""

    topic: str
    word: str
    language: str
    field: str  # TITLE or BODY
    start: int
    end: int


@dataclass(frozen=True, slots=True)
class TagRecord:
    """How a comment was tagged: by which taxonomy (``fingerprint``) and why."""

    fingerprint: str
    method: Method
    # The topics tagged, most matched first (as the tagger ranks them), and how many
    # times each matched.
    topics: tuple[tuple[str, int], ...] = ()
    # At most MATCHES_PER_TOPIC per topic, by topic as ranked, then in text order.
    matches: tuple[TopicMatch, ...] = ()
    dropped: tuple[str, ...] = ()  # at most DROPPED_NAMED_MAX, in rank order
    dropped_count: int = 0  # topics dropped in all

    def __post_init__(self) -> None:
        if len(self.topics) > TOPICS_PER_COMMENT_MAX:
            raise ValueError(f"a comment has at most {TOPICS_PER_COMMENT_MAX} topics")

    @property
    def topic_keys(self) -> tuple[str, ...]:
        return tuple(key for key, _ in self.topics)

    @classmethod
    def of(cls, tagging: Tagging, fingerprint: str, title: str | None) -> TagRecord:
        """The record of ``tagging``, made on ``tagged_text(title, ...)``."""
        counts: dict[str, int] = {}
        kept: list[TopicMatch] = []
        offset = len(title) + 1 if title else 0
        for match in tagging.matches:
            counts[match.topic] = counts.get(match.topic, 0) + 1
            if counts[match.topic] > MATCHES_PER_TOPIC:
                continue
            start, end = match.span
            field, start, end = (
                (TITLE, start, end) if start < offset else (BODY, start - offset, end - offset)
            )
            kept.append(TopicMatch(match.topic, match.word, match.language, field, start, end))
        rank = {key: n for n, key in enumerate(tagging.topics)}
        kept.sort(key=lambda m: (rank[m.topic], m.field != TITLE, m.start))
        return cls(
            fingerprint=fingerprint,
            method=tagging.method,
            topics=tuple((key, counts.get(key, 0)) for key in tagging.topics),
            matches=tuple(kept),
            dropped=tagging.dropped[:DROPPED_NAMED_MAX],
            dropped_count=len(tagging.dropped),
        )

    def to_json(self) -> str:
        """The explanation, compactly (the fingerprint is stored beside it)."""
        by_topic: dict[str, list[list[object]]] = {}
        for m in self.matches:
            by_topic.setdefault(m.topic, []).append(
                [m.word, m.language, m.field[0], m.start, m.end]
            )
        data: dict[str, object] = {
            "m": self.method.value,
            "t": [[key, n, by_topic.get(key, [])] for key, n in self.topics],
        }
        if self.dropped_count:
            data["d"] = [list(self.dropped), self.dropped_count]
        text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
        if len(text.encode()) > RECORD_MAX_BYTES:  # the bounds above make it impossible
            raise ValueError("a tagging record over its bound")
        return text

    @classmethod
    def from_json(cls, fingerprint: str, text: str) -> TagRecord:
        """The record ``to_json`` wrote (trusted in shape: this code stored it)."""
        data = json.loads(text)
        fields = {TITLE[0]: TITLE, BODY[0]: BODY}
        matches = tuple(
            TopicMatch(key, word, language, fields[f], start, end)
            for key, _, found in data["t"]
            for word, language, f, start, end in found
        )
        dropped, count = data.get("d", [[], 0])
        return cls(
            fingerprint=fingerprint,
            method=Method(data["m"]),
            topics=tuple((key, int(n)) for key, n, _ in data["t"]),
            matches=matches,
            dropped=tuple(dropped),
            dropped_count=int(count),
        )
