"""Offline contract conformance for LLM provider adapters: cases, the bounded loop, reports.

The package is read in layers, from the bottom up (docs/layout.md): ``kit`` (what an adapter codes against: the
``Adapter`` record, the neutral task and transcript, the contract's kinds, the glue helpers and waivers),
``providers`` (the five pure adapters), ``engine`` (cases and world, the loop, correlation, the request checks, the
runner that makes a row, the plan), ``report`` (the report, its renderings, the snapshots, findings and the diff),
``replay`` (the replay router and server, the recording proxy), ``stacks`` (real clients as lanes, and a team's
own loop under test), and on top ``session`` (one run, whichever entry point starts it), ``commands``, ``cli``
and ``pytest_plugin``. The engine never names a vendor; an adapter never does I/O.
"""

from pathlib import Path

__version__ = "0.1.0"
BUNDLED_CASES = Path(__file__).resolve().parent / "cases"
"""The bundled cases, as the package installs them."""
