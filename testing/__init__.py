"""The harness that tests, reliability runs and benchmarks share.

A live ``comments serve`` process on a free port, stopped by PID (``live_server``); several
on one table with a fan-out broker and the shipped Varnish in front (``fleet``); nginx
with the shipped configuration in front of one (``nginx``); a graphql-transport-ws client
(``subscriber``); an in-memory DynamoDB that answers the calls storage makes
(``fake_dynamo``); a fault-injecting proxy between the server and the engine
(``fault_proxy``); reading a metrics scrape (``scrape``) and the answers to writes
(``responses``).

May import: ``server``, ``schema``, ``resolvers``, ``storage``. Never ``tests``,
``benchmarks`` or ``reliability``, which import it.
"""
