"""gpudoctor: diagnose an NVIDIA GPU stack (driver, CUDA, cuDNN, TensorRT, host compiler, frameworks)."""

__version__ = "0.1.0"
