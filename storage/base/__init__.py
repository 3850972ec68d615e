"""The ground floor of storage: what every other folder stands on and that stands on nothing.

Engine types (``types``), the storage error tree (``errors``), DynamoDB expressions built
without string pasting (``expressions``), a byte-bounded cache (``bounded``), the writers'
clock (``clock``) and the process's keyed locks and lanes of waiting work (``locks``,
``lanes``).

May import: the standard library only (nothing of storage outside this folder, no engine
client library). Pure: no module here does I/O.
"""
