"""The vendors' official SDKs as stacks, one module per API."""
