"""Device placement: CUDA device strings, ``.cuda()``, device comparisons and dispatches (NRN10x)."""
