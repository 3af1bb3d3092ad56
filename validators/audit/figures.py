"""The figures of an audit: what a bundle's data looks like, section by section, as plain JSON-able values.

Each section returns `{"verdict": "ok" | "warn" | "fail", "summary": one line, "figures": {...}, "flags":
[...]}`; a flag is one thing a person should look at, with the figure that raised it. Thresholds are named
constants here and stated in the README ("Auditing a bundle").
"""

from __future__ import annotations

import json
import math
import random
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from orgs.bundle import Bundle, BundleError, open_regular, read_text_regular
from schemas.errors import OrgseedError
from schemas.model import OrgModel, load_model
from schemas.profile import Profile, load_profile
from schemas.taskspec import is_task, spec, task_names
from schemas.textsim import DEFAULT_THRESHOLD, near_duplicates
from validators.fidelity_report import figures_from

Section = dict[str, Any]

# -- thresholds (README, "Auditing a bundle") --------------------------------------------------------------
TVD_LIMIT = (
    0.1  # a picklist whose shares differ from the profile's weights by more (total variation distance)
)
MIN_PICKLIST_RECORDS = 30  # below this, shares say little: not flagged
DUPLICATE_TEXT_SHARE = 0.05  # a text kind where more than this share of texts repeat another exactly
NGRAM = 8  # the length of the repeated word sequences shown
NEAR_DUPLICATE_SHARE = 0.2  # a text kind where more texts than this have a near-duplicate (shingle Jaccard)
NEAR_DUPLICATE_SAMPLE = 4000  # texts per kind searched for near-duplicates (a seeded sample beyond that)
MAJORITY_SHARE = 0.3  # a task whose most common non-None answer covers more than this share
BOOTSTRAP = 400  # resamples behind each effect's 95% interval
MIN_GROUP = 5  # an agent, product or state needs this many cases to count in an effect
TEXT_FIELDS = {
    "Case": ("Description",),
    "EmailMessage": ("TextBody",),
    "LiveChatTranscript": ("Body",),
    "Knowledge__kav": ("FAQ_Answer__c",),
}
WORD = re.compile(r"[a-z0-9']+")


def _verdict(flags: Sequence[dict[str, Any]], fail: bool = False) -> str:
    return "fail" if fail else ("warn" if flags else "ok")


class AuditData:
    """The bundle's records and latent world, read once (typed frames; latent tables as text)."""

    def __init__(self, root: Path, model: OrgModel | None = None) -> None:
        self.root = Path(root)
        self.bundle = Bundle(root)
        self.model = model or load_model()
        self.manifest = self.bundle.read_manifest()
        self._frames: dict[str, pd.DataFrame] = {}
        self.profile = self._profile()

    def _profile(self) -> Profile | None:
        """The build's profile (its recorded path, else its name), for what the data should look like."""
        entry = self.manifest.get("profile") or {}
        for candidate in (entry.get("path"), entry.get("name")):
            if isinstance(candidate, str):
                try:
                    return load_profile(candidate, self.model)
                except OrgseedError:
                    continue
        return None

    def frame(self, name: str) -> pd.DataFrame:
        if name not in self._frames:
            self._frames[name] = self.bundle.read_object(self.model.get(name))
        return self._frames[name]

    def latent(self, name: str) -> pd.DataFrame | None:
        return self.csv(self.root / "latent" / f"{name}.csv")

    def world(self, name: str) -> pd.DataFrame | None:
        return self.csv(self.root / "latent" / "world" / f"{name}.csv")

    def csv(self, path: Path) -> pd.DataFrame | None:
        """A CSV of the bundle (None when absent), read only if it is a regular file inside the bundle."""
        if not path.exists() and not path.is_symlink():
            return None
        try:
            with open_regular(path, root=self.root) as fh:
                return pd.read_csv(fh)
        except (ValueError, UnicodeDecodeError) as exc:  # pandas' parser errors are ValueErrors
            raise BundleError(
                f"{path}: cannot be read as CSV ({exc}); rebuild the bundle.", file=str(path)
            ) from None

    def json_file(self, path: Path, lines: bool = False) -> Any:
        """A JSON (or JSON Lines) file of the bundle (None when absent), read safely; BundleError naming the
        file and line when it is not JSON."""
        if not path.exists() and not path.is_symlink():
            return None
        text = read_text_regular(path, str(path), root=self.root)
        chunks = (
            [(n, line) for n, line in enumerate(text.splitlines(), start=1) if line.strip()]
            if lines
            else [(1, text)]
        )
        out = []
        for n, chunk in chunks:
            try:
                out.append(json.loads(chunk))
            except ValueError as exc:
                raise BundleError(
                    f"{path}:{n}: not JSON ({exc}); rebuild the bundle.", file=str(path), line=n
                ) from None
        return out if lines else out[0]


# -- integrity and cardinality -----------------------------------------------------------------------------


def integrity(data: AuditData) -> Section:
    relationships: list[dict[str, Any]] = []
    flags: list[dict[str, Any]] = []
    for child in data.model:
        frame = data.frame(child.name)
        dup = int(frame["Id"].duplicated().sum())
        if dup:
            flags.append({"what": f"{child.name}: {dup} duplicate Id(s)", "object": child.name, "value": dup})
        for f in child.lookups:
            values = frame[f.name].dropna().astype(str)
            parents: set[str] = set()
            for target in f.reference_to:
                if target in data.model.objects:
                    parents |= set(data.frame(target)["Id"].astype(str))
            if not parents:
                continue  # a lookup to an object the bundle does not hold (e.g. Profile)
            orphans = int((~values.isin(parents)).sum())
            per_parent = values.value_counts()
            counts = np.concatenate([per_parent.to_numpy(), np.zeros(max(0, len(parents) - len(per_parent)))])
            rel: dict[str, Any] = {
                "child": child.name,
                "field": f.name,
                "parent": f.reference_to[0],
                "children": len(values),
                "null": int(frame[f.name].isna().sum()),
                "orphans": orphans,
                "per_parent": _quantiles(counts),
                "childless_share": round(float((counts == 0).mean()), 4) if len(counts) else 0.0,
            }
            bounds = data.profile.bounds.get(child.name, {}).get(f.name) if data.profile else None
            if bounds is not None and len(counts):
                low, high = bounds
                outside = int(((counts < low) | (counts > high)).sum())
                rel["bounds"] = [int(low), int(high)]
                rel["outside_bounds"] = outside
                if outside:
                    flags.append(
                        {
                            "what": f"{child.name}.{f.name}: {outside} {f.reference_to[0]} record(s) have a number of "
                            f"children outside the profile's bounds [{low}, {high}]",
                            "object": child.name,
                            "value": outside,
                        }
                    )
            relationships.append(rel)
            if orphans:
                flags.append(
                    {
                        "what": f"{child.name}.{f.name}: {orphans} value(s) point at no {f.reference_to[0]}",
                        "object": child.name,
                        "value": orphans,
                    }
                )
    n = len(relationships)
    summary = (
        f"{n} relationships, {sum(r['orphans'] for r in relationships)} orphan reference(s), "
        f"{sum(1 for f in flags if 'duplicate' in f['what'])} object(s) with duplicate ids"
    )
    broken = any("point at no" in f["what"] or "duplicate" in f["what"] for f in flags)
    return {
        "verdict": _verdict(flags, fail=broken),
        "summary": summary,
        "figures": {"relationships": relationships},
        "flags": flags,
    }


def _quantiles(values: Iterable[float]) -> dict[str, float]:
    arr = np.asarray(list(values), dtype=float)
    if not len(arr):
        return {"min": 0.0, "p50": 0.0, "p90": 0.0, "max": 0.0, "mean": 0.0}
    return {
        "min": float(arr.min()),
        "p50": float(np.percentile(arr, 50)),
        "p90": float(np.percentile(arr, 90)),
        "max": float(arr.max()),
        "mean": round(float(arr.mean()), 4),
    }


# -- distributions -----------------------------------------------------------------------------------------


def distributions(data: AuditData) -> Section:
    counts = {o.name: len(data.frame(o.name)) for o in data.model}
    expected = {
        k: int(v) for k, v in (data.manifest.get("counts") or {}).items() if isinstance(v, int | float)
    }
    picklists = []
    flags: list[dict[str, Any]] = []
    for o in data.model:
        frame = data.frame(o.name)
        for f in o.fields:
            if f.type != "picklist" or f.name not in frame:
                continue
            values = frame[f.name].dropna().astype(str)
            if not len(values):
                continue
            shares = (values.value_counts(normalize=True)).round(4)
            top_value, top_share = str(shares.index[0]), float(shares.iloc[0])
            entropy = float(-(shares * np.log2(shares.clip(lower=1e-12))).sum())
            row: dict[str, Any] = {
                "object": o.name,
                "field": f.name,
                "records": len(values),
                "shares": {str(k): float(v) for k, v in shares.items()},
                "declared_values": len(f.picklist),
                "entropy_bits": round(entropy, 4),
                "top": top_value,
                "top_share": top_share,
            }
            weights = data.profile.picklist_weights(o.name, f.name) if data.profile else None
            if weights:
                total = sum(weights.values())
                wanted = {k: v / total for k, v in weights.items()}
                tvd = 0.5 * sum(
                    abs(row["shares"].get(k, 0.0) - wanted.get(k, 0.0))
                    for k in set(wanted) | set(row["shares"])
                )
                row["profile_shares"] = {k: round(v, 4) for k, v in wanted.items()}
                row["tvd"] = round(tvd, 4)
                if len(values) >= MIN_PICKLIST_RECORDS and tvd > TVD_LIMIT:
                    flags.append(
                        {
                            "what": f"{o.name}.{f.name}: shares differ from the profile's weights by {tvd:.2f} "
                            f"(total variation; '{top_value}' holds {top_share:.0%})",
                            "object": o.name,
                            "value": round(tvd, 4),
                        }
                    )
            picklists.append(row)
    cases = data.frame("Case")
    created = pd.to_datetime(cases["CreatedDate"], utc=True)
    monthly = created.dt.month.value_counts().sort_index()
    months = {str(int(m)): int(c) for m, c in monthly.items()}
    accounts = data.frame("Account")
    states = accounts["ShippingState"].dropna().astype(str).value_counts(normalize=True).round(4)
    span: dict[str, Any] = {
        "first_case": created.min().strftime("%Y-%m-%d") if len(created) else None,
        "last_case": created.max().strftime("%Y-%m-%d") if len(created) else None,
    }
    regional = (data.profile.latent.get("regions") or {}).get("states") if data.profile else None
    if isinstance(regional, dict) and regional and len(accounts) >= MIN_PICKLIST_RECORDS:
        weights = {str(k): float(v.get("weight", 0.0)) for k, v in regional.items() if isinstance(v, dict)}
        total = sum(weights.values()) or 1.0
        observed = {str(k): float(v) for k, v in states.items()}
        tvd = 0.5 * sum(
            abs(observed.get(k, 0.0) - weights.get(k, 0.0) / total) for k in set(weights) | set(observed)
        )
        region_tvd: float | None = round(tvd, 4)
        # what sampling alone gives: the 95th percentile of the distance of n draws from the profile's weights
        keys = sorted(weights)
        probs = np.array([weights[k] / total for k in keys])
        draws = np.random.default_rng(0).multinomial(len(accounts), probs, size=200) / len(accounts)
        noise = float(np.percentile(0.5 * np.abs(draws - probs).sum(axis=1), 95))
        if tvd > max(TVD_LIMIT, noise):
            flags.append(
                {
                    "what": f"Account.ShippingState: the regional mix differs from the profile's state weights by "
                    f"{tvd:.2f} (total variation; sampling alone gives up to {noise:.2f})",
                    "object": "Account",
                    "value": round(tvd, 4),
                }
            )
    else:
        region_tvd = None
    if data.profile is not None and len(created):
        first, last = data.profile.span.start, data.profile.span.end
        start = pd.Timestamp(first, tz="UTC")
        end = pd.Timestamp(last, tz="UTC") + pd.Timedelta(days=1)
        outside = int(((created < start) | (created >= end)).sum())
        span.update(profile_start=str(first), profile_end=str(last), cases_outside=outside)
        if outside:
            flags.append(
                {
                    "what": f"Case: {outside} case(s) created outside the profile's span {first}..{last}",
                    "object": "Case",
                    "value": outside,
                }
            )
    mismatched = {
        k: (expected[k], counts.get(k)) for k in expected if k in counts and expected[k] != counts[k]
    }
    for k, (want, got) in mismatched.items():
        flags.append(
            {"what": f"{k}: manifest says {want} records, the CSV holds {got}", "object": k, "value": got}
        )
    summary = (
        f"{sum(counts.values()):,} records in {len(counts)} objects; "
        f"{sum('tvd' in p for p in picklists)} picklists weighted by the profile "
        f"({sum(1 for f in flags if 'total variation' in f['what'])} off their weights); cases span "
        f"{span['first_case']} to {span['last_case']}"
    )
    return {
        "verdict": _verdict(flags),
        "summary": summary,
        "figures": {
            "counts": counts,
            "picklists": picklists,
            "cases_by_month": months,
            "accounts_by_state": {str(k): float(v) for k, v in states.items()},
            "regional_mix_tvd": region_tvd,
            "span": span,
        },
        "flags": flags,
    }


# -- latent → observed -------------------------------------------------------------------------------------


def _spearman(x: np.ndarray, y: np.ndarray) -> float:
    if len(x) < 3:
        return float("nan")
    rx, ry = pd.Series(x).rank().to_numpy(), pd.Series(y).rank().to_numpy()
    if rx.std() == 0 or ry.std() == 0:
        return 0.0
    return float(np.corrcoef(rx, ry)[0, 1])


def effect(
    name: str, latent: str, observed: str, sign: int, x: Sequence[float], y: Sequence[float], seed: int
) -> dict[str, Any]:
    """Spearman's rho of (latent x, observed y) with a 95% bootstrap interval; `shows` when the interval
    excludes 0 on the side `sign` promises."""
    xa, ya = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    keep = np.isfinite(xa) & np.isfinite(ya)
    xa, ya = xa[keep], ya[keep]
    rho = _spearman(xa, ya)
    rng = np.random.default_rng(seed)
    boots = []
    for _ in range(BOOTSTRAP if len(xa) >= 3 else 0):
        idx = rng.integers(0, len(xa), len(xa))
        r = _spearman(xa[idx], ya[idx])
        if math.isfinite(r):
            boots.append(r)
    low, high = (
        (float(np.percentile(boots, 2.5)), float(np.percentile(boots, 97.5)))
        if boots
        else (math.nan, math.nan)
    )
    shows = bool(boots) and ((low > 0) if sign > 0 else (high < 0))
    return {
        "name": name,
        "latent": latent,
        "observed": observed,
        "expected_sign": "+" if sign > 0 else "-",
        "n": len(xa),
        "rho": round(rho, 4) if math.isfinite(rho) else None,
        "ci95": [round(low, 4), round(high, 4)] if boots else None,
        "shows": shows,
        "points": [[round(float(a), 4), round(float(b), 4)] for a, b in zip(xa, ya, strict=True)][:500],
    }


def _row(value: Any) -> int:
    """A latent index cell (an int, or a float when the column has gaps) as a row number."""
    return int(float(value))


def _case_hours(cases: pd.DataFrame) -> pd.Series:
    closed = cases[cases["ClosedDate"].notna()]
    return (closed["ClosedDate"] - closed["CreatedDate"]).dt.total_seconds() / 3600.0


def latent_effects(data: AuditData) -> Section:
    seed = int(data.manifest.get("seed", 0))
    effects = []
    cases = data.frame("Case")
    hours = _case_hours(cases)
    closed = cases.loc[hours.index].assign(_hours=hours)
    agents, users = data.world("agents"), data.latent("User")
    if agents is not None and users is not None:
        agent_of = dict(zip(users["Id"], users["_agent"], strict=True))
        per = closed.groupby("OwnerId")["_hours"].agg(["mean", "count"])
        per = per[per["count"] >= MIN_GROUP]
        idx = [agent_of.get(u) for u in per.index]
        ok = [i is not None and not pd.isna(i) for i in idx]
        speed = [float(agents["speed"].iloc[_row(i)]) for i, k in zip(idx, ok, strict=True) if k]
        effects.append(
            effect(
                "agent speed → handle time",
                "agent speed (handle-time multiplier)",
                "mean hours from creation to close of the agent's closed cases",
                +1,
                speed,
                per["mean"].to_numpy()[ok],
                seed,
            )
        )
        history = data.frame("CaseHistory__c")
        owners = history[history["Field__c"] == "Owner Assignment"].sort_values(["CaseId__c", "CreatedDate"])
        first = owners.groupby("CaseId__c")["NewValue__c"].first()
        moves = owners.groupby("CaseId__c").size()
        table = pd.DataFrame({"first": first, "transferred": moves > 1})
        per_t = table.groupby("first")["transferred"].agg(["mean", "count"])
        per_t = per_t[per_t["count"] >= MIN_GROUP]
        idx_t = [agent_of.get(u) for u in per_t.index]
        ok_t = [i is not None and not pd.isna(i) for i in idx_t]
        skill = [float(agents["skill"].iloc[_row(i)]) for i, k in zip(idx_t, ok_t, strict=True) if k]
        effects.append(
            effect(
                "agent skill → transfers",
                "agent skill",
                "share of the agent's first assignments transferred to another agent",
                -1,
                skill,
                per_t["mean"].to_numpy()[ok_t],
                seed + 1,
            )
        )
    products, latent_products = data.world("products"), data.latent("Product2")
    if products is not None and latent_products is not None:
        items = data.frame("OrderItem")
        sold = items.groupby("Product2Id")["Quantity"].sum()
        product_of_item = dict(zip(items["Id"], items["Product2Id"], strict=True))
        case_products = cases["OrderItemId__c"].map(product_of_item).value_counts()
        rate = (case_products.reindex(sold.index).fillna(0) / sold.clip(lower=1)).rename("rate")
        index_of = dict(zip(latent_products["Id"], latent_products["_product"], strict=True))
        rows = [
            (float(products["case_rate"].iloc[_row(index_of[p])]), float(r))
            for p, r in rate.items()
            if p in index_of and sold[p] >= MIN_GROUP
        ]
        effects.append(
            effect(
                "product case rate → cases",
                "product case_rate",
                "cases per unit sold",
                +1,
                [a for a, _ in rows],
                [b for _, b in rows],
                seed + 2,
            )
        )
    customers = data.world("customers")
    if customers is not None:
        weights = customers[[f"month_{m:02d}" for m in range(1, 13)]].sum().to_numpy()
        orders = pd.to_datetime(data.frame("Order")["EffectiveDate"])
        observed = orders.dt.month.value_counts().reindex(range(1, 13)).fillna(0).to_numpy()
        effects.append(
            effect(
                "customer habits → monthly orders",
                "customers' month weights (when they buy), summed",
                "orders placed per calendar month",
                +1,
                weights,
                observed,
                seed + 3,
            )
        )
    regions = data.world("regions")
    if regions is not None:
        accounts = data.frame("Account").set_index("Id")["ShippingState"]
        state_hours = (
            closed.assign(_state=closed["AccountId"].map(accounts))
            .groupby("_state")["_hours"]
            .agg(["mean", "count"])
        )
        state_hours = state_hours[state_hours["count"] >= MIN_GROUP]
        speed_of = regions.set_index("state").mean(axis=1)
        both = [s for s in state_hours.index if s in speed_of.index]
        effects.append(
            effect(
                "region speed → closure time",
                "region speed (closure-time multiplier, mean over years)",
                "mean hours to close cases of customers in the state",
                +1,
                [float(speed_of[s]) for s in both],
                [float(state_hours.loc[s, "mean"]) for s in both],
                seed + 4,
            )
        )
    violation = _violation_effect(data, cases, seed + 5)
    if violation is not None:
        effects.append(violation)
    flags = [
        {
            "what": f"{e['name']}: no clear effect (rho {e['rho']}, 95% CI {e['ci95']}, n={e['n']})",
            "value": e["rho"],
        }
        for e in effects
        if not e["shows"]
    ]
    shown = sum(e["shows"] for e in effects)
    summary = f"{shown} of {len(effects)} hidden variables show in the data (95% interval clear of zero)"
    if not effects:
        summary = "no latent world in this bundle (latent/world/ is missing)"
    return {"verdict": _verdict(flags), "summary": summary, "figures": {"effects": effects}, "flags": flags}


def _violation_effect(data: AuditData, cases: pd.DataFrame, seed: int) -> dict[str, Any] | None:
    """Cases the latent world labels as policy violations against cases whose emails or chat offer a remedy
    the issue's policy does not allow (the remedy's phrase, policies.json, in the text)."""
    latent, issues = data.latent("Case"), data.world("issues")
    policy_path = data.root / "latent" / "world" / "policies.json"
    policies = data.json_file(policy_path)
    if latent is None or issues is None or policies is None or "_violation" not in latent:
        return None
    phrases = {k: str(v["phrase"]).lower() for k, v in policies["remedies"].items()}
    texts: dict[str, list[str]] = {}
    emails = data.frame("EmailMessage")
    for parent, body in zip(emails["ParentId"], emails["TextBody"], strict=True):
        texts.setdefault(str(parent), []).append(str(body or "").lower())
    chats = data.frame("LiveChatTranscript")
    for case, body in zip(chats["CaseId"], chats["Body"], strict=True):
        texts.setdefault(str(case), []).append(str(body or "").lower())
    labels, offered = [], []
    for case_id, issue, label in zip(latent["Id"], latent["_issue"], latent["_violation"], strict=True):
        if pd.isna(issue):
            continue
        name = str(issues["issue"].iloc[_row(issue)])
        allowed = set((policies["issues"].get(name) or {}).get("remedies", {}))
        body = " ".join(texts.get(str(case_id), []))
        offered.append(float(any(p in body for k, p in phrases.items() if k not in allowed)))
        labels.append(1.0 if str(label).lower() == "true" else 0.0)
    return effect(
        "policy violations → texts",
        "the case's violation label",
        "its emails or chat offer a remedy the issue's policy does not allow",
        +1,
        labels,
        offered,
        seed,
    )


# -- text --------------------------------------------------------------------------------------------------


def _words(text: str) -> list[str]:
    return WORD.findall(text.lower())


def text(data: AuditData) -> Section:
    kinds: list[dict[str, Any]] = []
    flags: list[dict[str, Any]] = []
    for sobject, fields in TEXT_FIELDS.items():
        if sobject not in data.model.objects:
            continue
        frame = data.frame(sobject)
        for field in fields:
            texts = [str(t) for t in frame[field].dropna()]
            if not texts:
                continue
            tokens = [_words(t) for t in texts]
            lengths = [len(t) for t in tokens]
            unigrams = [w for t in tokens for w in t]
            bigrams = [tuple(t[i : i + 2]) for t in tokens for i in range(len(t) - 1)]
            grams: Counter[str] = Counter()
            for t in tokens:
                grams.update({" ".join(t[i : i + NGRAM]) for i in range(len(t) - NGRAM + 1)})
            repeated = [{"text": g, "texts": c} for g, c in grams.most_common(5) if c > 1]
            exact = Counter(texts)
            dup_texts = sum(c - 1 for c in exact.values() if c > 1)
            ids = frame.loc[frame[field].notna(), "Id"].astype(str).tolist()
            picked = list(range(len(texts)))
            if len(picked) > NEAR_DUPLICATE_SAMPLE:  # bounded time and memory at any scale
                picked = sorted(random.Random(f"{sobject}.{field}").sample(picked, NEAR_DUPLICATE_SAMPLE))
            pairs = [(picked[a], picked[b], sim) for a, b, sim in near_duplicates([texts[i] for i in picked])]
            in_pairs = {i for a, b, _ in pairs for i in (a, b)}
            openings = Counter(" ".join(t[:3]) for t in tokens if t)
            top_opening, top_opening_count = openings.most_common(1)[0] if openings else ("", 0)
            kind: dict[str, Any] = {
                "object": sobject,
                "field": field,
                "texts": len(texts),
                "words": _quantiles(lengths),
                "distinct_1": round(len(set(unigrams)) / max(1, len(unigrams)), 4),
                "distinct_2": round(len(set(bigrams)) / max(1, len(bigrams)), 4),
                "duplicate_share": round(dup_texts / len(texts), 4),
                "near_duplicate_pairs": len(pairs),
                "near_duplicate_share": round(len(in_pairs) / len(picked), 4),
                "near_duplicate_searched": len(picked),
                "near_duplicate_examples": [
                    {"a": ids[a], "b": ids[b], "similarity": round(sim, 3)} for a, b, sim in pairs[:3]
                ],
                "repeated_8grams": repeated,
                "top_opening": top_opening,
                "top_opening_share": round(top_opening_count / len(texts), 4),
            }
            kinds.append(kind)
            if kind["duplicate_share"] > DUPLICATE_TEXT_SHARE:
                flags.append(
                    {
                        "what": f"{sobject}.{field}: {kind['duplicate_share']:.0%} of {len(texts)} texts repeat another word for word",
                        "object": sobject,
                        "value": kind["duplicate_share"],
                    }
                )
            if kind["near_duplicate_share"] > NEAR_DUPLICATE_SHARE:
                flags.append(
                    {
                        "what": f"{sobject}.{field}: {kind['near_duplicate_share']:.0%} of {len(picked)} texts searched have a "
                        f"near-duplicate (word-shingle Jaccard >= {DEFAULT_THRESHOLD}; {len(pairs):,} pairs)",
                        "object": sobject,
                        "value": kind["near_duplicate_share"],
                    }
                )
    writer = (data.manifest.get("writer") or {}).get("name", "offline")
    summary = f"{sum(k['texts'] for k in kinds):,} texts in {len(kinds)} kinds (writer: {writer}); {len(flags)} kind(s) with many exact or near duplicates"
    return {
        "verdict": _verdict(flags),
        "summary": summary,
        "figures": {"writer": writer, "kinds": kinds},
        "flags": flags,
    }


# -- tasks -------------------------------------------------------------------------------------------------


def _key(answer: Any) -> str:
    if isinstance(answer, list):
        answer = answer[0] if len(answer) == 1 else json.dumps(answer)
    return "None" if answer is None else str(answer)


def tasks(data: AuditData) -> Section:
    path = data.root / "tasks" / "ground_truth.jsonl"
    found = data.json_file(path, lines=True)
    if found is None:
        return {
            "verdict": "ok",
            "summary": "no tasks in this bundle (built with --per-task 0)",
            "figures": {"tasks": []},
            "flags": [],
        }
    rows = [r for r in found if isinstance(r, dict)]
    out: list[dict[str, Any]] = []
    flags: list[dict[str, Any]] = []
    names = [t for t in task_names() if any(r.get("task") == t for r in rows)]
    for name in names:
        mine = [r for r in rows if r.get("task") == name]
        answers = [_key(r.get("answer")) for r in mine]
        counted = Counter(answers)
        real = Counter(a for a in answers if a != "None")
        majority, majority_n = real.most_common(1)[0] if real else ("None", 0)
        overall_top, overall_n = counted.most_common(1)[0]
        margins = [float(r["margin"]) for r in mine if isinstance(r.get("margin"), int | float)]
        random_hits = []
        for r, a in zip(mine, answers, strict=True):
            cands = r.get("candidates")
            pool = list(cands) if isinstance(cands, dict | list) else []
            random_hits.append(
                1.0 / len(pool)
                if pool and a in map(str, pool)
                else (1.0 if a == "None" and not pool else 0.0)
            )
        figure: dict[str, Any] = {
            "task": name,
            "abbreviation": spec(name).abbreviation if is_task(name) else name,
            "instances": len(mine),
            "none_share": round(counted.get("None", 0) / len(mine), 4),
            "majority_answer": majority,
            "majority_share": round(majority_n / len(mine), 4),
            "distinct_answers": len(real),
            "median_margin": round(float(np.median(margins)), 4) if margins else None,
            # naive baselines, exact-match accuracy: always None, always the task's most common answer, a
            # candidate drawn at random (expected)
            "baseline_none": round(counted.get("None", 0) / len(mine), 4),
            "baseline_majority": round(overall_n / len(mine), 4),
            "baseline_random": round(float(np.mean(random_hits)), 4),
            "answer_spread": {k: v for k, v in counted.most_common(8)},
        }
        out.append(figure)
        if figure["majority_share"] > MAJORITY_SHARE or figure["baseline_majority"] > 0.5:
            flags.append(
                {
                    "what": f"{name}: the answer '{overall_top}' fits {overall_n / len(mine):.0%} of the instances (a guess scores that much)",
                    "task": name,
                    "value": overall_n / len(mine),
                }
            )
    summary = f"{len(rows)} instances of {len(names)} tasks; {len(flags)} degenerate task(s)"
    return {"verdict": _verdict(flags), "summary": summary, "figures": {"tasks": out}, "flags": flags}


# -- LLM cost and provenance -------------------------------------------------------------------------------


def llm(data: AuditData) -> Section:
    writer = data.manifest.get("writer") or {}
    path = data.root / "reports" / "llm_usage.json"
    found_usage = data.json_file(path)
    usage = found_usage if isinstance(found_usage, dict) else None
    totals = (usage or {}).get("totals") or {}
    figures = {
        "writer": writer.get("name", "offline"),
        "model": writer.get("model"),
        "requests": totals.get("requests", 0),
        "cache_hits": totals.get("cache_hits", 0),
        "repairs": totals.get("repairs", 0),
        "prompt_tokens": totals.get("prompt_tokens", 0),
        "completion_tokens": totals.get("completion_tokens", 0),
        "cost_usd": totals.get("cost_usd", 0.0),
        "per_kind": {m: mm.get("kinds", {}) for m, mm in ((usage or {}).get("models") or {}).items()},
        "task_text_requests": ((data.manifest.get("tasks") or {}).get("text_requests")) or {},
    }
    if usage is None:
        summary = f"texts written by the {figures['writer']} writer: no LLM requests, no cost"
    else:
        summary = (
            f"{figures['requests']:,} requests to {figures['model']}, {figures['cache_hits']:,} cache hits, "
            f"${float(figures['cost_usd'] or 0):.4f}"
        )
    return {"verdict": "ok", "summary": summary, "figures": figures, "flags": []}


def fidelity(data: AuditData) -> Section:
    """Issue 16 item 7: the text and task-query figures of `validators/fidelity_report.py`, beside CRMArena's."""
    tasks = data.json_file(data.root / "tasks" / "tasks.json") or []
    truth = data.json_file(data.root / "tasks" / "ground_truth.jsonl", lines=True) or []

    def frames(name: str) -> pd.DataFrame | None:
        return data.frame(name) if Bundle(data.root).has_data(name) else None  # one file or parts

    figures = figures_from(
        frames,
        [t for t in tasks if isinstance(t, dict)] if isinstance(tasks, list) else [],
        [r for r in truth if isinstance(r, dict)],
    )
    flags = [
        {
            "what": f"{b['figure']} is {b['value']:g}, target {b['target']} (CRMArena: {b['crmarena']}; {b['source']})",
            "figure": b["figure"],
            "value": b["value"],
        }
        for b in figures["below_target"]
    ]
    queries = figures["queries"]
    summary = (
        f"{len(flags)} task-query figure(s) below target"
        if flags
        else (
            f"task queries at CRMArena's targets: {figures['none_mentions']} mention None, "
            f"NED exact-name share {figures['ned_exact_name_share']:.0%}, "
            f"{min((q['distinct_queries'] for q in queries), default=0)}+ distinct queries per task"
            if queries
            else "no task files; text figures only"
        )
    )
    return {"verdict": "warn" if flags else "ok", "summary": summary, "figures": figures, "flags": flags}


SECTIONS = (
    ("integrity", "Integrity and cardinality", integrity),
    ("distributions", "Distributions", distributions),
    ("latent", "Latent → observed", latent_effects),
    ("text", "Text", text),
    ("tasks", "Tasks", tasks),
    ("llm", "LLM cost and provenance", llm),
    ("fidelity", "Fidelity against CRMArena's task set", fidelity),
)
