"""What cannot move automatically, found and explained: CUDA kernels, Triton, CUDA graphs, FP8,
and whatever CUDA-specific code no other rule handles (NRN9xx)."""
