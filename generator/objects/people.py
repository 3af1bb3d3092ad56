"""Users (support agents), person accounts (customers) and their contacts."""

from __future__ import annotations

import random
import re
from collections import OrderedDict
from functools import cache
from itertools import accumulate

import numpy as np
import pandas as pd
from faker import Faker
from faker.providers.address.en_US import Provider as _Address
from faker.providers.person.en_US import Provider as _Person

from generator.ids import make_id
from generator.objects.base import BuildContext, ObjectGenerator


@cache
def _weighted(which: str) -> tuple[tuple[str, ...], list[float]]:
    """The en_US person provider's `first_names` or `last_names` (name -> weight) as names and cumulative
    weights, summed once in the order random.choices sums them."""
    names: OrderedDict[str, float] = getattr(_Person, which)
    return tuple(names.keys()), list(accumulate(names.values()))


_TOKEN = re.compile(r"\{\{\s*(\w+)(:\s*\w+?)?\s*\}\}")  # faker.generator's token pattern


def numerify(rng: random.Random, text: str) -> str:
    """Faker's numerify for a text whose only placeholders are `#`: each `#`, left to right, a digit drawn
    with randint(0, 9) on `rng` (Faker's random_digit)."""
    return "".join(str(rng.randint(0, 9)) if ch == "#" else ch for ch in text)


def street_addresses(fake: Faker, n: int) -> list[str]:
    """`n` calls of `fake.street_address()` on an en_US Faker, without Faker's dispatch: the same draws on the
    same Random, in the same order (pattern, then each token left to right: building number, street name
    [pattern, first or last name, suffix], secondary address), so the same addresses and the same state
    after (Faker is pinned in pyproject; tests/generator/test_person_names.py holds it to Faker's output)."""
    rng = fake.random
    names = {which: _weighted(which) for which in ("first_names", "last_names")}

    def token(match: re.Match[str]) -> str:
        name = match.group(1)
        if match.group(2):
            raise ValueError(f"street_addresses: unexpected argument group in {match.group(0)!r}")
        if name == "building_number":
            return numerify(rng, rng.choice(_Address.building_number_formats))
        if name == "street_name":
            return _TOKEN.sub(token, rng.choice(_Address.street_name_formats))
        if name == "secondary_address":
            return numerify(rng, rng.choice(_Address.secondary_address_formats))
        if name == "street_suffix":
            return str(rng.choice(_Address.street_suffixes))
        if name in ("first_name", "last_name"):
            population, cum = names[name + "s"]
            return rng.choices(population, cum_weights=cum, k=1)[0]
        raise ValueError(f"street_addresses: no rule for the Faker token {name!r}")

    return [_TOKEN.sub(token, rng.choice(_Address.street_address_formats)) for _ in range(n)]


def person_names(fake: Faker, which: str, n: int) -> list[str]:
    """`n` calls of `fake.first_name()` (which="first_names") or `fake.last_name()` (which="last_names") on an
    en_US Faker, drawn at once: Faker draws each with random.choices(names, weights, k=1), one random() per
    name, so choices(names, cum_weights, k=n) on the same Random gives the same names and leaves it in the
    same state, without summing the ~7,000 weights again for every name (Faker is pinned in pyproject)."""
    names, cum = _weighted(which)
    return fake.random.choices(names, cum_weights=cum, k=n)


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]", "", text.lower())


def _unique(values: list[str], make_variant: object) -> list[str]:
    seen: set[str] = set()
    out = []
    for v in values:
        candidate, n = v, 1
        while candidate.lower() in seen:
            n += 1
            candidate = make_variant(v, n)  # type: ignore[operator]
        seen.add(candidate.lower())
        out.append(candidate)
    return out


class UserGenerator(ObjectGenerator):
    sobject = "User"
    reads = ()
    block_size = 100_000  # users are few; one block keeps their names unique by construction

    def units(self, ctx: BuildContext) -> int:
        return len(ctx.world.agents)

    def block(self, ctx: BuildContext, b: int) -> pd.DataFrame:
        agents = ctx.world.agents
        n = len(agents)
        fake = ctx.faker("User", b)
        first = person_names(fake, "first_names", n)
        last = person_names(fake, "last_names", n)
        domain = ctx.profile.company.domain
        local = _unique(
            [f"{_slug(f)}.{_slug(s)}" for f, s in zip(first, last, strict=True)],
            lambda v, k: f"{v}{k}",
        )
        alias = _unique(
            [(_slug(f)[:1] + _slug(s))[:8] for f, s in zip(first, last, strict=True)],
            lambda v, k: f"{v[:6]}{k}",
        )
        now = ctx.world.end
        active_to = agents["active_to"].to_numpy()
        titles = np.where(
            agents["primary_issue"].to_numpy() >= 0,
            "Senior Support Agent",
            np.where(agents["skill"].to_numpy() > 0.6, "Support Agent II", "Support Agent"),
        )
        frame = pd.DataFrame(
            {
                "FirstName": first,
                "LastName": last,
                "Email": [f"{x}@{domain}" for x in local],
                "Phone": [fake.numerify("(###) ###-####") for _ in range(n)],
                "Username": [
                    f"{x}@{re.sub(r'[^a-z0-9-]+', '-', ctx.profile.name.lower())}.{domain}" for x in local
                ],
                "Alias": alias,
                "Title": titles,
                "ProfileId": make_id(ctx.model.key_prefix("Profile"), 0),
                "IsActive": active_to > np.datetime64(now, "s"),
                "LanguageLocaleKey": "en_US",
                "EmailEncodingKey": "UTF-8",
                "TimeZoneSidKey": agents["timezone"].to_numpy(),
                "LocaleSidKey": "en_US",
                "_agent": np.arange(n),
            }
        )
        return frame


class AccountGenerator(ObjectGenerator):
    sobject = "Account"
    reads = ()
    block_size = 1024

    def units(self, ctx: BuildContext) -> int:
        return len(ctx.world.customers)

    def block(self, ctx: BuildContext, b: int) -> pd.DataFrame:
        rows = self.block_range(ctx, b)
        cust = ctx.world.customers.iloc[rows.start : rows.stop]
        n = len(cust)
        fake = ctx.faker("Account", b)
        first = person_names(fake, "first_names", n)
        last = person_names(fake, "last_names", n)
        domains = [
            "gmail.com",
            "yahoo.com",
            "outlook.com",
            "icloud.com",
            "hotmail.com",
            "aol.com",
            "proton.me",
        ]
        rng = ctx.rng("Account", b)
        emails = [
            f"{_slug(f)}{sep}{_slug(s)}{num}@{domains[d]}"
            for f, s, sep, num, d in zip(
                first,
                last,
                rng.choice([".", "_", ""], n),
                [str(x) if x < 100 else "" for x in rng.integers(0, 160, n)],
                rng.integers(0, len(domains), n),
                strict=True,
            )
        ]
        # Globally unique email: the block and row make a suffix only when needed (checked in finalize).
        states = cust["state"].tolist()
        return pd.DataFrame(
            {
                "FirstName": first,
                "LastName": last,
                "PersonEmail": emails,
                "Phone": [numerify(fake.random, "(###) ###-####") for _ in range(n)],
                "RecordTypeId": make_id(ctx.model.key_prefix("RecordType"), 0),
                "ShippingStreet": street_addresses(fake, n),
                "ShippingCity": cust["city"].tolist(),
                "ShippingState": states,
                "ShippingPostalCode": [fake.zipcode_in_state(s) if s else fake.zipcode() for s in states],
                "ShippingCountry": "United States",
                "_customer": np.arange(rows.start, rows.stop),
            }
        )

    def after_ids(self, ctx: BuildContext, frame: pd.DataFrame) -> pd.DataFrame:
        frame["PersonEmail"] = _unique(frame["PersonEmail"].tolist(), lambda v, k: v.replace("@", f"{k}@", 1))
        return frame


class ContactGenerator(ObjectGenerator):
    """The person contact of every account: same person, same email; owned by an agent."""

    sobject = "Contact"
    reads = ("Account", "User")
    block_size = 1024

    def units(self, ctx: BuildContext) -> int:
        return len(ctx.frame("Account"))

    def block(self, ctx: BuildContext, b: int) -> pd.DataFrame:
        rows = self.block_range(ctx, b)
        acc = ctx.frame("Account").iloc[rows.start : rows.stop]
        users = ctx.frame("User")
        rng = ctx.rng("Contact", b)
        owners = users["Id"].to_numpy()[rng.integers(0, len(users), len(acc))]
        return pd.DataFrame(
            {
                "FirstName": acc["FirstName"].to_numpy(),
                "LastName": acc["LastName"].to_numpy(),
                "Email": acc["PersonEmail"].to_numpy(),
                "Phone": acc["Phone"].to_numpy(),
                "AccountId": acc["Id"].to_numpy(),
                "OwnerId": owners,
                "_customer": acc["_customer"].to_numpy(),
            }
        )
