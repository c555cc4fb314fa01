"""Loads the suite's pytest plugin: case files under cases/ become test items per provider."""

pytest_plugins = ["conformance.pytest_plugin"]
