"""Live-update benchmarks: event delay and freshness across processes, and what hostile
subscribers cost a plain reader."""
