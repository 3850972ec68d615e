"""Reading a metrics scrape (Prometheus's text format), for the tests and the benchmarks."""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def parse_scrape(text: str) -> Samples:
    """Every sample of a scrape, by name and labels."""
    samples: Samples = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            samples[(sample.name, frozenset(sample.labels.items()))] = sample.value
    return samples


def sample(samples: Samples, name: str, **labels: str) -> float:
    """The sample of that name with exactly those labels; 0 when the scrape has none."""
    return samples.get((name, frozenset(labels.items())), 0.0)
