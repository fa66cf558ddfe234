"""Adapters over AWS services. Handlers call these; the core never does."""
