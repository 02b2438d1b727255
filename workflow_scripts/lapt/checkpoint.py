"""The LAPT resume checkpoint: one safetensors file whose tensors are the tensors and whose metadata is JSON.

Nothing is unpickled on load, so a checkpoint folder cannot make training run foreign code (torch.load without
``weights_only`` would run whatever a pickle names). A checkpoint is a tree of dicts, lists, tuples, JSON scalars and
tensors (an optimizer's or scheduler's ``state_dict`` is one): every tensor is stored in the safetensors body under
its path in the tree ("optimizer/state/0/exp_avg"), and the tree, with ``{"__tensor__": path}`` in the tensors' places,
as JSON in the metadata. Tuples and dicts with non-string keys are tagged so that they load back as they were.
"""

from __future__ import annotations

import json
import logging
import random
import shutil
from pathlib import Path
from typing import Any

from workflow_scripts.io import atomic_path

log = logging.getLogger("vocabexp.lapt")

CHECKPOINT_FILE = "checkpoint.safetensors"
FORMAT = "vocabexp-lapt-checkpoint/1"
_TENSOR, _TUPLE, _ITEMS = "__tensor__", "__tuple__", "__items__"


def _join(path: str, key: Any) -> str:
    return f"{path}/{key}" if path else str(key)


def _encode(obj: Any, tensors: dict[str, Any], path: str) -> Any:
    import torch

    if torch.is_tensor(obj):
        if path in tensors:
            raise ValueError(f"two tensors of the checkpoint tree have the path {path!r}")
        tensors[path] = obj.detach().cpu().contiguous()
        return {_TENSOR: path}
    if isinstance(obj, tuple):
        return {_TUPLE: [_encode(v, tensors, _join(path, i)) for i, v in enumerate(obj)]}
    if isinstance(obj, list):
        return [_encode(v, tensors, _join(path, i)) for i, v in enumerate(obj)]
    if isinstance(obj, dict):
        if all(isinstance(k, str) and not k.startswith("__") for k in obj):
            return {k: _encode(v, tensors, _join(path, k)) for k, v in obj.items()}
        return {_ITEMS: [[k, _encode(v, tensors, _join(path, k))] for k, v in obj.items()]}
    if obj is None or isinstance(obj, bool | int | float | str):
        return obj
    raise TypeError(f"checkpoint entry {path!r} is a {type(obj).__name__}; only tensors and JSON values can be saved")


def _decode(obj: Any, tensors: dict[str, Any]) -> Any:
    if isinstance(obj, list):
        return [_decode(v, tensors) for v in obj]
    if not isinstance(obj, dict):
        return obj
    if set(obj) == {_TENSOR}:
        return tensors[obj[_TENSOR]]
    if set(obj) == {_TUPLE}:
        return tuple(_decode(v, tensors) for v in obj[_TUPLE])
    if set(obj) == {_ITEMS}:
        return {k: _decode(v, tensors) for k, v in obj[_ITEMS]}
    return {k: _decode(v, tensors) for k, v in obj.items()}


def save_checkpoint(path: str | Path, tree: dict[str, Any]) -> None:
    """Write ``tree`` (tensors and JSON values) to ``path`` atomically: temporary file, then rename."""
    from safetensors.torch import save_file

    tensors: dict[str, Any] = {}
    meta = json.dumps(_encode(tree, tensors, ""), separators=(",", ":"))
    with atomic_path(path) as tmp:
        save_file(tensors, tmp, metadata={"format": FORMAT, "tree": meta})


def load_checkpoint(path: str | Path) -> dict[str, Any]:
    """Read a tree written by ``save_checkpoint``, tensors on the CPU; ValueError for any other file, read or not."""
    from safetensors import safe_open

    path = Path(path)
    try:
        with safe_open(str(path), framework="pt", device="cpu") as f:
            meta = f.metadata() or {}
            if meta.get("format") != FORMAT:
                raise ValueError(f"format {meta.get('format')!r}, expected {FORMAT!r}")
            tensors = {k: f.get_tensor(k) for k in f.keys()}
        return _decode(json.loads(meta["tree"]), tensors)
    except Exception as e:  # safetensors' errors share no base class worth naming; all mean "not ours"
        raise ValueError(
            f"{path} is not a LAPT checkpoint of this version ({e}); delete {path.parent} to start over"
        ) from e


def rng_state() -> dict[str, Any]:
    """Python's, numpy's and torch's (CPU and CUDA) RNG states as lists, ints and uint8 tensors."""
    import numpy as np
    import torch

    version, keys, gauss = random.getstate()
    name, np_keys, pos, has_gauss, cached = np.random.get_state()
    state = {
        "python": [version, list(keys), gauss],
        "numpy": [name, np_keys.tolist(), int(pos), int(has_gauss), float(cached)],
        "torch": torch.get_rng_state(),
    }
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: dict[str, Any]) -> None:
    """Restore the RNG states of ``rng_state``."""
    import numpy as np
    import torch

    version, keys, gauss = state["python"]
    random.setstate((version, tuple(keys), gauss))
    name, np_keys, pos, has_gauss, cached = state["numpy"]
    np.random.set_state((name, np.asarray(np_keys, dtype=np.uint32), pos, has_gauss, cached))
    torch.set_rng_state(state["torch"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def remove_checkpoint(checkpoint_dir: str | Path) -> None:
    """Delete the resume checkpoint, and its folder when nothing else is in it."""
    ckpt_dir = Path(checkpoint_dir)
    (ckpt_dir / CHECKPOINT_FILE).unlink(missing_ok=True)
    for stale in ckpt_dir.glob(f".{CHECKPOINT_FILE}.*.tmp"):  # left by a kill during a checkpoint write
        shutil.rmtree(stale, ignore_errors=True)
    if ckpt_dir.is_dir() and not any(ckpt_dir.iterdir()):
        ckpt_dir.rmdir()
