"""The NVIDIA formats gpudoctor reads: fatbinaries/ELF, TensorRT engine plans, and the text
of nvidia-smi, nvcc, host_config.h, ldconfig and friends. Pure: imports nothing else of gpudoctor."""
