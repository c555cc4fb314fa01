"""Test-session setup. The conformance plugin itself is an installed pytest11 entry point (pyproject.toml) that
collects cases/ because ``conformance_cases`` names it; pytester drives the plugin's own tests."""

pytest_plugins = ["pytester"]


def pytest_make_parametrize_id(config: object, val: object, argname: str) -> str | None:
    """A parameter id pytest would write with backslash escapes (a newline, a lone surrogate, U+2028) cannot be
    selected again by its node id (mutation testing and ``pytest 'file::test[id]'`` do that): spell such
    characters, and the backslash, ``U+XXXX`` instead."""
    text = val.decode("latin-1") if isinstance(val, bytes) else val
    if not isinstance(text, str) or all(_plain(char) for char in text):
        return None
    return "".join(char if _plain(char) else f"U+{ord(char):04X}" for char in text)


def _plain(char: str) -> bool:
    return char.isascii() and char.isprintable() and char != "\\"
