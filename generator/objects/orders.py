"""Orders and order items, driven by customers' shopping habits and products' popularity and season."""

from __future__ import annotations

import numpy as np
import pandas as pd

from generator.objects.base import BuildContext, ObjectGenerator, capped_allocation, exact_allocation
from schemas.errors import Terminal


class BuildError(Terminal):
    """The profile asks for something the generator cannot produce (names the object and what to change)."""


def span_months(ctx: BuildContext) -> np.ndarray:
    """First instant of every month overlapping the span, as datetime64[s]."""
    start = pd.Timestamp(ctx.profile.span.start).to_period("M")
    end = pd.Timestamp(ctx.profile.span.end).to_period("M")
    return pd.period_range(start, end, freq="M").to_timestamp().to_numpy().astype("datetime64[s]")


class OrderGenerator(ObjectGenerator):
    sobject = "Order"
    reads = ("Account", "Pricebook2")
    block_size = 256  # customers per block
    sort_by = ("EffectiveDate", "_customer", "_seq")

    def units(self, ctx: BuildContext) -> int:
        return len(ctx.world.customers)

    def _per_customer(self, ctx: BuildContext) -> np.ndarray:
        def build() -> np.ndarray:
            cust = ctx.world.customers
            end = np.datetime64(ctx.world.end, "s")
            start = np.datetime64(ctx.world.start, "s")
            active = (end - np.maximum(cust["joined"].to_numpy(), start)) / (end - start)
            weights = cust["order_rate"].to_numpy() * np.clip(active, 0.02, 1.0)
            total = ctx.world.counts["Order"]
            minimum = 1 if total >= len(cust) else 0
            return exact_allocation(ctx.rng("Order", "allocation"), total, weights, minimum)

        return ctx.plan("Order.per_customer", build)

    def block(self, ctx: BuildContext, b: int) -> pd.DataFrame:
        rows = self.block_range(ctx, b)
        per = self._per_customer(ctx)
        cust = ctx.world.customers
        rng = ctx.rng("Order", b)
        months = span_months(ctx)
        moy = pd.DatetimeIndex(months).month.to_numpy() - 1
        years_in = (months - months[0]).astype("timedelta64[D]").astype(float) / 365.25
        growth = (1.0 + ctx.profile.latent["customers"]["growth_per_year"]) ** years_in
        start = np.datetime64(ctx.world.start, "s")
        end = np.datetime64(ctx.world.end, "s")
        month_end = np.append(months[1:], end)
        out_cust: list[int] = []
        out_date: list[np.ndarray] = []
        out_seq: list[int] = []
        joined_at = cust["joined"].to_numpy().astype("datetime64[s]")  # whole seconds (world.py)
        for c in rows:
            k = int(per[c])
            if k == 0:
                continue
            joined = joined_at[c]
            ok = month_end > np.datetime64(joined, "s")
            w = ctx.world.customer_months[c, moy] * growth * ok
            chosen = rng.choice(len(months), size=k, p=w / w.sum())
            lo = np.maximum(months[chosen], np.maximum(np.datetime64(joined, "s"), start))
            hi = np.minimum(month_end[chosen], end)
            width = np.maximum((hi - lo).astype("timedelta64[D]").astype(int), 1)
            day = lo.astype("datetime64[D]") + rng.integers(0, width).astype("timedelta64[D]")
            out_cust.extend([c] * k)
            out_date.append(day)
            out_seq.extend(range(k))
        n = len(out_cust)
        dates = np.concatenate([np.zeros(0, dtype="datetime64[D]"), *out_date]).astype("datetime64[s]")
        books = ctx.frame("Pricebook2")
        vf = books["ValidFrom"].to_numpy().astype("datetime64[s]")
        vt = books["ValidTo"].to_numpy().astype("datetime64[s]")
        seasonal = np.flatnonzero(~books["IsStandard"].to_numpy())
        book = np.zeros(n, dtype=int)
        if len(seasonal) and n:
            # per order: the first seasonal book (in frame order) valid on its date, if any
            valid = (vf[seasonal][None, :] <= dates[:, None]) & (dates[:, None] <= vt[seasonal][None, :])
            found = valid.any(axis=1)
            book[found] = seasonal[valid.argmax(axis=1)[found]]
        use_standard = rng.random(n) < ctx.profile.latent["customers"]["standard_pricebook_share"]
        book[use_standard] = 0
        recent = dates > end - np.timedelta64(30, "D")
        draft_p = ctx.profile.latent["customers"]["draft_share"] * np.where(recent, 3.0, 1.0)
        status = np.where(rng.random(n) < draft_p, "Draft", "Activated")
        acc_ids = ctx.frame("Account")["Id"].to_numpy()
        cust_idx = np.array(out_cust, dtype=int)
        return pd.DataFrame(
            {
                "AccountId": acc_ids[cust_idx] if n else np.array([], dtype=object),
                "Status": status,
                "EffectiveDate": dates,
                "Pricebook2Id": books["Id"].to_numpy()[book],
                "_customer": cust_idx,
                "_seq": np.array(out_seq, dtype=int),
                "_book": book,
            }
        )


class OrderItemGenerator(ObjectGenerator):
    sobject = "OrderItem"
    reads = ("Order", "Pricebook2", "PricebookEntry", "Product2")
    block_size = 1024  # orders per block
    sort_by = ("_order", "_line")

    def units(self, ctx: BuildContext) -> int:
        return len(ctx.frame("Order"))

    def _per_order(self, ctx: BuildContext) -> np.ndarray:
        def build() -> np.ndarray:
            orders = ctx.frame("Order")
            rng = ctx.rng("OrderItem", "allocation")
            basket = rng.lognormal(0.0, 0.5, len(ctx.world.customers))
            weights = basket[orders["_customer"].to_numpy()]
            total = ctx.world.counts["OrderItem"]
            if total < len(orders):
                raise BuildError(
                    f"OrderItem count {total} is below the Order count {len(orders)}; every order needs an item. "
                    "Raise [counts].OrderItem in the profile."
                )
            # no basket above the profile's bound ([bounds.OrderItem] OrderId) or the catalogue: at scale 1,000
            # (977,000 orders) a dozen of the multinomial's draws passed 25 items
            cap = len(ctx.frame("Product2"))
            bound = ctx.profile.bounds.get("OrderItem", {}).get("OrderId")
            if bound is not None:
                cap = min(cap, int(bound[1]))
            if total > cap * len(orders):
                raise BuildError(
                    f"OrderItem count {total} does not fit in {len(orders)} orders of at most {cap} item(s) each "
                    f"({cap * len(orders)} in all; the cap is the catalogue's size or [bounds.OrderItem] OrderId). Lower [counts].OrderItem or raise the bound "
                    f"in {ctx.profile.path}."
                )
            return capped_allocation(rng, exact_allocation(rng, total, weights, 1), weights, cap)

        return ctx.plan("OrderItem.per_order", build)

    def _entries(self, ctx: BuildContext) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        def build() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
            pbe = ctx.frame("PricebookEntry")
            n_books, n_products = len(ctx.frame("Pricebook2")), len(ctx.frame("Product2"))
            index = np.full((n_books, n_products), -1, dtype=int)
            index[pbe["_book"].to_numpy(), pbe["_product"].to_numpy()] = np.arange(len(pbe))
            return index, pbe["Id"].to_numpy(), pbe["UnitPrice"].to_numpy()

        return ctx.plan("OrderItem.entries", build)

    def _tables(self, ctx: BuildContext) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per (book, category, month): cumulative weights of the category's products on sale in that book.

        Returns (members, cum, offsets): products sorted by category; cum[book, month, j] the running sum of
        popularity × √season over the category's members (0 where the book lacks the product); offsets the
        start of each category in `members`.
        """

        def build() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
            world = ctx.world
            index, _, _ = self._entries(ctx)
            cat = world.products["category_idx"].to_numpy()
            members = np.argsort(cat, kind="stable")
            offsets = np.searchsorted(cat[members], np.arange(len(world.categories) + 1))
            base = world.products["popularity"].to_numpy()[members][None, :] * np.sqrt(
                world.product_season[members].T
            )
            available = (index[:, members] >= 0).astype(float)  # books × members
            weights = available[:, None, :] * base[None, :, :]  # books × 12 × members
            cum = np.zeros_like(weights)
            for c in range(len(offsets) - 1):
                lo, hi = offsets[c], offsets[c + 1]
                cum[:, :, lo:hi] = np.cumsum(weights[:, :, lo:hi], axis=2)
            return members, cum, offsets

        return ctx.plan("OrderItem.tables", build)

    def block(self, ctx: BuildContext, b: int) -> pd.DataFrame:
        rows = self.block_range(ctx, b)
        all_orders = ctx.frame("Order")
        per = self._per_order(ctx)[rows.start : rows.stop]
        index, entry_ids, entry_price = self._entries(ctx)
        members, cum, offsets = self._tables(ctx)
        world = ctx.world
        rng = ctx.rng("OrderItem", b)
        orders = all_orders.iloc[rows.start : rows.stop]
        n_orders = len(orders)
        order_local = np.repeat(np.arange(n_orders), per)
        # each item's position in its order: 0, 1, ... from each order's first item
        line = np.arange(len(order_local)) - np.repeat(np.cumsum(per) - per, per)
        customers = orders["_customer"].to_numpy()[order_local]
        books = orders["_book"].to_numpy()[order_local]
        months = (pd.DatetimeIndex(orders["EffectiveDate"]).month.to_numpy() - 1)[order_local]
        n = len(order_local)
        # Stage 1: a category per item from the customer's preferences (only categories the book sells).
        cat_total = np.stack(
            [cum[books, months, offsets[c + 1] - 1] for c in range(len(offsets) - 1)], axis=1
        )
        pref = world.customer_categories[customers] * (cat_total > 0)
        chosen_cat = _row_choice(rng.random(n), pref)
        # Stage 2: a product within the category ∝ popularity × √season, on sale in the order's book.
        product = _pick_in_category(rng.random(n), chosen_cat, books, months, members, cum, offsets)
        # Distinct products within an order: redraw duplicates (rare) from the whole book.
        seen: dict[tuple[int, int], None] = {}
        # the keys as Python ints, read ahead (item i's product changes only at step i, where it is read again)
        for i, key in enumerate(zip(order_local.tolist(), product.tolist(), strict=True)):
            tries = 0
            while key in seen and tries < 50:  # stages 1 and 2 for this item alone
                c = _cumulative_choice(rng.random(), np.cumsum(pref[i]))
                lo, hi = offsets[c], offsets[c + 1]
                product[i] = members[lo + _cumulative_choice(rng.random(), cum[books[i], months[i], lo:hi])]
                key = (int(order_local[i]), int(product[i]))
                tries += 1
            seen[key] = None
        entry = index[books, product]
        qw = np.asarray(ctx.profile.latent["customers"]["quantity_weights"], dtype=float)
        quantity = rng.choice(np.arange(1, len(qw) + 1), size=n, p=qw / qw.sum()).astype(float)
        order_pos = rows.start + order_local
        return pd.DataFrame(
            {
                "OrderId": all_orders["Id"].to_numpy()[order_pos],
                "Product2Id": ctx.frame("Product2")["Id"].to_numpy()[product],
                "PricebookEntryId": entry_ids[entry],
                "Quantity": quantity,
                "UnitPrice": entry_price[entry],
                "_order": order_pos,
                "_line": line,
                "_product": product,
            }
        )


def _row_choice(u: np.ndarray, weights: np.ndarray) -> np.ndarray:
    cum = np.cumsum(weights, axis=1)
    target = u[:, None] * cum[:, -1:]
    return np.minimum((cum < target).sum(axis=1), weights.shape[1] - 1)


def _cumulative_choice(u: float, cum: np.ndarray) -> int:
    """The option of one row where its cumulative weights `cum` pass `u` times their total: `_row_choice`
    (and `_pick_in_category`'s pick in a category) of a single row."""
    return min(int((cum < u * cum[-1]).sum()), len(cum) - 1)


def _pick_in_category(
    u: np.ndarray,
    cats: np.ndarray,
    books: np.ndarray,
    months: np.ndarray,
    members: np.ndarray,
    cum: np.ndarray,
    offsets: np.ndarray,
) -> np.ndarray:
    out = np.empty(len(cats), dtype=int)
    for c in np.unique(cats):
        sel = np.flatnonzero(cats == c)
        lo, hi = offsets[c], offsets[c + 1]
        table = cum[books[sel], months[sel], lo:hi]  # items × members of c
        target = u[sel] * table[:, -1]
        j = np.minimum((table < target[:, None]).sum(axis=1), hi - lo - 1)
        out[sel] = members[lo + j]
    return out
