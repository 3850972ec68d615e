"""Synthetic but realistic demo data: many products, J-shaped ratings, skewed languages,
and comments in every part of their life (waiting for a moderator, rejected with a note,
edited, answered by the merchant, verified purchases, voted helpful)."""

from __future__ import annotations

import hashlib
import random
from collections.abc import Iterable, Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta

from storage.model import keys
from storage.model.comments import Comment, Moderation, Reply, Status

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
DEMO_END = datetime(2026, 11, 1, tzinfo=UTC)  # the newest demo comment is older than this

# The life of the demo comments, drawn from a generator of its own, so that the comments
# themselves (products, texts, ratings, times) are the same as without it.
VERIFIED_SHARE = 0.40  # the author's token listed the product among their purchases
PENDING_DAYS = 45  # the moderation queue holds recent comments only...
PENDING_SHARE = 0.25  # ...this share of those written in the last PENDING_DAYS
REJECTED_SHARE = 0.015
EDITED_SHARE = 0.05  # of published comments
# Of published comments, by rating: merchants answer complaints most.
REPLY_SHARE = {1: 0.30, 2: 0.25, 3: 0.10, 4: 0.03, 5: 0.03}
REPLY_EDITED_SHARE = 0.2
MODERATOR = "Mira (moderator)"
MERCHANT = "Shop support"
# What moderators refused, in English, and the note each author was given.
REJECTIONS = [
    (
        "Cheap copies of this in my shop, link in my profile!",
        "Advertising: links to other shops and offers are not allowed.",
    ),
    (
        "The courier left the parcel at the wrong door and nobody answers the phone.",
        "About the delivery, not the product: please contact customer service.",
    ),
    (
        "Call me on +1 555 0100 and I will tell you what I really think.",
        "Contains personal contact details.",
    ),
    (
        "Never used it, but the box looked cheap.",
        "Not a review of the product: please review it once you have used it.",
    ),
]
# Published comments with helpful votes.
VOTED_SHARE = 0.35
# Added by authors who edited their comment later.
UPDATES = {
    "en": "Update after a month: my rating stands.",
    "de": "Nachtrag nach einem Monat: Meine Bewertung bleibt.",
    "fr": "Mise à jour après un mois : je maintiens ma note.",
    "es": "Actualización tras un mes: mantengo mi valoración.",
    "pt-br": "Atualização depois de um mês: mantenho minha nota.",
    "ja": "一か月後の追記。評価は変わりません。",
}
# The merchant's answers, in the comment's language: to a complaint (1-3 stars), to praise.
REPLIES = {
    "en": (
        "We are sorry to hear that. Please write to support@shop.example and we will replace it.",
        "Thank you for your review!",
    ),
    "de": (
        "Das tut uns leid. Bitte schreiben Sie an support@shop.example, wir ersetzen es.",
        "Vielen Dank für Ihre Bewertung!",
    ),
    "fr": (
        "Nous en sommes désolés. Écrivez à support@shop.example et nous le remplacerons.",
        "Merci pour votre avis !",
    ),
    "es": (
        "Lo sentimos. Escríbanos a support@shop.example y se lo cambiaremos.",
        "¡Gracias por su opinión!",
    ),
    "pt-br": (
        "Sentimos muito. Escreva para support@shop.example e faremos a troca.",
        "Obrigado pela avaliação!",
    ),
    "ja": (
        "ご迷惑をおかけしました。support@shop.example までご連絡ください。交換いたします。",
        "レビューありがとうございます。",
    ),
}


def demo_comments(products: int, seed: int = DEMO_SEED) -> Iterator[Comment]:
    """Comments for ``products`` products plus one hot product, deterministic per seed."""
    rng = random.Random(seed)
    plan = [("sku-hot", 2000, False)] + [
        (f"sku-{n:04d}", int(rng.paretovariate(1.2) * 8) % 400, True)
        for n in range(1, products + 1)
    ]
    return lived(synthetic_comments(plan, rng), random.Random(f"life-{seed}"))


def synthetic_comments(plan: list[tuple[str, int, bool]], rng: random.Random) -> Iterator[Comment]:
    """Comments per (product id, count, may lack ratings) over three years, J-shaped ratings
    and skewed languages; products that may lack ratings drop none, one or two of them."""
    end = DEMO_END
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


def lived(comments: Iterable[Comment], rng: random.Random) -> Iterator[Comment]:
    """The comments with a life: some verified purchases; recent ones PENDING (in the
    moderation queue from when they were written); some REJECTED with a moderator's
    note; of the published ones, some edited and some answered by the merchant."""
    for c in comments:
        written = keys.parse_timestamp(c.created_at)
        c = replace(c, verified=rng.random() < VERIFIED_SHARE)
        if DEMO_END - written < timedelta(days=PENDING_DAYS) and rng.random() < PENDING_SHARE:
            yield replace(c, status=Status.PENDING, submitted_at=c.created_at)
        elif rng.random() < REJECTED_SHARE:
            yield _rejected(c, written, rng)
        else:
            if rng.random() < EDITED_SHARE:
                update = UPDATES.get(c.language, UPDATES["en"])
                c = replace(
                    c, body=f"{c.body.rstrip()}\n\n{update}", edited_at=_later(written, 30, rng)
                )
            if rng.random() < REPLY_SHARE[c.rating]:
                c = replace(c, reply=_reply(c, written, rng))
            yield _voted(c, rng)


def _voted(c: Comment, rng: random.Random) -> Comment:
    """Helpful votes: most comments none, a long tail with many equal counts; the
    complaints and the raves draw more of them."""
    if rng.random() > VOTED_SHARE:
        return c
    pull = 2 if c.rating in (1, 5) else 1
    helpful = min(40, int(rng.paretovariate(1.3) * pull))
    return replace(c, helpful=helpful, not_helpful=rng.choice([0, 0, 0, 1, 2]))


def _later(moment: datetime, days: float, rng: random.Random) -> str:
    """A time within ``days`` after ``moment`` (an hour at least), by the demo's end."""
    later = moment + timedelta(hours=1) + timedelta(days=days) * rng.random()
    return keys.format_timestamp(min(later, DEMO_END))


def _rejected(c: Comment, written: datetime, rng: random.Random) -> Comment:
    body, note = rng.choice(REJECTIONS)
    decision = Moderation(
        round=1, decided_by=MODERATOR, decided_at=_later(written, 2, rng), note=note
    )
    return replace(
        c, status=Status.REJECTED, language="en", title=None, body=body, moderation=decision
    )


def _reply(c: Comment, written: datetime, rng: random.Random) -> Reply:
    complaint, thanks = REPLIES.get(c.language, REPLIES["en"])
    created = _later(written, 5, rng)
    edited = None
    if rng.random() < REPLY_EDITED_SHARE:
        edited = _later(keys.parse_timestamp(created), 3, rng)
    body = complaint if c.rating <= 3 else thanks
    return Reply(body=body, author=MERCHANT, created_at=created, edited_at=edited)


def _demo_id(product_id: str, n: int) -> str:
    """The same id for the same demo comment on every run (32 hex digits, like every id)."""
    return hashlib.sha256(f"demo\x00{product_id}\x00{n}".encode()).hexdigest()[:32]
