"""The read path: from a listing asked to the page returned, and the counters with it.

The plan is made by a pure planner that prints itself for EXPLAIN (``planner``); only the
executor does I/O (``executor``); fan-outs are merged in key order (``merge``); positions
travel as opaque cursors (``cursor``); the process's snapshots of counters and page heads
let a page take one storage round (``snapshots``). ``reader`` holds the reads callers
use (counters, comments by id, listings, an author's comments, the moderation queue);
``leaders`` reads the leaderboard; ``author_data`` finds everything one author made (a
privacy request's scan).

May import: ``storage.base``, ``storage.model``, ``storage.engine``. Never ``storage.writes``
(what both need lives below them).
"""
