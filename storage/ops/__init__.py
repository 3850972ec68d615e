"""Operations: the commands that act on a whole table rather than one request.

Importing reviews (``importer`` over the lines of ``import_lines``), bulk loads of
generated data (``bulk``), backfills of index keys (``backfill``), table migrations
(``migrate``), resharding the leaderboard (``reshard``), re-tagging topics after a
taxonomy change (``retag``) and recounting every counter against the comments
(``verify``).

May import: ``storage.base``, ``storage.model``, ``storage.engine``, ``storage.reads``,
``storage.writes``. Never ``storage.live``; nothing in storage imports ``ops``.
"""
