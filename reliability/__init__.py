"""Reliability tooling: schema fuzzing, storage faults, load and soak (see the README)."""
