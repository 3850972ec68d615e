"""The HTTP server, its settings and the command line."""
