"""Problems with an input made of many values, found all at once, each with its path.

A rule in ``rules`` raises at the first thing wrong with one value. An input made of many
values (a set of attribute definitions, a reviewer's answers, a catalogue line) is checked
whole instead: every problem is collected with the path of the value it concerns and a
stable code, so a form can mark all of them in one round trip.

The path is relative to the input field checked and is what a mutation's ``userErrors``
carry as ``field`` once the resolver puts ``"input"`` in front of it
(``resolvers/user_errors.py``): ``("definitions", 1, "values", 3, "label", "de")``, printed
``definitions[1].values[3].label.de``. Each problem also names the storage error it stands
for (``InvalidInput``, ``TextMissing``, ``TextTooLong``), so the API maps it to a
UserErrorCode (INVALID, REQUIRED, TOO_LONG) by the table it already keeps for storage
errors. The code is finer than those three and stable: clients and tests may rely on it.

Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from storage.base.errors import InvalidInput, TextMissing

# A path: field names, list indexes, and a mapping's keys (a label's language).
Path = tuple[str | int, ...]

# Problems listed for one input, at most: the answer stays small whatever the input's size
# (STYLE rule 12); one more problem says that others were left out.
PROBLEMS_MAX = 50

# The codes of every input's shape, whatever the input.
SHAPE = "SHAPE"  # not a list, an object or a string where one is expected
UNKNOWN_FIELD = "UNKNOWN_FIELD"  # a field the input does not have (a typo, most often)
REQUIRED = "REQUIRED"  # a field left out, or null
MORE_PROBLEMS = "MORE_PROBLEMS"  # more problems were found than are listed


@dataclass(frozen=True, slots=True)
class Problem:
    """One problem: where (``path``), why (``code``, stable), and words for people."""

    path: Path
    code: str
    message: str
    # The storage error this problem stands for: how the API chooses its UserErrorCode.
    error: type[InvalidInput] = InvalidInput

    @property
    def field(self) -> tuple[str, ...]:
        """The path as ``userErrors`` carry it: every part a string."""
        return tuple(str(part) for part in self.path)

    @property
    def dotted(self) -> str:
        """The path as people read it: ``definitions[1].values[3].label.de``."""
        out = ""
        for part in self.path:
            out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else part)
        return out

    def as_error(self) -> InvalidInput:
        """The storage error this problem stands for, with its message (not raised here)."""
        return self.error(self.message)


class InvalidFields(InvalidInput):
    """An input with one problem or more; ``problems`` lists every one found, in order."""

    def __init__(self, problems: tuple[Problem, ...]) -> None:
        super().__init__("; ".join(f"{p.dotted or '(input)'}: {p.message}" for p in problems))
        self.problems = problems


class Collector:
    """Gathers the problems of one input, up to ``limit`` of them, then one that says more
    were found."""

    def __init__(self, limit: int = PROBLEMS_MAX) -> None:
        self._limit = limit
        self._problems: list[Problem] = []
        self._count = 0
        self._more = False

    def add(
        self, path: Path, code: str, message: str, error: type[InvalidInput] = InvalidInput
    ) -> None:
        self._count += 1
        if len(self._problems) < self._limit:
            self._problems.append(Problem(path, code, message, error))
        else:
            self._more = True

    def __len__(self) -> int:
        """Problems found so far, those left out included: a check compares it before and
        after to learn whether its part of the input was sound."""
        return self._count

    @property
    def problems(self) -> tuple[Problem, ...]:
        more = (
            (Problem((), MORE_PROBLEMS, f"more problems than the {self._limit} listed"),)
            if self._more
            else ()
        )
        return (*self._problems, *more)

    def raise_any(self) -> None:
        """Raise InvalidFields with every problem gathered, if there is one."""
        if self._problems:
            raise InvalidFields(self.problems)


def expect_list(raw: object, path: Path, out: Collector) -> Sequence[object] | None:
    """``raw`` if it is a list (or a tuple), else None after a SHAPE problem."""
    if isinstance(raw, list | tuple):
        return raw
    out.add(path, SHAPE, "must be a list")
    return None


def expect_object(
    raw: object, path: Path, fields: Sequence[str], out: Collector
) -> Mapping[str, object] | None:
    """``raw`` if it is a mapping, else None after a SHAPE problem; each field it has
    beyond ``fields`` is an UNKNOWN_FIELD problem (the mapping is still returned)."""
    if not isinstance(raw, Mapping):
        out.add(path, SHAPE, "must be an object")
        return None
    for name in raw:
        if name not in fields:
            message = f"unknown field {name!r}; the fields are {', '.join(fields)}"
            out.add((*path, str(name)), UNKNOWN_FIELD, message)
    return raw


def expect_string(raw: object, path: Path, out: Collector) -> str | None:
    """``raw`` if it is a string, else None after a REQUIRED (None) or SHAPE problem."""
    if raw is None:
        out.add(path, REQUIRED, "required", TextMissing)
        return None
    if not isinstance(raw, str):
        out.add(path, SHAPE, "must be a string")
        return None
    return raw
