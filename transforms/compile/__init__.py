"""Compilation: ``torch.compile`` backends, dynamic shapes, Inductor settings, static caches (NRN30x)."""
