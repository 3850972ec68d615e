"""Topics: the shop's one taxonomy of themes, and the tagger that finds them in comments.

A topic has a stable key (what comments are tagged with and ``facets.topic`` filters by),
labels per language and words and phrases per language. A comment is tagged when it is
written, by stemmed word match (``storage.model.words`` says how a text becomes tokens):
the same text, language and taxonomy give the same tags, in the same order, in every
process, and each tag comes with the words that matched it and where.

The taxonomy document
---------------------
JSON in UTF-8, as stored and as ``comments taxonomy load FILE`` reads it::

    {
      "format": 1,
      "defaultLanguage": "en",
      "topics": [
        {
          "key": "battery-life",
          "labels": {"en": "Battery life", "de": "Akkulaufzeit"},
          "words": {
            "en": ["battery", "battery life", "charge"],
            "de": ["Akku", "Akkulaufzeit"]
          }
        }
      ]
    }

- ``format``: 1, this format.
- ``defaultLanguage``: a language tag. Every topic has a label in it, and a label asked in
  a language the topic has none for is the default language's.
- ``topics``: the shop's order (for display; tagging does not depend on it), keys unique.
- ``key``: lower-case ASCII letters and digits in groups joined by single hyphens.
- ``labels``: language -> what shoppers read.
- ``words``: language -> words and phrases, at least one in all; a topic matches a
  comment when one of them does. Inflected forms need not be listed (the stemmer
  matches "batteries" to "battery"), and an entry that stems like another of the same
  list is refused, so each match names one entry.

Languages are BCP 47 tags, checked and stored in lower case like a comment's. No other
field is allowed: a misspelt one is an error, not ignored. Errors raise ``InvalidInput``
(``TextMissing``, ``TextTooLong``, ``InvalidLanguage`` where they fit) whose message
starts with the path of what is wrong: ``topics[3].words.de[2]: ...``.

Tagging
-------
1. The comment's language picks the word lists: those of its tag and of each shorter
   prefix (a ``de-ch`` comment uses ``de-ch``'s and ``de``'s; an entry in both counts as
   the more specific list's). A comment in a language the taxonomy has no words for is
   not tagged: matching another language's words (the default's) would tag by chance
   ("gift" is poison in German, "also" is "so"), and tags must be explainable by what the
   shop configured for that language. Adding words for a language turns it on.
2. Matching is leftmost-longest over the comment's tokens: at each token the longest
   entry (of any topic) whose stems equal the tokens' stems, joined, wins, and the tokens
   it covers match nothing else. So "battery life" makes one match, not also "battery";
   "screen protector" does not tag ``screen``. Topics that list the same entry all match.
3. The tags are the matched topics, most matches first, then by key, at most
   ``TOPICS_PER_COMMENT_MAX``; those over it are named in ``Tagging.dropped``.

How each language is treated (by the primary subtag of the comment's language):

=====================================================  =================================
language                                               words match by
=====================================================  =================================
ar ca cs da de el en eo es et eu fa fi fr ga hi hu hy  Snowball stem (``words.SNOWBALL``)
id it lt nb ne nl no pl pt ro ru sr st sv ta tr yi
zh ja th lo km my, and any text in their scripts       each character a token, exact: a
(Han, Kana, Thai, Lao, Khmer, Myanmar)                 substring match of the entry
any other (ko, uk, he, vi, bg, ...)                    exact token, case-folded, NFKC
no words configured for the tag or a prefix of it      not tagged
=====================================================  =================================

Korean attaches particles to words (배터리가), so exact matching misses those forms: list
the common ones. ``Tagger.fingerprint`` names what tags depend on (the stemmers' version,
the tagging rules, every topic's words), so a backfill can tell a stale tagging.
"""

from __future__ import annotations

import enum
import hashlib
import json
import re
import sys
import unicodedata
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from storage.base.errors import InvalidInput, InvalidLanguage, TextMissing, TextTooLong
from storage.model import rules
from storage.model.facets import MAX_TOPICS
from storage.model.words import STEMMER, Token, analyze, analyze_all, stemmer_name

FORMAT = 1
# The tagging rules' version with the stemmers': raise the number when a change here would
# tag any comment otherwise, so that a re-tag backfill follows.
TAGGER_VERSION = f"topics-1/{STEMMER}"

# At most this many tags on one comment: the facets' share for topics
# (storage.model.facets.MAX_TOPICS). Each tag is a facet value, and every value moves an
# entry and a counter item per scope in the comment's transaction, which DynamoDB bounds at
# 100 actions: the facets' budget says how the values divide. Few reviews speak of more
# themes than that; the most mentioned are the ones kept.
TOPICS_PER_COMMENT_MAX = MAX_TOPICS
# Topics in the taxonomy. The "customers mention" summary reads a counter per topic in
# scope, two batches of 100 keys at most; every process holds the compiled words; and a
# list a moderator can still review.
TOPICS_MAX = 200
# Languages in the taxonomy (labels and words together): Snowball covers 34.
LANGUAGES_MAX = 40
# Words and phrases per topic and language: inflections come from the stemmer, so a list
# holds synonyms and phrasings only.
WORDS_PER_LANGUAGE_MAX = 30
# Words and phrases in the whole taxonomy: what every process compiles and keeps.
WORDS_MAX = 5_000
# Words in one phrase (a run of characters of a script written without spaces counts as
# one) and characters in one entry. With one token per character of those scripts, an
# entry is at most WORD_CHARS_MAX tokens: from a token, the tagger looks at most that many
# tokens ahead (and one more to find none goes on), so a comment costs it at most
# (its tokens) x (WORD_CHARS_MAX + 1) lookups, PHRASE_WORDS_MAX + 1 in spaced scripts,
# and far fewer in practice: it stops at the first token no entry continues with.
PHRASE_WORDS_MAX = 4
WORD_CHARS_MAX = 40
# A label is a chip or a heading ("Battery life"); room for long compounds.
LABEL_MAX = 60
# Keys go into item keys and GraphQL arguments: no delimiter (# / =) can appear, and one
# spelling per topic (lower case), so a key never needs escaping and stays stable.
TOPIC_KEY_MAX = 40
TOPIC_KEY = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
# The document in canonical JSON (``to_json``): fits one DynamoDB item (400 KB) with room
# to spare, so it can be read by one GetItem and replaced by one conditional PutItem, and
# every process agrees on one version of it.
TAXONOMY_MAX_BYTES = 256 * 1024

_BIDI_CONTROLS = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Topic:
    """One theme. Its ``Taxonomy`` checks it and keeps it normalised: languages in lower
    case and sorted, labels and entries in NFC, entries in the order given."""

    key: str
    labels: tuple[tuple[str, str], ...]  # (language, label)
    words: tuple[tuple[str, tuple[str, ...]], ...]  # (language, entries)

    def label(self, language: str) -> str | None:
        """The label for ``language`` (a lower-case tag) or a prefix of it, or None."""
        labels = dict(self.labels)
        return next((labels[tag] for tag in _prefixes(language) if tag in labels), None)


@dataclass(frozen=True, slots=True)
class Taxonomy:
    """A shop's topics; valid once it exists (``InvalidInput`` otherwise, naming the path)."""

    default_language: str
    topics: tuple[Topic, ...]
    # The stems of each entry, by topic and language, as checking found them (for the Tagger).
    _stems: dict[tuple[str, str], list[tuple[str, ...]]] = field(
        init=False, repr=False, compare=False
    )

    def __post_init__(self) -> None:
        default = _language("defaultLanguage", self.default_language)
        object.__setattr__(self, "default_language", default)
        # Counts first: nothing is analysed in a taxonomy over its limits.
        _count("topics", len(self.topics), TOPICS_MAX, "topics")
        total = sum(len(entries) for topic in self.topics for _, entries in topic.words)
        _count("topics", total, WORDS_MAX, "words and phrases in all")
        stems: dict[tuple[str, str], list[tuple[str, ...]]] = {}
        topics = tuple(_topic(f"topics[{i}]", t, stems) for i, t in enumerate(self.topics))
        first: dict[str, int] = {}
        languages: set[str] = set()
        for i, topic in enumerate(topics):
            if topic.key in first:
                raise InvalidInput(
                    f"topics[{i}].key: {topic.key!r} is the key of topics[{first[topic.key]}] too"
                )
            first[topic.key] = i
            if default not in dict(topic.labels):
                raise TextMissing(
                    f"topics[{i}].labels.{default}: the default language's is required"
                )
            languages.update(language for language, _ in topic.labels)
            languages.update(language for language, _ in topic.words)
        _count("topics", len(languages), LANGUAGES_MAX, "languages in all")
        object.__setattr__(self, "topics", topics)
        object.__setattr__(self, "_stems", stems)
        size = len(self.to_json().encode())
        if size > TAXONOMY_MAX_BYTES:
            raise InvalidInput(
                f"the taxonomy: {size:,} bytes as JSON; at most {TAXONOMY_MAX_BYTES:,}"
            )

    @classmethod
    def from_json(cls, data: str | bytes) -> Taxonomy:
        """The taxonomy a document holds (the module docstring's format), or InvalidInput."""
        size = len(data) if isinstance(data, bytes) else len(data.encode("utf-8", "surrogatepass"))
        if size > TAXONOMY_MAX_BYTES:
            raise InvalidInput(f"the taxonomy: {size:,} bytes; at most {TAXONOMY_MAX_BYTES:,}")
        try:
            # UTF-8 only (json.loads would take UTF-16 and UTF-32 bytes too), a BOM allowed.
            text = data.decode("utf-8-sig") if isinstance(data, bytes) else data
            document = json.loads(text, object_pairs_hook=_unique)
        except UnicodeDecodeError as exc:
            raise InvalidInput(f"the taxonomy is not UTF-8 (byte {exc.start})") from None
        except json.JSONDecodeError as exc:
            where = f"line {exc.lineno} column {exc.colno}"
            raise InvalidInput(f"the taxonomy is not JSON: {exc.msg} at {where}") from None
        except RecursionError:
            raise InvalidInput("the taxonomy is nested too deeply to be this format") from None
        return cls.from_document(document)

    @classmethod
    def from_document(cls, document: object) -> Taxonomy:
        """The taxonomy a parsed document holds (dicts, lists, strings), or InvalidInput."""
        doc = _object("", document, ("format", "defaultLanguage", "topics"))
        if type(doc["format"]) is not int or doc["format"] != FORMAT:
            raise InvalidInput(f"format: must be {FORMAT}")
        default = _string("defaultLanguage", doc["defaultLanguage"])
        topics = _array("topics", doc["topics"], TOPICS_MAX, "topics")
        return cls(default, tuple(_raw_topic(f"topics[{i}]", t) for i, t in enumerate(topics)))

    def to_document(self) -> dict[str, Any]:
        """The document ``from_document`` reads back as this taxonomy."""
        return {
            "format": FORMAT,
            "defaultLanguage": self.default_language,
            "topics": [
                {
                    "key": topic.key,
                    "labels": dict(topic.labels),
                    "words": {language: list(entries) for language, entries in topic.words},
                }
                for topic in self.topics
            ],
        }

    def to_json(self) -> str:
        """The document in canonical JSON: one taxonomy, one text."""
        document = self.to_document()
        return json.dumps(document, ensure_ascii=False, separators=(",", ":"), sort_keys=True)

    def topic(self, key: str) -> Topic | None:
        return next((topic for topic in self.topics if topic.key == key), None)

    def label(self, key: str, language: str | None = None) -> str | None:
        """The topic's label in ``language`` (or a prefix of it), else in the default
        language; None when the taxonomy has no such topic (any more)."""
        topic = self.topic(key)
        if topic is None:
            return None
        found = topic.label(rules.validate_language(language)) if language is not None else None
        return found or dict(topic.labels)[self.default_language]


class Method(enum.Enum):
    """How a comment's words were matched (the module docstring's table)."""

    STEMMED = "STEMMED"  # Snowball stems (characters of scripts without spaces: exact)
    EXACT = "EXACT"  # normalised tokens: no stemmer for the language
    UNTAGGED = "UNTAGGED"  # the taxonomy has no words for the language


@dataclass(frozen=True, slots=True)
class Match:
    """One entry of a topic found in a comment: what moderators see."""

    topic: str  # the topic's key
    word: str  # the entry as the taxonomy has it
    language: str  # the word list it is in
    tokens: tuple[int, int]  # positions in the comment's tokens: [first, last + 1)
    span: tuple[int, int]  # in the text tagged: text[span[0]:span[1]] is what matched


@dataclass(frozen=True, slots=True)
class Tagging:
    """A comment's tags and why."""

    topics: tuple[str, ...]  # most matches first, then by key; at most TOPICS_PER_COMMENT_MAX
    matches: tuple[Match, ...]  # of those topics, in text order (then by key)
    dropped: tuple[str, ...]  # topics that matched too but ranked past the maximum
    method: Method
    stemmer: str | None  # the Snowball algorithm, when there is one
    steps: int  # word-list lookups made: the tagging's cost, linear in the text


UNTAGGED = Tagging((), (), (), Method.UNTAGGED, None, 0)


class _Node:
    """A trie of the entries' stems: the entries that end here, and the stems that go on."""

    __slots__ = ("ends", "next")

    def __init__(self) -> None:
        self.next: dict[str, _Node] = {}
        self.ends: dict[str, tuple[str, str]] = {}  # topic key -> (entry, its list's language)


class Tagger:
    """A taxonomy's entries compiled per language (made by ``for_taxonomy``). Not changed
    after; one may serve every request and thread, as ``tag`` shares nothing between calls."""

    def __init__(self, taxonomy: Taxonomy, tries: Mapping[str, _Node]) -> None:
        self.taxonomy = taxonomy
        self.fingerprint = _fingerprint(taxonomy)
        self._tries = dict(tries)

    @classmethod
    def for_taxonomy(cls, taxonomy: Taxonomy) -> Tagger:
        """The tagger of ``taxonomy``, its entries' stems in a trie per language."""
        lists: dict[str, list[tuple[str, str, tuple[str, ...]]]] = {}
        for topic in taxonomy.topics:
            for language, entries in topic.words:
                paths = taxonomy._stems[topic.key, language]
                found = zip(entries, paths, strict=True)
                lists.setdefault(language, []).extend((topic.key, e, p) for e, p in found)
        tries: dict[str, _Node] = {}
        for language in lists:
            root = tries[language] = _Node()
            # The most specific list first: an entry in de-ch's and de's is de-ch's.
            for tag in _prefixes(language):
                for key, entry, stems in lists.get(tag, ()):
                    node = root
                    for stem in stems:
                        node = node.next.setdefault(stem, _Node())
                    node.ends.setdefault(key, (entry, tag))
        return cls(taxonomy, tries)

    def footprint(self) -> int:
        """The bytes it holds in memory, measured (``sys.getsizeof``): every trie node with
        its maps and strings, and the taxonomy's objects (charged four times its text)."""
        total = 4 * len(self.taxonomy.to_json().encode())
        stack = list(self._tries.values())
        while stack:
            node = stack.pop()
            total += sys.getsizeof(node) + sys.getsizeof(node.next) + sys.getsizeof(node.ends)
            total += sum(sys.getsizeof(stem) for stem in node.next)
            total += sum(sys.getsizeof(key) + sys.getsizeof(end) for key, end in node.ends.items())
            stack.extend(node.next.values())
        return total

    def tag(self, text: str, language: str) -> Tagging:
        """The topics ``text`` mentions, read in ``language``: at most
        TOPICS_PER_COMMENT_MAX, with their matches, in time linear in the text."""
        language = rules.validate_language(language)
        root = next((self._tries[tag] for tag in _prefixes(language) if tag in self._tries), None)
        if root is None:
            return UNTAGGED
        matches, steps = _leftmost_longest(root, analyze(text, language))
        counts: dict[str, int] = {}
        for match in matches:
            counts[match.topic] = counts.get(match.topic, 0) + 1
        ranked = sorted(counts, key=lambda key: (-counts[key], key))
        kept = ranked[:TOPICS_PER_COMMENT_MAX]
        stemmer = stemmer_name(language)
        return Tagging(
            topics=tuple(kept),
            matches=tuple(match for match in matches if match.topic in kept),
            dropped=tuple(ranked[TOPICS_PER_COMMENT_MAX:]),
            method=Method.STEMMED if stemmer else Method.EXACT,
            stemmer=stemmer,
            steps=steps,
        )


def _leftmost_longest(root: _Node, tokens: tuple[Token, ...]) -> tuple[list[Match], int]:
    """The matches in text order, and the lookups it took: a token starts at most one walk
    down the trie, which is at most WORD_CHARS_MAX deep."""
    matches: list[Match] = []
    steps = i = 0
    while i < len(tokens):
        node, j, longest = root, i, None
        while j < len(tokens) and (j == i or tokens[j].joined):
            stem = tokens[j].stem
            steps += 1
            child = node.next.get(stem) if stem is not None else None
            if child is None:
                break
            node, j = child, j + 1
            if node.ends:
                longest = (j, node)
        if longest is None:
            i += 1
            continue
        end, found = longest
        span = (tokens[i].span[0], tokens[end - 1].span[1])
        for key in sorted(found.ends):
            entry, tag = found.ends[key]
            matches.append(Match(key, entry, tag, (i, end), span))
        i = end
    return matches, steps


def _prefixes(tag: str) -> Iterator[str]:
    """A tag and its shorter prefixes, most specific first (RFC 4647 lookup): ``de-ch-1996``,
    ``de-ch``, ``de``. A prefix never ends in a singleton (the ``x`` of ``en-x-twain``)."""
    parts = tag.split("-")
    for n in range(len(parts), 0, -1):
        if n == len(parts) or len(parts[n - 1]) > 1:
            yield "-".join(parts[:n])


def _fingerprint(taxonomy: Taxonomy) -> str:
    """What tags depend on: the tagger's version and every topic's entries; not the order
    of topics or entries, the labels or the default language."""
    entries = sorted(
        (topic.key, language, sorted(words))
        for topic in taxonomy.topics
        for language, words in topic.words
    )
    canonical = json.dumps([TAGGER_VERSION, entries], ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()


# What a Taxonomy is made of, checked; every message starts with the path it concerns.


def _topic(path: str, topic: Topic, stems: dict[tuple[str, str], list[tuple[str, ...]]]) -> Topic:
    """``topic`` checked and normalised; its entries' stems go in ``stems``."""
    key = topic.key
    if not isinstance(key, str) or len(key) > TOPIC_KEY_MAX or not TOPIC_KEY.fullmatch(key):
        raise InvalidInput(
            f"{path}.key: 1-{TOPIC_KEY_MAX} lower-case letters a-z and digits,"
            " in groups joined by single hyphens"
        )
    _count(f"{path}.labels", len(topic.labels), LANGUAGES_MAX, "languages")
    _count(f"{path}.words", len(topic.words), LANGUAGES_MAX, "languages")
    labels = _by_language(
        f"{path}.labels",
        ((tag, _text(f"{path}.labels.{tag}", label, LABEL_MAX)) for tag, label in topic.labels),
    )
    words = _by_language(
        f"{path}.words",
        ((tag, _entries(f"{path}.words.{tag}", tag, entries)) for tag, entries in topic.words),
    )
    if not words:
        raise TextMissing(f"{path}.words: words in one language at least are required")
    stems.update(((key, language), found) for language, (_, found) in words)
    return Topic(key, labels, tuple((language, entries) for language, (entries, _) in words))


def _by_language(path: str, pairs: Iterable[tuple[str, T]]) -> tuple[tuple[str, T], ...]:
    """Pairs keyed by language, in lower case and sorted; a language given twice refused."""
    seen: dict[str, T] = {}
    for tag, value in pairs:
        language = _language(f"{path}.{tag}", tag)
        if language in seen:
            raise InvalidInput(f"{path}.{tag}: {language!r} is given twice")
        seen[language] = value
    return tuple(sorted(seen.items()))


def _entries(
    path: str, tag: str, entries: tuple[str, ...]
) -> tuple[tuple[str, ...], list[tuple[str, ...]]]:
    """One word list, checked: each entry in NFC, within its limits, a phrase of joined
    words, and matching what no other entry of the list matches. With their stems."""
    _count(path, len(entries), WORDS_PER_LANGUAGE_MAX, "words and phrases")
    if not entries:
        raise TextMissing(f"{path}: at least one word or phrase (or no {tag!r} at all)")
    language = _language(path, tag)
    checked = tuple(_text(f"{path}[{i}]", entry, WORD_CHARS_MAX) for i, entry in enumerate(entries))
    stems: list[tuple[str, ...]] = []
    first: dict[tuple[str, ...], int] = {}
    for i, (entry, tokens) in enumerate(zip(checked, analyze_all(checked, language), strict=True)):
        at = f"{path}[{i}]"
        if not tokens:
            raise InvalidInput(f"{at}: {entry!r} has no letters or digits")
        if not all(token.joined for token in tokens[1:]):
            raise InvalidInput(
                f"{at}: {entry!r}: a phrase's words are separated by spaces or hyphens only"
            )
        if len(tokens) > WORD_CHARS_MAX or any(token.stem is None for token in tokens):
            raise TextTooLong(f"{at}: {entry!r} is too long once normalised")
        if _words(tokens) > PHRASE_WORDS_MAX:
            raise InvalidInput(f"{at}: {entry!r}: a phrase has at most {PHRASE_WORDS_MAX} words")
        found = tuple(token.stem or "" for token in tokens)
        if found in first:
            j = first[found]
            raise InvalidInput(f"{at}: {entry!r} matches what {path}[{j}] {checked[j]!r} does")
        first[found] = i
        stems.append(found)
    return checked, stems


def _words(tokens: tuple[Token, ...]) -> int:
    """Words in a phrase: characters of a script without spaces, side by side, are one."""
    return sum(
        1
        for before, token in zip((None, *tokens), tokens, strict=False)
        if before is None
        or not (before.character and token.character and before.span[1] == token.span[0])
    )


def _text(path: str, value: object, maximum: int) -> str:
    """A label or an entry in NFC: visible, within ``maximum`` characters, and without
    control, bidi control or lone surrogate characters (joiners are spelling: kept)."""
    if not isinstance(value, str):
        raise InvalidInput(f"{path}: must be a string")
    if any(unicodedata.category(ch) == "Cs" for ch in value):
        raise InvalidInput(f"{path}: must be valid Unicode text (it has a lone surrogate)")
    value = unicodedata.normalize("NFC", value)
    if not any(rules._visible(ch) for ch in value):
        raise TextMissing(f"{path}: must not be empty or invisible")
    if len(value) > maximum:
        raise TextTooLong(f"{path}: at most {maximum} characters")
    if any(unicodedata.category(ch) == "Cc" or ch in _BIDI_CONTROLS for ch in value):
        raise InvalidInput(f"{path}: must not contain control characters")
    return value


def _language(path: str, tag: object) -> str:
    try:
        return rules.validate_language(tag)
    except InvalidLanguage as exc:
        raise InvalidLanguage(f"{path}: {exc}") from None


def _count(path: str, count: int, maximum: int, what: str) -> None:
    if count > maximum:
        raise InvalidInput(f"{path}: at most {maximum:,} {what}, not {count:,}")


# The document's shape, before the values are looked at.


def _unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """An object of the document: a field given twice is refused, not the last one taken."""
    found: dict[str, Any] = {}
    for name, value in pairs:
        if name in found:
            raise InvalidInput(f"the taxonomy has the field {name!r} twice in one object")
        found[name] = value
    return found


def _object(path: str, value: object, fields: tuple[str, ...]) -> dict[str, object]:
    """An object with exactly ``fields``."""
    if not isinstance(value, dict):
        raise InvalidInput(f"{path or 'the taxonomy'}: must be an object")
    prefix = f"{path}." if path else ""
    for name in value:
        if name not in fields:
            raise InvalidInput(f"{prefix}{name}: no such field (there are {', '.join(fields)})")
    for name in fields:
        if name not in value:
            raise TextMissing(f"{prefix}{name}: required")
    return value


def _array(path: str, value: object, maximum: int, what: str) -> list[object]:
    if not isinstance(value, list):
        raise InvalidInput(f"{path}: must be an array")
    _count(path, len(value), maximum, what)
    return value


def _string(path: str, value: object) -> str:
    if not isinstance(value, str):
        raise InvalidInput(f"{path}: must be a string")
    return value


def _map(path: str, value: object) -> dict[str, object]:
    """An object keyed by language, within LANGUAGES_MAX."""
    if not isinstance(value, dict):
        raise InvalidInput(f"{path}: must be an object keyed by language")
    _count(path, len(value), LANGUAGES_MAX, "languages")
    return value


def _raw_topic(path: str, value: object) -> Topic:
    """A topic as the document gives it; the Taxonomy checks and normalises the values."""
    topic = _object(path, value, ("key", "labels", "words"))
    labels = _map(f"{path}.labels", topic["labels"])
    words = _map(f"{path}.words", topic["words"])
    return Topic(
        _string(f"{path}.key", topic["key"]),
        tuple((tag, _string(f"{path}.labels.{tag}", label)) for tag, label in labels.items()),
        tuple(
            (
                tag,
                tuple(
                    _string(f"{path}.words.{tag}[{i}]", entry)
                    for i, entry in enumerate(
                        _array(f"{path}.words.{tag}", entries, WORDS_PER_LANGUAGE_MAX, "words")
                    )
                ),
            )
            for tag, entries in words.items()
        ),
    )
