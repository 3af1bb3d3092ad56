"""The default org, checked from its CSVs alone (the way a user would), against CRMArena's semantics."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pytest

from generator.ids import is_valid_id
from orgs.bundle import Bundle
from schemas.model import load_model
from schemas.profile import load_profile

MODEL = load_model()


@pytest.fixture(scope="module")
def org(default_bundle: Path) -> dict[str, pd.DataFrame]:
    b = Bundle(default_bundle)
    return {o.name: b.read_object(o) for o in MODEL}


def test_counts_within_ten_percent_of_the_profile(org: dict[str, pd.DataFrame]) -> None:
    profile = load_profile("crmarena")
    for name, want in profile.counts.items():
        got = len(org[name])
        assert abs(got - want) <= 0.1 * want, f"{name}: {got} vs {want}"
    assert len(org["CaseHistory__c"]) > 3 * len(org["Case"])


def test_ids_are_unique_well_formed_and_prefixed(org: dict[str, pd.DataFrame]) -> None:
    for spec in MODEL:
        ids = org[spec.name]["Id"]
        assert ids.is_unique, spec.name
        assert all(is_valid_id(i, spec.key_prefix) for i in ids), spec.name


def test_every_lookup_resolves(org: dict[str, pd.DataFrame]) -> None:
    for spec in MODEL:
        frame = org[spec.name]
        for f in spec.lookups:
            values = frame[f.name].dropna()
            if f.required:
                assert frame[f.name].notna().all(), f"{spec.name}.{f.name} has empty required lookups"
            target = f.reference_to[0]
            if f.org_provided:
                assert values.str.startswith(MODEL.key_prefix(target)).all()
                continue
            missing = set(values) - set(org[target]["Id"])
            assert not missing, f"{spec.name}.{f.name}: {len(missing)} dangling"


def test_case_history_semantics(org: dict[str, pd.DataFrame]) -> None:
    cases = org["Case"].set_index("Id")
    hist = org["CaseHistory__c"].sort_values(["CaseId__c", "CreatedDate", "Id"])
    for case_id, rows in hist.groupby("CaseId__c"):
        case = cases.loc[case_id]
        fields = rows["Field__c"].tolist()
        assert fields.count("Case Creation") == 1 and fields[0] == "Case Creation"
        assert rows.iloc[0]["CreatedDate"] == case["CreatedDate"]
        assigns = rows[rows["Field__c"] == "Owner Assignment"]
        assert len(assigns) >= 1
        assert pd.isna(assigns.iloc[0]["OldValue__c"])  # first assignment: empty old value
        for prev, cur in zip(assigns.iloc[:-1].itertuples(), assigns.iloc[1:].itertuples(), strict=True):
            assert cur.OldValue__c == prev.NewValue__c  # transfers chain old → new
            assert cur.OldValue__c != cur.NewValue__c
        assert assigns.iloc[-1]["NewValue__c"] == case["OwnerId"]  # owner = last assignee
        closed = rows[rows["Field__c"] == "Case Closed"]
        if case["Status"] == "Closed":
            assert len(closed) == 1 and closed.iloc[0]["CreatedDate"] == case["ClosedDate"]
            assert fields[-1] == "Case Closed"
        else:
            assert len(closed) == 0 and pd.isna(case["ClosedDate"])
        assert (rows["CreatedDate"] >= case["CreatedDate"]).all()
        non_assign = rows[rows["Field__c"] != "Owner Assignment"]
        assert non_assign["OldValue__c"].isna().all() and non_assign["NewValue__c"].isna().all()
    assert set(hist["CaseId__c"]) == set(cases.index)


def _owner_timeline(org: dict[str, pd.DataFrame]) -> dict[str, list[tuple[pd.Timestamp, str]]]:
    hist = org["CaseHistory__c"]
    assigns = hist[hist["Field__c"] == "Owner Assignment"].sort_values(["CaseId__c", "CreatedDate"])
    out: dict[str, list[tuple[pd.Timestamp, str]]] = {}
    for row in assigns.itertuples():
        out.setdefault(row.CaseId__c, []).append((row.CreatedDate, row.NewValue__c))
    return out


def _owner_at(timeline: list[tuple[pd.Timestamp, str]], when: pd.Timestamp) -> str:
    owner = timeline[0][1]
    for t, agent in timeline:
        if t <= when:
            owner = agent
    return owner


def test_emails_fall_in_their_case_and_come_from_the_owner_of_the_moment(
    org: dict[str, pd.DataFrame],
) -> None:
    cases = org["Case"].set_index("Id")
    users = org["User"].set_index("Id")
    contacts = org["Contact"].set_index("Id")
    timeline = _owner_timeline(org)
    end = pd.Timestamp("2024-06-01")
    for e in org["EmailMessage"].itertuples():
        case = cases.loc[e.ParentId]
        assert e.MessageDate >= case["CreatedDate"]
        assert e.MessageDate <= (case["ClosedDate"] if pd.notna(case["ClosedDate"]) else end)
        contact = contacts.loc[case["ContactId"]]
        if e.Incoming:
            assert e.FromAddress == contact["Email"]
        else:
            owner = _owner_at(timeline[e.ParentId], e.MessageDate)
            assert e.FromAddress == users.loc[owner, "Email"], e.Id
            assert e.ToAddress == contact["Email"]
    per_case = org["EmailMessage"].groupby("ParentId").size()
    assert per_case.min() >= 1


def test_chats_fall_in_their_case_and_belong_to_its_owner(org: dict[str, pd.DataFrame]) -> None:
    cases = org["Case"].set_index("Id")
    users = org["User"].set_index("Id")
    timeline = _owner_timeline(org)
    for c in org["LiveChatTranscript"].itertuples():
        case = cases.loc[c.CaseId]
        assert case["CreatedDate"] <= c.StartTime < c.EndTime
        if pd.notna(case["ClosedDate"]):
            assert c.EndTime <= case["ClosedDate"]
        assert c.OwnerId == _owner_at(timeline[c.CaseId], c.StartTime)
        assert c.AccountId == case["AccountId"] and c.ContactId == case["ContactId"]
        assert c.ChatDuration == int((c.EndTime - c.StartTime).total_seconds())
        name = f"{users.loc[c.OwnerId, 'FirstName']} {users.loc[c.OwnerId, 'LastName']} (Agent): "
        assert name in c.Body
        assert case["Origin"] == "Chat"


def test_orders_items_and_prices(org: dict[str, pd.DataFrame]) -> None:
    orders = org["Order"].set_index("Id")
    entries = org["PricebookEntry"].set_index("Id")
    items = org["OrderItem"]
    assert set(orders["Status"]) == {"Activated", "Draft"}
    assert (orders["Status"] == "Draft").mean() < 0.2
    for it in items.itertuples():
        entry = entries.loc[it.PricebookEntryId]
        assert entry["Pricebook2Id"] == orders.loc[it.OrderId, "Pricebook2Id"]  # the order's own book
        assert entry["Product2Id"] == it.Product2Id
        assert it.UnitPrice == entry["UnitPrice"]
    assert not items.duplicated(["OrderId", "Product2Id"]).any()
    assert set(items["OrderId"]) == set(orders.index)  # every order has items
    books = org["Pricebook2"]
    standard = books.loc[books["IsStandard"], "Id"]
    assert len(standard) == 1
    std_products = set(
        org["PricebookEntry"].loc[org["PricebookEntry"]["Pricebook2Id"] == standard.iat[0], "Product2Id"]
    )
    assert std_products == set(org["Product2"]["Id"])
    seasonal = books[~books["IsStandard"]].set_index("Id")
    for o in orders.itertuples():
        if o.Pricebook2Id in seasonal.index:
            b = seasonal.loc[o.Pricebook2Id]
            assert b["ValidFrom"] <= o.EffectiveDate <= b["ValidTo"]


def test_cases_come_from_activated_orders_of_their_customer(org: dict[str, pd.DataFrame]) -> None:
    items = org["OrderItem"].set_index("Id")
    orders = org["Order"].set_index("Id")
    contacts = org["Contact"].set_index("Id")
    for c in org["Case"].itertuples():
        order = orders.loc[items.loc[c.OrderItemId__c, "OrderId"]]
        assert order["Status"] == "Activated"
        assert order["AccountId"] == c.AccountId == contacts.loc[c.ContactId, "AccountId"]
        assert c.CreatedDate > order["EffectiveDate"]
        if pd.notna(c.ClosedDate):
            assert c.Status == "Closed" and c.ClosedDate > c.CreatedDate
    assert pd.Timestamp("2019-06-01") <= org["Case"]["CreatedDate"].min()
    assert org["Case"]["CreatedDate"].max() < pd.Timestamp("2024-06-01")


def test_case_text_names_its_product(org: dict[str, pd.DataFrame]) -> None:
    items = org["OrderItem"].set_index("Id")
    names = org["Product2"].set_index("Id")["Name"]
    for c in org["Case"].itertuples():
        assert names[items.loc[c.OrderItemId__c, "Product2Id"]] in c.Description


def test_latent_case_labels_match_visible_offers(default_bundle: Path, org: dict[str, pd.DataFrame]) -> None:
    """A case labelled as a violation shows the violating remedy's phrase in an agent turn; a clean one shows
    only allowed remedies within their windows (recomputed from the policy table and the order date)."""
    latent = pd.read_csv(default_bundle / "latent" / "Case.csv", keep_default_na=False).set_index("Id")
    policies = json.loads((default_bundle / "latent" / "world" / "policies.json").read_text())
    phrases = {k: v["phrase"] for k, v in policies["remedies"].items()}
    issues = pd.read_csv(default_bundle / "latent" / "Issue__c.csv").set_index("Id")["_issue_key"]
    items = org["OrderItem"].set_index("Id")
    orders = org["Order"].set_index("Id")
    users = org["User"].set_index("Id")
    chats = org["LiveChatTranscript"].set_index("CaseId")
    emails = org["EmailMessage"]
    violations = 0
    for c in org["Case"].itertuples():
        lat = latent.loc[c.Id]
        if lat["_offer_channel"] == "chat":
            chat = chats.loc[c.Id]
            who = f"{users.loc[chat['OwnerId'], 'FirstName']} {users.loc[chat['OwnerId'], 'LastName']} (Agent): "
            turns = [(line, chat["StartTime"]) for line in chat["Body"].splitlines() if line.startswith(who)]
        else:
            mine = emails[(emails["ParentId"] == c.Id) & (~emails["Incoming"])]
            turns = list(zip(mine["TextBody"], mine["MessageDate"], strict=True))
        ordered = orders.loc[items.loc[c.OrderItemId__c, "OrderId"], "EffectiveDate"]
        policy = policies["issues"][issues[c.IssueId__c]]["remedies"]
        broken = False
        for text, when in turns:
            for key, phrase in sorted(phrases.items(), key=lambda kv: -len(kv[1])):
                if re.search(re.escape(phrase), text):
                    days = (when.normalize() - ordered).days
                    if key not in policy or days > policy[key]:
                        broken = True
        label = str(lat["_violation"]).lower() == "true"
        assert broken == label, c.Id
        violations += label
    assert 0.08 * len(org["Case"]) < violations < 0.3 * len(org["Case"])
