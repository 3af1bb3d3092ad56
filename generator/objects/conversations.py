"""Email threads and chat transcripts of cases.

Every message falls inside its case's lifetime, and every agent message is sent by the agent who owns
the case at that moment (so a thread shows the transfers CaseHistory__c records). The case's offer is
placed exactly at its planned time: in the chat when the case has one, else in the closing email.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import numpy as np
import pandas as pd

from generator.frames import take
from generator.objects.base import BuildContext, ObjectGenerator, exact_allocation
from generator.objects.orders import BuildError
from generator.text.base import LANDS_IN, TextKind, TextRequest

SEC = np.timedelta64(1, "s")


def _sec(x: Any) -> int:
    """Seconds since the epoch of anything datetime-like."""
    return int(np.datetime64(x, "s").astype("int64"))


def owner_at_sec(chain: list[int], times: list[int], t: int) -> int:
    k = sum(1 for tt in times if tt <= t)
    return chain[min(k, len(chain) - 1)]


def offer_facts(ctx: BuildContext, remedy: str) -> dict[str, Any]:
    if remedy == "none":
        return {"remedy": "none"}
    r = ctx.world.remedies[remedy]
    return {
        "remedy": remedy,
        "phrase": r.phrase,
        "valid_days": r.valid_days,
        "amount": r.amount,
        "percent": r.percent,
    }


class EmailMessageGenerator(ObjectGenerator):
    sobject = "EmailMessage"
    reads = ("Case", "Contact", "Issue__c", "Product2", "User")
    block_size = 512  # cases per block
    sort_by = ("MessageDate", "_case", "_seq")
    text_kind = TextKind.EMAIL_THREAD
    spills_texts = True  # 970,200 emails at scale 300: their texts go to the work folder, then to the CSV

    def units(self, ctx: BuildContext) -> int:
        return len(ctx.frame("Case"))

    def _per_case(self, ctx: BuildContext) -> np.ndarray:
        def build() -> np.ndarray:
            cases = ctx.frame("Case")
            minimum = int(ctx.profile.latent["cases"]["emails_min"])
            needs_offer = (cases["_offer_channel"].to_numpy() == "email").astype(int)
            base = np.maximum(minimum, 1 + needs_offer)
            total = ctx.world.counts["EmailMessage"]
            if total < base.sum():
                raise BuildError(
                    f"EmailMessage count {total} is below the {int(base.sum())} emails the cases need "
                    "(an opening email per case and a closing email where the offer is made by email). "
                    "Raise [counts].EmailMessage in the profile."
                )
            transfers = np.array([len(a) - 1 for a in cases["_agents"]])
            closed = (cases["Status"].to_numpy() == "Closed").astype(float)
            weights = 1.0 + 1.5 * transfers + closed
            return base + exact_allocation(
                ctx.rng("EmailMessage", "allocation"), int(total - base.sum()), weights, 0
            )

        return ctx.plan("EmailMessage.per_case", build)

    def _people(self, ctx: BuildContext) -> tuple[list[Any], ...]:
        """The users' ids, emails and full names, then the contacts' (made once for every block)."""

        def build() -> tuple[list[Any], ...]:
            users, contacts = ctx.frame("User"), ctx.frame("Contact")
            return tuple(
                column
                for people in (users, contacts)
                for column in (
                    people["Id"].tolist(),
                    people["Email"].tolist(),
                    (people["FirstName"] + " " + people["LastName"]).tolist(),
                )
            )

        return ctx.plan("EmailMessage.people", build)

    def block(self, ctx: BuildContext, b: int) -> pd.DataFrame:
        rows = self.block_range(ctx, b)
        cases = ctx.frame("Case")
        per = self._per_case(ctx)
        u_id, u_mail, u_name, c_id, c_mail, c_name = self._people(ctx)
        support = f"support@{ctx.profile.company.domain}"
        rng = ctx.rng("EmailMessage", b)
        out: dict[str, list[Any]] = defaultdict(list)
        end = np.datetime64(ctx.world.end, "s")
        # this block's cases only (a worker reads the parts of the cases' columns that hold them); indexed
        # by position - rows.start
        mine = cases.iloc[rows.start : rows.stop]
        col = {
            c: mine[c].tolist() for c in ("Id", "_agents", "_transfer_secs", "_offer_channel", "_customer")
        }
        created_a = mine["CreatedDate"].to_numpy().astype("datetime64[s]").astype("int64")
        closed_raw = mine["ClosedDate"].to_numpy().astype("datetime64[s]")
        closed_ok = ~np.isnat(closed_raw)
        closed_a = np.where(closed_ok, closed_raw.astype("int64"), 0)
        first_a = mine["_first_assign"].to_numpy().astype("datetime64[s]").astype("int64")
        offer_a = mine["_offer_time"].to_numpy().astype("datetime64[s]").astype("int64")
        end_s = _sec(end)
        for pos in rows:
            m = int(per[pos])
            i = pos - rows.start
            chain = col["_agents"][i]
            times = list(col["_transfer_secs"][i])
            created = int(created_a[i])
            closed = int(closed_a[i]) if closed_ok[i] else None
            life_end = closed if closed is not None else end_s - 60
            first_assign = int(first_a[i])
            life = life_end - created
            t_open = created + int(min(rng.uniform(10, 180), life * 0.02) + 1)
            events: list[tuple[str, int]] = [("customer_open", t_open)]
            channel = col["_offer_channel"][i]
            if channel == "email":
                events.append(("agent_offer", int(offer_a[i])))
            elif closed is not None:
                events.append(("agent_close", life_end - int(rng.uniform(30, 300))))
            optional: list[tuple[str, int]] = []
            optional.append(("agent_ack", first_assign + int(rng.uniform(60, max(61.0, 0.1 * life)))))
            bounds = [first_assign, *times, life_end]
            for j, tt in enumerate(times):
                lo, hi = bounds[j], bounds[j + 2]
                before = max(lo + 1, tt - int(rng.uniform(20, 120)))
                after = min(hi - 1, tt + int(rng.uniform(60, 1800)))
                optional.append(("agent_transfer", before))
                optional.append(("agent_takeover", max(after, tt + 1)))
            chosen = events + optional[: max(0, m - len(events))]
            fillers = m - len(chosen)
            if fillers > 0:
                span_s = max(1, life_end - t_open)
                for k, f in enumerate(np.sort(rng.uniform(0.05, 0.95, fillers))):
                    kind = "customer_reply" if k % 2 == 0 else "agent_update"
                    chosen.append((kind, t_open + int(f * span_s)))
            chosen = chosen[:m]
            fixed = []
            for kind, t in chosen:
                t = min(max(t, created + 1), life_end - 1) if kind != "agent_offer" else t
                fixed.append((kind, t))
            fixed.sort(key=lambda e: (e[1], e[0] != "customer_open"))
            for seq, (kind, t) in enumerate(fixed):
                incoming = kind.startswith("customer")
                agent = owner_at_sec(chain, times, t)
                contact_pos = int(col["_customer"][i])
                out["ParentId"].append(col["Id"][i])
                if incoming:
                    out["FromAddress"].append(c_mail[contact_pos])
                    out["FromName"].append(c_name[contact_pos])
                    out["ToAddress"].append(support)
                    out["ToIds"].append(u_id[agent])
                    out["Status"].append("2" if seq < len(fixed) - 1 else "1")
                else:
                    out["FromAddress"].append(u_mail[agent])
                    out["FromName"].append(u_name[agent])
                    out["ToAddress"].append(c_mail[contact_pos])
                    out["ToIds"].append(c_id[contact_pos])
                    out["Status"].append("3")
                out["Incoming"].append(incoming)
                out["MessageDate"].append(t)  # seconds since the epoch, a datetime64[s] column below
                out["_case"].append(pos)
                out["_seq"].append(seq)
                out["_kind"].append(kind)
                out["_agent"].append(agent)
        frame = pd.DataFrame(out)
        if len(frame):
            frame["MessageDate"] = np.array(out["MessageDate"], dtype="int64").astype("datetime64[s]")
        return frame

    def after_ids(self, ctx: BuildContext, frame: pd.DataFrame) -> pd.DataFrame:
        # The agent an email transfers to / takes over from, for the text.
        cases = ctx.frame("Case")
        chains, secs = cases["_agents"].tolist(), cases["_transfer_secs"].tolist()
        when = frame["MessageDate"].to_numpy().astype("datetime64[s]").astype("int64")
        nxt, prev = [], []
        for pos, kind, t in zip(frame["_case"].tolist(), frame["_kind"].tolist(), when.tolist(), strict=True):
            chain = chains[pos]
            k = sum(1 for tt in secs[pos] if tt <= t)
            nxt.append(chain[min(k + 1, len(chain) - 1)] if kind == "agent_transfer" else -1)
            prev.append(chain[max(k - 1, 0)] if kind == "agent_takeover" else -1)
        frame["_next_agent"] = nxt
        frame["_prev_agent"] = prev
        return frame

    def _threads(
        self, ctx: BuildContext, frame: pd.DataFrame
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The cases with emails (sorted positions), each one's email count, and the emails' rows grouped by
        case (`rows[bounds[k]:bounds[k + 1]]` are the k-th case's); worked out once per run from the object's
        (structured) frame, whose rows keep their order once made."""

        def build() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
            case_col = frame["_case"].to_numpy()
            rows = np.argsort(case_col, kind="stable")
            cases, starts, counts = np.unique(case_col[rows], return_index=True, return_counts=True)
            return cases, counts, np.append(starts, len(rows)), rows

        return ctx.plan("EmailMessage.threads", build)

    def text_request_count(self, ctx: BuildContext, frame: pd.DataFrame) -> int | None:
        return len(self._threads(ctx, frame)[0])  # one request per case with emails

    def text_requests_for(
        self, ctx: BuildContext, frame: pd.DataFrame, lo: int, hi: int
    ) -> list[TextRequest]:
        # the requests of the lo-th to hi-th cases with emails (in case order): made from those cases' emails
        _, _, bounds, rows = self._threads(ctx, frame)
        return self.text_requests(ctx, frame.iloc[np.sort(rows[bounds[lo] : bounds[hi]])])

    def text_requests(self, ctx: BuildContext, frame: pd.DataFrame) -> list[TextRequest]:
        cases = ctx.frame("Case")
        users = ctx.frame("User")
        contacts = ctx.frame("Contact")
        prods = ctx.frame("Product2")
        issues = ctx.frame("Issue__c")
        noun = ctx.world.products["noun"].tolist()
        full = (users["FirstName"] + " " + users["LastName"]).tolist()
        firsts = users["FirstName"].tolist()
        pname, iname = prods["Name"].tolist(), issues["Name"].tolist()
        cfirst = contacts["FirstName"].tolist()
        issue_keys = [i.key for i in ctx.world.issues]
        # the facts of the cases these emails belong to (only those: a worker making a shard's requests reads
        # the parts of the cases' columns that hold its cases)
        positions = np.unique(frame["_case"].to_numpy())
        cc = {
            c: dict(zip(positions.tolist(), take(cases, c, positions), strict=True))
            for c in (
                "Id",
                "Subject",
                "Description",
                "_product",
                "_issue",
                "_customer",
                "_offer_remedy",
                "_violation",
                "_offer_channel",
            )
        }
        order = np.lexsort((frame["_seq"].to_numpy(), frame["_case"].to_numpy()))
        case_col = frame["_case"].to_numpy()[order].tolist()
        kinds = frame["_kind"].to_numpy()[order].tolist()
        agents = frame["_agent"].to_numpy()[order].tolist()
        nxts = frame["_next_agent"].to_numpy()[order].tolist()
        prevs = frame["_prev_agent"].to_numpy()[order].tolist()
        threads: dict[int, list[dict[str, Any]]] = {}
        for pos, kind, agent, nxt, prev in zip(case_col, kinds, agents, nxts, prevs, strict=True):
            msg: dict[str, Any] = {"kind": kind}
            if kind.startswith("customer"):
                msg.update(to_agent=full[agent], agent_first=firsts[agent])
            else:
                msg.update(agent=full[agent], agent_first=firsts[agent])
            if nxt >= 0:
                msg["next_agent"] = full[nxt]
            if prev >= 0:
                msg["prev_agent"] = full[prev]
            if kind == "agent_offer":
                msg["offer"] = offer_facts(ctx, str(cc["_offer_remedy"][pos]))
                msg["close"] = True
            threads.setdefault(pos, []).append(msg)
        out = []
        for pos in sorted(threads):
            prod, iss = cc["_product"][pos], cc["_issue"][pos]
            out.append(
                TextRequest(
                    TextKind.EMAIL_THREAD,
                    str(cc["Id"][pos]),
                    {
                        "case_key": str(cc["Id"][pos]),
                        "case_subject": str(cc["Subject"][pos]),
                        "case_description": str(cc["Description"][pos]),
                        "product": pname[prod],
                        "noun": noun[prod],
                        "issue": issue_keys[iss],
                        "issue_name": iname[iss],
                        "customer_first": cfirst[cc["_customer"][pos]],
                        "violation": bool(cc["_violation"][pos]) and cc["_offer_channel"][pos] == "email",
                        "messages": threads[pos],
                    },
                )
            )
        return out

    def held_texts(self, results: list[dict[str, Any]]) -> list[Any]:
        # a thread as its emails' (subject, body) pairs (`LANDS_IN` order), as the text shard spills them
        keys = tuple(LANDS_IN[TextKind.EMAIL_THREAD])
        return [tuple(tuple(m[k] for k in keys) for m in res["messages"]) for res in results]

    def text_rows(self, ctx: BuildContext, frame: pd.DataFrame, sizes: np.ndarray) -> np.ndarray:
        # the k-th result is the thread of the k-th case with emails (`text_requests`' order) and holds as many
        # emails as the case has rows; an email's message is its case's thread's, at its `_seq`
        cases, counts, bounds, _ = self._threads(ctx, frame)
        if len(sizes) != len(cases):
            raise BuildError(
                f"The writer returned {len(sizes)} email threads for {len(cases)} cases with emails."
            )
        wrong = np.flatnonzero(sizes != counts)
        if len(wrong):
            k = int(wrong[0])
            case_id = take(ctx.frame("Case"), "Id", cases[k : k + 1])[0]
            raise BuildError(
                f"The writer returned {int(sizes[k])} emails for case {case_id}, expected {int(counts[k])}."
            )
        case_col = frame["_case"].to_numpy()
        return np.asarray(bounds[np.searchsorted(cases, case_col)] + frame["_seq"].to_numpy(), dtype=np.int64)


class LiveChatTranscriptGenerator(ObjectGenerator):
    sobject = "LiveChatTranscript"
    reads = ("Case", "Contact", "Product2", "User")
    block_size = 1024
    sort_by = ("StartTime", "_case")
    text_kind = TextKind.CHAT
    dedup_fields = ("Body",)
    requests_per_row = True  # one request per chat, made from its own row

    def units(self, ctx: BuildContext) -> int:
        return len(ctx.frame("Case"))

    def block(self, ctx: BuildContext, b: int) -> pd.DataFrame:
        rows = self.block_range(ctx, b)
        cases = ctx.frame("Case").iloc[rows.start : rows.stop]
        chat = cases[cases["_has_chat"].to_numpy(dtype=bool)]
        users = ctx.frame("User")["Id"].to_numpy()
        owners = []
        starts = chat["_chat_start"].to_numpy().astype("datetime64[s]").astype("int64").tolist()
        for chain, secs, start_s in zip(
            chat["_agents"].tolist(), chat["_transfer_secs"].tolist(), starts, strict=True
        ):
            owners.append(owner_at_sec(chain, secs, start_s))
        start = chat["_chat_start"].to_numpy().astype("datetime64[s]")
        endt = chat["_chat_end"].to_numpy().astype("datetime64[s]")
        return pd.DataFrame(
            {
                "CaseId": chat["Id"].to_numpy(),
                "AccountId": chat["AccountId"].to_numpy(),
                "ContactId": chat["ContactId"].to_numpy(),
                "OwnerId": users[np.array(owners, dtype=int)] if owners else np.array([], dtype=object),
                "LiveChatVisitorId": None,
                "Body": None,
                "Status": "Completed",
                "StartTime": start,
                "EndTime": endt,
                "ChatDuration": ((endt - start) / SEC).astype("int64"),
                "_case": np.flatnonzero(cases["_has_chat"].to_numpy(dtype=bool)) + rows.start,
                "_agent": np.array(owners, dtype=int),
            }
        )

    def text_requests(self, ctx: BuildContext, frame: pd.DataFrame) -> list[TextRequest]:
        cases = ctx.frame("Case")
        users = ctx.frame("User")
        contacts = ctx.frame("Contact")
        prods = ctx.frame("Product2")
        noun = ctx.world.products["noun"].tolist()
        out = []
        full = (users["FirstName"] + " " + users["LastName"]).tolist()
        cfirst, pname = contacts["FirstName"].tolist(), prods["Name"].tolist()
        issue_keys = [i.key for i in ctx.world.issues]
        positions = np.unique(frame["_case"].to_numpy())  # the chats' cases (only those: see EmailMessage)
        cc = {
            c: dict(zip(positions.tolist(), take(cases, c, positions), strict=True))
            for c in ("Id", "Subject", "_product", "_issue", "_customer", "_offer_remedy", "_violation")
        }
        starts = np.datetime_as_string(frame["StartTime"].to_numpy().astype("datetime64[s]")).tolist()
        for k, (rid, pos, agent) in enumerate(
            zip(frame["Id"].tolist(), frame["_case"].tolist(), frame["_agent"].tolist(), strict=True)
        ):
            prod = cc["_product"][pos]
            out.append(
                TextRequest(
                    TextKind.CHAT,
                    str(rid),
                    {
                        "case_key": str(cc["Id"][pos]),
                        "start": starts[k],
                        "customer_first": cfirst[cc["_customer"][pos]],
                        "agent": full[agent],
                        "product": pname[prod],
                        "noun": noun[prod],
                        "issue": issue_keys[cc["_issue"][pos]],
                        "problem": str(cc["Subject"][pos]),
                        "offer": offer_facts(ctx, str(cc["_offer_remedy"][pos])),
                        "violation": bool(cc["_violation"][pos]),
                    },
                )
            )
        return out
