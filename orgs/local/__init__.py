"""The embedded org: a bundle served as a Salesforce-compatible org on loopback."""
