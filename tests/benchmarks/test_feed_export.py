"""The feed export benchmark's page (benchmarks/reads/feed_export.py, behind
docs/benchmarks/feed.md) renders every run and the figures it was given."""

from __future__ import annotations

from pathlib import Path

from benchmarks.reads.feed_export import write_page


def test_the_page_shows_each_run_and_the_medians(tmp_path: Path) -> None:
    runs = [{"seconds": 10.0, "rss_kib": 102_400, "rate": 1000.0 + n} for n in range(3)]
    scans = [{"seconds": 8.0, "rss_kib": 98_304, "rate": 1250.0 + n} for n in range(3)]
    result = {
        "when": "2026-11-28T07:00:00+00:00",
        "machine": "x86_64, 2 CPUs, CPython 3.11.7",
        "reviews": 100_000,
        "products": 1_000,
        "segments": 4,
        "page_items": 500,
        "load_seconds": 300.0,
        "feed_bytes": 120_000_000,
        "export_runs": runs,
        "scan_runs": scans,
        "export_reviews_per_second": 1001,
        "scan_reviews_per_second": 1251,
        "export_to_scan": 0.8,
        "export_peak_rss_kib": 102_400,
        "scan_peak_rss_kib": 98_304,
        "command_floor_rss_kib": 96_000,
        "traced_peak_bytes": {"10000": 2_000_000, "100000": 2_100_000},
    }
    page = tmp_path / "feed.md"
    write_page(result, page)
    text = page.read_text()
    assert "| reviews a second (median of 3) | 1,001 | 1,251 |" in text
    assert "| peak RSS, MiB (median) | 100 | 96 |" in text
    assert text.count("\n| 3 | 1,002 | 100 | 1,252 | 96 |") == 1
    assert "2.0 MB for\n10,000 reviews and 2.1 MB for 100,000" in text
    assert "0.80 times" in text
