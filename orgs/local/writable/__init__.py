"""An empty, writable org with state (`orgseed serve --empty`): see `org.py` for the whole, `state.py` for the
state directory, `dml.py` for the writes and refusals, `ingest.py` for Bulk API 2.0 ingest and `metadata.py`
for deploys."""
