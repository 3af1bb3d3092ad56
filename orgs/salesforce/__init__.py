"""Seeding a real Salesforce org."""
