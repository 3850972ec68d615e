"""Webhook endpoints in the API: the type, the query for shop staff, and the mutation
family that registers, changes, deletes and rotates them (resolvers.webhooks)."""
