"""The demo's facets: a topic taxonomy in five languages, the shop's questions for a group
of shoes and for a pair of headphones, and reviews of those products that mention the
topics, answer the questions and are now and then incentivized.

The products are new ones, beside those of ``demo`` (which stay as they are): the group
``demo-runner`` of three variants (``demo-runner-red``, which runs small, ``-blue`` and
``-black``), and ``demo-headphones`` outside any group. Each review is made of sentences
written for one topic in one language, praise under 4 or 5 stars, complaints under 1 or 2,
one of each under 3, so the topics each review mentions are known before it is tagged
(a test tags every one). Deterministic per seed, as ``demo`` is. Pure: no I/O
(``server.dev.seeding`` writes it).
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta
from typing import TypeVar

from server.dev.demo import DEMO_END, DEMO_SEED
from storage.model import keys
from storage.model.comments import NewComment

GROUP_ID = "demo-runner"
VARIANTS = ("demo-runner-red", "demo-runner-blue", "demo-runner-black")
HEADPHONES = "demo-headphones"
# Reviews per product: a few hundred in all keeps the first start quick (each is written
# by the create path, one transaction apiece).
REVIEWS = {HEADPHONES: 70, "demo-runner-red": 40, "demo-runner-blue": 30, "demo-runner-black": 20}
# Topics each product's reviews talk about.
SUBJECTS = {
    HEADPHONES: ("battery-life", "sound", "comfort", "delivery", "price"),
    GROUP_ID: ("comfort", "fit", "delivery", "price"),
}
LANGUAGES = {"en": 0.40, "de": 0.20, "fr": 0.15, "es": 0.15, "ja": 0.10}
RATINGS = {5: 0.45, 4: 0.22, 3: 0.10, 2: 0.08, 1: 0.15}
DAYS = 120  # the reviews were written over the months before DEMO_END
VERIFIED_SHARE = 0.5
# Incentivized reviews (a free sample, a voucher) rave more than others.
INCENTIVIZED_SHARE = {5: 0.30, 4: 0.15, 3: 0.05, 2: 0.0, 1: 0.0}
ANSWER_SHARE = 0.75  # of each question, for reviewers who answer at all (most do)
# How each variant fits, by the answers of its reviewers: the red one runs small.
FIT = {
    "demo-runner-red": {"small": 0.55, "true-to-size": 0.40, "large": 0.05},
    "demo-runner-blue": {"small": 0.10, "true-to-size": 0.75, "large": 0.15},
    "demo-runner-black": {"small": 0.10, "true-to-size": 0.60, "large": 0.30},
}
USES = {"commute": 0.4, "sport": 0.2, "home": 0.2, "travel": 0.2}
AUTHORS = ["kai", "lea", "mateo", "nora", "oskar", "paula", "rosa", "sven", "tomoko", "yuki"]

LABELS = ("en", "de", "fr", "es", "ja")
T = TypeVar("T")


def _labels(*texts: str) -> dict[str, str]:
    return dict(zip(LABELS, texts, strict=True))


def _topic(key: str, labels: dict[str, str], words: dict[str, list[str]]) -> dict[str, object]:
    return {"key": key, "labels": labels, "words": words}


TAXONOMY: dict[str, object] = {
    "format": 1,
    "defaultLanguage": "en",
    "topics": [
        _topic(
            "battery-life",
            _labels("Battery life", "Akkulaufzeit", "Autonomie", "Batería", "バッテリー"),
            {
                "en": ["battery", "battery life", "charge"],
                "de": ["Akku", "Akkulaufzeit"],
                "fr": ["batterie", "autonomie"],
                "es": ["batería", "autonomía"],
                "ja": ["バッテリー", "電池"],
            },
        ),
        _topic(
            "sound",
            _labels("Sound", "Klang", "Son", "Sonido", "音質"),
            {
                "en": ["sound", "audio", "bass"],
                "de": ["Klang", "Bass"],
                "fr": ["qualité du son", "basses"],
                "es": ["sonido", "graves"],
                "ja": ["音質", "低音"],
            },
        ),
        _topic(
            "comfort",
            _labels("Comfort", "Tragekomfort", "Confort", "Comodidad", "快適さ"),
            {
                "en": ["comfort", "uncomfortable"],
                "de": ["bequem", "unbequem", "Tragekomfort"],
                "fr": ["confortable", "inconfortable"],
                "es": ["cómodo", "incómodo"],
                "ja": ["快適", "心地"],
            },
        ),
        _topic(
            "fit",
            _labels("Fit", "Passform", "Taille", "Talla", "サイズ感"),
            {
                "en": ["fit", "size"],
                "de": ["Passform", "Größe"],
                "fr": ["taille"],
                "es": ["talla"],
                "ja": ["サイズ"],
            },
        ),
        _topic(
            "delivery",
            _labels("Delivery", "Lieferung", "Livraison", "Envío", "配送"),
            {
                "en": ["delivery", "shipping"],
                "de": ["Lieferung", "Versand"],
                "fr": ["livraison"],
                "es": ["envío", "entrega"],
                "ja": ["配送", "到着"],
            },
        ),
        _topic(
            "price",
            _labels("Price", "Preis", "Prix", "Precio", "価格"),
            {
                "en": ["price", "value for money"],
                "de": ["Preis"],
                "fr": ["prix", "rapport qualité-prix"],
                "es": ["precio", "calidad-precio"],
                "ja": ["価格", "値段"],
            },
        ),
    ],
}


def _question(key: str, kind: str, label: dict[str, str], **more: object) -> dict[str, object]:
    return {"key": key, "kind": kind, "defaultLanguage": "en", "label": label, **more}


def _choice(value: str, label: dict[str, str]) -> dict[str, object]:
    return {"value": value, "label": label}


_COMFORT = _question(
    "comfort",
    "SCALE",
    _labels(
        "How comfortable?", "Wie bequem?", "Quel confort ?", "¿Qué tan cómodo?", "快適さは\uff1f"
    ),
)
_RECOMMEND = _question(
    "would-recommend",
    "BOOLEAN",
    _labels(
        "Would you recommend it?",
        "Würden Sie es empfehlen?",
        "Le recommanderiez-vous ?",
        "¿Lo recomendaría?",
        "おすすめしますか\uff1f",
    ),
    values=[
        _choice("yes", _labels("Yes", "Ja", "Oui", "Sí", "はい")),
        _choice("no", _labels("No", "Nein", "Non", "No", "いいえ")),
    ],
)
# The group's questions: every variant's reviewers answer them.
GROUP_DEFINITIONS: list[dict[str, object]] = [
    _question(
        "fit",
        "CHOICE",
        _labels(
            "How does it fit?", "Wie passt es?", "Taille", "¿Qué tal la talla?", "サイズ感は\uff1f"
        ),
        values=[
            _choice("small", _labels("Small", "Klein", "Petit", "Pequeña", "小さめ")),
            _choice(
                "true-to-size",
                _labels("True to size", "Passt genau", "Taille normale", "Justa", "ちょうどいい"),
            ),
            _choice("large", _labels("Large", "Groß", "Grand", "Grande", "大きめ")),
        ],
    ),
    _COMFORT,
    _RECOMMEND,
]
HEADPHONES_DEFINITIONS: list[dict[str, object]] = [
    _question(
        "used-for",
        "CHOICE",
        _labels(
            "What do you use them for?",
            "Wofür nutzen Sie ihn?",
            "Pour quel usage ?",
            "¿Para qué los usa?",
            "主な用途は\uff1f",
        ),
        values=[
            _choice("commute", _labels("Commuting", "Pendeln", "Trajets", "Trayectos", "通勤")),
            _choice("sport", _labels("Sport", "Sport", "Sport", "Deporte", "スポーツ")),
            _choice("home", _labels("At home", "Zu Hause", "À la maison", "En casa", "自宅")),
            _choice("travel", _labels("Travel", "Reisen", "Voyages", "Viajes", "旅行")),
        ],
    ),
    _COMFORT,
    _RECOMMEND,
]

# Per topic and language: (praise, complaint). Each sentence mentions its topic only.
SENTENCES: dict[str, dict[str, tuple[str, str]]] = {
    "battery-life": {
        "en": ("The battery lasts all week.", "The battery dies after two hours."),
        "de": ("Der Akku hält eine ganze Woche.", "Der Akku ist nach zwei Stunden leer."),
        "fr": ("La batterie tient toute la semaine.", "La batterie se vide en deux heures."),
        "es": ("La batería dura toda la semana.", "La batería se agota en dos horas."),
        "ja": ("バッテリーが一週間もちます。", "バッテリーが二時間で切れます。"),
    },
    "sound": {
        "en": ("The sound is rich and clear.", "The sound is thin and tinny."),
        "de": ("Der Klang ist klar und warm.", "Der Klang ist blechern."),
        "fr": ("La qualité du son est superbe.", "La qualité du son est décevante."),
        "es": ("El sonido es claro y potente.", "El sonido es pobre."),
        "ja": ("音質がクリアです。", "音質がいまひとつです。"),
    },
    "comfort": {
        "en": ("Comfortable even after hours.", "Uncomfortable after an hour."),
        "de": ("Sehr bequem, auch nach Stunden.", "Nach einer Stunde unbequem."),
        "fr": ("Très confortable, même après des heures.", "Inconfortable après une heure."),
        "es": ("Muy cómodos, incluso después de horas.", "Incómodos después de una hora."),
        "ja": ("長時間でも快適です。", "一時間で痛くなり、快適とは言えません。"),
    },
    "fit": {
        "en": ("The size is spot on.", "The size runs small, order one up."),
        "de": ("Die Passform ist perfekt.", "Die Größe fällt klein aus."),
        "fr": ("La taille est parfaite.", "La taille est petite, prenez au-dessus."),
        "es": ("La talla es perfecta.", "La talla es pequeña, pide una más."),
        "ja": ("サイズがぴったりです。", "サイズが小さめです。"),
    },
    "delivery": {
        "en": ("Fast delivery, well packed.", "The delivery took three weeks."),
        "de": ("Schnelle Lieferung, gut verpackt.", "Die Lieferung hat drei Wochen gedauert."),
        "fr": ("Livraison rapide et soignée.", "Livraison en trois semaines, colis abîmé."),
        "es": ("Envío rápido y bien embalado.", "La entrega tardó tres semanas."),
        "ja": ("配送が早く、梱包も丁寧でした。", "到着まで三週間かかりました。"),
    },
    "price": {
        "en": ("Great value for money.", "The price is far too high."),
        "de": ("Für den Preis unschlagbar.", "Der Preis ist viel zu hoch."),
        "fr": ("Excellent rapport qualité-prix.", "Le prix est bien trop élevé."),
        "es": ("Muy buena relación calidad-precio.", "El precio es demasiado alto."),
        "ja": ("この価格なら大満足です。", "値段の割に品質が低いです。"),
    },
}
# Titles by rating, mentioning no topic.
TITLES = {
    "en": {5: "Love them", 4: "Very good", 3: "Okay", 2: "Disappointing", 1: "Do not buy"},
    "de": {5: "Begeistert", 4: "Sehr gut", 3: "Geht so", 2: "Enttäuschend", 1: "Finger weg"},
    "fr": {5: "Génial", 4: "Très bien", 3: "Correct", 2: "Décevant", 1: "À éviter"},
    "es": {5: "Me encantan", 4: "Muy bien", 3: "Normal", 2: "Decepcionante", 1: "No los compres"},
    "ja": {5: "最高です", 4: "とても良い", 3: "普通", 2: "残念", 1: "買わないで"},
}


@dataclass(frozen=True, slots=True)
class FacetReview:
    """A demo review as the create path takes it, and the topics its text was written to
    mention (what the taxonomy must tag it with)."""

    new: NewComment
    answers: tuple[dict[str, str], ...]
    topics: frozenset[str]


def facet_reviews(seed: int = DEMO_SEED) -> list[FacetReview]:
    """The demo's reviews with facets, the same for the same seed."""
    rng = random.Random(f"facets-{seed}")
    return [review for product in REVIEWS for review in _reviews(product, rng)]


def _reviews(product_id: str, rng: random.Random) -> Iterator[FacetReview]:
    grouped = product_id in VARIANTS
    subjects = SUBJECTS[GROUP_ID if grouped else HEADPHONES]
    for n in range(REVIEWS[product_id]):
        language = _pick(rng, LANGUAGES)
        rating = _pick(rng, RATINGS)
        topics = rng.sample(subjects, rng.choice([1, 1, 2, 2, 3]))
        # Under 3 stars the first topic is praised and the second complained about.
        praised = [rating >= 4 or (rating == 3 and i == 0) for i in range(len(topics))]
        sentences = zip(topics, praised, strict=True)
        body = " ".join(SENTENCES[t][language][0 if good else 1] for t, good in sentences)
        author = AUTHORS[n % len(AUTHORS)]
        written = DEMO_END - timedelta(seconds=rng.random() * DAYS * 86400)
        complains_of_fit = "fit" in topics and not praised[topics.index("fit")]
        new = NewComment(
            product_id=product_id,
            language=language,
            rating=rating,
            title=TITLES[language][rating] if rng.random() < 0.8 else None,
            body=body,
            author_id=f"{author}-{n // len(AUTHORS)}",
            author_name=author.capitalize(),
            created_at=keys.format_timestamp(written),
            verified=rng.random() < VERIFIED_SHARE,
            incentivized=rng.random() < INCENTIVIZED_SHARE[rating],
        )
        answers = _answers(product_id, rating, complains_of_fit, rng)
        yield FacetReview(new, answers, frozenset(topics))


def _answers(
    product_id: str, rating: int, complains_of_fit: bool, rng: random.Random
) -> tuple[dict[str, str], ...]:
    if rng.random() < 0.15:  # some reviewers skip the questions
        return ()
    recommend = "yes" if rating >= 4 else "no" if rating <= 2 else rng.choice(["yes", "no"])
    comfort = str(min(5, max(1, rating + rng.choice([-1, 0, 0, 1]))))
    if product_id in FIT:
        first = ("fit", "small" if complains_of_fit else _pick(rng, FIT[product_id]))
    else:
        first = ("used-for", _pick(rng, USES))
    given = [first, ("comfort", comfort), ("would-recommend", recommend)]
    return tuple(
        {"key": key, "value": value} for key, value in given if rng.random() < ANSWER_SHARE
    )


def _pick(rng: random.Random, weights: dict[T, float]) -> T:
    return rng.choices(list(weights), weights=list(weights.values()))[0]
