"""Read benchmarks: items read per item returned (ours against baselines), verified-only
listings, sort orders, facet listings (ours against the blog's filtered fan-out), and every
query kind through the schema in process."""
