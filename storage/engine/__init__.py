"""The engine: talking to DynamoDB, and nothing above it.

The client and its fast paths (``client``, ``direct``, ``wrapping``), the seam every call
passes through, where engine failures become storage errors (``seam``) and where the
conflict fault mode sits (``conflicts``), capacity metering (``metering``), the table and
the process memories it carries (``table``), retries with backoff (``retry``), the batch
calls (``batch``), the leaderboard layout as read (``leaderboard_layout``), and the
readiness probe (``health``).

May import: ``storage.base`` and ``storage.model``. Knows nothing of reads, writes, the
stream or operations: what those keep per process lives in ``TableRef.memories``, by type.
"""
