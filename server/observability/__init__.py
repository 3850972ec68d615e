"""Observability: Prometheus metrics (``metrics``), OpenTelemetry traces (``tracing``), log
lines as text or JSON (``logs``), and the middleware that observes each request once for
all three (``middleware``).

May import: ``storage`` (the meter it reports) and ``server.settings``; nothing of the HTTP
app, which imports it.
"""
