"""Orchestration: the only package that imports prefect. Thin flows over the libraries, and the CLI."""
