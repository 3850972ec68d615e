"""The model: what is stored and what is asked, and nothing that does I/O.

The rules every value from outside must meet (``rules``: the one home of what valid
input is), keys and identifiers (``keys``), comments and the requests for them
(``comments``), how a comment becomes items (``items``), the table's
indexes (``indexes``), the counters' items (``stats``), the leaderboard's sharded layout
(``leaderboard``), the access patterns declared as data (``patterns``), the shop's
questions to reviewers and the answers to them (``attributes``, ``attribute_changes``), the
catalogue file (``catalogue``), and problems found all at once in a many-valued input
(``problems``). Every item attribute name is defined here, so reads and writes agree on
them without importing each other.

May import: ``storage.base``. Pure: no engine client library, no storage call.
"""
