"""The built-in adapters, one package per vendor API; ``registry`` maps provider ids to them."""

if __name__ != "conformance.providers":  # pragma: no cover - a second import name would load every adapter twice
    raise ImportError(f"the built-in adapters are imported as conformance.providers, not {__name__} "
                      "(conformance/providers is this folder, installed inside the package)")
