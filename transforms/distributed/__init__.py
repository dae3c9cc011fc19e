"""Distributed training: process-group backends, device meshes, DDP device ids (NRN4xx)."""
