"""The engine: cases and the fixture world, the bounded loop, classification, correlation, the request checks and
the rows they make."""
