"""How a text becomes the tokens a word list is matched against: normalised, split into
words, stemmed in the text's language. Pure: the same text and language give the same
tokens in every process (``STEMMER`` names the stemmers' version, which decides stems).

1. **Words.** A word is a run of letters, marks and digits (Unicode categories L, M, N),
   with an apostrophe (U+0027, U+2019, U+2018, U+02BC) or a format character (a soft
   hyphen, a zero-width joiner) kept when it stands inside, between two of them:
   "don't", "l'écran", "auto's". Everything else separates words.
2. **Joined.** A phrase may continue from one word to the next when nothing but spaces,
   tabs, hyphens and dashes, apostrophes or zero-width spaces stand between them
   ("battery life", "battery-life"); punctuation, symbols and line breaks end a phrase, so
   "battery. Life" is not "battery life".
3. **Normalised.** Each word is put in NFKC (the "ﬁ" ligature is "fi", full-width letters
   are ASCII), case-folded (``str.casefold``: "Straße" is "strasse") and in NFKC again;
   every apostrophe becomes ``'``; format characters other than the joiners ZWNJ and ZWJ
   (which Persian and Indic scripts spell with) are dropped. A word that normalisation
   splits (a ligature of several words) gives several tokens, joined.
4. **Scripts written without spaces** (Han, Hiragana, Katakana, Thai, Lao, Khmer, Myanmar):
   each character, with the marks that follow it, is a token of its own and is never
   stemmed. A word list's entry in those scripts therefore matches wherever its
   characters stand one after the other: a substring match on the normalised text, in a
   comment of any language (with spaces or hyphens between characters allowed, as
   between a phrase's words). Letters of other scripts among them (a brand name in a
   Chinese comment) stay words.
5. **Stemmed.** A token is stemmed with the Snowball algorithm of the language's primary
   subtag (``SNOWBALL``: ``de-ch`` is German), so "batteries" and "battery" share a stem.
   A language without one keeps its tokens as normalised (exact match). A token longer
   than ``TOKEN_CHARS_MAX`` has no stem and matches nothing (a URL, an encoded blob):
   no word list holds one, and stemming it would cost for nothing.

German compounds are not split ("Akkulaufzeit" is one token, "Akku" another), and
Catalan's stemmer keeps elided articles ("l'autonomia" is not "autonomia"); French and
Italian's remove them.
"""

from __future__ import annotations

import bisect
import unicodedata
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

import snowballstemmer

# The stemmers decide which words match, so their version is part of what a tagging
# depends on; tests/storage/model/test_words.py fails when the installed one differs.
STEMMER = "snowballstemmer 3.1.1"

# ISO 639-1 primary subtags (as ``rules.validate_language`` stores them, lower case) and
# the Snowball algorithm for each. Porter and Dutch-Porter are older variants, left out.
SNOWBALL: dict[str, str] = {
    "ar": "arabic",
    "ca": "catalan",
    "cs": "czech",
    "da": "danish",
    "de": "german",
    "el": "greek",
    "en": "english",
    "eo": "esperanto",
    "es": "spanish",
    "et": "estonian",
    "eu": "basque",
    "fa": "persian",
    "fi": "finnish",
    "fr": "french",
    "ga": "irish",
    "hi": "hindi",
    "hu": "hungarian",
    "hy": "armenian",
    "id": "indonesian",
    "it": "italian",
    "lt": "lithuanian",
    "nb": "norwegian",
    "ne": "nepali",
    "nl": "dutch",
    "no": "norwegian",
    "pl": "polish",
    "pt": "portuguese",
    "ro": "romanian",
    "ru": "russian",
    "sr": "serbian",
    "st": "sesotho",
    "sv": "swedish",
    "ta": "tamil",
    "tr": "turkish",
    "yi": "yiddish",
}

# Longer tokens match nothing. The longest entry a word list may hold is 40 characters
# (``topics.WORD_CHARS_MAX``), and no stemmer removes 24 characters of suffix.
TOKEN_CHARS_MAX = 64

# Inside a word, between letters: apostrophes (kept, as ``'``) and format characters.
_APOSTROPHES = frozenset("'\u2018\u2019\u02bc")
_JOINERS = frozenset("\u200c\u200d")  # ZWNJ, ZWJ: spelling, kept
_ZWSP = "\u200b"  # a zero-width space separates words (Thai and Khmer texts use it)
_SOUND_MARKS = frozenset("\uff9e\uff9f")  # half-width (han)dakuten: letters, yet marks
# Code point ranges of the scripts written without spaces between words (start, end).
_NO_SPACE_RANGES = (
    (0x0E00, 0x0EFF),  # Thai, Lao
    (0x1000, 0x109F),  # Myanmar
    (0x1780, 0x17FF),  # Khmer
    (0x19E0, 0x19FF),  # Khmer symbols
    (0x2E80, 0x2FDF),  # CJK radicals, Kangxi radicals
    (0x3005, 0x3007),  # ideographic iteration mark, closing mark, number zero
    (0x3021, 0x3029),  # Hangzhou numerals
    (0x3031, 0x3035),  # kana repeat marks
    (0x3040, 0x30FF),  # Hiragana, Katakana
    (0x31F0, 0x31FF),  # Katakana phonetic extensions
    (0x3400, 0x4DBF),  # CJK extension A
    (0x4E00, 0x9FFF),  # CJK unified ideographs
    (0xF900, 0xFAFF),  # CJK compatibility ideographs
    (0xFF66, 0xFF9F),  # half-width Katakana
    (0x1B000, 0x1B16F),  # Kana supplement and extensions
    (0x20000, 0x3FFFF),  # CJK extensions B and later (planes 2 and 3)
)
_NO_SPACE_STARTS = [start for start, _ in _NO_SPACE_RANGES]


@dataclass(frozen=True, slots=True)
class Token:
    """A word of a text as matched: normalised, its stem, and where it stands."""

    text: str  # normalised (NFKC, case-folded)
    stem: str | None  # what matches; None for a token over TOKEN_CHARS_MAX
    span: tuple[int, int]  # the word in the text given: text[span[0]:span[1]]
    joined: bool  # a phrase may continue from the token before into this one
    character: bool  # of a script written without spaces: one character, matched exactly


def stemmer_name(language: str) -> str | None:
    """The Snowball algorithm for a (lower-case, valid) language tag, or None for none."""
    return SNOWBALL.get(language.split("-", 1)[0])


def analyze(text: str, language: str) -> tuple[Token, ...]:
    """The tokens of ``text`` read in ``language`` (a lower-case, valid tag): in text order,
    in time linear in the text's length."""
    return _analyze(text, _stemming(stemmer_name(language)))


def analyze_all(texts: Iterable[str], language: str) -> list[tuple[Token, ...]]:
    """``analyze`` of each text, with one stemmer that stems a word once (a word list)."""
    stem = _stemming(stemmer_name(language))
    return [_analyze(text, stem) for text in texts]


def _analyze(text: str, stem: Callable[[str], str]) -> tuple[Token, ...]:
    tokens: list[Token] = []
    for start, end, joined in _runs(text):
        for piece_start, piece_end, _ in _clusters(text, start, end):
            for piece, exact in _pieces(_normalise(text[piece_start:piece_end])):
                too_long = len(piece) > TOKEN_CHARS_MAX
                stemmed = None if too_long else piece if exact else stem(piece)
                tokens.append(Token(piece, stemmed, (piece_start, piece_end), joined, exact))
                joined = True
    return tuple(tokens)


def _stemming(name: str | None) -> Callable[[str], str]:
    """A stemming function of its own for one analysis: Snowball's stemmer objects keep
    state between calls, so none is shared (across threads, say). What it remembers is
    bounded by the text it analyses."""
    if name is None:
        return _same
    stemmer = snowballstemmer.stemmer(name)
    seen: dict[str, str] = {}  # a comment repeats its words; bounded by its length

    def stem(word: str) -> str:
        found = seen.get(word)
        if found is None:
            found = seen[word] = str(stemmer.stemWord(word))
        return found

    return stem


def _same(word: str) -> str:
    return word


def _is_word(ch: str) -> bool:
    return unicodedata.category(ch)[0] in "LMN"


def _is_inner(ch: str) -> bool:
    return ch in _APOSTROPHES or (ch != _ZWSP and unicodedata.category(ch) == "Cf")


def _is_gap(ch: str) -> bool:
    """A character that lets a phrase continue across it."""
    return ch in " \t" or _is_inner(ch) or ch == _ZWSP or unicodedata.category(ch) in ("Zs", "Pd")


def _runs(text: str) -> Iterator[tuple[int, int, bool]]:
    """The words of ``text``: (start, end, joined to the word before)."""
    joined = False
    i, n = 0, len(text)
    while i < n:
        if not _is_word(text[i]):
            if not _is_gap(text[i]):
                joined = False
            i += 1
            continue
        start = i
        i += 1
        while i < n:
            if _is_word(text[i]):
                i += 1
            elif _is_inner(text[i]) and i + 1 < n and _is_word(text[i + 1]):
                i += 2
            else:
                break
        yield start, i, joined
        joined = True


def _normalise(word: str) -> str:
    folded = unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", word).casefold())
    return "".join(
        "'" if ch in _APOSTROPHES else ch
        for ch in folded
        if ch in _JOINERS or unicodedata.category(ch) != "Cf"
    )


def _no_space(ch: str) -> bool:
    code = ord(ch)
    i = bisect.bisect_right(_NO_SPACE_STARTS, code) - 1
    return i >= 0 and code <= _NO_SPACE_RANGES[i][1]


def _clusters(text: str, start: int, end: int) -> Iterator[tuple[int, int, bool]]:
    """A word cut into tokens: (start, end, exact). A character of a script written without
    spaces is one, with the marks after it (Thai vowels, half-width sound marks); what
    stands between such characters (a brand name in Latin letters) is one more."""
    begun = i = start
    while i < end:
        if _no_space(text[i]) and unicodedata.category(text[i])[0] != "M":
            if begun < i:
                yield begun, i, False
            j = i + 1
            while j < end and (unicodedata.category(text[j])[0] == "M" or text[j] in _SOUND_MARKS):
                j += 1
            yield i, j, True
            begun = i = j
        else:
            i += 1
    if begun < end:
        yield begun, end, False


def _pieces(normal: str) -> list[tuple[str, bool]]:
    """The tokens of one normalised word or character: (text, exact). Normalisation may have
    put separators in a word (a ligature of words) or made a character of a script written
    without spaces (an enclosed ideograph), so it is cut again the same way."""
    return [
        (normal[a:b], exact)
        for start, end, _ in _runs(normal)
        for a, b, exact in _clusters(normal, start, end)
    ]
