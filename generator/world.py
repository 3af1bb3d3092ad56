"""The latent world: the hidden causes behind every record.

The world is decided once per (profile, seed, scale) and never uploaded; it is written to `latent/` for
audits and task derivation. Records and texts are its effects. Each latent variable and the task signal it
drives:

| latent variable | drives | task |
|---|---|---|
| agent `skill` | transfer probability (low skill → transfers out), handle-time speed | TCU, HTU |
| agent `speed` (skill + noise) | handle time of the cases the agent owns | HTU, BRI (mixed in) |
| agent `expertise` (specialists per issue, ranked) | routing of new cases and transfers → who has most closed cases per issue | NCR |
| agent active period (`active_from`/`active_to`) | which agents can own cases in a period → period-dependent answers | HTU, TCU |
| agent `violation_propensity` | chance an agent offers a remedy the policy forbids | PVI |
| customer `habit` (month weights) | when customers buy → when cases arise | MTA, NED |
| customer `order_rate`, `category_prefs` | how often and what customers buy | NED, TII |
| customer `state` | region of the case | BRI |
| product `popularity` | how often a product is bought | TII, MTA, NED |
| product `case_rate` | how often a product's purchases turn into cases | TII, MTA |
| product `issue_profile` (+ signature issue) | which issue a product's cases report | TII, NCR |
| product `season` (category peak months ± shift) | which months a product's cases peak in | MTA |
| region `speed` per state and year | closure time of cases of customers in that state | BRI |
| issue `delay_days`, `handle_hours` | time from order to case, base handle time | HTU, BRI, time rules |
| policy table (remedies + windows per issue) | knowledge article text; which offers are violations | PVI, KQA |
| per-case violation label | the violating offer written into a chat or email | PVI |

Non-degeneracy is designed in: every issue has several ranked specialists and no agent specialises in more
than `max_specialties` issues (so case-routing answers spread over issues); products have different
signature issues and seasons (so top-issue and monthly-trend answers vary by product); region speeds drift
by year (so the fastest region depends on the period).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

import numpy as np
import pandas as pd

from generator.rng import derive_seed, np_rng
from generator.text import articles, vocab
from schemas.profile import Profile
from schemas.taskspec import MONTHS
from schemas.textrules import indefinite

MONTH_NAMES = list(MONTHS)


ArticleKind = Literal["issue_policy", "general", "category_guide", "product_guide"]


@dataclass(frozen=True)
class IssueDef:
    key: str
    index: int
    weight: float
    delay_days: float
    handle_hours: float
    priority: str
    remedies: dict[str, int]  # remedy key → window in days since purchase


@dataclass(frozen=True)
class RemedyDef:
    key: str
    phrase: str
    valid_days: int | None = None
    amount: int | None = None
    percent: int | None = None


@dataclass(frozen=True)
class CategoryDef:
    name: str
    index: int
    price: float
    peak_months: tuple[int, ...]
    nouns: tuple[str, ...]
    uses: tuple[str, ...] = ()
    # product type (noun) → its profile entry: price, grams [lo, hi], materials, features, aka
    types: dict[str, dict[str, Any]] = field(default_factory=dict)

    def type_of(self, noun: str) -> dict[str, Any]:
        return self.types.get(noun, {})


@dataclass
class KnowledgeTopic:
    """One knowledge article to write: its kind, subject and the planted facts (question → answer)."""

    key: str
    kind: ArticleKind
    subject: str
    facts: list[dict[str, Any]]
    data: dict[str, Any] = field(default_factory=dict)


@dataclass
class World:
    profile: Profile
    seed: int
    scale: float
    counts: dict[str, int]
    issues: list[IssueDef]
    remedies: dict[str, RemedyDef]
    categories: list[CategoryDef]
    agents: pd.DataFrame
    expertise: np.ndarray  # (agents, issues) routing weights
    customers: pd.DataFrame
    customer_months: np.ndarray  # (customers, 12) purchase month weights
    customer_categories: np.ndarray  # (customers, categories) category preferences
    products: pd.DataFrame
    product_issues: np.ndarray  # (products, issues) issue probabilities
    product_season: np.ndarray  # (products, 12) case-season weights, mean 1
    states: list[str]
    region_speed: np.ndarray  # (states, years) closure-time multiplier
    years: list[int]
    knowledge: list[KnowledgeTopic]

    @property
    def start(self) -> datetime:
        return self.profile.span.start_dt

    @property
    def end(self) -> datetime:
        """Exclusive end of the data span."""
        return self.profile.span.end_dt

    def issue(self, key: str) -> IssueDef:
        for i in self.issues:
            if i.key == key:
                return i
        raise KeyError(key)

    def violation_probability(self) -> np.ndarray:
        """Per-agent probability of breaking a policy when making an offer (mean = profile rate)."""
        v = self.agents["violation_propensity"].to_numpy()
        rate = float(self.profile.latent["cases"]["violation_rate"])
        return np.clip(v / max(v.mean(), 1e-9) * rate, 0.0, 0.9)

    def region_speed_at(self, state_idx: np.ndarray, when: np.ndarray) -> np.ndarray:
        years = pd.DatetimeIndex(when).year.to_numpy()
        col = np.clip(years - self.years[0], 0, len(self.years) - 1)
        return np.asarray(self.region_speed[state_idx, col])


def build_world(profile: Profile, seed: int, scale: float) -> World:
    counts = profile.counts_at(scale)
    lat = profile.latent
    issues = [
        IssueDef(
            key=k,
            index=i,
            weight=float(v["weight"]),
            delay_days=float(v["delay_days"]),
            handle_hours=float(v["handle_hours"]),
            priority=str(v["priority"]),
            remedies={r: int(d) for r, d in v["remedies"].items()},
        )
        for i, (k, v) in enumerate(list(lat["issues"].items())[: counts["Issue__c"]])
    ]
    remedies = {
        k: RemedyDef(k, v["phrase"], v.get("valid_days"), v.get("amount"), v.get("percent"))
        for k, v in lat["remedies"].items()
    }
    categories = [
        CategoryDef(
            n,
            i,
            float(v["price"]),
            tuple(v["peak_months"]),
            tuple(v["types"]) if "types" in v else tuple(v["nouns"]),
            tuple(v.get("uses", ())),
            dict(v.get("types", {})),
        )
        for i, (n, v) in enumerate(list(lat["categories"].items())[: counts["ProductCategory"]])
    ]
    agents, expertise = _agents(profile, seed, counts["User"], len(issues))
    customers, months, cats = _customers(profile, seed, counts["Account"], len(categories))
    products, product_issues, season = _products(profile, seed, counts["Product2"], categories, issues)
    states = list(lat["regions"]["states"])
    years = list(range(profile.span.start.year, profile.span.end.year + 1))
    region_speed = _regions(profile, seed, len(states), len(years))
    knowledge = _knowledge(profile, seed, counts["Knowledge__kav"], issues, remedies, categories)
    return World(
        profile=profile,
        seed=seed,
        scale=scale,
        counts=counts,
        issues=issues,
        remedies=remedies,
        categories=categories,
        agents=agents,
        expertise=expertise,
        customers=customers,
        customer_months=months,
        customer_categories=cats,
        products=products,
        product_issues=product_issues,
        product_season=season,
        states=states,
        region_speed=region_speed,
        years=years,
        knowledge=knowledge,
    )


def _agents(profile: Profile, seed: int, n: int, n_issues: int) -> tuple[pd.DataFrame, np.ndarray]:
    p = profile.latent["agents"]
    rng = np_rng(seed, "world", "agents")
    skill = rng.beta(p["skill_alpha"], p["skill_beta"], n)
    speed = np.exp(-p["speed_skill_effect"] * (skill - 0.5) + rng.normal(0.0, p["speed_noise"], n))
    transfer = np.clip(p["transfer_base"] * np.exp(-p["transfer_skill_slope"] * (skill - 0.5)), 0.01, 0.7)
    violation = rng.beta(p["violation_alpha"], p["violation_beta"], n)
    span = profile.span
    start = np.datetime64(span.start_dt, "s")
    end = np.datetime64(span.end_dt, "s")
    active_from = np.full(n, start - np.timedelta64(365, "D"), dtype="datetime64[s]")
    active_to = np.full(n, end + np.timedelta64(365, "D"), dtype="datetime64[s]")
    late = rng.random(n) < p["late_share"]
    # Keep at least two thirds of the agents on duty for the whole span.
    late_idx = np.flatnonzero(late)
    if len(late_idx) > n // 3:
        late[late_idx[n // 3 :]] = False
    tenure = np.timedelta64(int(p["min_tenure_days"]), "D")
    total = (end - start).astype("timedelta64[D]").astype(int)
    slack = max(1, total - int(p["min_tenure_days"]) - 90)
    joins = rng.random(n) < 0.5
    for i in np.flatnonzero(late):
        offset = np.timedelta64(90 + int(rng.integers(0, slack)), "D")
        if joins[i]:
            active_from[i] = start + offset
        else:
            active_to[i] = start + tenure + np.timedelta64(int(rng.integers(0, slack)), "D")
    # Specialists: chosen among agents on duty for the whole span, weighted by skill.
    steady = np.flatnonzero(~late)
    specialties = np.zeros(n, dtype=int)
    expertise = np.ones((n, n_issues))
    weights = list(p["specialist_weights"])
    per_issue = int(p["specialists_per_issue"])
    primary = np.full(n, -1)
    secondary = np.full(n, -1)
    is_top = np.zeros(n, dtype=bool)
    for issue in rng.permutation(n_issues):
        room = steady[specialties[steady] < p["max_specialties"]]
        if len(room) == 0:
            room = steady
        k = min(per_issue, len(room))
        # The first (heaviest) specialist of every issue is a different agent, so no agent becomes the
        # routing answer for two issues.
        top_room = room[~is_top[room]] if (~is_top[room]).any() else room
        wt = skill[top_room] + 0.2
        top = rng.choice(top_room, p=wt / wt.sum())
        rest_room = room[room != top]
        w = skill[rest_room] + 0.2
        rest = rng.choice(rest_room, size=min(k - 1, len(rest_room)), replace=False, p=w / w.sum())
        chosen = np.concatenate(([top], rest)).astype(int)
        is_top[top] = True
        for rank, agent in enumerate(chosen):
            expertise[agent, issue] = weights[min(rank, len(weights) - 1)]
            if primary[agent] < 0:
                primary[agent] = issue
            elif secondary[agent] < 0:
                secondary[agent] = issue
            specialties[agent] += 1
    tz = [
        "America/Los_Angeles",
        "America/Denver",
        "America/Phoenix",
        "America/Chicago",
        "America/New_York",
    ]
    frame = pd.DataFrame(
        {
            "skill": skill,
            "speed": speed,
            "transfer_prob": transfer,
            "violation_propensity": violation,
            "active_from": active_from,
            "active_to": active_to,
            "primary_issue": primary,
            "secondary_issue": secondary,
            "timezone": [tz[i] for i in rng.integers(0, len(tz), n)],
        }
    )
    return frame, expertise


def _customers(
    profile: Profile, seed: int, n: int, n_cat: int
) -> tuple[pd.DataFrame, np.ndarray, np.ndarray]:
    lat = profile.latent
    rng = np_rng(seed, "world", "customers")
    states = lat["regions"]["states"]
    names = list(states)
    sw = np.array([states[s]["weight"] for s in names], dtype=float)
    state_idx = rng.choice(len(names), size=n, p=sw / sw.sum())
    cities = [
        states[names[s]]["cities"][int(rng.integers(0, len(states[names[s]]["cities"])))] for s in state_idx
    ]
    habits = lat["habits"]
    hnames = list(habits)
    hw = np.array([habits[h]["share"] for h in hnames], dtype=float)
    habit_idx = rng.choice(len(hnames), size=n, p=hw / hw.sum())
    month_table = np.array([habits[h]["months"] for h in hnames], dtype=float)
    months = month_table[habit_idx] * rng.lognormal(0.0, 0.2, (n, 12))
    rate = rng.lognormal(0.0, lat["customers"]["order_rate_sigma"], n)
    cats = rng.dirichlet(np.full(n_cat, lat["customers"]["category_concentration"]), size=n)
    span = profile.span
    total_days = span.days
    joined_offset = np.where(rng.random(n) < 0.6, 0, rng.integers(0, max(1, total_days - 180), n))
    joined = np.datetime64(span.start_dt, "s") + joined_offset.astype("timedelta64[D]")
    frame = pd.DataFrame(
        {
            "state_idx": state_idx,
            "state": [names[s] for s in state_idx],
            "city": cities,
            "habit": [hnames[h] for h in habit_idx],
            "order_rate": rate,
            "joined": joined.astype("datetime64[s]"),
        }
    )
    return frame, months, cats


def _season(peaks: tuple[int, ...], shift: int, strength: float) -> np.ndarray:
    m = np.arange(12)
    w = np.ones(12)
    for peak in peaks:
        centre = (peak - 1 + shift) % 12
        d = np.minimum(np.abs(m - centre), 12 - np.abs(m - centre))
        w += strength * 2.0 * np.exp(-(d**2) / (2 * 0.8**2))
    return w / w.mean()


def _products(
    profile: Profile, seed: int, n: int, categories: list[CategoryDef], issues: list[IssueDef]
) -> tuple[pd.DataFrame, np.ndarray, np.ndarray]:
    p = profile.latent["products"]
    rng = np_rng(seed, "world", "products")
    n_cat, n_iss = len(categories), len(issues)
    cat_of = np.array([i % n_cat for i in range(n)])
    cat_of = cat_of[rng.permutation(n)]
    popularity = rng.lognormal(0.0, p["popularity_sigma"], n)
    case_rate = rng.lognormal(0.0, p["case_rate_sigma"], n)
    price_mult = rng.lognormal(0.0, p["price_sigma"], n)
    # Issue profiles: issue weight × category affinity (unlisted issues get 0.35), Dirichlet noise, and
    # a signature issue that takes at least b/(1+b) of the product's cases.
    cat_aff = np.full((n_cat, n_iss), 0.35)
    raw = profile.latent["categories"]
    for c in categories:
        for key, mult in raw[c.name]["issues"].items():
            for iss in issues:
                if iss.key == key:
                    cat_aff[c.index, iss.index] = mult
    base = cat_aff * np.array([i.weight for i in issues])[None, :]
    base = base / base.sum(axis=1, keepdims=True)
    alpha = p["issue_concentration"] * n_iss
    draws = np.stack([rng.dirichlet(alpha * base[c] + 1e-3) for c in cat_of])
    signature = np.array([rng.choice(n_iss, p=base[c]) for c in cat_of])
    boost = float(p["signature_issue_boost"])
    probs = draws.copy()
    probs[np.arange(n), signature] += boost
    probs /= probs.sum(axis=1, keepdims=True)
    shift = rng.integers(-1, 2, n)
    season = np.stack(
        [
            _season(categories[c].peak_months, int(s), float(p["season_strength"]))
            for c, s in zip(cat_of, shift, strict=True)
        ]
    )
    # Naming: a unique (noun, modifier) pair per product within its category.
    noun_idx = np.zeros(n, dtype=int)
    modifier_idx = np.zeros(n, dtype=int)
    for c in categories:
        members = np.flatnonzero(cat_of == c.index)
        n_nouns = len(c.nouns)
        combos = rng.permutation(n_nouns * 60)[: len(members)]
        noun_idx[members] = combos % n_nouns
        modifier_idx[members] = combos // n_nouns
    nouns = [categories[c].nouns[k] for c, k in zip(cat_of, noun_idx, strict=True)]
    # A product type's own list price, where the profile gives one, replaces its category's.
    type_price = np.array(
        [
            float(categories[c].type_of(t).get("price", categories[c].price))
            for c, t in zip(cat_of, nouns, strict=True)
        ]
    )
    base_price = np.maximum(4.99, np.floor(type_price * price_mult) + 0.99)
    frame = pd.DataFrame(
        {
            "category_idx": cat_of,
            "category": [categories[c].name for c in cat_of],
            "noun": nouns,
            "modifier_idx": modifier_idx,
            "popularity": popularity,
            "case_rate": case_rate,
            "base_price": base_price,
            "signature_issue": signature,
            "season_shift": shift,
            **_attributes(seed, [categories[c] for c in cat_of], nouns),
        }
    )
    return frame, probs, season


def _round_grams(g: float) -> int:
    """Weights as a product page states them: to 5 g below 1 kg, 50 g below 5 kg, whole kilograms above."""
    step = 5 if g < 1000 else 50 if g < 5000 else 1000
    return int(max(step, round(g / step) * step))


def _attributes(seed: int, cats: list[CategoryDef], nouns: list[str]) -> dict[str, list[Any]]:
    """Per product: weight in grams, material and two features, drawn from its type's ranges in the profile.

    Products of a type without a profile entry get empty attributes (the writer then describes the category).
    A stream of its own, so the attributes never shift the other product draws.
    """
    rng = np_rng(seed, "world", "product_attributes")
    grams: list[Any] = []
    material: list[str] = []
    features: list[str] = []
    for cat, noun in zip(cats, nouns, strict=True):
        t = cat.type_of(noun)
        if not t:
            grams.append(None)
            material.append("")
            features.append("")
            continue
        lo, hi = (float(x) for x in t["grams"])
        grams.append(_round_grams(float(np.exp(rng.uniform(np.log(lo), np.log(hi))))))
        material.append(str(t["materials"][int(rng.integers(0, len(t["materials"])))]))
        pick = sorted(rng.choice(len(t["features"]), size=2, replace=False).tolist())
        features.append("; ".join(str(t["features"][k]) for k in pick))
    return {"weight_grams": grams, "material": material, "features": features}


def _regions(profile: Profile, seed: int, n_states: int, n_years: int) -> np.ndarray:
    p = profile.latent["regions"]
    rng = np_rng(seed, "world", "regions")
    level = rng.normal(0.0, p["speed_sigma"], n_states)
    walk = np.cumsum(rng.normal(0.0, p["yearly_drift"], (n_states, n_years)), axis=1)
    return np.asarray(np.exp(level[:, None] + walk))


def _days(n: int) -> str:
    return f"{n} day" if n == 1 else f"{n} days"


def article(phrase: str) -> str:
    """`a`/`an` + phrase, or the phrase alone when it is plural or a mass noun ("store credit")."""
    return indefinite(phrase)


def _knowledge(
    profile: Profile,
    seed: int,
    count: int,
    issues: list[IssueDef],
    remedies: dict[str, RemedyDef],
    categories: list[CategoryDef],
) -> list[KnowledgeTopic]:
    """The articles the org holds, each with the facts it must state (the basis of knowledge QA)."""
    k = profile.latent["knowledge"]
    company = profile.company.name
    topics: list[KnowledgeTopic] = []
    for iss in issues:
        iname = vocab.ISSUE_NAMES.get(iss.key, iss.key.replace("_", " ").capitalize())
        sits = articles.situations(iss.key, iname)
        prng = random.Random(derive_seed(seed, "knowledge", "policy", iss.key))
        facts: list[dict[str, Any]] = []
        for rkey, window in iss.remedies.items():
            r = remedies[rkey]
            frames = [f.replace("{a_phrase}", article(r.phrase)) for f in articles.REMEDY_ASKS]
            facts.append(
                {
                    "question": f"Within how many days of purchase can an agent offer {article(r.phrase)} for {{issue}} cases?",
                    "answer": _days(window),
                    "remedy": rkey,
                    "asks": articles.pick_asks(prng, frames, sits),
                }
            )
        facts.append(
            {
                "question": "Which resolutions may agents offer for {issue} cases?",
                "answer": ", ".join(remedies[r].phrase for r in iss.remedies),
                "asks": articles.pick_asks(prng, articles.ALLOWED_ASKS, sits),
            }
        )
        for question, answer, asks, says in articles.HANDLING.get(iss.key, []):
            facts.append(
                {
                    "question": question,
                    "answer": answer,
                    "asks": articles.pick_asks(prng, asks, sits),
                    "says": list(says),
                }
            )
        topics.append(
            KnowledgeTopic(
                key=f"policy-{iss.key}",
                kind="issue_policy",
                subject=iss.key,
                facts=facts,
                data={"issue": iss.key, "remedies": dict(iss.remedies)},
            )
        )
    general: list[tuple[str, list[dict[str, Any]]]] = [
        (
            "return_policy",
            [
                {
                    "question": f"How many days after purchase can items be returned to {company}?",
                    "answer": _days(k["return_window_days"]),
                },
                {
                    "question": "Within how many days must a defect be reported to get a full refund?",
                    "answer": _days(k["defect_report_days"]),
                },
            ],
        ),
        (
            "exchange_policy",
            [
                {
                    "question": "How long do customers have to exchange an item for a different size?",
                    "answer": _days(k["exchange_window_days"]),
                }
            ],
        ),
        (
            "order_cancellation",
            [
                {
                    "question": "Within how many hours of placing an order can it be cancelled?",
                    "answer": f"{k['cancellation_window_hours']} hours",
                }
            ],
        ),
        (
            "store_credit",
            [
                {
                    "question": "How many days does store credit remain valid after it is issued?",
                    "answer": _days(remedies["store_credit"].valid_days or 90)
                    if "store_credit" in remedies
                    else "90 days",
                }
            ],
        ),
        (
            "loyalty_program",
            [
                {
                    "question": "How many loyalty points are earned per dollar spent?",
                    "answer": f"{k['loyalty_points_per_dollar']} points",
                },
                {
                    "question": "Do loyalty points expire?",
                    "answer": "No, loyalty points never expire"
                    if not k["loyalty_points_expire"]
                    else "Yes, after one year",
                },
                {
                    "question": "How many loyalty points does a $100 purchase earn?",
                    "answer": f"{100 * k['loyalty_points_per_dollar']} points",
                },
                {
                    "question": "How many loyalty points does an agent credit as compensation?",
                    "answer": f"{(remedies['loyalty_points'].amount if 'loyalty_points' in remedies else None) or 500} points",
                },
            ],
        ),
        (
            "shipping_policy",
            [
                {
                    "question": "What order total qualifies for free standard shipping?",
                    "answer": f"orders over ${k['free_shipping_threshold']}",
                },
                {
                    "question": "How many business days does standard shipping take?",
                    "answer": f"{k['standard_shipping_days']} business days",
                },
                {
                    "question": "How many business days does express shipping take?",
                    "answer": f"{k['express_shipping_days']} business days",
                },
            ],
        ),
        (
            "warranty_policy",
            [
                {
                    "question": "How long is the warranty on footwear and equipment?",
                    "answer": _days(k["warranty_days"]),
                }
            ],
        ),
        (
            "discount_codes",
            [
                {
                    "question": "How many days is a service discount code valid?",
                    "answer": _days(remedies["discount_code"].valid_days or 60)
                    if "discount_code" in remedies
                    else "60 days",
                },
                {
                    "question": "What percentage off does a service discount code give?",
                    "answer": f"{remedies['discount_code'].percent or 15}% off"
                    if "discount_code" in remedies
                    else "15% off",
                },
            ],
        ),
        (
            "free_shipping_voucher",
            [
                {
                    "question": "How long is a free shipping voucher valid?",
                    "answer": _days(remedies["free_shipping"].valid_days or 180)
                    if "free_shipping" in remedies
                    else "180 days",
                }
            ],
        ),
        (
            "price_match",
            [
                {
                    "question": "Within how many days of purchase can a customer ask for a price match?",
                    "answer": _days(k["price_match_days"]),
                }
            ],
        ),
        (
            "gift_cards",
            [
                {
                    "question": "Do gift cards expire?",
                    "answer": "No, gift cards never expire"
                    if not k["gift_card_expire"]
                    else "Yes, after one year",
                }
            ],
        ),
    ]
    for key, facts in general:
        asks_says = articles.GENERAL.get(key, [])
        for i, fact in enumerate(facts):
            prng = random.Random(derive_seed(seed, "knowledge", key, i))
            asks, says = asks_says[i] if i < len(asks_says) else ([fact["question"]], ["{answer}."])
            fact["asks"] = [a.replace("{company}", company) for a in prng.sample(asks, len(asks))]
            fact["says"] = list(says)
        topics.append(KnowledgeTopic(key=f"general-{key}", kind="general", subject=key, facts=facts))
    topics.extend(_guides(profile, seed, categories))
    if len(topics) < count:
        raise ValueError(
            f"the profile asks for {count} knowledge articles but the world has topics for {len(topics)}; "
            "lower Knowledge__kav in the profile's counts or add categories."
        )
    return topics[:count]


def _guides(profile: Profile, seed: int, categories: list[CategoryDef]) -> list[KnowledgeTopic]:
    """One care, fit and warranty guide per category, interleaved with product-specific guides (features,
    lifespan, wear signs, troubleshooting), so that a shorter list keeps both kinds."""
    company = profile.company.name
    rng = np_rng(seed, "world", "knowledge")
    fits = ["true to size", "half a size small", "half a size large", "slightly narrow", "slightly roomy"]
    warranty = {
        "apparel": "6 months",
        "footwear": "12 months",
        "equipment": "12 months",
        "electronics": "24 months",
    }
    care: list[KnowledgeTopic] = []
    for c in categories:
        fam = articles.family(c.name)
        options = articles.CARE_OPTIONS[fam]
        values = {
            "wash": options["wash"][int(rng.integers(0, len(options["wash"])))],
            "dry": options["dry"][int(rng.integers(0, len(options["dry"])))],
            "iron": options["iron"][int(rng.integers(0, len(options["iron"])))],
            "fit": fits[int(rng.integers(0, len(fits)))],
            "between": ["size up", "size down"][int(rng.integers(0, 2))],
            "warranty": warranty[fam],
        }
        prng = random.Random(derive_seed(seed, "knowledge", "care", c.name))
        facts: list[dict[str, Any]] = []
        for fact_key, answer in values.items():
            if fam in ("equipment", "electronics") and fact_key in ("fit", "between"):
                continue
            question, asks, says = articles.CARE_QUESTIONS[fact_key]
            chosen = prng.sample(asks, len(asks))
            per_ask = [articles.noun_forms(prng.choice(c.nouns)) for _ in chosen]
            facts.append(
                {
                    "question": question.format(cat=c.name),
                    "answer": answer,
                    "asks": [
                        a.format(cat=c.name, company=company, **f)
                        for a, f in zip(chosen, per_ask, strict=True)
                    ],
                    "says": list(says),
                }
            )
        care.append(
            KnowledgeTopic(
                key=f"care-{_slug(c.name)}",
                kind="category_guide",
                subject=c.name,
                facts=facts,
                data={"guide": "care", "category": c.name, "family": fam, **values},
            )
        )
    products: list[KnowledgeTopic] = []
    depth = max((len(c.nouns) for c in categories), default=0)
    for level in range(depth):
        for c in categories:
            if level >= len(c.nouns):
                continue
            noun = c.nouns[level]
            forms = articles.noun_forms(noun)
            prng = random.Random(derive_seed(seed, "knowledge", "product", noun))
            feats = list(vocab.PRODUCT_FEATURES.get(c.name, [])) or ["durable materials", "a comfortable fit"]
            a, b = prng.sample(feats, 2) if len(feats) > 1 else (feats[0], "careful finishing")
            # In turn rather than drawn, so no troubleshooting answer is in more than a couple of guides.
            problem_pl, problem_sg, fix = articles.TROUBLES[len(products) % len(articles.TROUBLES)]
            plural = forms["it"] == "them"
            product_values = {
                "life": f"about {int(rng.integers(6, 25))} months",
                "feature": f"{a} and {b}",
                "sign": articles.SIGNS[len(products) % len(articles.SIGNS)],
                "trouble": fix,
            }
            fill = {
                **forms,
                "company": company,
                "cat": c.name,
                "problem": problem_pl,
                "problem_short": problem_pl if plural else problem_sg,
            }
            facts = []
            for fact_key, answer in product_values.items():
                question, asks, says = articles.PRODUCT_QUESTIONS[fact_key]
                facts.append(
                    {
                        "question": question.format(**fill),
                        "answer": answer,
                        "asks": [x.format(**fill) for x in prng.sample(asks, len(asks))],
                        "says": [x.format(answer="{answer}", **fill) for x in says],
                    }
                )
            products.append(
                KnowledgeTopic(
                    key=f"guide-{_slug(noun)}",
                    kind="product_guide",
                    subject=noun,
                    facts=facts,
                    data={"category": c.name, "noun": noun, **product_values},
                )
            )
    out: list[KnowledgeTopic] = []
    for i in range(max(len(care), len(products))):
        out.extend(care[i : i + 1])
        out.extend(products[i : i + 1])
    return out


def _slug(text: str) -> str:
    out = "".join(ch.lower() if ch.isalnum() else "-" for ch in text)
    while "--" in out:
        out = out.replace("--", "-")
    return out.strip("-")
