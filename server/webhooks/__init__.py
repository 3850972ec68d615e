"""Webhooks: events written once from the stream (``outbox``), delivered signed by
Standard Webhooks (``signing``) over a guarded transport (``transport``) in ordered lanes
claimed by one process at a time (``delivery``), started with the server (``service``).
The manual's page is docs/webhooks.md."""
