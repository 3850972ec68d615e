"""Storage for product comments on DynamoDB: keys, planner, executor, writes, counters.

Knows nothing of GraphQL. Callers import the module that does the job (``storage.reads``,
``storage.writes``, ``storage.planner``...); this package deliberately re-exports nothing, so
that importing the pure parts (keys, cursors, the planner) does not load aioboto3.
"""
