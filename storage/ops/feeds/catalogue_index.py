"""The catalogue file's products, indexed in a temporary SQLite file for look-ups by id.

A feed names each review's product by the identifiers the catalogue file gives it (GTIN,
MPN, SKU, brand, name, page). Held in a dict, a catalogue of N products costs O(N) memory
(about 600 bytes a product in CPython with every field set, so 600 MB for the million a
file may hold); indexed here, it costs disk instead (about 150-250 bytes a product in the
SQLite file, deleted on close) and a bounded page cache in memory (``CACHE_KIB``), however
large the file. The file is read once, line by line (``parse_catalogue``), in
transactions of ``BATCH`` rows; its bad lines are passed to ``on_problem`` and skipped,
as ``apply-catalogue`` does.
"""

from __future__ import annotations

import os
import sqlite3
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path
from types import TracebackType

from storage.model.catalogue import CatalogueLine, LineProblem, parse_catalogue

BATCH = 5_000  # rows a transaction while indexing
CACHE_KIB = 2_048  # SQLite's page cache, the index's memory whatever its size
_FIELDS = ("product_id", "gtin", "mpn", "sku", "brand", "name", "url")


class CatalogueIndex:
    """The products of one catalogue file, by id. Use as a context manager: closing it
    deletes its file. Closing twice is safe."""

    def __init__(self, directory: Path | None = None) -> None:
        handle, name = tempfile.mkstemp(prefix="catalogue-", suffix=".sqlite3", dir=directory)
        os.close(handle)
        self.path: Path | None = Path(name)
        self._db = sqlite3.connect(name, isolation_level=None)
        self._db.execute(f"PRAGMA cache_size = -{CACHE_KIB}")
        self._db.execute("PRAGMA journal_mode = OFF")
        self._db.execute("PRAGMA synchronous = OFF")
        self._db.execute(
            "CREATE TABLE products (product_id TEXT PRIMARY KEY, line INTEGER, gtin TEXT,"
            " mpn TEXT, sku TEXT, brand TEXT, name TEXT, url TEXT) WITHOUT ROWID"
        )
        self.products = 0
        self.problems = 0

    def load(
        self, lines: Iterable[str], on_problem: Callable[[LineProblem], None] | None = None
    ) -> None:
        """Index every good line of the file (its bad ones go to ``on_problem``)."""
        batch: list[tuple[object, ...]] = []
        for found in parse_catalogue(lines):
            if isinstance(found, LineProblem):
                self.problems += 1
                if on_problem is not None:
                    on_problem(found)
                continue
            batch.append((found.product_id, found.line, *(getattr(found, f) for f in _FIELDS[1:])))
            if len(batch) >= BATCH:
                self._insert(batch)
                batch = []
        self._insert(batch)

    def _insert(self, rows: list[tuple[object, ...]]) -> None:
        if not rows:
            return
        self._db.execute("BEGIN")
        self._db.executemany("INSERT INTO products VALUES (?, ?, ?, ?, ?, ?, ?, ?)", rows)
        self._db.execute("COMMIT")
        self.products += len(rows)

    def get(self, product_id: str) -> CatalogueLine | None:
        """The catalogue's line for ``product_id``; None when the file has none."""
        row = self._db.execute(
            "SELECT line, gtin, mpn, sku, brand, name, url FROM products WHERE product_id = ?",
            (product_id,),
        ).fetchone()
        if row is None:
            return None
        line, gtin, mpn, sku, brand, name, url = row
        return CatalogueLine(
            line, product_id, gtin=gtin, mpn=mpn, sku=sku, brand=brand, name=name, url=url
        )

    def close(self) -> None:
        if self.path is None:
            return
        self._db.close()
        self.path.unlink(missing_ok=True)
        self.path = None

    def __enter__(self) -> CatalogueIndex:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()
