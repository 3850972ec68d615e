"""Storage for product comments on DynamoDB. Knows nothing of GraphQL.

Folders by concern, each on a floor; a folder imports only from the floors below it (and
from itself), never sideways, and ``tests/test_layering.py`` checks it:

    ops/      operations on a whole table: create, import, bulk, backfill, migrate, reshard,
              verify
    live/     the change stream, its events, the process's feed
    reads/    planner (pure, prints its plan), executor, merge, cursors, snapshots
    writes/   one module per transition of a comment, the counters they move
    engine/   talking to DynamoDB: client, seam, metering, retry, batch calls, the table,
              the layout check and its write gate
    model/    what is stored and asked: keys, comments, items, indexes, counters, layout
              versions, patterns
    base/     the ground: types, errors, expressions, bounded cache, clock, locks

    base  <-  model  <-  engine  <-  reads, writes  <-  live (reads only), ops

Reads and writes sit side by side and never import each other. ``model`` and ``base`` do
no I/O and load no engine client library. Callers import the module that does the job
(``storage.reads.reader``, ``storage.writes``, ``storage.reads.planner``...); this package
re-exports nothing, so that importing the pure parts does not load aioboto3.
"""
