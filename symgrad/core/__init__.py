"""numpy-level building blocks with torch's exact semantics (random generator, creation ranges)."""
