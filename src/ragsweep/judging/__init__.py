"""Judges: support and relevance probabilities for (claim, passage) pairs, each with a status."""
