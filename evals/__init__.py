"""Running agents on a built org and scoring them like CRMArena's leaderboard.

A plain library (no prefect, typer or rich): `tasks` reads a bundle's task files, `frameworks` runs one
episode under Function Calling, ReAct or Act, `agents` holds the model client and the built-in no-LLM
baselines, `reward` scores answers as CRMArena does, `runner` runs a whole evaluation (concurrent,
resumable, cached per request) and `leaderboard` writes the table. The CLI (`orgseed eval`) is the face.
"""
