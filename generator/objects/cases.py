"""Cases and their history.

A case arises from an activated order item, chosen with probability ∝ the product's case rate × its
season in the order's month. The product's issue profile picks the issue; the issue's delay places the
case in time. Routing picks the first agent among agents on duty, weighted by issue expertise; agents
transfer with a probability that falls with skill (more for non-specialists), to specialists of the issue.
Handle time = the issue's base time × the agents' speed × the customer region's speed that year ×
(1 + penalty × transfers) × noise. A case whose close time falls after the span stays open.

Each case also carries its *offer*: the remedy an agent offers (in the chat when there is one, else in
the closing email) and whether it breaks the issue's policy (a remedy the policy does not allow, or one
offered after its window, counted in calendar days from the order's EffectiveDate). The violation label
is the ground truth of policy-violation identification.

CaseHistory__c follows CRMArena's semantics exactly: one `Case Creation` row at CreatedDate; a first
`Owner Assignment` with an empty OldValue__c; one `Owner Assignment` per transfer with OldValue__c = the
agent transferring away and NewValue__c = the agent receiving; a `Case Closed` row at ClosedDate exactly
when the case is closed. Case.OwnerId is the last NewValue__c.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from generator.frames import take_array
from generator.objects.base import BuildContext, ObjectGenerator, choice_rows, weighted_choice_rows
from generator.objects.orders import BuildError
from generator.text.base import TextKind, TextRequest

TONES = ["polite", "frustrated", "brief", "detailed", "anxious"]
TONE_WEIGHTS = np.array([0.34, 0.22, 0.16, 0.16, 0.12])
SEC = np.timedelta64(1, "s")
MIN = np.timedelta64(60, "s")


def _secs(x: np.ndarray) -> np.ndarray:
    return np.round(np.asarray(x, dtype=float)).astype("int64").astype("timedelta64[s]")


# np.add.reduce sums fewer values than this left to right, and more pairwise (numpy's pairwise summation)
PAIRWISE_FROM = 8


def chain_sums(values: np.ndarray, chains: list[list[int]]) -> np.ndarray:
    """`np.add.reduce(values[c])` for each chain `c` (non-empty), to the last bit: the chains shorter than
    PAIRWISE_FROM summed left to right a position at a time over the chains that long, any longer one by
    np.add.reduce itself."""
    lengths = np.array([len(c) for c in chains], dtype=np.int64)
    out = values[[c[0] for c in chains]]
    for k in range(1, min(int(lengths.max(initial=1)), PAIRWISE_FROM)):
        longer = np.flatnonzero(lengths > k)
        out[longer] = out[longer] + values[[chains[i][k] for i in longer.tolist()]]
    for i in np.flatnonzero(lengths >= PAIRWISE_FROM).tolist():
        out[i] = np.add.reduce(values[chains[i]])
    return out


class CaseGenerator(ObjectGenerator):
    sobject = "Case"
    reads = ("Account", "Contact", "Issue__c", "Order", "OrderItem", "Product2", "User")
    after = ("Product2", "Knowledge__kav", "Issue__c")
    block_size = 512
    sort_by = ("CreatedDate", "_item")
    text_kind = TextKind.CASE
    dedup_fields = ("Description",)
    requests_per_row = True  # one request per case, made from its own row
    request_fields = (
        "Id",
        "CreatedDate",
        "_order",
        "_item",
        "_product",
        "_issue",
        "_customer",
        "_tone",
        "_want",
    )

    def units(self, ctx: BuildContext) -> int:
        return len(self._plan(ctx)["item"])

    def _plan(self, ctx: BuildContext) -> dict[str, np.ndarray]:
        def build() -> dict[str, np.ndarray]:
            items = ctx.frame("OrderItem")
            orders = ctx.frame("Order")
            world = ctx.world
            order_pos = items["_order"].to_numpy()
            active = orders["Status"].to_numpy()[order_pos] == "Activated"
            odate = orders["EffectiveDate"].to_numpy().astype("datetime64[s]")[order_pos]
            end = np.datetime64(world.end, "s")
            remaining = (end - odate) / np.timedelta64(1, "D")
            month = pd.DatetimeIndex(odate).month.to_numpy() - 1
            product = items["_product"].to_numpy()
            weight = (
                world.products["case_rate"].to_numpy()[product]
                * world.product_season[product, month]
                * np.clip(remaining / 30.0, 0.0, 1.0)
                * active
            )
            n = world.counts["Case"]
            eligible = int((weight > 0).sum())
            if n > eligible:
                raise BuildError(
                    f"Case count {n} exceeds the {eligible} activated order items that can raise a case. "
                    "Lower [counts].Case or raise [counts].OrderItem in the profile."
                )
            rng = ctx.rng("Case", "plan")
            chosen = np.sort(rng.choice(len(items), size=n, replace=False, p=weight / weight.sum()))
            chats = min(world.counts["LiveChatTranscript"], n)
            has_chat = np.zeros(n, dtype=bool)
            has_chat[rng.choice(n, size=chats, replace=False)] = True
            return {"item": chosen, "has_chat": has_chat}

        return ctx.plan("Case.plan", build)

    def block(self, ctx: BuildContext, b: int) -> pd.DataFrame:
        rows = self.block_range(ctx, b)
        plan = self._plan(ctx)
        world = ctx.world
        lat = ctx.profile.latent
        rng = ctx.rng("Case", b)
        items = ctx.frame("OrderItem")
        orders = ctx.frame("Order")
        item = plan["item"][rows.start : rows.stop]
        has_chat = plan["has_chat"][rows.start : rows.stop]
        n = len(item)
        order_pos = items["_order"].to_numpy()[item]
        product = items["_product"].to_numpy()[item]
        customer = orders["_customer"].to_numpy()[order_pos]
        order_date = orders["EffectiveDate"].to_numpy().astype("datetime64[s]")[order_pos]
        end = np.datetime64(world.end, "s")

        # Issue and time.
        issue = weighted_choice_rows(rng, world.product_issues[product])
        delay_days = np.array([world.issues[i].delay_days for i in issue])
        order_time = order_date + _secs(rng.uniform(7 * 3600, 23 * 3600, n))
        delay = rng.lognormal(np.log(delay_days), 0.6) * 86400.0
        created = order_time + _secs(np.maximum(delay, 600.0))
        late = created >= end - np.timedelta64(2, "h")
        if late.any():
            room = (end - np.timedelta64(2, "h") - order_time[late]) / SEC
            created[late] = order_time[late] + _secs(
                np.maximum(rng.uniform(0.05, 1.0, late.sum()) * room, 60.0)
            )

        # Routing and transfers.
        agents = world.agents
        a_from = agents["active_from"].to_numpy().astype("datetime64[s]")
        a_to = agents["active_to"].to_numpy().astype("datetime64[s]")
        on_duty = (a_from[None, :] <= created[:, None]) & (created[:, None] < a_to[None, :])
        expertise = world.expertise[:, issue].T  # cases × agents
        route_w = expertise * on_duty
        first = weighted_choice_rows(rng, route_w)
        p = lat["agents"]
        chains = [[int(a)] for a in first]
        current = first.copy()
        open_chain = np.ones(n, dtype=bool)
        transfer_prob = agents["transfer_prob"].to_numpy()
        for _ in range(int(p["max_transfers"])):
            is_spec = world.expertise[current, issue] > 1.0
            prob = transfer_prob[current] * np.where(is_spec, 1.0, p["transfer_non_specialist_factor"])
            going = open_chain & (rng.random(n) < np.clip(prob, 0.0, 0.95))
            # the next agent among the others on duty, drawn for the transferring cases only, from the numbers
            # a draw for every case takes (`weighted_choice_rows`)
            u = rng.random((n, 1))
            moving = np.flatnonzero(going)
            w = route_w[moving]
            w[np.arange(len(moving)), current[moving]] = 0.0
            reachable = w.sum(axis=1) > 0
            moving, w = moving[reachable], w[reachable]
            nxt = choice_rows(u[moving], w)
            for j, a in zip(moving.tolist(), nxt.tolist(), strict=True):
                chains[j].append(a)
            current[moving] = nxt
            open_chain[:] = False
            open_chain[moving] = True
            if not open_chain.any():
                break
        lengths = np.array([len(c) for c in chains])
        n_transfers = lengths - 1
        owner = np.array([c[-1] for c in chains])

        # Handle time and status.
        # each chain's geometric mean speed: exp of its logs' mean
        speed_mix = np.exp(chain_sums(np.log(agents["speed"].to_numpy()), chains) / lengths)
        cust = world.customers
        state_idx = cust["state_idx"].to_numpy()[customer]
        region = world.region_speed_at(state_idx, created)
        cl = lat["cases"]
        base = np.array([world.issues[i].handle_hours for i in issue]) * 60.0
        handle = base * speed_mix * region * (1.0 + cl["transfer_time_penalty"] * n_transfers)
        handle = handle * rng.lognormal(0.0, cl["handle_time_sigma"], n)
        handle = np.maximum(handle, float(cl["min_handle_minutes"]))
        closed_at = created + _secs(handle * 60.0)
        stuck = rng.random(n) < cl["stuck_open_share"]
        is_closed = (closed_at < end) & ~stuck
        life_end = np.where(is_closed, closed_at, np.minimum(closed_at, end - np.timedelta64(1, "m")))
        life = np.maximum((life_end - created) / SEC, 120.0)
        first_assign = created + _secs(np.minimum(rng.uniform(60, 900, n), 0.04 * life))
        transfer_times: list[list[np.datetime64]] = []
        for i in range(n):
            k = n_transfers[i]
            if k == 0:
                transfer_times.append([])
                continue
            fr = np.sort(rng.uniform(0.08, 0.9, k))
            transfer_times.append(list(created[i] + _secs(fr * life[i])))  # elementwise, as one at a time
        open_status = np.where(
            (n_transfers > 0) & (rng.random(n) < 0.5),
            "Escalated",
            np.where(rng.random(n) < 0.3, "New", "Working"),
        )
        status = np.where(is_closed, "Closed", open_status)

        # Chat timing (the chat starts after the first assignment and ends before the case closes).
        cmin, cmax = cl["chat_minutes"]
        chat_start = first_assign + _secs(rng.uniform(30, 300, n))
        chat_start = np.minimum(chat_start, created + _secs(0.5 * life))
        chat_len = rng.uniform(cmin * 60, cmax * 60, n)
        chat_end = np.minimum(chat_start + _secs(chat_len), life_end - np.timedelta64(30, "s"))
        chat_end = np.maximum(chat_end, chat_start + np.timedelta64(60, "s"))

        # The offer and its policy check.
        def owner_at(i: int, t: np.datetime64) -> int:
            k = 0
            for tt in transfer_times[i]:
                if tt <= t:
                    k += 1
            return chains[i][min(k, len(chains[i]) - 1)]

        offer_time = np.where(
            has_chat, chat_start + (chat_end - chat_start) // 2, life_end - _secs(rng.uniform(60, 600, n))
        )
        offer_time = np.maximum(offer_time, first_assign + np.timedelta64(60, "s"))
        offer_channel = np.where(has_chat, "chat", np.where(is_closed, "email", "none"))
        offer_agent = np.array([owner_at(i, offer_time[i]) for i in range(n)])
        v_prob = world.violation_probability()[offer_agent]
        violated = (rng.random(n) < v_prob) & (offer_channel != "none")
        days_since = (
            (offer_time.astype("datetime64[D]") - order_date.astype("datetime64[D]")) / np.timedelta64(1, "D")
        ).astype(int)
        all_remedies = sorted(world.remedies)
        # each issue's policy: its remedies in order with their windows, and the remedies it does not allow
        windows = {k: sorted(world.issues[k].remedies.items()) for k in set(issue.tolist())}
        disallowed = {k: [r for r in all_remedies if r not in world.issues[k].remedies] for k in windows}
        offer_remedy: list[str] = []
        violation_kind: list[str] = []
        for i, (k, channel, days, broke) in enumerate(
            zip(issue.tolist(), offer_channel.tolist(), days_since.tolist(), violated.tolist(), strict=True)
        ):
            if channel == "none":
                offer_remedy.append("none")
                violation_kind.append("")
                continue
            if broke:
                late_ok = [r for r, w in windows[k] if days > w]
                not_allowed = disallowed[k]
                if late_ok and (rng.random() < 0.5 or not not_allowed):
                    offer_remedy.append(late_ok[int(rng.integers(0, len(late_ok)))])
                    violation_kind.append("window")
                elif not_allowed:
                    offer_remedy.append(not_allowed[int(rng.integers(0, len(not_allowed)))])
                    violation_kind.append("not_allowed")
                else:
                    violated[i] = False
                    offer_remedy.append("none")
                    violation_kind.append("")
                continue
            ok = [r for r, w in windows[k] if days <= w]
            offer_remedy.append(ok[int(rng.integers(0, len(ok)))] if ok else "none")
            violation_kind.append("")
        wants = []
        for k in issue.tolist():
            policy = [r for r, _ in windows[k]]
            if rng.random() < 0.7:
                wants.append(policy[int(rng.integers(0, len(policy)))])
            else:
                wants.append(all_remedies[int(rng.integers(0, len(all_remedies)))])

        # Visible fields.
        prio_w = ctx.profile.picklist_weights("Case", "Priority") or {"Low": 1.0, "Medium": 1.0, "High": 1.0}
        prio_vals = list(prio_w)
        prio_p = np.array([prio_w[v] for v in prio_vals])
        random_prio = np.array(prio_vals)[rng.choice(len(prio_vals), size=n, p=prio_p / prio_p.sum())]
        issue_prio = np.array([world.issues[i].priority for i in issue])
        priority = np.where(rng.random(n) < 0.7, issue_prio, random_prio)
        orig_w = ctx.profile.picklist_weights("Case", "Origin") or {"Email": 1.0, "Web": 1.0, "Phone": 1.0}
        orig_vals = [v for v in orig_w if v != "Chat"]
        orig_p = np.array([orig_w[v] for v in orig_vals])
        origin = np.array(orig_vals)[rng.choice(len(orig_vals), size=n, p=orig_p / orig_p.sum())]
        origin = np.where(has_chat, "Chat", origin)
        tone = np.array(TONES)[rng.choice(len(TONES), size=n, p=TONE_WEIGHTS)]

        users = ctx.frame("User")["Id"].to_numpy()
        accounts = ctx.frame("Account")["Id"].to_numpy()
        contacts = ctx.frame("Contact")["Id"].to_numpy()
        issue_ids = ctx.frame("Issue__c")["Id"].to_numpy()
        return pd.DataFrame(
            {
                "Subject": None,
                "Description": None,
                "Status": status,
                "Priority": priority,
                "Origin": origin,
                "ContactId": contacts[customer],
                "AccountId": accounts[customer],
                "OwnerId": users[owner],
                "CreatedDate": created,
                "ClosedDate": pd.Series(
                    np.where(is_closed, closed_at, np.datetime64("NaT")), dtype="datetime64[s]"
                ),
                "OrderItemId__c": take_array(items, "Id", item),
                "IssueId__c": issue_ids[issue],
                "_item": item,
                "_order": order_pos,
                "_product": product,
                "_customer": customer,
                "_issue": issue,
                "_state": state_idx,
                "_agents": chains,
                "_transfer_times": [[str(t) for t in tt] for tt in transfer_times],
                "_transfer_secs": [[int(t.astype("int64")) for t in tt] for tt in transfer_times],
                "_first_assign": first_assign,
                "_handle_minutes": np.round(handle, 3),
                "_has_chat": has_chat,
                "_chat_start": chat_start,
                "_chat_end": chat_end,
                "_offer_channel": offer_channel,
                "_offer_time": offer_time,
                "_offer_agent": offer_agent,
                "_offer_remedy": offer_remedy,
                "_days_since_purchase": days_since,
                "_violation": violated,
                "_violation_kind": violation_kind,
                "_want": wants,
                "_tone": tone,
            }
        )

    def text_requests(self, ctx: BuildContext, frame: pd.DataFrame) -> list[TextRequest]:
        prods = ctx.frame("Product2")
        issues = ctx.frame("Issue__c")
        contacts = ctx.frame("Contact")
        orders = ctx.frame("Order")
        pname = prods["Name"].tolist()
        noun = ctx.world.products["noun"].tolist()
        category = ctx.world.products["category"].tolist()
        issue_keys = [i.key for i in ctx.world.issues]
        issue_names = issues["Name"].tolist()
        firsts = contacts["FirstName"].tolist()
        lasts = contacts["LastName"].tolist()
        # the order dates and item prices of these rows only (not lists over every order and item: requests are
        # made a shard or a round's rows at a time)
        order_days = orders["EffectiveDate"].to_numpy().astype("datetime64[D]")[frame["_order"].to_numpy()]
        odates = np.datetime_as_string(order_days).tolist()
        prices = ctx.frame("OrderItem")["UnitPrice"].to_numpy()[frame["_item"].to_numpy()].tolist()
        days_since = (
            ((frame["CreatedDate"].to_numpy().astype("datetime64[D]") - order_days) / np.timedelta64(1, "D"))
            .astype(int)
            .tolist()
        )
        out = []
        cols = [frame[c].tolist() for c in ("Id", "_product", "_issue", "_customer", "_tone", "_want")]
        for k, (rid, prod, iss, cust, tone, want) in enumerate(zip(*cols, strict=True)):
            facts = {
                "customer_key": str(cust),
                "customer_last": lasts[cust],
                "price": prices[k],
                "days_since": days_since[k],
                "product": pname[prod],
                "noun": noun[prod],
                "category": category[prod],
                "issue": issue_keys[iss],
                "issue_name": issue_names[iss],
                "customer_first": firsts[cust],
                "order_date": odates[k],
                "tone": tone,
                "want": want,
            }
            out.append(TextRequest(TextKind.CASE, str(rid), facts))
        return out


class CaseHistoryGenerator(ObjectGenerator):
    sobject = "CaseHistory__c"
    reads = ("Case", "User")
    block_size = 1024  # cases per block
    sort_by = ("CreatedDate", "_case", "_seq")

    def units(self, ctx: BuildContext) -> int:
        return len(ctx.frame("Case"))

    def block(self, ctx: BuildContext, b: int) -> pd.DataFrame:
        rows = self.block_range(ctx, b)
        cases = ctx.frame("Case").iloc[rows.start : rows.stop]
        users = ctx.frame("User")["Id"].to_numpy()
        case_pos: list[int] = []
        seq: list[int] = []
        field: list[str] = []
        old: list[Any] = []
        new: list[Any] = []
        when: list[np.datetime64] = []
        created_a = cases["CreatedDate"].to_numpy().astype("datetime64[s]")
        closed_a = cases["ClosedDate"].to_numpy().astype("datetime64[s]")
        first_a = cases["_first_assign"].to_numpy().astype("datetime64[s]")
        chains, secs_all = cases["_agents"].tolist(), cases["_transfer_secs"].tolist()
        for offset, (agents, secs) in enumerate(zip(chains, secs_all, strict=True)):
            pos = rows.start + offset
            created, closed, first_assign = created_a[offset], closed_a[offset], first_a[offset]
            times = [np.datetime64(t, "s") for t in secs]
            events: list[tuple[str, Any, Any, np.datetime64]] = [
                ("Case Creation", None, None, np.datetime64(created, "s")),
                ("Owner Assignment", None, users[agents[0]], np.datetime64(first_assign, "s")),
            ]
            for k, t in enumerate(times):
                events.append(("Owner Assignment", users[agents[k]], users[agents[k + 1]], t))
            if not np.isnat(closed):
                events.append(("Case Closed", None, None, np.datetime64(closed, "s")))
            for s, (f, o, nw, t) in enumerate(events):
                case_pos.append(pos)
                seq.append(s)
                field.append(f)
                old.append(o)
                new.append(nw)
                when.append(t)
        case_ids = ctx.frame("Case")["Id"].to_numpy()
        return pd.DataFrame(
            {
                "CaseId__c": case_ids[np.array(case_pos, dtype=int)],
                "Field__c": field,
                "OldValue__c": old,
                "NewValue__c": new,
                "CreatedDate": np.array(when, dtype="datetime64[s]"),
                "_case": np.array(case_pos, dtype=int),
                "_seq": np.array(seq, dtype=int),
            }
        )
