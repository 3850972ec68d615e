# The API image: the same `comments serve` the README runs, pointed at a DynamoDB endpoint.
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

RUN useradd --system --uid 10001 app
USER app
ENV HOST=0.0.0.0 PORT=8000
EXPOSE 8000
CMD [".venv/bin/comments", "serve"]
