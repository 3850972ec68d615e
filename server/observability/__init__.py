"""Observability: Prometheus metrics (``metrics``, and each process's CPU and memory in
``processes``), OpenTelemetry traces (``tracing``), log lines as text or JSON (``logs``),
the middleware that observes each request once for all three (``middleware``), and the
version they carry (``build``).

May import: ``storage`` (the meter it reports) and ``server.settings``; nothing of the HTTP
app, which imports it.
"""
