"""The single-table model as data: every access pattern, where it is served, and the items
each write touches.

One table holds comments, their counters, the leaderboard, votes, reports and the records
that keep writes exact; what makes that one table work is the list below. Each read
pattern names the key or index that serves it, so EXPLAIN names the patterns a page
follows (``storage.reads.planner``), the docs print this list (``python -m
storage.model.patterns``, checked by a test against the architecture page), and a test
checks that every index of the table serves a pattern and every pattern's index exists.
Each write pattern names the items its one transaction touches and the module that makes
it; every write but a create first spends its author's hourly rate, in an item of its own
(AUTHOR#<digest>, RATE#<family>: ``storage.writes.rates``).

A new kind of thing stored (review photos, a facet) starts here: declare what is asked
and what a write touches, then add its keys (``keys``), its item shape (``items``) and,
only if no existing index serves it, an index (``indexes``).
"""

from __future__ import annotations

from dataclasses import dataclass

from storage.model.indexes import LISTING_INDEXES, Index


@dataclass(frozen=True, slots=True)
class Key:
    """Where a pattern reads: the table's own key (``index`` None) or an index, and the
    shape of the key it asks for."""

    index: Index | None
    partition: str
    sort: str

    @property
    def where(self) -> str:
        return "table" if self.index is None else f"index {self.index.value}"


@dataclass(frozen=True, slots=True)
class ReadPattern:
    code: str
    asked: str
    call: str
    keys: tuple[Key, ...]
    # Whether the pattern is served by one of its keys' indexes alone (a listing): each
    # listing index serves exactly one listing pattern, which EXPLAIN names for it.
    listing: bool = False


@dataclass(frozen=True, slots=True)
class WritePattern:
    code: str
    transition: str
    module: str
    # What the one transaction touches, each with why.
    items: tuple[str, ...]


_NEWEST = "GSISK: createdAt#commentId, newest first"
_HELPFUL = "HSK: helpful count, then GSISK"

READS: tuple[ReadPattern, ...] = (
    ReadPattern(
        "AP1",
        "all comments of a product, newest first",
        "Query",
        (Key(Index.ALL, "GSI4PK = PRODUCT#<product>", _NEWEST),),
        listing=True,
    ),
    ReadPattern(
        "AP2",
        "one language",
        "Query",
        (Key(Index.BY_LANG, "GSI2PK = PRODUCT#<product>/<language>", _NEWEST),),
        listing=True,
    ),
    ReadPattern(
        "AP3",
        "any set of ratings, with or without one language",
        "Query per rating, merged (or a filtered Query of a broad index, by cost)",
        (
            Key(Index.BY_RATING, "GSI3PK = PRODUCT#<product>/<rating>", _NEWEST),
            Key(
                Index.BY_LANG_AND_RATING,
                "GSIPK = PRODUCT#<product>/<language>/<rating>",
                _NEWEST,
            ),
        ),
        listing=True,
    ),
    ReadPattern(
        "AP4",
        "one comment by id",
        "GetItem, BatchGetItem",
        (Key(None, "PK = COMMENT#<id>", "SK = COMMENT#<id>"),),
    ),
    ReadPattern(
        "AP6",
        "the next page of any listing, both directions",
        "the listing's Query from a keyset position (opaque cursor)",
        (Key(None, "the listing's partition", "sort key after the cursor's position"),),
    ),
    ReadPattern(
        "AP7-AP10",
        "counts per rating and totals, all languages or one",
        "GetItem, BatchGetItem",
        (Key(None, "PK = PRODUCT#<product>", "SK = S (all) or S#<language>"),),
    ),
    ReadPattern(
        "AP11",
        "the leaderboard: products by 5-star count",
        "Query per shard, merged",
        (Key(Index.BY_LANG_AND_RATING, "GSIPK = LEADERS (or its shards)", "5-star count"),),
    ),
    ReadPattern(
        "AP12",
        "verified purchases only, with any ratings and language",
        "Query (per rating, merged)",
        (
            Key(Index.VERIFIED_BY_RATING, "GSI5PK = PRODUCT#<product>/<rating>", _NEWEST),
            Key(
                Index.VERIFIED_BY_LANG_AND_RATING,
                "GSI6PK = PRODUCT#<product>/<language>/<rating>",
                _NEWEST,
            ),
        ),
        listing=True,
    ),
    ReadPattern(
        "AP13",
        "most helpful first, with any filter",
        "the filter's Query on the index's helpful twin",
        tuple(Key(index.helpful_twin, f"as {index.value}", _HELPFUL) for index in LISTING_INDEXES),
        listing=True,
    ),
    ReadPattern(
        "AP14",
        "highest or lowest rating first",
        "Query of one rating's partition after another",
        (Key(Index.BY_RATING, "GSI3PK = PRODUCT#<product>/<rating>", _NEWEST),),
    ),
    ReadPattern(
        "AP15",
        "an author's comments, in every status",
        "Query",
        (Key(Index.BY_AUTHOR, "author = <author id>", _NEWEST),),
        listing=True,
    ),
    ReadPattern(
        "AP16",
        "the moderation queue, oldest first, and its length",
        "Query; GetItem of its count",
        (
            Key(Index.MODERATION_QUEUE, "QPK = MODQUEUE", "QSK: submittedAt#commentId"),
            Key(None, "PK = MODQUEUE", "SK = COUNT"),
        ),
        listing=True,
    ),
    ReadPattern(
        "AP17",
        "a viewer's votes on the comments of a page",
        "BatchGetItem",
        (Key(None, "PK = COMMENT#<id>", "SK = VOTE#<digest of voter>"),),
    ),
    ReadPattern(
        "AP18",
        "the table's layout and the serving processes' heartbeats (layout versions; each "
        "process also puts its own heartbeat after each read)",
        "GetItem, strongly consistent (every process, every lease / 4); Query (migrate-table)",
        (
            Key(None, "PK = LAYOUT", "SK = VERSION"),
            Key(None, "PK = LAYOUT#PROCESS", "SK: <host>:<pid>:<nonce>"),
        ),
    ),
    ReadPattern(
        "AP19",
        "one facet value's comments (an answer, a topic, a group's), all languages or one, "
        "any ratings, filtered on verified, incentivized and further values (the "
        "storage reads are built; the API does not ask yet)",
        "Query of each rating's partition, merged; or of the product's listing, filtered",
        (
            Key(Index.FACET_BY_RATING, "FPK = F#<scope>#<value>#<rating>", _NEWEST),
            Key(
                Index.FACET_BY_LANG_AND_RATING,
                "FLPK = F#<scope>#<value>#<lang>#<rating>",
                _NEWEST,
            ),
        ),
        listing=True,
    ),
    ReadPattern(
        "AP20",
        "a scope's facet counters: a facet listing's (with the scope's stats and its "
        "incentivized count, as of one moment), or all its answers' or topics' (summaries)",
        "TransactGetItems (a listing's); Query of one sort-key prefix (a summary)",
        (
            Key(None, "PK = PRODUCT#<id> | GROUP#<id>", "SK = F#<value>"),
            Key(None, "PK = PRODUCT#<id> | GROUP#<id>", "SK begins with F#a: | F#t:"),
        ),
    ),
)

WRITES: tuple[WritePattern, ...] = (
    WritePattern(
        "W1",
        "create a comment",
        "storage.writes.create",
        (
            "the comment (PK = COMMENT#<id>), with the keys of the listings or the queue",
            "the counters, all languages and its language (PRODUCT#<product>, S and S#<lang>)",
            "on a 5-star comment, the leaderboard entry (in the product's S item) and a check "
            "of the layout it was placed by (PK = LAYOUT, SK = LEADERS)",
            "the author's per-product slot and hourly count (AUTHOR#<digest of author>)",
            "the idempotency record (IDEMPOTENCY#<digest of author and key>)",
            "the queue's count, in pre-moderation (MODQUEUE, COUNT)",
        ),
    ),
    WritePattern(
        "W2",
        "edit a comment (text, rating, language)",
        "storage.writes.edit",
        (
            "the comment, conditioned on its version",
            "the counters of the old and the new rating and language",
            "the leaderboard entry and its layout check, when a 5-star count moves",
        ),
    ),
    WritePattern(
        "AP5",
        "delete a comment",
        "storage.writes.delete",
        (
            "the comment, conditioned on its version",
            "the counters and the leaderboard entry, when it was published",
            "the author's per-product slot",
            "its votes and reports, tidied up after the transaction (BatchWriteItem)",
        ),
    ),
    WritePattern(
        "W3",
        "moderate a comment (approve, reject, return to the queue)",
        "storage.writes.moderate",
        (
            "the comment, conditioned on its version and moderation round",
            "the counters and the leaderboard entry, when it enters or leaves PUBLISHED",
            "the queue's count",
        ),
    ),
    WritePattern(
        "W4",
        "reply as the merchant, or delete the reply",
        "storage.writes.reply",
        ("the comment, conditioned on its version",),
    ),
    WritePattern(
        "W5",
        "report a comment",
        "storage.writes.reports",
        (
            "the report (PK = COMMENT#<id>, SK = REPORT#<digest of reporter>)",
            "the comment's report count, and its status when the threshold is reached",
            "the counters and the queue's count, when it returns to the queue",
        ),
    ),
    WritePattern(
        "W6",
        "vote helpful or not (one transaction per comment for a process's waiting votes)",
        "storage.writes.votes",
        (
            "each voter's vote item (PK = COMMENT#<id>, SK = VOTE#<digest of voter>)",
            "the comment's helpful counts and version, by ADD",
            "its HSK after the commit, conditioned on the count it follows",
        ),
    ),
)


def listing_pattern(index: Index) -> ReadPattern | None:
    """The listing pattern an index serves (None for an index that serves no listing)."""
    return next(
        (p for p in READS if p.listing and any(k.index is index for k in p.keys)),
        None,
    )


def _index_patterns(index: Index) -> tuple[str, ...]:
    bases = [b for b in LISTING_INDEXES if b.helpful_twin is index]
    found = [listing_pattern(i) for i in (*bases, index)]
    return tuple(p.code for p in found if p is not None)


# Worked out once from the declarations above: EXPLAIN asks for every query of a plan.
_BY_INDEX = {index: _index_patterns(index) for index in Index}
_BY_CODE = {p.code: p for p in READS}


def index_patterns(index: Index) -> tuple[str, ...]:
    """The listing patterns a query of ``index`` follows: a helpful twin's are its base's
    and AP13's."""
    return _BY_INDEX[index]


def read_pattern(code: str) -> ReadPattern:
    return _BY_CODE[code]


def markdown() -> str:
    """The patterns as the architecture page shows them."""
    lines = [
        "| pattern | asked | served by | call |",
        "| --- | --- | --- | --- |",
    ]
    for p in READS:
        served = "; ".join(f"{k.where}: {k.partition}, {k.sort}" for k in p.keys)
        lines.append(f"| {p.code} | {p.asked} | {served} | {p.call} |")
    lines += ["", "| write | transition | module | items its transaction touches |"]
    lines.append("| --- | --- | --- | --- |")
    for w in WRITES:
        lines.append(f"| {w.code} | {w.transition} | `{w.module}` | {'; '.join(w.items)} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(markdown(), end="")
