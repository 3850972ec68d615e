"""The way out on SIGTERM (or SIGINT): uvicorn closes the listening socket, closes idle
connections and WebSockets (1012, service restart), and gives requests in progress
``SHUTDOWN_TIMEOUT_SECONDS`` to finish (its ``timeout_graceful_shutdown``) before it
cancels what is left and closes the application.
"""

from __future__ import annotations

# Twice STORAGE_TIMEOUT's default, within which every storage call of a request ends:
# room for any request whose body has arrived.
TIMEOUT_SECONDS = 10.0
