"""The built-in adapters, one package per vendor API; ``registry`` maps provider ids to them."""
