"""The audit page: one self-contained HTML file (inline CSS and SVG plots; no script, fonts or network)."""

from __future__ import annotations

from typing import Any

from jinja2 import Environment, select_autoescape

TEMPLATE = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>orgseed audit: {{ report.bundle.profile }} seed {{ report.bundle.seed }} scale {{ report.bundle.scale }}</title>
<style>
  body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: #1d2733; margin: 0 auto;
         max-width: 1100px; padding: 1.2rem 1.5rem 3rem; }
  h1 { font-size: 1.45rem; margin: 0 0 .3rem; }
  h2 { font-size: 1.15rem; margin: 2rem 0 .3rem; border-bottom: 1px solid #d5dbe3; padding-bottom: .2rem; }
  .meta { color: #5a6675; margin: 0 0 1rem; }
  .verdict { display: inline-block; min-width: 3.2rem; text-align: center; border-radius: .25rem;
             padding: 0 .4rem; font-weight: 600; font-size: .8rem; text-transform: uppercase; }
  .ok { background: #dcefdc; color: #1f5f1f; } .warn { background: #fbeccb; color: #7a4d00; }
  .fail { background: #f7d4d0; color: #8c1d12; }
  table { border-collapse: collapse; margin: .5rem 0; font-size: .85rem; }
  th, td { text-align: left; padding: .15rem .6rem .15rem 0; border-bottom: 1px solid #eef1f5; vertical-align: top; }
  td.n { text-align: right; font-variant-numeric: tabular-nums; }
  .summary td { padding-right: 1.2rem; }
  ul.flags { margin: .3rem 0; padding-left: 1.2rem; color: #7a4d00; }
  .plots { display: flex; flex-wrap: wrap; gap: 1rem; }
  svg.plot { max-width: 100%; height: auto; }
  details { margin: .4rem 0; } summary { cursor: pointer; color: #3b6ea8; }
  @media print { body { max-width: none; } details { display: block; } h2 { break-after: avoid; } }
</style>
</head>
<body>
<h1>orgseed audit <span class="verdict {{ report.verdict }}">{{ report.verdict }}</span></h1>
<p class="meta">{{ report.bundle.path }} · profile {{ report.bundle.profile }} · seed {{ report.bundle.seed }} ·
scale {{ report.bundle.scale }} · writer {{ report.bundle.writer }} · data {{ (report.bundle.data_sha256 or '')[:12] }}
{% if report.against %}<br>compared with {{ report.against.bundle.path }} (seed {{ report.against.bundle.seed }},
scale {{ report.against.bundle.scale }}, writer {{ report.against.bundle.writer }}){% endif %}</p>

<table class="summary" id="overview">
<tr><th>section</th><th>verdict</th><th>in one line</th></tr>
{% for key, s in report.sections.items() %}
<tr><td><a href="#{{ key }}">{{ s.title }}</a></td><td><span class="verdict {{ s.verdict }}">{{ s.verdict }}</span></td>
<td>{{ s.summary }}</td></tr>
{% endfor %}
</table>

{% for key, s in report.sections.items() %}
<section id="{{ key }}">
<h2>{{ s.title }} <span class="verdict {{ s.verdict }}">{{ s.verdict }}</span></h2>
<p>{{ s.summary }}</p>
{% if s.flags %}<ul class="flags">{% for f in s.flags %}<li>{{ f.what }}</li>{% endfor %}</ul>{% endif %}
{% if plots[key] %}<div class="plots">{% for p in plots[key] %}{{ p | safe }}{% endfor %}</div>{% endif %}
{% if key == "latent" %}
<table><tr><th>effect</th><th>latent</th><th>observed</th><th>sign</th><th>n</th><th>rho</th><th>95% CI</th><th>shows</th></tr>
{% for e in s.figures.effects %}<tr><td>{{ e.name }}</td><td>{{ e.latent }}</td><td>{{ e.observed }}</td>
<td>{{ e.expected_sign }}</td><td class="n">{{ e.n }}</td><td class="n">{{ e.rho }}</td><td class="n">{{ e.ci95 }}</td>
<td>{{ "yes" if e.shows else "no" }}</td></tr>{% endfor %}</table>
{% elif key == "tasks" %}
<table><tr><th>task</th><th>instances</th><th>None share</th><th>majority share</th><th>distinct answers</th>
<th>median margin</th><th>always None</th><th>majority</th><th>random</th></tr>
{% for t in s.figures.tasks %}<tr><td>{{ t.abbreviation }} ({{ t.task }})</td><td class="n">{{ t.instances }}</td>
<td class="n">{{ t.none_share }}</td><td class="n">{{ t.majority_share }}</td><td class="n">{{ t.distinct_answers }}</td>
<td class="n">{{ t.median_margin }}</td><td class="n">{{ t.baseline_none }}</td><td class="n">{{ t.baseline_majority }}</td>
<td class="n">{{ t.baseline_random }}</td></tr>{% endfor %}</table>
{% elif key == "text" %}
<table><tr><th>text</th><th>texts</th><th>words p50 (p90)</th><th>distinct-1</th><th>distinct-2</th><th>exact repeats</th>
<th>near-duplicates</th><th>most common opening</th></tr>
{% for k in s.figures.kinds %}<tr><td>{{ k.object }}.{{ k.field }}</td><td class="n">{{ k.texts }}</td>
<td class="n">{{ k.words.p50 }} ({{ k.words.p90 }})</td><td class="n">{{ k.distinct_1 }}</td><td class="n">{{ k.distinct_2 }}</td>
<td class="n">{{ k.duplicate_share }}</td><td class="n">{{ k.near_duplicate_share }} ({{ k.near_duplicate_pairs }} pairs)</td><td>“{{ k.top_opening }}” ({{ k.top_opening_share }})</td></tr>{% endfor %}</table>
<details><summary>most repeated {{ 8 }}-word sequences</summary><table>
{% for k in s.figures.kinds %}{% for g in k.repeated_8grams %}<tr><td>{{ k.object }}.{{ k.field }}</td><td>{{ g.text }}</td>
<td class="n">{{ g.texts }}</td></tr>{% endfor %}{% endfor %}</table></details>
{% elif key == "integrity" %}
<details><summary>every relationship</summary><table><tr><th>child.field → parent</th><th>children</th><th>null</th>
<th>orphans</th><th>per parent p50 / p90 / max</th><th>childless parents</th></tr>
{% for r in s.figures.relationships %}<tr><td>{{ r.child }}.{{ r.field }} → {{ r.parent }}</td><td class="n">{{ r.children }}</td>
<td class="n">{{ r.null }}</td><td class="n">{{ r.orphans }}</td>
<td class="n">{{ r.per_parent.p50 }} / {{ r.per_parent.p90 }} / {{ r.per_parent.max }}</td><td class="n">{{ r.childless_share }}</td></tr>
{% endfor %}</table></details>
{% elif key == "distributions" %}
<details><summary>picklists</summary><table><tr><th>field</th><th>records</th><th>values used / declared</th><th>entropy (bits)</th>
<th>most common</th></tr>
{% for p in s.figures.picklists %}<tr><td>{{ p.object }}.{{ p.field }}</td><td class="n">{{ p.records }}</td>
<td class="n">{{ p.shares | length }} / {{ p.declared_values }}</td><td class="n">{{ p.entropy_bits }}</td>
<td>{{ p.top }} ({{ p.top_share }})</td></tr>{% endfor %}</table></details>
{% elif key == "org" %}
<p class="meta">{{ s.figures.instance_url }}{% if s.figures.id_map %} · ids mapped by {{ s.figures.id_map }}{% endif %}</p>
<table><tr><th>object</th><th>bundle</th><th>org</th><th>sampled</th><th>missing in the org</th><th>fields that differ</th></tr>
{% for o in s.figures.objects %}<tr><td>{{ o.object }}</td><td class="n">{{ o.bundle }}</td><td class="n">{{ o.org }}</td>
<td class="n">{{ o.sampled }}</td><td class="n">{{ o.missing_in_org }}</td>
<td>{% for k, v in o.fields_differing.items() %}{{ k }} ({{ v }}) {% endfor %}</td></tr>{% endfor %}</table>
{% elif key == "fidelity" %}
<table class="fidelity-queries"><tr><th>task</th><th>instances</th><th>distinct queries</th><th>CRMArena</th><th>mention None</th><th>example hints</th></tr>
{% for q in s.figures.queries %}<tr><td>{{ q.task }}</td><td class="n">{{ q.instances }}</td><td class="n">{{ q.distinct_queries }}</td>
<td class="n">{{ q.crmarena_distinct_queries }}</td><td class="n">{{ q.none_mentions }}</td><td class="n">{{ q.answer_hints }}</td></tr>{% endfor %}</table>
<p class="meta fidelity-tasks">queries mentioning None: <b class="none-mentions">{{ s.figures.none_mentions }}</b> · with an example
answer: <b class="answer-hints">{{ s.figures.answer_hints }}</b> · NED queries naming the product exactly:
<b class="ned-exact">{{ s.figures.ned_exact_name_share }}</b> · knowledge questions verbatim in their article:
<b class="verbatim">{{ s.figures.knowledge_qa.verbatim_question_share }}</b> (distinct-2 {{ s.figures.knowledge_qa.distinct_2 }})</p>
<table class="fidelity-text"><tr><th>text</th><th>records</th><th>distinct-1</th><th>distinct-2</th><th>distinct-3</th><th>most repeated 8-word sequences (share of records)</th></tr>
{% for t in s.figures.text %}<tr><td>{{ t.name }}</td><td class="n">{{ t.records }}</td><td class="n">{{ t.distinct_1 }}</td>
<td class="n">{{ t.distinct_2 }}</td><td class="n">{{ t.distinct_3 }}</td>
<td>{% for g in t.top_8grams %}<span class="gram">“{{ g.text }}” ({{ g.share }})</span>{% if not loop.last %}<br>{% endif %}{% endfor %}</td></tr>{% endfor %}</table>
{% elif key == "llm" %}
<table>{% for k in ["writer", "model", "requests", "cache_hits", "repairs", "prompt_tokens", "completion_tokens", "cost_usd"] %}
<tr><td>{{ k }}</td><td class="n">{{ s.figures[k] }}</td></tr>{% endfor %}</table>
{% endif %}
</section>
{% endfor %}

{% if report.against %}
<section id="against">
<h2>Against {{ report.against.bundle.path }}</h2>
<p>Every figure of both audits; the ones that differ first.</p>
<table><tr><th>figure</th><th>this bundle</th><th>other</th><th>difference</th></tr>
{% for r in report.against.figures[:400] %}<tr><td>{{ r.figure }}</td><td class="n">{{ r.this }}</td>
<td class="n">{{ r.other }}</td><td class="n">{{ r.difference }}</td></tr>{% endfor %}</table>
</section>
{% endif %}
<p class="meta">Written by orgseed in {{ report.seconds }} s. Figures: reports/audit.json.</p>
</body>
</html>
"""

_ENV = Environment(
    autoescape=select_autoescape(default=True, default_for_string=True), trim_blocks=True, lstrip_blocks=True
)


def render_page(report: dict[str, Any], plots: dict[str, list[str]]) -> str:
    return _ENV.from_string(TEMPLATE).render(report=report, plots=plots)
