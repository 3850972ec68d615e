"""Reliability tooling: schema fuzzing, storage faults, load and soak (see the README), and
the harness the tests and benchmarks share (live servers, a subscriber, scrape reading)."""
