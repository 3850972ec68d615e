"""Storage for product comments on DynamoDB: keys, planner, executor, writes, counters.

Knows nothing of GraphQL. Callers import the module that does the job (``storage.reads.reader``,
``storage.writes``, ``storage.reads.planner``...); this package deliberately re-exports nothing, so
that importing the pure parts (keys, cursors, the planner) does not load aioboto3.
"""
