"""Vocabulary expansion study: one importable module per workflow step (see rules/ for the glue)."""
