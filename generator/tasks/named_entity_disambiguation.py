"""Named Entity Disambiguation (NED).

Reference solver (crmarena.md §7.4), with orgseed's stated choices:
- NED: purchase date = today − the period; the product must match the search term (every word of the term, as a
  whole word, in the product's Name, Description, ProductCode or Family — SOSL's ALL FIELDS over Product2 text);
  the answer is the product of the contact's Activated orders placed exactly on that date; none → None.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import Any

import numpy as np
import pandas as pd
from dateutil.relativedelta import relativedelta

from generator.tasks.common import Instance, OrgData, Solution, iso, today_line
from generator.text.base import TextKind, TextRequest, TextWriter

TOKEN = re.compile(r"[A-Za-z0-9]+")

NED_POLICY = """## Order Lookup Policy
- "N days/weeks/months ago" counts back from today's date by calendar days, weeks (7 days) or months; a
  fortnight is 2 weeks.
- Only the contact's Activated orders placed exactly on that date count.
- If no product of such an order matches what the customer describes, answer None."""


def _tokens(text: object) -> set[str]:
    return {t.lower() for t in TOKEN.findall(str(text or ""))}


class _Groups:
    """The positions of each number's rows in an array of numbers (-1: in no group), in row order, held as
    one array of positions sorted by number and each number's slice of it: not an array object and a dict
    entry per key (at scale 1,000, ~196,000 accounts, twice)."""

    def __init__(self, codes: np.ndarray, size: int) -> None:
        self._ends = np.cumsum(np.bincount(codes[codes >= 0], minlength=size))
        # the rows in no group (number -1) sort first
        self._rows = np.argsort(codes, kind="stable")[np.count_nonzero(codes < 0) :].astype(np.int32)

    def get(self, code: int) -> np.ndarray | None:
        """The number's positions, or None for a number with no row."""
        if not 0 <= code < len(self._ends):
            return None
        start, end = (int(self._ends[code - 1]) if code else 0), int(self._ends[code])
        return self._rows[start:end] if end > start else None

    def __getitem__(self, code: int) -> np.ndarray:
        rows = self.get(code)
        if rows is None:
            raise KeyError(code)
        return rows


_EPOCH = date(1970, 1, 1)
_NO_DAY = np.iinfo(np.int32).min  # an order without a date: no day a question asks about


@dataclass
class _Purchases:
    """Every order item as NED reads it, in numbers rather than strings (at scale 1,000, 7.1 M items: ~330 MB
    as strings' pointers and 8-byte dates, about half as numbers): per item, its account's number (-1: its
    order has none, or it has no order) and its product's; the activated ones' accounts, days (since
    1970-01-01) and products; and each account's positions among both."""

    accounts: pd.Index  # number → account id
    products: np.ndarray  # number → product id, then None (number -1)
    bought_accounts: np.ndarray  # int32
    bought_days: np.ndarray  # int32
    bought_products: np.ndarray  # int32
    by_account: _Groups  # account number → its positions among the activated items
    ever_products: np.ndarray  # int32, every item's product
    ever_by_account: _Groups  # account number → its positions among every item

    def account(self, account_id: Any) -> int:
        """The account's number (-1: no item's order names it)."""
        if not isinstance(account_id, str):
            return -1
        try:
            return int(self.accounts.get_loc(account_id))
        except KeyError:
            return -1

    def product(self, codes: np.ndarray) -> list[Any]:
        return self.products[codes].tolist()


def _day(when: date) -> int:
    return (when - _EPOCH).days


def _ned_index(data: OrgData) -> dict[str, Any]:
    if "ned" in data.cache:
        return data.cache["ned"]
    p = data.products
    text_tokens = {
        pid: _tokens(f"{n} {d} {c} {f}")
        for pid, n, d, c, f in zip(
            p["Id"], p["Name"], p["Description"], p["ProductCode"], p["Family"], strict=True
        )
    }
    name_tokens = {pid: _tokens(n) for pid, n in zip(p["Id"], p["Name"], strict=True)}
    orders = data.by_id("orders")
    # per order item: its order's position (-1: none) and its product
    order, product = data.item_links()
    found = order >= 0
    at = np.maximum(order, 0)
    # per order: its account's number (-1: none); per item: its order's account's (-1: no order) and whether
    # the order is Activated
    order_account, accounts = pd.factorize(orders["AccountId"].to_numpy(dtype=object))
    account = np.where(found, order_account.take(at), -1).astype(np.int32)
    activated = found & (orders["Status"].to_numpy(dtype=object).take(at) == "Activated")
    del order_account
    codes, products = pd.factorize(product)
    codes = codes.astype(np.int32)
    dates = orders["EffectiveDate"].to_numpy(dtype="datetime64[D]").take(order[activated])
    days = np.where(np.isnat(dates), _NO_DAY, dates.astype(np.int64)).astype(np.int32)
    del dates
    bought_accounts = account[activated]
    contact_account = dict(zip(data.contacts["Id"], data.contacts["AccountId"], strict=True))
    data.cache["ned"] = {
        "text": text_tokens,
        "name": name_tokens,
        "purchases": _Purchases(
            accounts=pd.Index(accounts, dtype=object),
            products=np.concatenate([np.asarray(products, dtype=object), np.array([None], dtype=object)]),
            bought_accounts=bought_accounts,
            bought_days=days,
            bought_products=codes[activated],
            by_account=_Groups(bought_accounts, len(accounts)),
            ever_products=codes,
            ever_by_account=_Groups(account, len(accounts)),
        ),
        "contact_account": contact_account,
    }
    return data.cache["ned"]


def _back(today: date, period: str, count: int) -> date:
    delta = {
        "day": relativedelta(days=count),
        "week": relativedelta(weeks=count),
        "month": relativedelta(months=count),
    }
    return today - delta[period]


def solve_named_entity(data: OrgData, params: dict[str, Any]) -> Solution:
    ix = _ned_index(data)
    today = datetime.strptime(params["today_date"], "%Y-%m-%dT%H:%M:%SZ").date()
    day = _back(today, params["period"], int(params["interval_count"]))
    term = _tokens(params["ambiguous_product_name"])
    matches = {pid for pid, toks in ix["text"].items() if term and term <= toks}
    bought: _Purchases = ix["purchases"]
    rows = bought.by_account.get(bought.account(ix["contact_account"].get(params["contact_id"])))
    if rows is None:
        return Solution(None, [])
    on_day = rows[bought.bought_days[rows] == _day(day)]
    hit = sorted({prod for prod in bought.product(bought.bought_products[on_day]) if prod in matches})
    if not hit:
        return Solution(None, [])
    return Solution(hit[0], hit, None, tie=len(hit) > 1, tied=hit if len(hit) > 1 else [])


def _period_phrase(rng: random.Random, period: str, count: int) -> str:
    words = {1: "one", 2: "two", 3: "three", 4: "four", 5: "five", 6: "six", 7: "seven", 8: "eight"}
    if period == "week" and count == 2 and rng.random() < 0.5:
        return "a fortnight ago"
    if count == 1:
        return rng.choice([f"a {period} ago", f"one {period} ago"]) if period != "day" else "yesterday"
    number = words.get(count, str(count)) if rng.random() < 0.5 else str(count)
    return rng.choice([f"{number} {period}s ago", f"{number} {period}s back"])


async def ned_drafts(data: OrgData, rng: random.Random, n: int, writer: TextWriter) -> list[dict[str, Any]]:
    """Mentions (paraphrased product names with a search term) for purchases and for false presuppositions."""
    ix = _ned_index(data)
    world_products = pd.read_csv(data.root / "latent" / "world" / "products.csv")
    noun_of = dict(zip(data.products["Id"], world_products["noun"], strict=True))
    cat_of = dict(zip(data.products["Id"], world_products["category"], strict=True))
    names = dict(zip(data.products["Id"], data.products["Name"], strict=True))
    account_contact = {a: c for c, a in ix["contact_account"].items()}
    all_products = sorted(names)
    # the purchases drawn are read one at a time, not made lists of every purchase first (at scale 1,000 the
    # dates alone would be ~6 M date objects, for the ~100 drafts drawn); a purchase reads as the lists' item
    bought: _Purchases = ix["purchases"]
    drafts, requests = [], []
    for k in range(n):
        real = k % 10 < 7
        row = rng.randrange(len(bought.bought_products))
        code = int(bought.bought_accounts[row])
        account = bought.accounts[code] if code >= 0 else None
        # everything the contact ever ordered, any status
        mine = set(bought.product(bought.ever_products[bought.ever_by_account[code]]))
        bought_on = _EPOCH + timedelta(days=int(bought.bought_days[row]))
        if real:
            product = bought.products[bought.bought_products[row]]
            day = bought_on
        else:
            others = [p for p in all_products if p not in mine]
            product = rng.choice(others)
            day = bought_on + timedelta(days=rng.choice([-3, -1, 1, 2, 5]))
        period = rng.choice(["day", "day", "week", "month"])
        count = {"day": rng.randint(1, 30), "week": rng.randint(1, 8), "month": rng.randint(1, 6)}[period]
        if period == "month":
            today = day + relativedelta(months=count)
        elif period == "week":
            today = day + timedelta(weeks=count)
        else:
            today = day + timedelta(days=count)
        others_names = sorted(names[p] for p in mine if p != product)
        facts = {
            "name": names[product],
            "noun": noun_of[product],
            "category": cat_of[product],
            "others": others_names,
        }
        requests.append(TextRequest(TextKind.PRODUCT_MENTION, f"ned-{k}", facts))
        drafts.append(
            {
                "contact_id": account_contact[account],
                "product_id": product,
                "today": today,
                "period": period,
                "count": count,
                "mine": sorted(mine),
                "real": real,
            }
        )
    mentions = await writer.write(TextKind.PRODUCT_MENTION, requests)
    for d, m in zip(drafts, mentions, strict=True):
        d["mention"], d["term"] = m["mention"], m["search_term"]
    return drafts


def _unique_term(ix: dict[str, Any], product: str, mine: list[str], terms: list[str]) -> str | None:
    """The first term that matches the product by name and none of the contact's other purchases at all."""
    for term in terms:
        toks = _tokens(term)
        if not toks or not toks <= ix["name"][product]:
            continue
        if any(toks <= ix["text"][p] for p in mine if p != product):
            continue
        return term
    return None


def sampler_named_entity(data: OrgData, drafts: list[dict[str, Any]]) -> Any:
    ix = _ned_index(data)
    names = dict(zip(data.products["Id"], data.products["Name"], strict=True))
    queue = list(drafts)

    voice = _CustomerVoice(data, ix) if data.style == "crmarena" else None

    def sample(rng: random.Random, want_none: bool) -> Instance | None:
        if not queue:
            return None
        pos = next((i for i, d in enumerate(queue) if (not d["real"]) == want_none), None)
        if pos is None:
            return None
        d = queue.pop(pos)
        if voice is not None:
            return voice.instance(d, rng)
        name = names[d["product_id"]]
        noun_words = name.split()[1:]
        term = _unique_term(ix, d["product_id"], d["mine"], [d["term"], " ".join(noun_words), name])
        if term is None:
            return None
        mention = d["mention"] if term == d["term"] else f"{name.lower()}"
        params = {
            "contact_id": d["contact_id"],
            "today_date": iso(d["today"]),
            "period": d["period"],
            "interval_count": d["count"],
            "ambiguous_product_name": term,
        }
        sol = solve_named_entity(data, params)
        when = _period_phrase(rng, d["period"], d["count"])
        today_words = f"{d['today'].strftime('%B')} {d['today'].day}, {d['today'].year}"
        templates = [
            f"Today is {today_words}. Show me the {mention} I ordered {when}.",
            f"Hi, it's {today_words}. Can you find the {mention} I bought {when}?",
            f"I ordered the {mention} {when} (today is {today_words}). Which product was it?",
            f"Could you pull up the {mention} from my order {when}? Today's {today_words}.",
        ]
        suffix = "Return only the Id of the product from the contact's past order, or None if there is no such order."
        query = rng.choice(templates)
        required = f"{NED_POLICY}\n- Contact Id interacting: {d['contact_id']}\n{today_line(d['today'])}"
        return Instance(
            "named_entity_disambiguation",
            query,
            sol.answer,
            required,
            params,
            sol,
            {"mention": mention},
            tail=f" {suffix}",
        )

    return sample


CUSTOMER_TEMPLATES = (
    "Can you display the {mention} I purchased {when}?",
    "Could you pull up the {mention} I bought {when}?",
    "Can you look up the {mention} I got {when}?",
    "Please show me the {mention} I ordered {when}.",
    "I'm after the details of the {mention} I ordered {when}. Which product was it?",
    "Which product is the {mention} I purchased {when}?",
    "Can you find the {mention} from my order {when}?",
    "I need the {mention} I bought {when}. Can you bring it up?",
)
CUSTOMER_TAIL = " Return only the Id of the product from the contact's relevant past transaction."


class _CustomerVoice:
    """NED in CRMArena's voice: the customer describes the product as a customer would (the words people use
    for its type, its material, a feature, or just its type), never by its exact name. The search term (the
    instance's `ambiguous_product_name`) is the part of the description that is in the product's name; it
    matches the product and none of the contact's other purchases, so purchase history plus search resolve
    it to exactly one answer (or to None for a product the contact never bought)."""

    def __init__(self, data: OrgData, ix: dict[str, Any]) -> None:
        self.ix = ix
        self.data_ref = data
        self.names = dict(zip(data.products["Id"], data.products["Name"], strict=True))
        world = pd.read_csv(data.root / "latent" / "world" / "products.csv", dtype=str, keep_default_na=False)
        self.noun = dict(zip(data.products["Id"], world["noun"], strict=True))
        cols = {c: world[c] if c in world.columns else [""] * len(world) for c in ("material", "features")}
        self.material = dict(zip(data.products["Id"], cols["material"], strict=True))
        self.features = dict(zip(data.products["Id"], cols["features"], strict=True))
        self.aka = data.customer_words()

    def candidates(self, product: str) -> list[tuple[str, str]]:
        """(what the customer says, the search term in it): the term's words are all in the product's name."""
        noun = self.noun[product]
        low = noun.lower()
        name_toks = self.ix["name"][product]
        out = [(low, noun)]
        for aka in self.aka.get(noun, []):
            term = " ".join(w for w in TOKEN.findall(aka) if w.lower() in name_toks)
            if term:
                out.append((aka, term))
        if self.material[product]:
            out.append((f"{self.material[product]} {low}", noun))
        for feature in [f for f in str(self.features[product]).split("; ") if f]:
            out.append((f"{low} with {feature}", noun))
        return out

    def instance(self, d: dict[str, Any], rng: random.Random) -> Instance | None:
        product = d["product_id"]
        name = self.names[product].lower()
        options = self.candidates(product)
        rng.shuffle(options)
        for mention, term in options:
            toks = _tokens(term)
            if name in mention.lower() or not toks <= self.ix["name"][product]:
                continue
            if any(toks <= self.ix["text"][p] for p in d["mine"] if p != product):
                continue
            break
        else:
            return None
        params = {
            "contact_id": d["contact_id"],
            "today_date": iso(d["today"]),
            "period": d["period"],
            "interval_count": d["count"],
            "ambiguous_product_name": term,
        }
        sol = solve_named_entity(self.data_ref, params)
        when = _period_phrase(rng, d["period"], d["count"])
        query = rng.choice(CUSTOMER_TEMPLATES).format(mention=mention, when=when)
        required = f"- Contact Id interacting: {d['contact_id']}\n- Today's date: {d['today'].isoformat()}"
        return Instance(
            "named_entity_disambiguation",
            query,
            sol.answer,
            required,
            params,
            sol,
            {"mention": mention},
            tail=CUSTOMER_TAIL,
        )
