"""GGUF files: reading a model's metadata (inspect) and writing tiny random-weight test models."""
