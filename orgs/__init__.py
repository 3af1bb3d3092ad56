"""Where data goes: the bundle, the embedded local org and real Salesforce orgs."""
