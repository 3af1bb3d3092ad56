"""Checks data: schema, integrity, rules, text and task answers. Each check returns findings."""
