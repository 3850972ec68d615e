"""HTTP benchmarks: throughput and latency with the load generator, settings rows compared
in one run, what observing costs, nginx's cache, the in-memory floor, and how fresh answers
are through Varnish and each process's map of answers (``freshness``)."""
