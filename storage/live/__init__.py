"""The live stream: the table's change stream read per shard (``stream``), its records
turned into comment and counter events (``events``), and the process's feed that fans
them out to subscribers and refreshes the read path's snapshots (``feed``); a claimed
reader per shard across processes (``claimed``), and the messages by which its changes
are fanned out to every process through a broker (``fanout``).

May import: ``storage.base``, ``storage.model``, ``storage.engine``, ``storage.reads``.
Never ``storage.writes`` or ``storage.ops``.
"""
