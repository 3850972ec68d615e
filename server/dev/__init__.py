"""Development tooling: what makes ``./scripts/serve`` answer on a fresh machine and what
tests, benchmarks and reliability runs start.

DynamoDB Local, started on loopback and checked to stay there (``local_engine``,
``loopback``), realistic demo data (``demo``) and the progress bar of long loads
(``progress``). Nothing here runs in production: a production process has an endpoint and
no demo data (``server.settings``).

May import: ``storage`` and ``server.settings``.
"""
