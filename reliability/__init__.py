"""Reliability runs: schema fuzzing (``fuzz``), the race phase (``race``), load and soak
(``soak``), and DynamoDB Local's durability under a hard stop (``engine_durability``).

Each is a long form behind its documented command (``scripts/reliability``); the harness
they share with the tests and benchmarks is ``testing``.
"""
