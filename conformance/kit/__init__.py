"""The adapter kit: what an adapter author codes against (the neutral task and transcript, the contract's types,
the verdict rule, and the readers every vendor's adapter shares). Pure: no I/O."""
