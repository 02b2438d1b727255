"""Publishing what a run adapts (docs/publishing.md): a Hugging Face model card per adapted cell (``card``), written
from the run's results.csv by huggingface_hub's ModelCard, and the upload of a cell's model folder, card and GGUF
files to the hub (``upload``)."""
