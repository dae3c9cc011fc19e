"""The CUDA runtime: availability, synchronisation, RNG, memory, streams, device queries, backend
flags and profiler hooks (NRN11x, NRN35x)."""
