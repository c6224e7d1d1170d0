"""Client wrappers for the compatibility suite (no dependency on Gregor's packages)."""
