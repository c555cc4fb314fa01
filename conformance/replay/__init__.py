"""Replay and record: recorded turns served to real clients, and real traffic captured as fixtures."""
