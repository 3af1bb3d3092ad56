"""Invariants of the latent world that the task signals depend on."""

from __future__ import annotations

import numpy as np
import pytest

from generator.world import World, build_world
from schemas.profile import load_profile


@pytest.fixture(scope="module")
def world() -> World:
    return build_world(load_profile("crmarena"), seed=0, scale=1.0)


def test_counts_follow_the_profile(world: World) -> None:
    assert len(world.agents) == 100 and len(world.customers) == 196 and len(world.products) == 500
    assert len(world.issues) == 12 and len(world.categories) == 12 and len(world.knowledge) == 45


def test_agents(world: World) -> None:
    a = world.agents
    assert a["skill"].between(0, 1).all()
    assert (a["transfer_prob"] > 0).all() and (a["transfer_prob"] < 1).all()
    # Lower skill → higher transfer probability (monotone by construction).
    order = np.argsort(a["skill"].to_numpy())
    assert np.all(np.diff(a["transfer_prob"].to_numpy()[order]) <= 1e-12)
    spec = world.expertise > 1
    # Every issue has exactly `specialists_per_issue` distinct specialists; nobody has more than max_specialties.
    assert (spec.sum(axis=0) == 3).all()
    assert spec.sum(axis=1).max() <= 2
    # Specialists are on duty for the whole span, and at least two thirds of the agents are.
    start, end = np.datetime64(world.start, "s"), np.datetime64(world.end, "s")
    steady = (a["active_from"].to_numpy() <= start) & (a["active_to"].to_numpy() >= end)
    assert steady[spec.any(axis=1)].all()
    assert steady.mean() >= 2 / 3


def test_no_agent_is_top_specialist_of_two_issues(world: World) -> None:
    top = world.expertise.argmax(axis=0)  # the heaviest-weighted agent per issue
    assert len(set(top.tolist())) == len(world.issues)


def test_products(world: World) -> None:
    probs = world.product_issues
    assert np.allclose(probs.sum(axis=1), 1.0)
    sig = world.products["signature_issue"].to_numpy()
    b = world.profile.latent["products"]["signature_issue_boost"]
    assert (probs[np.arange(len(sig)), sig] >= b / (1 + b) - 1e-9).all()
    assert np.allclose(world.product_season.mean(axis=1), 1.0)
    # Signature issues differ across products (no single answer can dominate top-issue questions).
    share = np.bincount(sig, minlength=len(world.issues)).max() / len(sig)
    assert share < 0.3
    # Every (category, noun, modifier) naming pair is unique.
    names = set(
        zip(world.products["category"], world.products["noun"], world.products["modifier_idx"], strict=True)
    )
    assert len(names) == len(world.products)


def test_knowledge_topics_cover_every_issue_policy(world: World) -> None:
    keys = [t.key for t in world.knowledge]
    assert len(set(keys)) == len(keys)
    policy = {t.subject for t in world.knowledge if t.kind == "issue_policy"}
    assert policy == {i.key for i in world.issues}
    for t in world.knowledge:
        assert t.facts and all(f["question"] and f["answer"] for f in t.facts)


def test_violation_probability_averages_to_the_profile_rate(world: World) -> None:
    p = world.violation_probability()
    assert abs(p.mean() - world.profile.latent["cases"]["violation_rate"]) < 0.02


def test_world_is_deterministic_and_seed_sensitive() -> None:
    p = load_profile("crmarena")
    a, b, c = build_world(p, 0, 1.0), build_world(p, 0, 1.0), build_world(p, 1, 1.0)
    assert a.agents.equals(b.agents) and np.array_equal(a.product_issues, b.product_issues)
    assert not a.agents["skill"].equals(c.agents["skill"])
