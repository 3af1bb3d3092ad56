"""System prompts of the three frameworks, built the way CRMArena's agents build theirs (reference §8.2):
a strategy template, then the org's schema (object list and per-object field descriptions from the bundle's
`tasks/schema.json`), then `# Additional task context` with the instance's `metadata.required` (plus
`metadata.optional` in aided mode). orgseed's own wording of the same instructions.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

SYSTEM = "Salesforce instance"

_COMMON = """\
You are an expert in Salesforce with access to a {system}.{audience}

# Instructions
- You get a question, a description of the {system} and task context.
- Query the {system} with SOQL (Salesforce Object Query Language) or SOSL (Salesforce Object Search Language,
  for text search) to find what answers the question.
- Never write an observation yourself: you receive one after each action.
- If several records answer the question, answer with them separated by commas.
- If no record answers the question, answer None.
- Answer with the value only: no sentence, no explanation.
"""

REACT_TEMPLATE = (
    _COMMON
    + """\
- Every reply is exactly one thought followed by exactly one action, and nothing else.

## Thought
One line of reasoning: <thought> your reasoning </thought>

## Action
Either <execute> a SOQL or SOSL query </execute> to run it on the {system},
or <respond> the answer </respond> to finish.

# Example
Question: How many opportunities are there?
<thought> Count the opportunities. </thought>
<execute> SELECT COUNT() FROM Opportunity </execute>
(after the observation 100)
<thought> The count is known. </thought>
<respond> 100 </respond>
"""
)

ACT_TEMPLATE = (
    _COMMON
    + """\
- Every reply is exactly one action and nothing else (no thoughts).

## Action
Either <execute> a SOQL or SOSL query </execute> to run it on the {system},
or <respond> the answer </respond> to finish.

# Example
Question: How many opportunities are there?
<execute> SELECT COUNT() FROM Opportunity </execute>
(after the observation 100)
<respond> 100 </respond>
"""
)

FUNCTION_CALLING_TEMPLATE = """\
You are an expert in Salesforce with access to a {system}.

# Instructions
- You get a question, a description of the {system} and task context.
- Use the tools to work on the {system}. Make exactly one tool call in every reply.
- Finish by calling the 'respond' tool with the answer only: no sentence, no explanation.
- If no record answers the question, respond with None.
"""

FUNCTION_CALLING_RAW_TEMPLATE = (
    FUNCTION_CALLING_TEMPLATE
    + """\
- Two tools take free-form queries: 'issue_soql_query' (any SOQL) and 'issue_sosl_query' (any SOSL); the
  other tools each do one fixed job.
"""
)

REACT_RULE = (
    "Invalid output format! Reply with <thought> your thought </thought> and then either "
    "<execute> a valid SOQL/SOSL query </execute> or <respond> the answer </respond>."
)
ACT_RULE = (
    "Invalid output format! Reply with either <execute> a valid SOQL/SOSL query </execute> or "
    "<respond> the answer </respond>."
)
FC_RULE = (
    "Invalid tool call! Call one of the tools provided with valid JSON arguments, or give the final answer "
    "with the 'respond' tool."
)
FC_BAD_ARGUMENTS = (
    "Invalid tool call argument. Make a valid tool call using the tools provided, or give the final answer "
    "with the 'respond' tool."
)
OBSERVATION = f"{SYSTEM} output: {{observation}}"


def schema_text(schema: Sequence[Mapping[str, Any]]) -> str:
    """The schema block: object names, then each object's fields with their descriptions."""
    names = [str(o["object"]) for o in schema]
    blocks = []
    for o in schema:
        fields = {k: v for k, v in dict(o.get("fields") or {}).items() if v is not None}
        blocks.append(str(o["object"]) + "\n" + "\n".join(f"  - {k}: {v}" for k, v in fields.items()))
    return (
        f"The objects available in the {SYSTEM} are:\n{', '.join(names)}\n\n"
        "## The fields of each object, with their descriptions and dependencies:\n" + "\n".join(blocks) + "\n"
    )


def system_prompt(
    framework: str,
    schema: Sequence[Mapping[str, Any]],
    required: str,
    optional: str = "",
    *,
    raw_queries: bool = True,
    external: bool = False,
) -> str:
    """The full system prompt of one instance."""
    audience = (
        " You are talking with the system and a customer."
        if external
        else " You are talking with the system and an employee of the same company."
    )
    if framework == "function-calling":
        if raw_queries:
            text = FUNCTION_CALLING_RAW_TEMPLATE.format(system=SYSTEM)
            text += f"\n# {SYSTEM} description\nUse it with the free-form tools.\n{schema_text(schema)}"
        else:  # CRMArena's leaderboard "Function Calling": the tools only, no schema
            text = FUNCTION_CALLING_TEMPLATE.format(system=SYSTEM)
    else:
        template = REACT_TEMPLATE if framework == "react" else ACT_TEMPLATE
        text = template.format(system=SYSTEM, audience=audience if framework == "react" else "")
        text += f"\n# {SYSTEM} description\n{schema_text(schema)}"
    if required:
        text += f"\n# Additional task context\n{required}\n"
    if optional:
        text += f"\n{optional}\n"
    return text.strip()
