"""The ``conformance`` commands, one module each; ``conformance.cli`` imports a command's module when it runs."""
