"""What one answer read, as cache tags: the products, groups and comments it showed, and
the shop-wide things (the leaderboard, group membership, the topic taxonomy) whose change
can alter it.

Shared caches (a CDN, a proxy) and the process's own map of answers (server.http.answers)
keep an answer until a change of something it read: the stream names what changed in the
same tags (server.http.answer_changes), and every tagged answer is dropped then. A tag is
noted where the answer learns of the thing (the types' constructors, the resolvers that
read membership, the leaderboard, the taxonomy), so a nested object (a ranking's product,
a comment's product, a group's variants) is tagged as surely as a root field's.

Tags are the identifiers as stored: product, group and comment ids follow
``storage.model.rules`` (letters, digits and ``. _ : -``), so a tag never holds a space
or a comma and needs no escaping in ``Surrogate-Key`` or ``Cache-Tag``.

The set in use is the request's (``CURRENT``, set with its context): resolvers that run
in tasks of their own share it, as a task copies the context it was made in.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass, field

PRODUCT = "p:"
GROUP = "g:"
COMMENT = "c:"
# The leaderboard (its order and 5-star counts), which products' counters move.
LEADERS = "leaders"
# Which group each product is in: a product's group, a group's products.
MEMBERSHIP = "membership"
# The shop's topic taxonomy and attribute definitions.
TAXONOMY = "taxonomy"
# Dropped on any change: what an answer carries when it read more than its tags may say.
ALL = "all"


@dataclass(slots=True)
class ReadSet:
    """The tags of one answer, in the order first read (so headers are stable)."""

    tags: dict[str, None] = field(default_factory=dict)

    def note(self, tag: str) -> None:
        self.tags[tag] = None

    def __iter__(self) -> Iterator[str]:
        return iter(self.tags)


CURRENT: ContextVar[ReadSet | None] = ContextVar("answer_read_set", default=None)


def start() -> ReadSet:
    """A new read set for the request running in this task, and its own from now on."""
    reads = ReadSet()
    CURRENT.set(reads)
    return reads


def _note(tag: str) -> None:
    reads = CURRENT.get()
    if reads is not None:
        reads.note(tag)


def product(product_id: str) -> None:
    _note(PRODUCT + product_id)


def group(group_id: str) -> None:
    _note(GROUP + group_id)


def comment(comment_id: str) -> None:
    _note(COMMENT + comment_id)


def leaders() -> None:
    _note(LEADERS)


def membership() -> None:
    _note(MEMBERSHIP)


def taxonomy() -> None:
    _note(TAXONOMY)
