"""Read benchmarks: items read per item returned (ours against baselines), verified-only
listings, sort orders, and every query kind through the schema in process."""
