"""Offline contract conformance for LLM provider adapters: cases, the bounded loop, reports.

How data flows. A case (``cases.py`` reads ``case.yaml`` and ``world.yaml`` through ``yamlfile.py`` and
``files.py``; ``schemas.py`` checks them) names recorded wire turns per provider (``fixtures.py``). The loop
(``loop.py``) replays them through an adapter: the adapter builds each request from the neutral task and
transcript, and classifies each recorded body, error or stream into one contract kind (``types.py``); tool calls
run against the case's world (``world.py``) and the answer is verified (``verify.py``). Correlation
(``correlation.py``) and the request expectations (``request_check.py``) are checked on the requests the adapter
built. ``runner.py`` turns each case × provider × mode into a report row (made report-safe by ``sanitize.py``);
``report.py``, ``html.py`` and ``markdown.py`` render it, ``reportfiles.py`` writes the set, ``diff.py`` compares
two reports, ``snapshot.py`` keeps the reviewed classifications and requests. ``cli.py`` and ``pytest_plugin.py``
are the two ways in.

Real clients. ``replay.py`` serves the recorded turns to real clients over each API's wire (``Adapter.wire``):
behind a loopback server (``serve.py``, ``serve_command.py``) or the clients' own seams (``transports.py``). A
stack (``stack.py``) is a team's client code; ``stack_runner.py`` runs it through the same loop, and the raw
adapter reads what its client sent.

The adapter kit. What ``providers/<api>/`` modules import to stay small and pure: ``adapter.py`` (the ``Adapter``
record and the neutral task/transcript types), ``types.py`` (the kinds), ``calls.py`` (building calls and deciding
whether they can run), ``http.py`` (status defaults, retry headers, error kinds), ``usage.py`` (count helpers),
``stream.py`` and ``sse.py`` (stream summary and framing), ``jsontext.py`` (depth-bounded JSON). The engine never
names a vendor; an adapter never does I/O.
"""

__version__ = "0.1.0"
