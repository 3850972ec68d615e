"""Writes: every state transition of a comment, one module per kind.

May import: ``storage.base``, ``storage.model``, ``storage.engine``. Never ``storage.reads``
(what both need lives below them).

The rule every write here follows, and every new transition must follow:

    A transaction that moves counters, histograms, the leaderboard or a per-author limit
    conditions on the exact state it computed the move from: the comment's version (and
    its rating and language) as read, ``count_5`` as read for the leaderboard, and never
    lets a counter go below zero. When a condition fails, the writer reads again and
    recomputes; it never commits a move computed from a state that no longer holds.

    One exception (STYLE rule 11), in ``votes.py``: a commutative count that no other
    state is computed from (helpful votes) may move by ``ADD``, conditioned only on the
    voter's own item. The counts still equal the vote items at every commit, since a vote
    item is only written with its count's move and on the condition that it is still the
    vote the move was computed from; the comment is conditioned only on what voters never
    change (it exists, is published, is not the voter's own) and its version moves by
    ``ADD`` too, so that every write computed from a version read still fails after a
    vote. What depends on the count (the helpful order's key, HSK) is set as predicted
    and checked against the count read after the commit, then set again on the
    condition of that count when the prediction missed (``ballots.py``).

Comment ids are random and never reused (an imported review's id is derived from the
source's id, and its import record, which outlives the comment, keeps it from being made
again: see ``storage.ops.importer``), versions only grow, so a stale writer can never mistake a
later comment for the one it read. Retries are bounded by ``MAX_WRITE_CALLS``
storage calls per write (the GraphQL cost model relies on it), after which the write
reports ``WriteConflict``.

    create.py        create (comment, counters, limits, idempotency record)
    votes.py         helpful votes (the exception above)
    ballots.py       votes of a process on one comment in one transaction; HSK after it
    delete.py        delete (comment, counters, the author's slot)
    counters.py      the counter and leaderboard moves of any transition
    facet_parts.py   the facet entries and counters of any transition, groups' included
    membership.py    a product's group: placing a comment by it, changing it
    limits.py        per-author limits kept in DynamoDB
    rates.py         per-author rates of the other writes, checked before each
    idempotency.py   idempotency records and their replay
    state.py         a comment as stored, and the condition "still as read"
    transaction.py   named transaction parts, cancellations, the call budget
    answers.py       a reviewer's answers checked against the definitions that apply
    tagging.py       topics tagged with the stored taxonomy; the per-process TaxonomyCache
    comment_facets.py  a create's and an edit's facet values from answers and tags
"""

from storage.writes.create import CreateResult, create_comment
from storage.writes.delete import delete_comment
from storage.writes.limits import DEFAULT_LIMITS, NO_LIMITS, WriteLimits
from storage.writes.rates import DEFAULT_RATES, NO_RATES, WriteRates
from storage.writes.state import get_comment
from storage.writes.transaction import MAX_WRITE_CALLS

__all__ = [
    "DEFAULT_LIMITS",
    "DEFAULT_RATES",
    "MAX_WRITE_CALLS",
    "NO_LIMITS",
    "NO_RATES",
    "CreateResult",
    "WriteLimits",
    "WriteRates",
    "create_comment",
    "delete_comment",
    "get_comment",
]
