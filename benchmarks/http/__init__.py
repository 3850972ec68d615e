"""HTTP benchmarks: throughput and latency with the load generator, settings rows compared
in one run, what observing costs, nginx's cache, and the in-memory floor."""
