"""The record modes, as pytest-recording names them (docs/record.md, "Record modes"): what the recording proxy
forwards. Apart from ``conformance.replay.record`` so that the command line reads them without importing the proxy."""

MODES = ("none", "once", "new_episodes", "all")
