"""Operations: the commands that act on a whole table rather than one request.

Importing reviews (``importer`` over the lines of ``import_lines``), bulk loads of
generated data (``bulk``), backfills of index keys (``backfill``), table migrations
(``migrate``), resharding the leaderboard (``reshard``), re-tagging topics after a
taxonomy change (``retag``), moving products between groups (``group_move``, and
``catalogue_groups`` for a catalogue file's) and recounting every counter against the
comments (``verify``, with ``facet_check`` and ``group_check``).

May import: ``storage.base``, ``storage.model``, ``storage.engine``, ``storage.reads``,
``storage.writes``. Never ``storage.live``; nothing in storage imports ``ops``.
"""
