"""Stacks: real client code (the vendors' SDKs, the gateways, a team's own) as lanes of the matrix. They do I/O,
against loopback only; the pure adapters live in ``conformance.providers``."""
