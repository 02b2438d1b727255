"""Vocabulary expansion study: one importable module per workflow step (see rules/ for the glue), and ``plan/``, which
checks a configuration and expands it once before any step runs (the steps may import it; it imports no step)."""
