# The API image: the same `comments serve` the README runs, pointed at a DynamoDB endpoint.

# GraphiQL's files, from the same lock as a checkout's; only the allow-listed ones that
# server/http/graphiql.py serves reach the image.
FROM node:20-slim AS graphiql
WORKDIR /build
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund --loglevel=error

FROM python:3.11-slim

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

RUN useradd --system --uid 10001 app
# Where JWT_SECRET_FILE may keep a secret made on the first start: a volume mounted here
# starts with this owner and mode.
RUN install -d -o app -m 700 /var/lib/comments
USER app
ENV HOST=0.0.0.0 PORT=8000
EXPOSE 8000
CMD [".venv/bin/comments", "serve"]
