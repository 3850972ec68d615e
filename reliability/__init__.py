"""Reliability tooling: schema fuzzing, storage faults, load and soak (see docs/reliability.md), and
the harness the tests and benchmarks share (live servers, a subscriber, scrape reading)."""
