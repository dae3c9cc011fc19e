"""Libraries built on PyTorch: Hugging Face, Lightning, PyTorch/XLA-era torch-neuronx (NRN5xx)."""
