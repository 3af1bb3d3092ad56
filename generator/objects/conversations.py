"""Email threads and chat transcripts of cases.

Every message falls inside its case's lifetime, and every agent message is sent by the agent who owns
the case at that moment (so a thread shows the transfers CaseHistory__c records). The case's offer is
placed exactly at its planned time: in the chat when the case has one, else in the closing email.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from generator.objects.base import BuildContext, ObjectGenerator, exact_allocation
from generator.objects.orders import BuildError
from generator.text.base import TextKind, TextRequest

SEC = np.timedelta64(1, "s")


def _t(x: Any) -> np.datetime64:
    return np.datetime64(x, "s")


def _sec(x: Any) -> int:
    """Seconds since the epoch of anything datetime-like."""
    return int(np.datetime64(x, "s").astype("int64"))


def owner_at_sec(chain: list[int], times: list[int], t: int) -> int:
    k = sum(1 for tt in times if tt <= t)
    return chain[min(k, len(chain) - 1)]


def owner_at(chain: list[int], times: list[np.datetime64], t: np.datetime64) -> int:
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
    block_size = 512  # cases per block
    sort_by = ("MessageDate", "_case", "_seq")
    text_kind = TextKind.EMAIL_THREAD

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
            transfers = np.array([len(json.loads(a)) - 1 for a in cases["_agents"]])
            closed = (cases["Status"].to_numpy() == "Closed").astype(float)
            weights = 1.0 + 1.5 * transfers + closed
            return base + exact_allocation(
                ctx.rng("EmailMessage", "allocation"), int(total - base.sum()), weights, 0
            )

        return ctx.plan("EmailMessage.per_case", build)

    def block(self, ctx: BuildContext, b: int) -> pd.DataFrame:
        rows = self.block_range(ctx, b)
        cases = ctx.frame("Case")
        per = self._per_case(ctx)
        users = ctx.frame("User")
        contacts = ctx.frame("Contact")
        u_id, u_mail = users["Id"].to_numpy(), users["Email"].to_numpy()
        u_name = (users["FirstName"] + " " + users["LastName"]).to_numpy()
        support = f"support@{ctx.profile.company.domain}"
        rng = ctx.rng("EmailMessage", b)
        out: dict[str, list[Any]] = defaultdict(list)
        end = np.datetime64(ctx.world.end, "s")
        for pos in rows:
            c = cases.iloc[pos]
            m = int(per[pos])
            chain = json.loads(c["_agents"])
            times = [_sec(t) for t in json.loads(c["_transfer_times"])]
            created = _sec(c["CreatedDate"])
            closed = None if pd.isna(c["ClosedDate"]) else _sec(c["ClosedDate"])
            life_end = closed if closed is not None else _sec(end) - 60
            first_assign = _sec(c["_first_assign"])
            life = life_end - created
            t_open = created + int(min(rng.uniform(10, 180), life * 0.02) + 1)
            events: list[tuple[str, int]] = [("customer_open", t_open)]
            channel = c["_offer_channel"]
            if channel == "email":
                events.append(("agent_offer", _sec(c["_offer_time"])))
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
                contact_pos = int(c["_customer"])
                out["ParentId"].append(c["Id"])
                out["Subject"].append(None)
                out["TextBody"].append(None)
                if incoming:
                    out["FromAddress"].append(contacts["Email"].iat[contact_pos])
                    out["FromName"].append(
                        f"{contacts['FirstName'].iat[contact_pos]} {contacts['LastName'].iat[contact_pos]}"
                    )
                    out["ToAddress"].append(support)
                    out["ToIds"].append(u_id[agent])
                    out["Status"].append("2" if seq < len(fixed) - 1 else "1")
                else:
                    out["FromAddress"].append(u_mail[agent])
                    out["FromName"].append(u_name[agent])
                    out["ToAddress"].append(contacts["Email"].iat[contact_pos])
                    out["ToIds"].append(contacts["Id"].iat[contact_pos])
                    out["Status"].append("3")
                out["Incoming"].append(incoming)
                out["MessageDate"].append(np.datetime64(t, "s"))
                out["_case"].append(pos)
                out["_seq"].append(seq)
                out["_kind"].append(kind)
                out["_agent"].append(agent)
        frame = pd.DataFrame(out)
        if len(frame):
            frame["MessageDate"] = frame["MessageDate"].astype("datetime64[s]")
        return frame

    def after_ids(self, ctx: BuildContext, frame: pd.DataFrame) -> pd.DataFrame:
        # The agent an email transfers to / takes over from, for the text.
        cases = ctx.frame("Case")
        nxt, prev = [], []
        for pos, kind, t in zip(frame["_case"], frame["_kind"], frame["MessageDate"], strict=True):
            chain = json.loads(cases["_agents"].iat[pos])
            times = [np.datetime64(x, "s") for x in json.loads(cases["_transfer_times"].iat[pos])]
            k = sum(1 for tt in times if tt <= np.datetime64(t, "s"))
            nxt.append(chain[min(k + 1, len(chain) - 1)] if kind == "agent_transfer" else -1)
            prev.append(chain[max(k - 1, 0)] if kind == "agent_takeover" else -1)
        frame["_next_agent"] = nxt
        frame["_prev_agent"] = prev
        return frame

    def text_requests(self, ctx: BuildContext, frame: pd.DataFrame) -> list[TextRequest]:
        cases = ctx.frame("Case")
        users = ctx.frame("User")
        contacts = ctx.frame("Contact")
        prods = ctx.frame("Product2")
        issues = ctx.frame("Issue__c")
        noun = ctx.world.products["noun"].to_numpy()
        full = (users["FirstName"] + " " + users["LastName"]).to_numpy()
        firsts = users["FirstName"].to_numpy()
        order = frame.sort_values(["_case", "_seq"], kind="stable")
        out = []
        for pos, group in order.groupby("_case", sort=True):
            c = cases.iloc[int(pos)]
            messages = []
            for kind, agent, nxt, prev in group[["_kind", "_agent", "_next_agent", "_prev_agent"]].itertuples(
                index=False
            ):
                msg: dict[str, Any] = {"kind": kind}
                if kind.startswith("customer"):
                    msg.update(to_agent=str(full[agent]), agent_first=str(firsts[agent]))
                else:
                    msg.update(agent=str(full[agent]), agent_first=str(firsts[agent]))
                if nxt >= 0:
                    msg["next_agent"] = str(full[nxt])
                if prev >= 0:
                    msg["prev_agent"] = str(full[prev])
                if kind == "agent_offer":
                    msg["offer"] = offer_facts(ctx, str(c["_offer_remedy"]))
                    msg["close"] = True
                messages.append(msg)
            cpos = int(c["_customer"])
            out.append(
                TextRequest(
                    TextKind.EMAIL_THREAD,
                    str(c["Id"]),
                    {
                        "case_key": str(c["Id"]),
                        "case_subject": str(c["Subject"]),
                        "case_description": str(c["Description"]),
                        "product": str(prods["Name"].iat[int(c["_product"])]),
                        "noun": str(noun[int(c["_product"])]),
                        "issue": ctx.world.issues[int(c["_issue"])].key,
                        "issue_name": str(issues["Name"].iat[int(c["_issue"])]),
                        "customer_first": str(contacts["FirstName"].iat[cpos]),
                        "violation": bool(c["_violation"]) and c["_offer_channel"] == "email",
                        "messages": messages,
                    },
                )
            )
        return out

    def apply_text(
        self,
        ctx: BuildContext,
        frame: pd.DataFrame,
        requests: Sequence[TextRequest],
        results: Sequence[dict[str, Any]],
    ) -> pd.DataFrame:
        case_pos = {cid: i for i, cid in enumerate(ctx.frame("Case")["Id"])}
        by_case: dict[int, list[dict[str, Any]]] = {}
        for req, res in zip(requests, results, strict=True):
            msgs = list(res["messages"])
            if len(msgs) != len(req.facts["messages"]):
                raise BuildError(
                    f"The writer returned {len(msgs)} emails for case {req.key}, expected {len(req.facts['messages'])}."
                )
            by_case[case_pos[req.key]] = msgs
        subjects, bodies = [], []
        for pos, seq in zip(frame["_case"], frame["_seq"], strict=True):
            msg = by_case[int(pos)][int(seq)]
            subjects.append(msg["subject"])
            bodies.append(msg["body"])
        frame["Subject"] = subjects
        frame["TextBody"] = bodies
        return frame


class LiveChatTranscriptGenerator(ObjectGenerator):
    sobject = "LiveChatTranscript"
    block_size = 1024
    sort_by = ("StartTime", "_case")
    text_kind = TextKind.CHAT

    def units(self, ctx: BuildContext) -> int:
        return len(ctx.frame("Case"))

    def block(self, ctx: BuildContext, b: int) -> pd.DataFrame:
        rows = self.block_range(ctx, b)
        cases = ctx.frame("Case").iloc[rows.start : rows.stop]
        chat = cases[cases["_has_chat"].to_numpy(dtype=bool)]
        users = ctx.frame("User")["Id"].to_numpy()
        owners = []
        for agents_json, times_json, start in chat[["_agents", "_transfer_times", "_chat_start"]].itertuples(
            index=False
        ):
            chain = json.loads(agents_json)
            times = [np.datetime64(t, "s") for t in json.loads(times_json)]
            owners.append(owner_at(chain, times, _t(start)))
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
        noun = ctx.world.products["noun"].to_numpy()
        out = []
        for rid, pos, agent in frame[["Id", "_case", "_agent"]].itertuples(index=False):
            c = cases.iloc[int(pos)]
            cpos = int(c["_customer"])
            out.append(
                TextRequest(
                    TextKind.CHAT,
                    str(rid),
                    {
                        "case_key": str(c["Id"]),
                        "customer_first": str(contacts["FirstName"].iat[cpos]),
                        "agent": f"{users['FirstName'].iat[agent]} {users['LastName'].iat[agent]}",
                        "product": str(prods["Name"].iat[int(c["_product"])]),
                        "noun": str(noun[int(c["_product"])]),
                        "issue": ctx.world.issues[int(c["_issue"])].key,
                        "problem": str(c["Subject"]),
                        "offer": offer_facts(ctx, str(c["_offer_remedy"])),
                        "violation": bool(c["_violation"]),
                    },
                )
            )
        return out

    def apply_text(
        self,
        ctx: BuildContext,
        frame: pd.DataFrame,
        requests: Sequence[TextRequest],
        results: Sequence[dict[str, Any]],
    ) -> pd.DataFrame:
        frame["Body"] = [r["body"] for r in results]
        return frame
