"""The ASGI application and its pieces: what a request meets on its way in and out.

The Starlette app and its routes (``app``), GraphQL over HTTP's media types and statuses
(``transport``), the guards in front of GraphQL (``guards``)
and the head limits under them (``head_limits``), HTTP caching (``caching``), persisted
queries (``persisted``), the client address behind proxies (``forwarded``), the GraphiQL
page (``graphiql``), and subscriptions over WebSocket: the protocol's limits
(``subscriptions``), resolutions shared per event and their budgets (``event_groups``),
the per-client places for sockets (``sockets``).

May import: ``schema``, ``resolvers``, ``storage``, ``server.observability`` and the
process modules of ``server`` (``settings``, ``runtime``).
"""
