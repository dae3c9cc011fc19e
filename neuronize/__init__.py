"""neuronize: migrate PyTorch code from NVIDIA CUDA to AWS Trainium (TorchNeuron)."""

__version__ = "0.2.0"

#: The TorchNeuron release the rules were written against (see the reference in shared/).
TORCHNEURON_TARGET = "Neuron 2.33 (torch-neuronx 2.13.3 / 2.14.3, public beta)"
