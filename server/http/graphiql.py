"""The GraphiQL IDE on ``GET /graphql``, served from the project's own pinned npm packages.

The page is ours and small: GraphiQL's UMD build with React's, from an allow-list of files
under ``node_modules`` (``package-lock.json`` pins them, ``scripts/setup`` installs them) at
``/graphiql/assets/<name>``, and one inline bootstrap script admitted by its hash. Nothing is
loaded from another host, so the IDE works offline and under a CSP of ``'self'``. In
development the page opens as a shopper (the shopper's dev token in its headers) on an example
query, with a second tab as a moderator.
"""

from __future__ import annotations

import hashlib
import html
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson
from starlette.requests import Request
from starlette.responses import FileResponse, HTMLResponse, Response

from server.http.guards import content_security_policy

if TYPE_CHECKING:
    from server.runtime import DevTokens

log = logging.getLogger("comments.server")

NODE_MODULES = Path(__file__).resolve().parents[2] / "node_modules"
ASSET_PATH = "/graphiql/assets"

# URL name -> (file under node_modules, media type). Only these are ever served.
ASSETS: dict[str, tuple[str, str]] = {
    "react.production.min.js": ("react/umd/react.production.min.js", "text/javascript"),
    "react-dom.production.min.js": (
        "react-dom/umd/react-dom.production.min.js",
        "text/javascript",
    ),
    "graphiql.min.js": ("graphiql/graphiql.min.js", "text/javascript"),
    "graphiql.min.css": ("graphiql/graphiql.min.css", "text/css"),
}
# The versioned URLs never change content, so browsers may keep them for a year.
IMMUTABLE = "public, max-age=31536000, immutable"

EXAMPLE_QUERY = """\
# A product page: its counters, the first comments
# (newest first) and where the next page starts.
# Run it with the play button or Ctrl-Enter; the Docs
# pane (book icon) lists every field.
query ProductPage($productId: ID! = "sku-hot") {
  product(productId: $productId) {
    productId
    lastCommentedAt
    stats {
      total
      average
      histogram { rating count }
    }
    comments(first: 5) {
      totalCount
      edges {
        cursor
        node { commentId rating language title author createdAt }
      }
      pageInfo { hasNextPage endCursor }
    }
  }
}
"""

# The second tab, with the moderator's dev token: what waits for a decision.
MODERATOR_QUERY = """\
# As a moderator (this tab's Headers carry the
# moderator's dev token): comments waiting for a
# decision, oldest first, with their reports. Decide
# with moderateComment(input: {id, decision}).
query ModerationQueue {
  moderationQueue(first: 10) {
    totalCount
    nodes {
      id
      title
      body
      status
      moderation { reportCount reasons }
    }
  }
}
"""

# Reads its settings from the JSON block, which is data and never runs, so this script and
# its hash stay the same whatever the settings (a dev token among them).
BOOTSTRAP = """
const config = JSON.parse(document.getElementById("graphiql-config").textContent);
const props = {
  fetcher: GraphiQL.createFetcher({ url: config.url }),
  defaultQuery: config.query,
};
if (config.headers) {
  props.defaultHeaders = config.headers;
  props.defaultEditorToolsVisibility = "headers";
}
if (config.tabs) {
  props.defaultTabs = config.tabs;
}
ReactDOM.createRoot(document.getElementById("graphiql")).render(
  React.createElement(GraphiQL, props),
);
"""
# Without this the IDE collapses to the height of its contents.
STYLE = "html, body, #graphiql { height: 100%; margin: 0; }"

PAGE = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>GraphiQL · Product comments API</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="{css}">
<style>{style}</style>
</head>
<body>
<div id="graphiql">Loading GraphiQL…</div>
<script type="application/json" id="graphiql-config">{config}</script>
<script src="{react}"></script>
<script src="{react_dom}"></script>
<script src="{graphiql}"></script>
<script>{bootstrap}</script>
</body>
</html>
"""

MISSING = """<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><title>GraphiQL is not installed</title></head>
<body><p>GraphiQL's files are missing from {where}: run <code>scripts/setup</code>.</p></body>
</html>
"""


@dataclass(frozen=True, slots=True)
class GraphiQLPage:
    """The IDE's page and its assets; ``versions`` maps each asset to a digest of its
    content (the ``v`` of its URL), empty when the npm packages are not installed."""

    versions: dict[str, str]
    csp: str
    root: Path = NODE_MODULES

    @classmethod
    def load(cls, root: Path = NODE_MODULES) -> GraphiQLPage:
        versions: dict[str, str] = {}
        for name, (relative, _) in ASSETS.items():
            try:
                content = (root / relative).read_bytes()
            except OSError:
                log.warning("GraphiQL is unavailable: %s is missing (run scripts/setup)", relative)
                return cls({}, content_security_policy(""), root)
            versions[name] = hashlib.sha256(content).hexdigest()[:16]
        return cls(versions, content_security_policy(_page(versions, {})), root)

    def render(self, path: str, dev_tokens: DevTokens | None) -> Response:
        """The page for a browser at ``path``; with ``dev_tokens``, it opens as a shopper
        (the shopper's token in the Headers tab) with a second tab as a moderator."""
        if not self.versions:
            where = html.escape(str(self.root))
            return HTMLResponse(MISSING.format(where=where), status_code=503)
        config: dict[str, Any] = {"url": path, "query": EXAMPLE_QUERY}
        if dev_tokens is not None:
            config["headers"] = _bearer(dev_tokens.shopper)
            config["tabs"] = [
                {"query": EXAMPLE_QUERY, "headers": config["headers"]},
                {"query": MODERATOR_QUERY, "headers": _bearer(dev_tokens.moderator)},
            ]
        return HTMLResponse(
            _page(self.versions, config), headers={"content-security-policy": self.csp}
        )

    async def asset(self, request: Request) -> Response:
        """One allow-listed file by its name; anything else is a 404."""
        name = request.path_params["name"]
        if name not in ASSETS or name not in self.versions:
            return Response("Not Found", status_code=404, media_type="text/plain")
        relative, media_type = ASSETS[name]
        current = request.query_params.get("v") == self.versions[name]
        return FileResponse(
            self.root / relative,
            media_type=media_type,
            headers={"cache-control": IMMUTABLE if current else "no-cache"},
        )


def _bearer(token: str) -> str:
    return orjson.dumps({"Authorization": f"Bearer {token}"}, option=orjson.OPT_INDENT_2).decode()


def _page(versions: dict[str, str], config: dict[str, Any]) -> str:
    def url(name: str) -> str:
        return f"{ASSET_PATH}/{name}?v={versions.get(name, '')}"

    # "<" escaped, so no value can close the script element it sits in.
    data = orjson.dumps(config).decode().replace("<", "\\u003c")
    return PAGE.format(
        css=url("graphiql.min.css"),
        style=STYLE,
        config=data,
        react=url("react.production.min.js"),
        react_dom=url("react-dom.production.min.js"),
        graphiql=url("graphiql.min.js"),
        bootstrap=BOOTSTRAP,
    )
