"""The catalog: categories, products, price books and entries, issues and knowledge articles."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from generator.ids import make_id
from generator.objects.base import BuildContext, ObjectGenerator
from generator.text.base import TextKind, TextRequest
from generator.world import MONTH_NAMES


class ProductCategoryGenerator(ObjectGenerator):
    sobject = "ProductCategory"
    reads = ()
    block_size = 100_000
    text_kind = TextKind.CATEGORY

    def units(self, ctx: BuildContext) -> int:
        return len(ctx.world.categories)

    def block(self, ctx: BuildContext, b: int) -> pd.DataFrame:
        cats = ctx.world.categories
        return pd.DataFrame(
            {
                "Name": [c.name for c in cats],
                "Description": None,
                "CatalogId": make_id(ctx.model.key_prefix("ProductCatalog"), 0),
                "_category": [c.index for c in cats],
            }
        )

    def text_requests(self, ctx: BuildContext, frame: pd.DataFrame) -> list[TextRequest]:
        return [
            TextRequest(TextKind.CATEGORY, str(rid), {"name": name, "company": ctx.profile.company.name})
            for rid, name in zip(frame["Id"], frame["Name"], strict=True)
        ]


class Product2Generator(ObjectGenerator):
    sobject = "Product2"
    reads = ()
    block_size = 1024
    text_kind = TextKind.PRODUCT
    dedup_fields = ("Description",)

    def units(self, ctx: BuildContext) -> int:
        return len(ctx.world.products)

    def block(self, ctx: BuildContext, b: int) -> pd.DataFrame:
        rows = self.block_range(ctx, b)
        p = ctx.world.products.iloc[rows.start : rows.stop]
        idx = np.arange(rows.start, rows.stop)
        rng = ctx.rng("Product2", b)
        abbrev = {
            c.name: re.sub(r"[^A-Z]", "", c.name.title())[:3].ljust(3, "X") for c in ctx.world.categories
        }
        return pd.DataFrame(
            {
                "Name": None,
                "ProductCode": [
                    f"SC-{abbrev[c]}-{i + 1:05d}" for c, i in zip(p["category"], idx, strict=True)
                ],
                "Description": None,
                "Family": p["category"].to_numpy(),
                "IsActive": rng.random(len(p)) >= 0.04,
                "External_ID__c": [f"PRD-{i + 1:06d}" for i in idx],
                "_product": idx,
                "_category": p["category_idx"].to_numpy(),
            }
        )

    def text_requests(self, ctx: BuildContext, frame: pd.DataFrame) -> list[TextRequest]:
        prods = ctx.world.products
        cats = ctx.world.categories
        out = []
        for rid, pidx in zip(frame["Id"], frame["_product"], strict=True):
            w = prods.iloc[int(pidx)]
            facts: dict[str, Any] = {
                "category": w["category"],
                "noun": w["noun"],
                "modifier_index": int(w["modifier_idx"]),
            }
            if w["material"]:
                # The product's own attributes (world.py draws them from its type's ranges in the profile).
                facts.update(
                    material=str(w["material"]),
                    features=str(w["features"]).split("; "),
                    weight_grams=int(w["weight_grams"]),
                    uses=list(cats[int(w["category_idx"])].uses),
                )
            out.append(TextRequest(TextKind.PRODUCT, str(rid), facts))
        return out


class ProductCategoryProductGenerator(ObjectGenerator):
    sobject = "ProductCategoryProduct"
    reads = ("Product2", "ProductCategory")
    block_size = 100_000

    def units(self, ctx: BuildContext) -> int:
        return 1

    def block(self, ctx: BuildContext, b: int) -> pd.DataFrame:
        prods = ctx.frame("Product2")
        cats = ctx.frame("ProductCategory")
        cat_ids = cats["Id"].to_numpy()
        primary = prods["_category"].to_numpy()
        pairs = list(zip(primary.tolist(), range(len(prods)), strict=True))
        extra = ctx.world.counts["ProductCategoryProduct"] - len(prods)
        if extra > 0 and len(cats) > 1:
            rng = ctx.rng("ProductCategoryProduct", "extra")
            seen = set(pairs)
            for pidx in rng.permutation(len(prods)):
                if extra <= 0:
                    break
                choices = [c for c in range(len(cats)) if (c, int(pidx)) not in seen]
                c = choices[int(rng.integers(0, len(choices)))]
                seen.add((c, int(pidx)))
                pairs.append((c, int(pidx)))
                extra -= 1
        return pd.DataFrame(
            {
                "ProductCategoryId": [cat_ids[c] for c, _ in pairs],
                "ProductId": [prods["Id"].iat[p] for _, p in pairs],
            }
        )


class Pricebook2Generator(ObjectGenerator):
    """The standard price book plus seasonal books that tile the time span."""

    sobject = "Pricebook2"
    reads = ()
    block_size = 100_000

    def units(self, ctx: BuildContext) -> int:
        return 1

    def block(self, ctx: BuildContext, b: int) -> pd.DataFrame:
        n = ctx.world.counts["Pricebook2"]
        span = ctx.profile.span
        start = np.datetime64(span.start_dt, "s")
        end = np.datetime64(span.end_dt, "s")
        seasonal = n - 1
        rng = ctx.rng("Pricebook2")
        lo, hi = ctx.profile.latent["products"]["pricebook_multiplier"]
        names = ["Standard Price Book"]
        desc = [f"List prices of every {ctx.profile.company.name} product."]
        valid_from: list[Any] = [None]
        valid_to: list[Any] = [None]
        mult = [1.0]
        if seasonal:
            total = int((end - start) / np.timedelta64(1, "D"))
            bounds = [start + np.timedelta64(round(total * k / seasonal), "D") for k in range(seasonal + 1)]
            seen: set[str] = set()
            for k in range(seasonal):
                a, z = bounds[k], bounds[k + 1]
                d = pd.Timestamp(a)
                season = (
                    "Holiday"
                    if d.month in (11, 12)
                    else ["Winter", "Spring", "Summer", "Fall"][(d.month % 12) // 3]
                )
                name = f"{season} {MONTH_NAMES[d.month - 1]} {d.year} Price Book"
                while name in seen:
                    name += " II"
                seen.add(name)
                names.append(name)
                last = pd.Timestamp(z - np.timedelta64(1, "s"))
                desc.append(f"Prices valid from {d.date().isoformat()} to {last.date().isoformat()}.")
                valid_from.append(a)
                valid_to.append(z - np.timedelta64(1, "s"))
                mult.append(float(np.round(rng.uniform(lo, hi), 3)))
        return pd.DataFrame(
            {
                "Name": names,
                "Description": desc,
                "IsActive": True,
                "IsStandard": [True] + [False] * seasonal,
                "ValidFrom": pd.Series(valid_from, dtype="datetime64[s]"),
                "ValidTo": pd.Series(valid_to, dtype="datetime64[s]"),
                "_multiplier": mult,
            }
        )


def _price(values: np.ndarray) -> np.ndarray:
    return np.maximum(0.99, np.floor(values) + 0.99).round(2)


class PricebookEntryGenerator(ObjectGenerator):
    """Every product in the standard book; seasonal books carry a share of the products."""

    sobject = "PricebookEntry"
    reads = ("Pricebook2", "Product2")
    block_size = 4  # price books per block

    def units(self, ctx: BuildContext) -> int:
        return len(ctx.frame("Pricebook2"))

    def _per_book(self, ctx: BuildContext) -> np.ndarray:
        def build() -> np.ndarray:
            books = ctx.frame("Pricebook2")
            n_products = len(ctx.frame("Product2"))
            per = np.zeros(len(books), dtype=int)
            per[0] = n_products
            rest = ctx.world.counts["PricebookEntry"] - n_products
            if len(books) > 1:
                base, extra = divmod(rest, len(books) - 1)
                per[1:] = base
                per[1 : 1 + extra] += 1
            return per

        return ctx.plan("PricebookEntry.per_book", build)

    def block(self, ctx: BuildContext, b: int) -> pd.DataFrame:
        books = ctx.frame("Pricebook2")
        prods = ctx.frame("Product2")
        base_price = ctx.world.products["base_price"].to_numpy()
        per = self._per_book(ctx)
        parts = []
        for k in self.block_range(ctx, b):
            rng = ctx.rng("PricebookEntry", k)
            if k == 0:
                chosen = np.arange(len(prods))
                price = base_price
            else:
                chosen = np.sort(rng.choice(len(prods), size=int(per[k]), replace=False))
                noise = rng.normal(1.0, 0.03, len(chosen))
                price = _price(base_price[chosen] * float(books["_multiplier"].iat[k]) * noise)
            parts.append(
                pd.DataFrame(
                    {
                        "Pricebook2Id": books["Id"].iat[k],
                        "Product2Id": prods["Id"].to_numpy()[chosen],
                        "UnitPrice": np.asarray(price, dtype=float).round(2),
                        "IsActive": True,
                        "UseStandardPrice": False,
                        "_book": k,
                        "_product": chosen,
                    }
                )
            )
        return pd.concat(parts, ignore_index=True)


class IssueGenerator(ObjectGenerator):
    sobject = "Issue__c"
    reads = ()
    block_size = 100_000
    text_kind = TextKind.ISSUE

    def units(self, ctx: BuildContext) -> int:
        return len(ctx.world.issues)

    def block(self, ctx: BuildContext, b: int) -> pd.DataFrame:
        return pd.DataFrame(
            {
                "Name": None,
                "Description__c": None,
                "_issue": [i.index for i in ctx.world.issues],
                "_issue_key": [i.key for i in ctx.world.issues],
            }
        )

    def text_requests(self, ctx: BuildContext, frame: pd.DataFrame) -> list[TextRequest]:
        return [
            TextRequest(TextKind.ISSUE, str(rid), {"key": key})
            for rid, key in zip(frame["Id"], frame["_issue_key"], strict=True)
        ]


def url_slug(text: str) -> str:
    out = re.sub(r"[^A-Za-z0-9]+", "-", text).strip("-")
    return out[:200] or "article"


class KnowledgeGenerator(ObjectGenerator):
    sobject = "Knowledge__kav"
    reads = ("Issue__c",)
    after = ("Issue__c",)
    block_size = 100_000
    text_kind = TextKind.KNOWLEDGE
    dedup_fields = ("FAQ_Answer__c",)

    def units(self, ctx: BuildContext) -> int:
        return len(ctx.world.knowledge)

    def block(self, ctx: BuildContext, b: int) -> pd.DataFrame:
        topics = ctx.world.knowledge
        return pd.DataFrame(
            {
                "Title": None,
                "Summary": None,
                "FAQ_Answer__c": None,
                "UrlName": None,
                "PublishStatus": "Online",
                "Language": "en_US",
                "_topic": [t.key for t in topics],
                "_kind": [t.kind for t in topics],
                "_subject": [t.subject for t in topics],
                "_facts": [json.dumps(t.facts, sort_keys=True) for t in topics],
            }
        )

    def text_requests(self, ctx: BuildContext, frame: pd.DataFrame) -> list[TextRequest]:
        issues = ctx.frame("Issue__c")
        issue_names = dict(zip(issues["_issue_key"], issues["Name"], strict=True))
        issue_desc = dict(zip(issues["_issue_key"], issues["Description__c"], strict=True))
        phrases = {k: r.phrase for k, r in ctx.world.remedies.items()}
        out = []
        seen: dict[str, int] = {}
        for topic, rid in zip(ctx.world.knowledge, frame["Id"], strict=True):
            # The article's position among those of its kind: the offline writer varies its prose by it.
            ordinal = seen[topic.kind] = seen.get(topic.kind, -1) + 1
            facts: dict[str, Any] = {
                "kind": topic.kind,
                "ordinal": ordinal,
                "subject": topic.subject,
                "facts": topic.facts,
                "data": topic.data,
            }
            if topic.kind in ("category_guide", "product_guide"):
                cat = next((c for c in ctx.world.categories if c.name == topic.data.get("category")), None)
                facts["nouns"] = list(cat.nouns) if cat else []
            if topic.kind == "issue_policy":
                remedies = dict(topic.data["remedies"])
                facts.update(
                    issue_description=issue_desc[topic.subject],
                    issue_name=issue_names[topic.subject],
                    remedies=remedies,
                    remedy_phrases={k: phrases[k] for k in remedies},
                )
            out.append(TextRequest(TextKind.KNOWLEDGE, str(rid), facts))
        return out

    def apply_text(
        self,
        ctx: BuildContext,
        frame: pd.DataFrame,
        requests: Sequence[TextRequest],
        results: Sequence[dict[str, Any]],
    ) -> pd.DataFrame:
        frame = super().apply_text(ctx, frame, requests, results)
        seen: set[str] = set()
        urls = []
        for title in frame["Title"]:
            base = url_slug(str(title))
            url, k = base, 1
            while url.lower() in seen:
                k += 1
                url = f"{base}-{k}"
            seen.add(url.lower())
            urls.append(url)
        frame["UrlName"] = urls
        return frame
