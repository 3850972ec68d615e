"""Benchmarks, grouped by what they measure; each is a long form behind its own command
(``python -m benchmarks.<group>.<name>``, or all of them with ``./scripts/bench``).

    reads/    items read per item returned, sort orders, facet reads, the schema in process,
              baselines
    writes/   the capacity of each transition, hot votes, import rate, part 1's design
    http/     throughput and latency over HTTP, settings compared, nginx's cache, the floor
    live/     live updates across processes, and what hostile subscribers cost others
    scale/    capacity by AWS's rules, the scale model, the leaderboard's partitions

Shared here: the data set (``data``), the whole run (``run``) and its report (``report``,
``targets``). Results (JSON) go to ``benchmarks/results/``; the pages that quote them live
with the docs. The harness shared with the tests is ``testing``.
"""
