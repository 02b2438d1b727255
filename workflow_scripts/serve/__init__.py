"""Serving an adapted model: its GGUF export with llama.cpp's own converter, and the checks of the export in llama.cpp
(docs/serving.md)."""
