"""The process: the command line, its settings, the application's lifetime.

    server/              the process and its composition
        cli.py           the ``comments`` command (serve, table, data, tokens)
        settings/        every setting, from the environment, validated at start, in
                         groups (storage, tokens, http, writes, live_updates,
                         observability, development)
        environment.py   the rest of what the process environment carries (LD_PRELOAD,
                         the multiprocess metrics directory, a child's environment)
        runtime.py       what the application holds while it runs (client, table, feed)
        workers.py       several worker processes behind one socket
        shutdown.py      the way out on SIGTERM: drain, then stop accepting
        jwks.py          the login provider's key set, fetched and kept fresh
        secret_file.py   a JWT secret kept in a file
    server/http/         the ASGI app and its pieces (guards, caching, persisted queries,
                         GraphiQL, subscriptions over WebSocket)
    server/observability/  metrics, traces, log lines, the middleware that observes
    server/dev/          DynamoDB Local, demo data: what a first start and the tests need

``settings`` and ``runtime`` compose the layers below (``schema``, ``resolvers``,
``storage``) and the folders beside them; those folders never import ``cli``.
"""
