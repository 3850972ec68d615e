"""Synthetic but realistic demo data: many products, J-shaped ratings, skewed languages."""

from __future__ import annotations

import hashlib
import random
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

from storage import keys
from storage.model import Comment

LANGUAGES = {"en": 0.50, "de": 0.20, "fr": 0.12, "es": 0.10, "pt-br": 0.05, "ja": 0.03}
RATINGS = {5: 0.55, 4: 0.20, 1: 0.12, 3: 0.08, 2: 0.05}
DEMO_PRODUCTS = 60  # products besides the hot one
DEMO_SEED = 42  # the same demo data on every machine
PHRASES = {
    "en": [
        "Works as described",
        "Great value",
        "Broke after a week",
        "Would buy again",
        "Not what I expected",
        "Fast delivery",
        "Sturdy and well made",
        "Too small",
    ],
    "de": [
        "Wie beschrieben",
        "Sehr gutes Produkt",
        "Leider defekt",
        "Gerne wieder",
        "Schnelle Lieferung",
        "Qualitativ hochwertig",
        "Zu klein",
    ],
    "fr": [
        "Conforme à la description",
        "Très bon rapport qualité-prix",
        "Cassé rapidement",
        "Je recommande",
        "Livraison rapide",
        "Un peu petit",
    ],
    "es": [
        "Tal como se describe",
        "Muy buena calidad",
        "Se rompió pronto",
        "Lo recomiendo",
        "Envío rápido",
    ],
    "pt-br": [
        "Exatamente como descrito",
        "Ótimo custo-benefício",
        "Quebrou logo",
        "Recomendo",
        "Entrega rápida",
    ],
    "ja": ["説明どおりです", "とても良い", "すぐに壊れました", "また買いたい", "配送が速い"],
}
AUTHORS = ["ana", "ben", "chloe", "dmitri", "emma", "farid", "grace", "hiro", "ines", "jonas"]


def demo_comments(products: int, seed: int = DEMO_SEED) -> Iterator[Comment]:
    """Comments for ``products`` products plus one hot product, deterministic per seed."""
    rng = random.Random(seed)
    plan = [("sku-hot", 2000, False)] + [
        (f"sku-{n:04d}", int(rng.paretovariate(1.2) * 8) % 400, True)
        for n in range(1, products + 1)
    ]
    return synthetic_comments(plan, rng)


def synthetic_comments(plan: list[tuple[str, int, bool]], rng: random.Random) -> Iterator[Comment]:
    """Comments per (product id, count, may lack ratings) over three years, J-shaped ratings
    and skewed languages; products that may lack ratings drop none, one or two of them."""
    end = datetime(2026, 11, 1, tzinfo=UTC)
    span = timedelta(days=3 * 365).total_seconds()
    for product_id, count, gaps in plan:
        ratings = dict(RATINGS)
        for _ in range(rng.choice([0, 0, 1, 2]) if gaps else 0):
            ratings.pop(rng.choice(list(ratings)), None)
        for n in range(count):
            language = rng.choices(list(LANGUAGES), weights=list(LANGUAGES.values()))[0]
            rating = rng.choices(list(ratings), weights=list(ratings.values()))[0]
            moment = end - timedelta(seconds=rng.random() * span)
            author = rng.choice(AUTHORS)
            phrase = rng.choice(PHRASES[language])
            yield Comment(
                comment_id=_demo_id(product_id, n),
                product_id=product_id,
                language=language,
                rating=rating,
                title=phrase if rng.random() < 0.7 else None,
                body=f"{phrase}. " * rng.randint(1, 4),
                author_id=author,
                created_at=keys.format_timestamp(moment),
                author_name=author.capitalize(),
            )


def _demo_id(product_id: str, n: int) -> str:
    """The same id for the same demo comment on every run (32 hex digits, like every id)."""
    return hashlib.sha256(f"demo\x00{product_id}\x00{n}".encode()).hexdigest()[:32]
