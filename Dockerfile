# The API image: the same `comments serve` the README runs, pointed at a DynamoDB endpoint,
# in production posture (PRODUCTION=true): without DYNAMODB_ENDPOINT_URL, a JWT secret (or
# JWT_JWKS_URL) and AUTHOR_ID_KEY (each may be a mounted file: JWT_SECRET_FILE...) it
# refuses to start rather than serve GraphiQL, introspection and /metrics on every
# interface. Development opts out: docker-compose.yml sets PRODUCTION=false.
#
# Base images are named by tag (what it is) and, where a digest could be checked, pinned by
# digest (what is built on, whatever the tag points to later). To move to a newer build,
# take the digest of the tag's multi-platform index, not of one platform's image:
#   docker buildx imagetools inspect python:3.11-slim    (the first "Digest:" line)
# and write it after the tag as below.

# GraphiQL's files, from the same lock as a checkout's; only the allow-listed ones that
# server/http/graphiql.py serves reach the image. Not pinned: no digest of node:20-slim
# could be checked when the others were (pin it as above).
FROM node:20-slim AS graphiql
WORKDIR /build
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund --loglevel=error

# python:3.11-slim as docker-library/repo-info (repos/python/remote/3.11-slim.md) recorded
# it: Python 3.11.16 on Debian 13 (trixie), built 2026-08-25.
FROM python:3.11-slim@sha256:00f89b7f96f13d42900483da3253f8fb2e763eed7a0aa5f0358fec9d15d9f10c

ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 UV_LINK_MODE=copy
RUN pip install --no-cache-dir uv==0.13.8

WORKDIR /app
COPY pyproject.toml uv.lock README.md ./
RUN uv sync --frozen --no-dev --no-install-project
COPY storage ./storage
COPY resolvers ./resolvers
COPY schema ./schema
COPY server ./server
RUN uv sync --frozen --no-dev
COPY --from=graphiql /build/node_modules/graphiql/graphiql.min.js /build/node_modules/graphiql/graphiql.min.css ./node_modules/graphiql/
COPY --from=graphiql /build/node_modules/react/umd/react.production.min.js ./node_modules/react/umd/
COPY --from=graphiql /build/node_modules/react-dom/umd/react-dom.production.min.js ./node_modules/react-dom/umd/

# Where JWT_SECRET_FILE may keep a secret made on the first start (development): a volume
# mounted here starts with this owner and mode.
RUN useradd --system --uid 10001 app \
  && install -d -o app -m 700 /var/lib/comments
# By number, so that a runtime can tell it is not root (Kubernetes' runAsNonRoot).
USER 10001
ENV HOST=0.0.0.0 PORT=8000 PRODUCTION=true
EXPOSE 8000
# Liveness, not readiness: /livez answers while the process serves at all and reads
# nothing. A storage blip makes /readyz fail, and restarting every container for it would
# fix nothing (a load balancer should stop sending traffic on /readyz instead). The slim
# image has no curl: Python's urllib, over loopback to the port the server listens on.
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
  CMD [".venv/bin/python", "-c", "import os, urllib.request as u; u.urlopen('http://127.0.0.1:%s/livez' % os.environ.get('PORT', '8000'), timeout=4)"]
CMD [".venv/bin/comments", "serve"]
