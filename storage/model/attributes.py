"""The shop's questions to reviewers (attribute definitions) and reviewers' answers to them.

A *definition set* is the questions of one scope: a product group, or a product outside any
group (a grouped product uses its group's). Each definition has a stable ``key`` (``fit``,
``would-recommend``), a kind, labels per language with a default language, and its allowed
values in display order: a CHOICE lists its own, each with labels; SCALE is ``"1"``..``"5"``
and BOOLEAN ``"yes"``, ``"no"``, whose labels are optional (a value's label is then the
value itself). A set arrives as data, what a mutation passes and what storage holds
(``DefinitionSet.to_data`` gives it back)::

    [{"key": "fit", "kind": "CHOICE", "defaultLanguage": "en",
      "label": {"en": "How does it fit?", "de": "Wie passt es?"},
      "values": [{"value": "small", "label": {"en": "Small", "de": "Klein"}},
                 {"value": "true-to-size", "label": {"en": "True to size"}},
                 {"value": "large", "label": {"en": "Large", "de": "Groß"}}]},
     {"key": "would-recommend", "kind": "BOOLEAN", "defaultLanguage": "en",
      "label": {"en": "Would you recommend it?"}}]

``parse_definitions`` checks a set whole and ``validate_answers`` a reviewer's answers
against one; both report every problem at once (``storage.model.problems``) with its path
(``definitions[0].values[2].label.de``, ``attributes[1].value``) and one of the codes in
``Code``. Answers are matched exactly, never normalised into another value: SCALE takes
``"1"``..``"5"`` only (not ``"05"`` nor ``" 5"``), BOOLEAN ``"yes"`` or ``"no"`` only,
CHOICE one of its values as listed. Changes to a set (``attribute_changes``) never rewrite
answers.

Pure: no I/O.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass

from storage.base.errors import InvalidCommentText, InvalidLanguage, TextMissing, TextTooLong
from storage.model import problems
from storage.model.facets import MAX_ATTRIBUTE_ANSWERS, FacetKind, FacetValue
from storage.model.problems import Collector, Path, expect_list, expect_object, expect_string
from storage.model.rules import _check_text, validate_language

# --- Limits (STYLE rule 12): each is refused above it, with the code named beside it. ---

# Answers per comment (TOO_MANY_ANSWERS): each answer is a facet value, an entry and a
# counter per scope written in the comment's own transaction (DynamoDB: at most 100 actions
# and 4 MB). The facet budget (``storage.model.facets``) sets it, so the largest edit of
# the largest grouped comment fits with room to spare.
ANSWERS_MAX = MAX_ATTRIBUTE_ANSWERS
# Attributes per definition set (TOO_MANY_ATTRIBUTES) and values per CHOICE attribute
# (TOO_MANY_VALUES): ``attributeSummary`` is one Query of the scope's counter items, one per
# value, so at most 12 x 12 = 144 items (and as many retired ones, RETIRED_MAX): one or two
# pages of DynamoDB's 1 MB, by how many languages the counters count. A form with more
# questions than this is not answered anyway; a reviewer answers ANSWERS_MAX at most.
ATTRIBUTES_MAX = 12
VALUES_MAX = 12
# A CHOICE of fewer than two values asks nothing (TOO_FEW_VALUES).
VALUES_MIN = 2
# Label length in characters (LABEL_TOO_LONG): a question or an option on one line of a
# form, as long as "How comfortable were the shoes after a full day of walking?" with room
# to spare. Four UTF-8 bytes at most per character: DEFINITIONS_MAX_BYTES bounds the bytes.
LABEL_MAX = 100
LABEL_MAX_BYTES = LABEL_MAX * 4
# Languages per label (TOO_MANY_LANGUAGES): a shop selling across the European Union labels
# its questions in the Union's 24 official languages.
LANGUAGES_MAX = 24
# The whole set in UTF-8 bytes of every text it holds (DEFINITIONS_TOO_LARGE): stored as one
# item (DynamoDB: 400 KB, field names and structure included, which this leaves room for),
# it is read by every create and edit to check the answers, 16 read units at most (8
# eventually consistent). The limits above alone would allow 12 x 13 x 24 labels of up to
# 400 bytes, 1.5 MB: this is the total that bounds them.
DEFINITIONS_MAX_BYTES = 64 * 1024
# Key and value patterns (KEY_INVALID, VALUE_INVALID): lower-case words joined by '-',
# a key starting with a letter. Both go into keys as a facet value's token
# (``a:<key>=<value>``, ``storage.model.facets``), so neither may hold a key delimiter
# ('#', '/') nor '='; 32 characters keep the longest index partition key (a group's id, the
# token, a language, a rating) far below DynamoDB's 2,048 bytes.
KEY_MAX = 32
VALUE_MAX = 32
_KEY = re.compile(r"[a-z][a-z0-9]*(?:-[a-z0-9]+)*")
_VALUE = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")


class AttributeKind(enum.Enum):
    """The contract's AttributeKind: what values an attribute takes."""

    CHOICE = "CHOICE"  # one of its own list
    SCALE = "SCALE"  # "1" to "5"
    BOOLEAN = "BOOLEAN"  # "yes" or "no"


# The values of the kinds that have fixed ones, in display order.
FIXED_VALUES: dict[AttributeKind, tuple[str, ...]] = {
    AttributeKind.SCALE: ("1", "2", "3", "4", "5"),
    AttributeKind.BOOLEAN: ("yes", "no"),
}


class Code(enum.StrEnum):
    """Why part of a definition set, of an answer or of a change was refused. Stable."""

    SHAPE = problems.SHAPE
    UNKNOWN_FIELD = problems.UNKNOWN_FIELD
    REQUIRED = problems.REQUIRED
    TOO_MANY_ATTRIBUTES = "TOO_MANY_ATTRIBUTES"
    KEY_INVALID = "KEY_INVALID"
    DUPLICATE_KEY = "DUPLICATE_KEY"
    KIND_INVALID = "KIND_INVALID"
    LANGUAGE_INVALID = "LANGUAGE_INVALID"
    DUPLICATE_LANGUAGE = "DUPLICATE_LANGUAGE"  # 'de' and 'DE' name one language
    TOO_MANY_LANGUAGES = "TOO_MANY_LANGUAGES"
    LABEL_DEFAULT_MISSING = "LABEL_DEFAULT_MISSING"
    LABEL_EMPTY = "LABEL_EMPTY"
    LABEL_TOO_LONG = "LABEL_TOO_LONG"
    LABEL_INVALID = "LABEL_INVALID"  # control, bidi or line-breaking characters
    VALUE_INVALID = "VALUE_INVALID"
    DUPLICATE_VALUE = "DUPLICATE_VALUE"
    TOO_FEW_VALUES = "TOO_FEW_VALUES"
    TOO_MANY_VALUES = "TOO_MANY_VALUES"
    VALUES_FIXED = "VALUES_FIXED"  # SCALE and BOOLEAN values are theirs, in their order
    DEFINITIONS_TOO_LARGE = "DEFINITIONS_TOO_LARGE"
    TOO_MANY_ANSWERS = "TOO_MANY_ANSWERS"
    UNKNOWN_KEY = "UNKNOWN_KEY"
    DUPLICATE_ANSWER = "DUPLICATE_ANSWER"
    VALUE_NOT_ALLOWED = "VALUE_NOT_ALLOWED"
    # Changes (``attribute_changes``).
    KIND_CHANGED = "KIND_CHANGED"
    TOO_MANY_RETIRED = "TOO_MANY_RETIRED"
    RETIRED_TOO_LARGE = "RETIRED_TOO_LARGE"
    TOO_MANY_MOVES = "TOO_MANY_MOVES"
    NOT_RETIRED = "NOT_RETIRED"
    DUPLICATE_MOVE = "DUPLICATE_MOVE"
    TARGET_NOT_ALLOWED = "TARGET_NOT_ALLOWED"


@dataclass(frozen=True, slots=True)
class Labels:
    """A text per language (lower-case tags, sorted), one of them the default."""

    default: str
    texts: tuple[tuple[str, str], ...]

    def __post_init__(self) -> None:
        languages = [language for language, _ in self.texts]
        if languages != sorted(set(languages)) or self.default not in languages:
            raise ValueError("labels: sorted distinct languages, the default among them")

    def get(self, language: str | None = None) -> str:
        """The text in ``language``, else in the tags it narrows, one subtag less at a time
        (``de-ch-1996``, ``de-ch``, ``de``: RFC 4647's lookup), else in the default
        language. An unknown or malformed tag is not an error here: it finds the default."""
        texts = dict(self.texts)
        tag = (language or "").lower()
        while tag:
            if tag in texts:
                return texts[tag]
            tag = tag.rpartition("-")[0]
        return texts[self.default]

    @property
    def size(self) -> int:
        return sum(_bytes(language) + _bytes(text) for language, text in self.texts)

    def to_data(self) -> dict[str, str]:
        return dict(self.texts)


@dataclass(frozen=True, slots=True)
class AttributeValueDef:
    """One allowed value of an attribute, with its labels."""

    value: str
    labels: Labels

    def label(self, language: str | None = None) -> str:
        return self.labels.get(language)


@dataclass(frozen=True, slots=True)
class AttributeDefinition:
    """One question: its key, kind, labels and allowed values in display order."""

    key: str
    kind: AttributeKind
    labels: Labels
    values: tuple[AttributeValueDef, ...]

    def __post_init__(self) -> None:
        values = tuple(v.value for v in self.values)
        fixed = FIXED_VALUES.get(self.kind)
        if (fixed is not None and values != fixed) or len(set(values)) != len(values):
            raise ValueError(f"attribute {self.key!r}: values do not fit its kind")

    @property
    def default_language(self) -> str:
        return self.labels.default

    def label(self, language: str | None = None) -> str:
        return self.labels.get(language)

    def value(self, value: str) -> AttributeValueDef | None:
        return next((v for v in self.values if v.value == value), None)

    def allows(self, value: str) -> bool:
        return self.value(value) is not None

    @property
    def size(self) -> int:
        """UTF-8 bytes of every text it holds."""
        own = _bytes(self.key) + _bytes(self.kind.value) + _bytes(self.default_language)
        return own + self.labels.size + sum(_bytes(v.value) + v.labels.size for v in self.values)

    def to_data(self) -> dict[str, object]:
        return {
            "key": self.key,
            "kind": self.kind.value,
            "defaultLanguage": self.default_language,
            "label": self.labels.to_data(),
            "values": [{"value": v.value, "label": v.labels.to_data()} for v in self.values],
        }


@dataclass(frozen=True, slots=True)
class DefinitionSet:
    """The questions of one scope, in display order; empty when it asks none."""

    definitions: tuple[AttributeDefinition, ...] = ()

    def __post_init__(self) -> None:
        keys = [d.key for d in self.definitions]
        if len(set(keys)) != len(keys):
            raise ValueError("definition set: keys repeat")

    def __iter__(self) -> Iterator[AttributeDefinition]:
        return iter(self.definitions)

    def __len__(self) -> int:
        return len(self.definitions)

    def get(self, key: str) -> AttributeDefinition | None:
        return next((d for d in self.definitions if d.key == key), None)

    def allows(self, key: str, value: str) -> bool:
        """Whether ``value`` is an answer to ``key`` today."""
        definition = self.get(key)
        return definition is not None and definition.allows(value)

    @property
    def size(self) -> int:
        """UTF-8 bytes of every text it holds: what DEFINITIONS_MAX_BYTES bounds."""
        return sum(d.size for d in self.definitions)

    def to_data(self) -> list[dict[str, object]]:
        """The set as data, which ``parse_definitions`` reads back to an equal set."""
        return [d.to_data() for d in self.definitions]


@dataclass(frozen=True, slots=True, order=True)
class Answer:
    """A reviewer's answer to one attribute, as stored."""

    key: str
    value: str

    @property
    def facet(self) -> FacetValue:
        """The facet value the answer files its comment under."""
        return FacetValue.attribute(self.key, self.value)


def answers_of(facets: Iterable[FacetValue]) -> tuple[Answer, ...]:
    """A comment's answers from its facet values (topics and the rest left out), sorted by
    key: what ``Comment.attributes`` shows and what ``validate_answers`` takes as stored."""
    return tuple(sorted(Answer(f.key, f.value) for f in facets if f.kind is FacetKind.ATTRIBUTE))


def parse_definitions(data: object, *, field: str = "definitions") -> DefinitionSet:
    """The definition set ``data`` describes, or InvalidFields naming every problem."""
    out = Collector()
    items = expect_list(data, (field,), out)
    built: list[AttributeDefinition] = []
    if items is not None:
        if len(items) > ATTRIBUTES_MAX:
            out.add((field,), Code.TOO_MANY_ATTRIBUTES, f"at most {ATTRIBUTES_MAX} attributes")
        seen: dict[str, int] = {}
        for i, raw in enumerate(items):
            key = raw.get("key") if isinstance(raw, Mapping) else None
            if isinstance(key, str) and key in seen:
                message = f"{key!r} is defined already at {field}[{seen[key]}]"
                out.add((field, i, "key"), Code.DUPLICATE_KEY, message)
            elif isinstance(key, str):
                seen[key] = i
            definition = _definition(raw, (field, i), out)
            if definition is not None:
                built.append(definition)
        # What was built is a part of the whole: if it is too large already, so is the set.
        size = sum(d.size for d in built)
        if size > DEFINITIONS_MAX_BYTES:
            message = f"at most {DEFINITIONS_MAX_BYTES:,} bytes of keys, values and labels"
            out.add((field,), Code.DEFINITIONS_TOO_LARGE, message)
    out.raise_any()
    return DefinitionSet(tuple(built))


def validate_answers(
    definitions: DefinitionSet,
    answers: object,
    *,
    stored: Iterable[Answer] = (),
    field: str = "attributes",
) -> tuple[Answer, ...]:
    """A reviewer's answers (``[{"key": ..., "value": ...}]``) as stored, sorted by key, or
    InvalidFields naming every problem.

    ``stored`` are the comment's answers before an edit: one of them sent back unchanged is
    kept even when its value (or its attribute) has been retired since, so an edit that
    resends the whole set does not lose an answer the definitions no longer offer.
    """
    out = Collector()
    items = expect_list(answers, (field,), out)
    out.raise_any()
    assert items is not None
    if len(items) > ANSWERS_MAX:
        out.add((field,), Code.TOO_MANY_ANSWERS, f"at most {ANSWERS_MAX} answers per comment")
    kept = {(a.key, a.value) for a in stored}
    kept_keys = {key for key, _ in kept}
    seen: dict[str, int] = {}
    result: list[Answer] = []
    for i, raw in enumerate(items):
        path: Path = (field, i)
        mark = len(out)
        given = {"key": raw.key, "value": raw.value} if isinstance(raw, Answer) else raw
        item = expect_object(given, path, ("key", "value"), out)
        if item is None:
            continue
        key = expect_string(item.get("key"), (*path, "key"), out)
        definition = None if key is None else definitions.get(key)
        if key is not None and key in seen:
            message = f"{key!r} is answered already at {field}[{seen[key]}]"
            out.add((*path, "key"), Code.DUPLICATE_ANSWER, message)
        elif key is not None and definition is None and key not in kept_keys:
            out.add((*path, "key"), Code.UNKNOWN_KEY, _unknown_key(key, definitions))
        if key is not None:
            seen.setdefault(key, i)
        value = expect_string(item.get("value"), (*path, "value"), out)
        if key is not None and value is not None and (key, value) not in kept:
            if definition is not None and not definition.allows(value):
                out.add((*path, "value"), Code.VALUE_NOT_ALLOWED, _not_allowed(definition))
            elif definition is None and key in kept_keys:
                message = f"{key!r} is retired: only its stored answer may stay"
                out.add((*path, "value"), Code.VALUE_NOT_ALLOWED, message)
        if len(out) == mark and key is not None and value is not None:
            result.append(Answer(key, value))
    out.raise_any()
    return tuple(sorted(result))


def _unknown_key(key: str, definitions: DefinitionSet) -> str:
    if not definitions.definitions:
        return f"{key!r}: this product asks no questions"
    return f"{key!r} is not asked here; asked: {', '.join(d.key for d in definitions)}"


def _not_allowed(definition: AttributeDefinition) -> str:
    allowed = ", ".join(repr(v.value) for v in definition.values)
    return f"{definition.key!r} takes one of {allowed}"


_DEFINITION_FIELDS = ("key", "kind", "defaultLanguage", "label", "values")
_VALUE_FIELDS = ("value", "label")


def _definition(raw: object, path: Path, out: Collector) -> AttributeDefinition | None:
    mark = len(out)
    item = expect_object(raw, path, _DEFINITION_FIELDS, out)
    if item is None:
        return None
    key = _pattern(item.get("key"), (*path, "key"), _KEY, KEY_MAX, Code.KEY_INVALID, out)
    kind = _kind(item.get("kind"), (*path, "kind"), out)
    default = _language(item.get("defaultLanguage"), (*path, "defaultLanguage"), out)
    labels = _labels(item.get("label"), default, (*path, "label"), out)
    values = _values(item.get("values"), kind, default, (*path, "values"), out)
    if len(out) > mark or key is None or kind is None or labels is None or values is None:
        return None
    return AttributeDefinition(key, kind, labels, values)


def _values(
    raw: object, kind: AttributeKind | None, default: str | None, path: Path, out: Collector
) -> tuple[AttributeValueDef, ...] | None:
    fixed = FIXED_VALUES.get(kind) if kind is not None else None
    if raw is None and fixed is not None and default is not None:
        # SCALE and BOOLEAN without labels for their values: each value is its own label.
        return tuple(AttributeValueDef(v, Labels(default, ((default, v),))) for v in fixed)
    if raw is None:
        if kind is AttributeKind.CHOICE:
            out.add(path, Code.REQUIRED, "a CHOICE lists its values", TextMissing)
        return None
    items = expect_list(raw, path, out)
    if items is None:
        return None
    if fixed is not None and len(items) != len(fixed):
        message = f"{kind.value if kind else ''} takes exactly {', '.join(map(repr, fixed))}"
        out.add(path, Code.VALUES_FIXED, message)
    elif kind is AttributeKind.CHOICE and len(items) < VALUES_MIN:
        out.add(path, Code.TOO_FEW_VALUES, f"a CHOICE lists at least {VALUES_MIN} values")
    elif kind is AttributeKind.CHOICE and len(items) > VALUES_MAX:
        out.add(path, Code.TOO_MANY_VALUES, f"a CHOICE lists at most {VALUES_MAX} values")
    mark = len(out)
    seen: dict[str, int] = {}
    values: list[AttributeValueDef] = []
    for i, raw_value in enumerate(items):
        item = expect_object(raw_value, (*path, i), _VALUE_FIELDS, out)
        if item is None:
            continue
        where = (*path, i, "value")
        value = _pattern(item.get("value"), where, _VALUE, VALUE_MAX, Code.VALUE_INVALID, out)
        if value is not None and value in seen:
            message = f"{value!r} is listed already at index {seen[value]}"
            out.add(where, Code.DUPLICATE_VALUE, message)
        elif value is not None and fixed is not None and (i >= len(fixed) or fixed[i] != value):
            message = f"{kind.value if kind else ''} takes exactly {', '.join(map(repr, fixed))}"
            out.add(where, Code.VALUES_FIXED, message)
        if value is not None:
            seen.setdefault(value, i)
        labels = _labels(item.get("label"), default, (*path, i, "label"), out)
        if value is not None and labels is not None:
            values.append(AttributeValueDef(value, labels))
    return tuple(values) if len(out) == mark else None


def _labels(raw: object, default: str | None, path: Path, out: Collector) -> Labels | None:
    """Labels from ``{language: text}``; the default language must have one."""
    mark = len(out)
    if raw is None:
        out.add(path, Code.REQUIRED, "a label is required", TextMissing)
        return None
    if not isinstance(raw, Mapping):
        out.add(path, Code.SHAPE, "must be an object of texts by language")
        return None
    if len(raw) > LANGUAGES_MAX:
        out.add(path, Code.TOO_MANY_LANGUAGES, f"at most {LANGUAGES_MAX} languages")
    texts: dict[str, str] = {}
    given: dict[str, object] = {}
    for raw_language, raw_text in raw.items():
        where = (*path, str(raw_language))
        try:
            language = validate_language(raw_language)
        except InvalidLanguage as exc:
            out.add(where, Code.LANGUAGE_INVALID, str(exc))
            continue
        if language in given:
            message = f"{given[language]!r} and {raw_language!r} name the same language"
            out.add(where, Code.DUPLICATE_LANGUAGE, message)
            continue
        given[language] = raw_language
        text = _label_text(raw_text, where, out)
        if text is not None:
            texts[language] = text
    if default is not None and default not in given:
        message = f"a label in the default language {default!r} is required"
        out.add(path, Code.LABEL_DEFAULT_MISSING, message, TextMissing)
    if len(out) > mark or default is None:
        return None
    return Labels(default, tuple(sorted(texts.items())))


# Besides what every text refuses (``rules``): a label is one line of a form.
_LINE_BREAKS = frozenset("\n\r\t\v\f\x85\u2028\u2029")


def _label_text(raw: object, path: Path, out: Collector) -> str | None:
    if expect_string(raw, path, out) is None:
        return None
    try:
        text = _check_text("label", raw, LABEL_MAX, LABEL_MAX_BYTES, optional=False)
    except TextTooLong as exc:
        out.add(path, Code.LABEL_TOO_LONG, str(exc), TextTooLong)
        return None
    except TextMissing as exc:
        out.add(path, Code.LABEL_EMPTY, str(exc), TextMissing)
        return None
    except InvalidCommentText as exc:
        out.add(path, Code.LABEL_INVALID, str(exc))
        return None
    assert text is not None
    if any(ch in _LINE_BREAKS for ch in text):
        out.add(path, Code.LABEL_INVALID, "a label must be one line, without tabs")
        return None
    return text


def _kind(raw: object, path: Path, out: Collector) -> AttributeKind | None:
    if isinstance(raw, AttributeKind):
        return raw
    if raw is None:
        out.add(path, Code.REQUIRED, "the kind is required", TextMissing)
        return None
    names = [kind.value for kind in AttributeKind]
    if isinstance(raw, str) and raw in names:
        return AttributeKind(raw)
    out.add(path, Code.KIND_INVALID, f"the kind is one of {', '.join(names)}")
    return None


def _language(raw: object, path: Path, out: Collector) -> str | None:
    if raw is None:
        out.add(path, Code.REQUIRED, "the default language is required", TextMissing)
        return None
    try:
        return validate_language(raw)
    except InvalidLanguage as exc:
        out.add(path, Code.LANGUAGE_INVALID, str(exc))
        return None


def _pattern(
    raw: object, path: Path, pattern: re.Pattern[str], maximum: int, code: Code, out: Collector
) -> str | None:
    text = expect_string(raw, path, out)
    if text is None:
        return None
    if len(text) > maximum or not pattern.fullmatch(text):
        first = "a letter" if pattern is _KEY else "a letter or digit"
        message = (
            f"1 to {maximum} lower-case letters, digits and single '-' between them, "
            f"starting with {first}"
        )
        out.add(path, code, message)
        return None
    return text


def _bytes(text: str) -> int:
    return len(text.encode("utf-8"))
