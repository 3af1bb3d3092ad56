"""The offline writer: deterministic, instant, no key and no network.

Every text is drawn from phrase banks (`vocab.py`; `voices.py` for how customers and agents write, with a
persona per customer; `articles.py` for knowledge articles in prose and the paraphrases knowledge QA asks)
with a `random.Random` seeded by (run seed, kind, record key), so a text never depends on batch order, shard
or worker count. Sentences are combined from short pieces slot by slot, so no fixed sentence is shared by
more than a few percent of a field's records (`tests/test_text_fidelity.py` holds the default org to it). Texts state the latent facts they are given:
a case names its product and issue, a knowledge article states its policy's windows, an agent's offer
uses the remedy's canonical phrase (which is how violations are detected).
"""

from __future__ import annotations

import random
import re
from collections.abc import Mapping, Sequence
from datetime import date
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from generator.rng import derive_seed
from generator.text import articles, vocab, voices
from generator.text.base import TextKind, TextRequest, TextWriter
from schemas.gcpause import gc_paused
from schemas.textrules import indefinite

if TYPE_CHECKING:
    from schemas.profile import Profile


@lru_cache(maxsize=8192)
def human_date(iso: str) -> str:
    d = date.fromisoformat(iso[:10])
    return f"{d.strftime('%B')} {d.day}, {d.year}"


def issue_name(key: str) -> str:
    return vocab.ISSUE_NAMES.get(key, key.replace("_", " ").capitalize())


def product_name(noun: str, modifier_index: int) -> str:
    n = len(vocab.MODIFIERS)
    first = vocab.MODIFIERS[modifier_index % n]
    if modifier_index < n:
        return f"{first} {noun}"
    second = vocab.MODIFIERS[(modifier_index // n + modifier_index) % n]
    return f"{first} {second} {noun}"


def _listed(items: Sequence[str]) -> str:
    """ "a", "a and b", "a, b and c"."""
    items = list(items)
    if len(items) < 2:
        return "".join(items)
    return f"{', '.join(items[:-1])} and {items[-1]}"


def weight_text(grams: int) -> str:
    """`280 grams`, `1.25 kg`, `16 kg`: a weight as a product page would state it."""
    if grams < 1000:
        return f"{grams} grams"
    kg = f"{grams / 1000:.2f}".rstrip("0").rstrip(".")
    return f"{kg} kg"


_WORD = re.compile(r"[A-Za-z0-9]+")
# a case description rewritten this many times for near-duplicates gets one more detail (and its order date),
# and one more every MORE_EVERY attempts after that (`OfflineWriter._case`)
MORE_EVERY = 3


@lru_cache(maxsize=65536)
def _word_set(text: str) -> frozenset[str]:
    """The lower-cased words of `text` (product names recur across mentions: each is split once)."""
    return frozenset(w.lower() for w in _WORD.findall(text))


def _title(key: str) -> str:
    return key.replace("_", " ").title()


class OfflineWriter(TextWriter):
    name = "offline"

    def __init__(self, seed: int, company: str = "our company") -> None:
        self.seed = seed
        self.company = company
        self._formal_of: dict[str, bool] = {}  # name -> spells out contractions (`_formal`)
        self._persona_of: dict[str, voices.Persona] = {}  # customer -> their voice (`_persona`)

    @classmethod
    def for_run(cls, seed: int, profile: Profile, options: tuple[tuple[str, Any], ...]) -> OfflineWriter:
        return cls(seed, profile.company.name)

    def forget_memos(self) -> None:
        """The per-person memos (one persona per customer: 50,521 at scale 300, made all through generation
        and keeping the heap around them from being handed back) and the module's text memos."""
        self._formal_of.clear()
        self._persona_of.clear()
        human_date.cache_clear()
        _word_set.cache_clear()

    def describe(self) -> dict[str, Any]:
        return {"name": self.name}

    async def write(self, kind: TextKind, requests: Sequence[TextRequest]) -> list[dict[str, Any]]:
        return self.write_sync(kind, requests)

    def write_sync(self, kind: TextKind, requests: Sequence[TextRequest]) -> list[dict[str, Any]]:
        with gc_paused():
            return self._write(kind, requests)

    def _write(self, kind: TextKind, requests: Sequence[TextRequest]) -> list[dict[str, Any]]:
        render = _RENDERERS[kind]
        out = []
        rng = random.Random()  # this call's own (calls may run in threads), re-seeded for every request
        for req in requests:
            attempt = int(req.facts.get("attempt", 0) or 0)
            parts: tuple[object, ...] = (
                (kind.value, req.key) if not attempt else (kind.value, req.key, attempt)
            )
            # the state of random.Random(seed), without making a new generator per request; no renderer
            # keeps the generator after it returns
            rng.seed(derive_seed(self.seed, "text", *parts))
            out.append(render(self, rng, req.facts))
        return out

    # -- catalog -------------------------------------------------------------------------------------

    def _product(self, rng: random.Random, f: Mapping[str, Any]) -> dict[str, Any]:
        name = product_name(str(f["noun"]), int(f["modifier_index"]))
        if f.get("features"):
            a, b = (str(x) for x in f["features"][:2])
        else:
            feats = vocab.PRODUCT_FEATURES.get(str(f["category"]), ["a comfortable fit", "durable materials"])
            a, b = rng.sample(feats, 2)
        use = rng.choice(list(f.get("uses") or vocab.PRODUCT_USES))
        first = rng.choice(vocab.PRODUCT_TEMPLATES).format(
            name=name, use=use, a=a, b=b, a_cap=a[:1].upper() + a[1:], noun_lower=str(f["noun"]).lower()
        )
        c1, c2, c3 = rng.sample(vocab.COLOURS, 3)
        extras = rng.sample(vocab.PRODUCT_EXTRAS, 2)
        grams = int(f.get("weight_grams") or rng.randrange(60, 900, 5))
        fill = {
            "colour": c1,
            "colour2": c2,
            "colour3": c3,
            "season": rng.choice(vocab.SEASONS_WORD),
            "rating": f"{rng.uniform(3.9, 4.9):.1f}",
            "weight": weight_text(grams),
            "material": str(f.get("material") or "durable materials"),
            "city": rng.choice(vocab.TEAM_CITIES),
            "pct": rng.randrange(20, 90, 5),
        }
        return {"name": name, "description": " ".join([first, *(e.format(**fill) for e in extras)])}

    def _issue(self, rng: random.Random, f: Mapping[str, Any]) -> dict[str, Any]:
        key = str(f["key"])
        desc = vocab.ISSUE_DESCRIPTIONS.get(key, f"Cases about {issue_name(key).lower()}.")
        return {"name": issue_name(key), "description": desc}

    def _category(self, rng: random.Random, f: Mapping[str, Any]) -> dict[str, Any]:
        name = str(f["name"])
        text = rng.choice(vocab.CATEGORY_BLURBS).format(
            name=name, lower=name.lower(), company=self.company, use=rng.choice(vocab.PRODUCT_USES)
        )
        return {"description": text}

    # -- knowledge -----------------------------------------------------------------------------------

    def _knowledge(self, rng: random.Random, f: Mapping[str, Any]) -> dict[str, Any]:
        """An article in prose of CRMArena's length (about 3,000 characters): an opening, the planted facts each
        in one of its `says` sentences, a policy's windows in `vocab.REMEDY_RULES` sentences, and body
        paragraphs (`articles.paragraphs`); no Q:/A: lines. The article's `ordinal` among its kind picks its
        opening, its body window and its sentence variants in turn, so no sentence is templated across the
        org's articles (each serves at most two of a kind in the default org)."""
        kind = str(f["kind"])
        facts: list[Mapping[str, Any]] = list(f["facts"])
        company = self.company
        ordinal = int(f["ordinal"]) if f.get("ordinal") is not None else rng.randrange(10_000)
        data = dict(f.get("data", {}))
        subject = str(f["subject"])
        slots = {"{company}": company, "{cat}": str(data.get("category", subject))}

        def said(i: int, fact: Mapping[str, Any], noun_pl: str = "") -> str:
            says = list(fact.get("says") or ["{answer}."])
            text = articles.rotate(says, ordinal, salt=3 * i).replace("{answer}", str(fact["answer"]))
            for slot, value in {**slots, "{noun_pl}": noun_pl}.items():
                text = text.replace(slot, value)
            return text[:1].upper() + text[1:]

        def pick(options: list[str], salt: int = 0) -> str:
            return articles.rotate(options, ordinal, salt)

        def joined(*parts: str) -> str:
            return " ".join(p for p in parts if p).strip()

        if kind == "issue_policy":
            iname = str(f["issue_name"])
            ikey = str(f["subject"])
            low = iname.lower()
            values = {"company": company, "issue": low, "subject": low}
            title = rng.choice(
                [f"{iname}: Resolution Policy", f"Policy: Resolving {iname} Cases", f"{iname} Policy",
                 f"How We Handle {iname}", f"{iname}: Agent Guidelines"]
            )  # fmt: skip
            phrases = dict(f["remedy_phrases"])
            rules = []
            for r, (rkey, window) in enumerate(dict(f["remedies"]).items()):
                phrase = phrases[rkey]
                a_phrase = indefinite(phrase)
                rules.append(
                    pick(vocab.REMEDY_RULES, salt=r).format(
                        phrase=phrase,
                        a_phrase=a_phrase,
                        A_phrase=a_phrase[:1].upper() + a_phrase[1:],
                        window=f"{window} day" if int(window) == 1 else f"{window} days",
                    )
                )
            allowed = ", ".join(phrases[r] for r in dict(f["remedies"]))
            problems = vocab.ISSUE_PROBLEMS.get(ikey, [])
            examples = [
                e.format(product=articles.example_product(rng, ikey, e))
                for e in rng.sample(problems, min(3, len(problems)))
            ]
            intro = pick(
                [
                    f"This article sets out how {company} agents resolve cases about {low}.",
                    f"Use this policy whenever a customer contacts {company} about {low}.",
                    f"Agents handling {low} cases at {company} follow the guidance below.",
                    f"Here is how the support team at {company} handles {low}, from the first reply to closing the case.",
                    f"Every contact about {low} is handled with the steps and limits on this page.",
                    f"What follows is the {company} playbook for {low} cases.",
                ]
            )
            opening = joined(intro, str(f.get("issue_description", "")))
            if examples:
                opening += " " + pick(
                    [
                        "Customers tend to put it in their own words, for instance:",
                        "Typical messages read like this:",
                        f"Messages about {low} often sound like these:",
                        "Here is how customers usually describe it:",
                        "In the customer's words, it tends to look like this:",
                        f"A few real-world examples of {low} contacts:",
                    ]
                )
                opening += " " + " ".join(f'"{x}"' for x in examples)
            steps = [str(s) for s in vocab.ISSUE_STEPS.get(ikey, [])]
            rng.shuffle(steps)
            handling = [said(i, x) for i, x in enumerate(facts) if x.get("says")]
            links = ["To begin,", "Then,", "After that,", "Finally,"]
            step_text = " ".join(
                f"{links[min(i, 3)] if i < len(steps) - 1 or i == 0 else links[3]} {s[:1].lower()}{s[1:]}"
                for i, s in enumerate(steps)
            )
            lead = pick(
                [
                    "The resolutions are tied to the purchase date.",
                    "Which remedy is possible depends on the date of purchase.",
                    f"For {low}, each resolution has its own time limit.",
                    "Time limits apply, counted from the purchase.",
                    f"Not every {low} resolution stays open forever.",
                    "Check the order date first, because the options narrow with time.",
                ]
            )
            closing = pick(
                [
                    f"Only these resolutions ({allowed}) may be offered for {low} cases, and only within the "
                    "windows above, counted in calendar days from the purchase date. Offering any other "
                    "resolution, or offering one after its window has passed, is a policy violation.",
                    f"The complete list for {low} is short: {allowed}. Nothing else may be offered, and each "
                    "option ends when its window (in calendar days since purchase) runs out; anything beyond "
                    "that is a policy violation.",
                    f"In {low} cases the permitted outcomes are {allowed}, each only inside its own window, "
                    "counted from the day of purchase. Any other remedy, or a late one, is treated as a policy violation.",
                    f"To sum up, agents choose from {allowed} for {low}, never outside the time limits set "
                    "out here; a remedy outside that list or past its deadline is a policy violation.",
                    f"Nothing beyond {allowed} is on the table for {low}. Days are calendar days since the "
                    "order; an offer after the limit, or of anything not listed, breaks this policy and is "
                    "recorded as a violation.",
                    f"For {low}, the whole menu is: {allowed}. Outside those options, or once an option's "
                    "days since purchase have run out, an agent's offer is a policy violation.",
                ]
            )
            prose = articles.paragraphs(rng, "policy", values, ordinal)
            body = [
                opening,
                prose[0],
                joined(step_text, *handling),
                prose[1],
                prose[2],
                joined(lead, *rules, closing),
                *prose[3:],
            ]
            summary = rng.choice(
                [
                    f"Which resolutions agents may offer for {low} cases, and within how many days of purchase.",
                    f"How to handle {low} cases: checks, resolutions and their time limits.",
                ]
            )
            return {"title": title, "summary": summary, "body": "\n\n".join(p for p in body if p)}
        if kind == "general":
            key = subject
            subject = _title(key)
            values = {"company": company, "subject": subject.lower()}
            title = rng.choice(
                [
                    subject,
                    f"{company} {subject}",
                    f"Understanding Our {subject}",
                    f"{subject}: What You Need to Know",
                ]
            )
            sub = subject.lower()
            intro = pick(
                [
                    f"This article explains the {sub} of {company}.",
                    f"Here is what customers and agents need to know about our {sub}.",
                    f"Our {sub} in brief, for customers and for the agents answering them.",
                    f"Everything about the {company} {sub}, on one page.",
                    f"The {sub} below applies to every order.",
                    f"Read on for how our {sub} works in practice.",
                ]
            )
            prose = articles.paragraphs(rng, "general", values, ordinal)
            stated = [said(i, x) for i, x in enumerate(facts)]
            more = list(articles.SUBJECT_MORE.get(key, []))
            rng.shuffle(more)
            body = [
                joined(intro, prose[0]),
                joined(*stated[:2], articles.SUBJECT_PROSE.get(key, "")),
                *more[:1],
                prose[1],
                prose[2],
                joined(*stated[2:]),
                prose[3],
                prose[4],
                *more[1:],
                *prose[5:],
            ]
            return {
                "title": title,
                "summary": f"Key facts about the {subject.lower()} at {company}.",
                "body": "\n\n".join(p for p in body if p),
            }
        category = str(data.get("category", subject))
        if kind == "category_guide":
            nouns = [str(x) for x in f.get("nouns", [])]
            forms = articles.noun_forms(pick(nouns) if nouns else subject)
            values = {
                "company": company,
                "cat": category,
                "noun_pl": forms["noun_pl"],
                "subject": subject.lower(),
            }
            title = rng.choice(
                [f"Caring for Your {category}", f"{category}: Care, Fit and Warranty",
                 f"{category} Care Guide", f"Looking After {category} Products"]
            )  # fmt: skip
            prose = articles.paragraphs(rng, "care", values, ordinal)
            stated = [said(i, x, forms["noun_pl"]) for i, x in enumerate(facts)]
            covers = (
                f"The range includes {', '.join(n.lower() for n in nouns[:-1])} and {nouns[-1].lower()}."
                if len(nouns) > 1
                else ""
            )
            feats = list(vocab.PRODUCT_FEATURES.get(category, []))
            rng.shuffle(feats)
            made = (
                pick(
                    [
                        f"Across the {category} range you will find {_listed(feats)}.",
                        f"Depending on the model, products in the range feature {_listed(feats)}.",
                        f"The range is built around {_listed(feats)}.",
                        f"Look for {_listed(feats)} across the {category} line.",
                        f"Models in the {category} collection use {_listed(feats)}.",
                        f"Inside the range: {_listed(feats)}.",
                    ]
                )
                if feats
                else ""
            )
            body = [
                joined(prose[0], covers),
                joined(made, prose[1]),
                joined(*stated[:3]),
                prose[2],
                prose[3],
                joined(prose[4], *stated[3:-1]) if len(stated) > 4 else prose[4],
                prose[5],
                joined(stated[-1], prose[6]),
                *prose[7:],
            ]
            summary = f"How to clean, store and size {category.lower()} products, and how long their warranty lasts."
            return {"title": title, "summary": summary, "body": "\n\n".join(p for p in body if p)}
        forms = articles.noun_forms(subject)
        values = {
            "company": company,
            "cat": category,
            "noun_pl": forms["noun_pl"],
            "subject": subject.lower(),
        }
        title = rng.choice(
            [f"Getting the Most from Your {subject}", f"{subject}: Features, Care and Troubleshooting",
             f"Your {subject} Questions Answered", f"{subject} Guide"]
        )  # fmt: skip
        prose = articles.paragraphs(rng, "product", values, ordinal)
        stated = [said(i, x, forms["noun_pl"]) for i, x in enumerate(facts)]
        feats = list(vocab.PRODUCT_FEATURES.get(category, []))
        rng.shuffle(feats)
        uses = rng.sample(vocab.PRODUCT_USES, 2)
        others = [str(n).lower() for n in f.get("nouns", []) if str(n) != subject]
        rng.shuffle(others)
        about = joined(
            f"Our {forms['noun_pl']} are made for {uses[0]} and {uses[1]}.",
            pick(
                [
                    f"Depending on the model, they feature {_listed(feats[:4])}.",
                    f"Expect {_listed(feats[:4])}, depending on the model.",
                    f"Most models add {_listed(feats[:4])}.",
                    f"Key details include {_listed(feats[:4])}.",
                    f"You will find {_listed(feats[:4])} on most versions.",
                    f"Built in: {_listed(feats[:4])}.",
                ]
            )
            if feats
            else "",
            f"Customers often pair them with {others[0]} or {others[1]} from the {category} range."
            if len(others) > 1
            else "",
        )
        body = [
            joined(prose[0], about),
            prose[1],
            joined(*stated[:2]),
            prose[2],
            joined(prose[3], *stated[2:3]),
            prose[4],
            prose[5],
            joined(*stated[3:], prose[6]),
            *prose[7:],
        ]
        summary = f"Features, lifespan, care and quick fixes for {forms['noun_pl']}."
        return {"title": title, "summary": summary, "body": "\n\n".join(p for p in body if p)}

    # -- cases and conversations -----------------------------------------------------------------------

    def _formal(self, who: str) -> bool:
        """Whether this person (an agent's or a customer's name) spells out contractions ("I will")."""
        known = self._formal_of.get(who)
        if known is None:
            known = self._formal_of[who] = derive_seed(self.seed, "formal", who) % 100 < 40
        return known

    def _persona(self, f: Mapping[str, Any]) -> voices.Persona:
        """The customer's voice, the same in every text they write (seeded by the customer)."""
        who = f.get("customer_key") or f"{f.get('customer_first', '')} {f.get('customer_last', '')}"
        known = self._persona_of.get(who)  # a function of (seed, who) alone, so drawn once per customer
        if known is None:
            known = self._persona_of[who] = voices.persona(
                random.Random(derive_seed(self.seed, "persona", who))
            )
        return known

    def _case(self, rng: random.Random, f: Mapping[str, Any]) -> dict[str, Any]:
        issue = str(f["issue"])
        product, noun = str(f["product"]), str(f["noun"])
        tone = str(f.get("tone", "polite"))
        me = self._persona(f)
        c1, c2 = rng.sample(vocab.COLOURS, 2)
        s1, s2 = rng.sample(vocab.SIZES, 2)
        fill = {
            "product": product,
            "noun": noun.lower(),
            "colour": c1,
            "colour2": c2,
            "size": s1,
            "size2": s2,
            "part": rng.choice(vocab.PARTS),
            "days": rng.randint(3, 16),
            "days2": rng.choice([14, 30, 45, 60]),
            "months": rng.randint(2, 14),
            "minutes": rng.randint(2, 50),
            "points": rng.randrange(300, 4000, 50),
            "percent": rng.choice([10, 15, 20, 25, 30]),
            "price": f"{float(f.get('price', 0) or 0):.2f}",
            "uses": rng.randint(2, 25),
            "tries": rng.randint(2, 6),
            "count": rng.randint(1, 3),
            "order_date": human_date(str(f["order_date"])),
            "days_since": f.get("days_since", rng.randint(2, 30)),
        }
        subjects = vocab.SUBJECTS.get(issue, ["Problem with {product}"]) + voices.SUBJECT_EXTRA.get(issue, [])
        pattern = rng.choice(subjects)
        if "{" not in pattern and rng.random() < 0.6:
            pattern += rng.choice(voices.SUBJECT_TAILS)
        subject = voices.cap(pattern.format(**fill))
        problems = vocab.ISSUE_PROBLEMS.get(issue, ["I have a problem with the {product}."])
        problem = rng.choice(problems + voices.PROBLEMS_MORE.get(issue, [])).format(**fill)
        if product.lower() not in problem.lower():  # the description always names the product
            problem += " " + rng.choice(voices.PRODUCT_SAYS).format(**fill)
        middle = []
        details = list(vocab.ISSUE_DETAILS.get(issue, [])) + voices.DETAILS_MORE.get(issue, [])
        rng.shuffle(details)
        # A description rewritten again and again (its near-duplicates keep coming back: a terse customer's few
        # words on a common problem, among the hundreds of thousands of a large org) says a little more from
        # every MORE_EVERY-th attempt on: one more detail each time, and when the order was placed. Earlier
        # attempts draw exactly as before.
        more = int(f.get("attempt", 0) or 0) // MORE_EVERY
        for detail in details[: [rng.random() < 0.5, 1, 2][me.verbosity] + more]:
            middle.append(detail.format(**fill))
        if more or rng.random() < me.date_rate:
            if rng.random() < 0.5:
                middle.append(rng.choice(voices.DATE_SAYS).format(**fill))
            else:
                middle.append(rng.choice(voices.AGO_SAYS).format(ago=voices.ago(int(fill["days_since"]))))
        if float(f.get("price", 0) or 0) > 0 and rng.random() < me.price_rate:
            middle.append(rng.choice(voices.PRICE_SAYS).format(**fill))
        rng.shuffle(middle)
        want = f.get("want")
        tail = []
        if want and str(want) in voices.WANT_B and rng.random() < 0.6:
            tail.append(
                voices.compose(rng, voices.WANT_A, voices.WANT_B[str(want)], voices.WANT_C)
                if rng.random() < 0.7
                else rng.choice(vocab.WANTS.get(str(want), [""]))
            )
        if me.verbosity or rng.random() < 0.5:
            tail.append(voices.ask_line(rng, tone))
        if rng.random() < 0.15:
            pool = vocab.TONE_LINES.get(tone, vocab.TONE_LINES["polite"]) + vocab.MORE_TONE_LINES.get(
                tone, []
            )
            tail.append(rng.choice(pool))
        if me.verbosity and rng.random() < 0.5:
            tail.append(voices.compose(rng, voices.CLOSE_A, voices.CLOSE_B, voices.CLOSE_C))
        lead = []
        if me.verbosity and rng.random() < 0.35:
            lead.append(voices.compose(rng, voices.LEAD_A, voices.LEAD_B))
        parts = [me.greeting, *lead, problem, *middle, *dict.fromkeys(t for t in tail if t)]
        if rng.random() < 0.06:
            parts.append(voices.compose(rng, voices.PS_A, voices.PS_B))
        if me.signoff:
            name = str(f["customer_first"])
            if me.full_name and f.get("customer_last"):
                name = f"{name} {f['customer_last']}"
            parts.append(f"{me.signoff} {name}")
        description = " ".join(p for p in parts if p)
        return {"subject": subject, "description": description}

    def _offer_text(self, rng: random.Random, offer: Mapping[str, Any], f: Mapping[str, Any]) -> str:
        remedy = str(offer["remedy"])
        if remedy == "none":
            return rng.choice(vocab.AGENT_NO_REMEDY)
        template = rng.choice(vocab.AGENT_OFFER[remedy] + voices.OFFER_MORE.get(remedy, []))
        pre = rng.choice(voices.OFFER_PRE)
        if pre.endswith(", "):
            template = (
                template[:1].lower() + template[1:] if not template.startswith(("I", "{")) else template
            )
        template = pre + template + rng.choice(voices.OFFER_POST)
        code = f"SC{derive_seed(self.seed, 'code', f.get('case_key', '')) % 900000 + 100000}"
        return template.format(
            product=f["product"],
            noun=str(f["noun"]).lower(),
            valid_days=offer.get("valid_days") or 90,
            amount=offer.get("amount") or 500,
            percent=offer.get("percent") or 15,
            code=code,
        )

    def _email_thread(self, rng: random.Random, f: Mapping[str, Any]) -> dict[str, Any]:
        subject = str(f["case_subject"])
        product, noun = str(f["product"]), str(f["noun"])
        first = str(f["customer_first"])
        customer_formal = self._formal(str(f.get("customer_key") or first))
        out = []
        for i, m in enumerate(f["messages"]):
            kind = str(m["kind"])
            subj = subject if i == 0 else f"Re: {subject}"
            ctx = {
                "first": first,
                "company": self.company,
                "product": product,
                "noun": noun.lower(),
                "agent": m.get("agent", ""),
                "agent_first": m.get("agent_first", ""),
                "next_agent": m.get("next_agent", ""),
                "prev_agent": m.get("prev_agent", ""),
                "issue_lower": str(f["issue_name"]).lower(),
            }
            if kind == "customer_open":
                body = str(f["case_description"])
            elif kind == "customer_reply":
                body = (
                    rng.choice(vocab.CUSTOMER_REPLY).format(**ctx)
                    + f"\n\n{rng.choice(vocab.SIGNOFFS)}\n{first}"
                )
                body = voices.spelled_out(body) if customer_formal else body
            elif kind == "customer_thanks":
                body = rng.choice(vocab.CUSTOMER_THANKS) + f"\n\n{first}"
                body = voices.spelled_out(body) if customer_formal else body
            else:
                lines = [rng.choice(vocab.AGENT_GREETING).format(**ctx)]
                if kind == "agent_ack":
                    lines.append(rng.choice(vocab.AGENT_ACK).format(**ctx))
                    lines.append(
                        voices.compose(rng, voices.EMAIL_ASK_A, voices.EMAIL_ASK_B, voices.EMAIL_ASK_C)
                    )
                elif kind == "agent_transfer":
                    lines.append(rng.choice(vocab.AGENT_TRANSFER).format(**ctx))
                elif kind == "agent_takeover":
                    lines.append(rng.choice(vocab.AGENT_TAKEOVER).format(**ctx))
                    lines.append(
                        voices.compose(rng, voices.EMAIL_ASK_A, voices.EMAIL_ASK_B, voices.EMAIL_ASK_C)
                    )
                elif kind == "agent_offer":
                    lines.append(self._offer_text(rng, m["offer"], f))
                    if m.get("close"):
                        lines.append(voices.compose(rng, voices.EMAIL_CLOSE_A, voices.EMAIL_CLOSE_B))
                elif kind == "agent_close":
                    lines.append(voices.compose(rng, voices.EMAIL_CLOSE_A, voices.EMAIL_CLOSE_B))
                else:  # agent_update
                    lines.append(
                        rng.choice(
                            [
                                "I'm still working on your case and will update you as soon as I hear back from our warehouse team.",
                                "Quick update: I've escalated the details internally and expect an answer within a day or two.",
                                "Thanks for your patience. I'm checking a few more details before I can resolve this.",
                            ]
                        )
                    )
                agent_name = str(m.get("agent", ""))
                signature = rng.choice(voices.EMAIL_SIGNATURES).format(
                    agent=agent_name,
                    agent_first=agent_name.split()[0] if agent_name.split() else agent_name,
                    company=self.company,
                )
                lines.append(f"{rng.choice(vocab.AGENT_SIGN)}\n{signature}")
                body = "\n\n".join(lines)
                body = voices.spelled_out(body) if self._formal(agent_name) else body
            out.append({"subject": subj, "body": body})
        return {"messages": out}

    def _chat(self, rng: random.Random, f: Mapping[str, Any]) -> dict[str, Any]:
        """A transcript of varied shape: a header only sometimes, the customer opening with a greeting or
        straight with the problem, zero to two follow-up questions, an offer or a hand-over, and a closing
        exchange that is sometimes cut short."""
        cust = str(f["customer_first"])
        agent = str(f["agent"])
        agent_label = f"{agent} (Agent)"
        issue = str(f.get("issue"))
        product = str(f["product"])
        c1, c2 = rng.sample(vocab.COLOURS, 2)
        s1, s2 = rng.sample(vocab.SIZES, 2)
        fill = {
            "first": cust,
            "agent": agent,
            "agent_first": agent.split()[0] if agent.split() else agent,
            "company": self.company,
            "product": product,
            "noun": str(f.get("noun") or product).lower(),
            "colour": c1,
            "colour2": c2,
            "size": s1,
            "size2": s2,
            "part": rng.choice(vocab.PARTS),
            "days": rng.randint(3, 16),
            "days2": rng.choice([14, 30, 45, 60]),
            "months": rng.randint(2, 14),
            "minutes": rng.randint(2, 50),
            "points": rng.randrange(300, 4000, 50),
            "percent": rng.choice([10, 15, 20, 25]),
            "price": "the full price",
            "uses": rng.randint(2, 25),
            "tries": rng.randint(2, 6),
            "count": rng.randint(1, 3),
        }
        problems = vocab.ISSUE_PROBLEMS.get(issue, [str(f["problem"])]) + voices.PROBLEMS_MORE.get(issue, [])
        problem = rng.choice(problems).format(**fill)
        if product.lower() not in problem.lower():
            problem += " " + rng.choice(voices.PRODUCT_SAYS).format(**fill)

        def c(text: str) -> str:
            text = text.rstrip(" ,")
            return f"{cust}: {text if text.endswith(('.', '!', '?')) else text + rng.choice(['.', '!', '.'])}"

        def a(text: str) -> str:
            return f"{agent_label}: {text}"

        lines = []
        if f.get("start") and rng.random() < 0.4:
            lines.append(
                rng.choice(voices.CHAT_HEADERS).format(
                    start=str(f["start"])[:16].replace("T", " "), origin=rng.choice(voices.CHAT_ORIGINS)
                )
            )
        hello = voices.compose(rng, voices.AGENT_HELLO, voices.AGENT_NAME, voices.AGENT_FROM).format(**fill)
        if rng.random() < 0.55:
            lines.append(
                c(
                    voices.compose(rng, voices.CUST_HELLO, voices.CUST_NEED).rstrip(",")
                    + rng.choice(["", ".", "!"]).replace("?.", "?")
                )
            )
            lines.append(a(hello + rng.choice(voices.AGENT_OFFER_HELP)))
            lines.append(c(problem))
        else:
            lines.append(c(voices.compose(rng, voices.CUST_HELLO, [", ", ". ", " - "]) + problem))
            lines.append(
                a(
                    hello
                    + rng.choice(
                        [
                            ". Sorry to hear that.",
                            ". I'm sorry about that.",
                            ", thanks for letting us know.",
                            ". Let's get that sorted.",
                            ". That's no good.",
                            ", thanks for flagging it.",
                            ". Let me help with that.",
                            ". Thanks for the details.",
                            ". Oh no, let's fix it.",
                        ]
                    )
                )
            )
        details = list(vocab.ISSUE_DETAILS.get(issue, [])) + voices.DETAILS_MORE.get(issue, [])
        rng.shuffle(details)
        asks = [voices.compose(rng, voices.ASK_A, voices.ASK_B, voices.ASK_C) for _ in range(2)]
        for turn in range(rng.choices([0, 1, 2], weights=[0.25, 0.5, 0.25])[0]):
            lines.append(a(asks[turn]))
            answer = (
                details[turn].format(**fill)
                if turn < len(details) and rng.random() < 0.7
                else rng.choice(voices.CUST_SHORT)
            )
            lines.append(c(rng.choice(voices.CUST_PREFIX) + answer))
        lines.append(a(voices.compose(rng, voices.AGENT_CHECK_A, voices.AGENT_CHECK_B)))
        if rng.random() < 0.3:
            lines.append(c(rng.choice(["Sure.", "OK.", "No problem.", "Thanks.", "Take your time."])))
        offer = f.get("offer")
        if offer:
            lines.append(a(self._offer_text(rng, offer, f)))
        else:
            lines.append(a(rng.choice(voices.AGENT_FOLLOW)))
        if rng.random() < 0.8:
            lines.append(
                c(
                    voices.compose(rng, voices.CUST_END_A, voices.CUST_END_B)
                    if rng.random() < 0.75
                    else rng.choice(voices.CUST_END_ALONE)
                )
            )
        if rng.random() < 0.85:
            lines.append(a(voices.compose(rng, voices.AGENT_END_A, voices.AGENT_END_B).format(**fill)))
        formal = {agent_label: self._formal(agent), cust: self._formal(str(f.get("customer_key") or cust))}
        styled = []
        for line in lines:
            who, sep, said = line.partition(": ")
            styled.append(f"{who}{sep}{voices.spelled_out(said)}" if sep and formal.get(who) else line)
        return {"body": "\n".join(styled)}

    # -- tasks -----------------------------------------------------------------------------------------

    def _paraphrase(self, rng: random.Random, f: Mapping[str, Any]) -> dict[str, Any]:
        return {"text": str(f["text"])}

    def _mention(self, rng: random.Random, f: Mapping[str, Any]) -> dict[str, Any]:
        """A casual mention of the product and a search term that names it and none of the customer's other
        purchases (`others`): the last words of its noun, its noun, or its whole name, whichever is first."""
        noun, name = str(f["noun"]), str(f.get("name") or f["noun"])
        words = noun.split()
        others = [_word_set(str(o)) for o in f.get("others", [])]
        term = name
        for candidate in [" ".join(words[-2:]), noun, name]:
            toks = _word_set(candidate)
            if toks and not any(toks <= other for other in others):
                term = candidate
                break
        adjective = rng.choice(["", "new ", "comfy ", "favourite ", "", "nice "])
        shown = noun if term != name else name
        return {"mention": f"{adjective}{shown.lower()}".strip(), "search_term": term}


_RENDERERS = {
    TextKind.PRODUCT: OfflineWriter._product,
    TextKind.ISSUE: OfflineWriter._issue,
    TextKind.CATEGORY: OfflineWriter._category,
    TextKind.KNOWLEDGE: OfflineWriter._knowledge,
    TextKind.CASE: OfflineWriter._case,
    TextKind.EMAIL_THREAD: OfflineWriter._email_thread,
    TextKind.CHAT: OfflineWriter._chat,
    TextKind.PARAPHRASE: OfflineWriter._paraphrase,
    TextKind.PRODUCT_MENTION: OfflineWriter._mention,
}
