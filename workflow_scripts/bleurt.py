"""BLEURT-20 scores of the sum predictions (paper 002 Table 8, §7.3), in PyTorch.

The reference code scored the saved sum predictions with Google's TensorFlow ``bleurt`` package and the BLEURT-20
checkpoint. Here the checkpoint is lucadiliello's PyTorch conversion (hub ``lucadiliello/BLEURT-20``, or the distilled
``lucadiliello/BLEURT-20-D12``; config key ``evaluation.sum.bleurt``). Its package, ``bleurt-pytorch`` 0.0.1, does not
import under transformers 5 (it imports ``find_pruneable_heads_and_indices``, which ``transformers.pytorch_utils`` no
longer has), so the model is written out here, following the port's architecture and parameter names so that its
weights load as they are:

- a BERT encoder (word, position and token-type embeddings, LayerNorm; post-LayerNorm self-attention blocks), with a
  linear ``embedding_projection`` from ``embedding_size`` to ``hidden_size`` where the two differ (BLEURT-20 is
  RemBERT-based, with embeddings narrower than its layers; config.json says how wide); a tanh pooler on the first
  token and a linear regression head (``classifier``) whose one output is the score.
- the encoding of Google's ``bleurt/encoding.py``: SentencePiece pieces of reference and candidate, the pair truncated
  longest-first to ``max_seq_length - 3`` pieces, ``[CLS] reference [SEP] candidate [SEP]`` with segment ids 0 / 1.
- GELU as TensorFlow BLEURT computes it (BERT's ``modeling.py``: the tanh approximation). The port's config.json
  names ``gelu`` (the exact erf form), which transformers evaluates exactly; ``--gelu exact`` reproduces the port.

``score_pairs`` returns one number per (reference, candidate) pair; the command scores every run of a
``sum_predictions.tsv`` (written by the harness: run, id, reference, hypothesis) and records each run's mean, as
ROUGE-L is recorded per run and averaged over runs in the tables.
"""

from __future__ import annotations

import argparse
import csv
import json
import logging
import math
import sys
import time
from dataclasses import asdict, dataclass, fields
from pathlib import Path

import torch
from torch import nn

from workflow_scripts.io import read_json, set_threads, setup_logging, write_json, write_text
from workflow_scripts.sum_assets import SPM_FILE, WEIGHT_FILES, special_ids

log = logging.getLogger("vocabexp")

# Non-parameter buffers the port saves with its weights.
_BUFFERS = ("position_ids", "token_type_ids")


@dataclass
class BleurtConfig:
    """The architecture fields of the port's config.json (``BleurtConfig``); the rest of the file is ignored."""

    vocab_size: int
    hidden_size: int = 768
    num_hidden_layers: int = 12
    num_attention_heads: int = 12
    intermediate_size: int = 3072
    hidden_act: str = "gelu"
    max_position_embeddings: int = 512
    type_vocab_size: int = 2
    layer_norm_eps: float = 1e-12
    embedding_size: int | None = None
    max_seq_length: int = 512  # BLEURT-20's bleurt_config.json; the truncation length of a pair

    @classmethod
    def from_dict(cls, data: dict) -> BleurtConfig:
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})

    def save(self, folder: str | Path) -> None:
        Path(folder, "config.json").write_text(json.dumps({**asdict(self), "model_type": "bleurt"}, indent=2) + "\n")


def _gelu(kind: str):
    if kind == "tanh":
        return lambda x: nn.functional.gelu(x, approximate="tanh")
    if kind == "exact":
        return nn.functional.gelu
    raise ValueError(f"unknown GELU {kind!r} (tanh: TensorFlow BLEURT; exact: the port's config)")


class _Embeddings(nn.Module):
    def __init__(self, c: BleurtConfig):
        super().__init__()
        width = c.embedding_size or c.hidden_size
        self.word_embeddings = nn.Embedding(c.vocab_size, width)
        self.position_embeddings = nn.Embedding(c.max_position_embeddings, width)
        self.token_type_embeddings = nn.Embedding(c.type_vocab_size, width)
        self.LayerNorm = nn.LayerNorm(width, eps=c.layer_norm_eps)

    def forward(self, input_ids: torch.Tensor, token_type_ids: torch.Tensor) -> torch.Tensor:
        positions = torch.arange(input_ids.shape[1], device=input_ids.device)
        x = self.word_embeddings(input_ids) + self.token_type_embeddings(token_type_ids)
        return self.LayerNorm(x + self.position_embeddings(positions)[None])


class _SelfAttention(nn.Module):
    def __init__(self, c: BleurtConfig):
        super().__init__()
        if c.hidden_size % c.num_attention_heads:
            raise ValueError(f"hidden_size {c.hidden_size} is not a multiple of {c.num_attention_heads} heads")
        self.heads = c.num_attention_heads
        self.query = nn.Linear(c.hidden_size, c.hidden_size)
        self.key = nn.Linear(c.hidden_size, c.hidden_size)
        self.value = nn.Linear(c.hidden_size, c.hidden_size)

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        b, n, d = x.shape

        def split(t: torch.Tensor) -> torch.Tensor:
            return t.view(b, n, self.heads, d // self.heads).transpose(1, 2)

        q, k, v = split(self.query(x)), split(self.key(x)), split(self.value(x))
        scores = q @ k.transpose(-1, -2) / math.sqrt(d // self.heads) + mask
        return (scores.softmax(-1) @ v).transpose(1, 2).reshape(b, n, d)


class _DenseNorm(nn.Module):
    """Linear, residual, LayerNorm (BERT's SelfOutput / Output)."""

    def __init__(self, width_in: int, c: BleurtConfig):
        super().__init__()
        self.dense = nn.Linear(width_in, c.hidden_size)
        self.LayerNorm = nn.LayerNorm(c.hidden_size, eps=c.layer_norm_eps)

    def forward(self, x: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
        return self.LayerNorm(self.dense(x) + residual)


class _Attention(nn.Module):
    def __init__(self, c: BleurtConfig):
        super().__init__()
        self.self = _SelfAttention(c)
        self.output = _DenseNorm(c.hidden_size, c)

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        return self.output(self.self(x, mask), x)


class _Intermediate(nn.Module):
    def __init__(self, c: BleurtConfig):
        super().__init__()
        self.dense = nn.Linear(c.hidden_size, c.intermediate_size)


class _Layer(nn.Module):
    def __init__(self, c: BleurtConfig, gelu: str):
        super().__init__()
        self.attention = _Attention(c)
        self.intermediate = _Intermediate(c)
        self.output = _DenseNorm(c.intermediate_size, c)
        self.act = _gelu(gelu)

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        x = self.attention(x, mask)
        return self.output(self.act(self.intermediate.dense(x)), x)


class _Encoder(nn.Module):
    def __init__(self, c: BleurtConfig, gelu: str):
        super().__init__()
        self.layer = nn.ModuleList(_Layer(c, gelu) for _ in range(c.num_hidden_layers))
        if c.embedding_size is not None and c.embedding_size != c.hidden_size:
            self.embedding_projection = nn.Linear(c.embedding_size, c.hidden_size)

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        if hasattr(self, "embedding_projection"):
            x = self.embedding_projection(x)
        for layer in self.layer:
            x = layer(x, mask)
        return x


class _Pooler(nn.Module):
    def __init__(self, c: BleurtConfig):
        super().__init__()
        self.dense = nn.Linear(c.hidden_size, c.hidden_size)


class _Bleurt(nn.Module):
    def __init__(self, c: BleurtConfig, gelu: str):
        super().__init__()
        self.embeddings = _Embeddings(c)
        self.encoder = _Encoder(c, gelu)
        self.pooler = _Pooler(c)


class BleurtRegressor(nn.Module):
    """BLEURT: the encoder (parameters under ``bleurt.``, as in the port) and the regression head ``classifier``."""

    def __init__(self, config: BleurtConfig, gelu: str = "tanh"):
        super().__init__()
        self.config = config
        self.bleurt = _Bleurt(config, gelu)
        self.classifier = nn.Linear(config.hidden_size, 1)

    def forward(
        self, input_ids: torch.Tensor, attention_mask: torch.Tensor, token_type_ids: torch.Tensor
    ) -> torch.Tensor:
        """One score per row of the batch."""
        x = self.bleurt.embeddings(input_ids, token_type_ids)
        mask = (1.0 - attention_mask[:, None, None, :].to(x.dtype)) * torch.finfo(x.dtype).min
        x = self.bleurt.encoder(x, mask)
        pooled = torch.tanh(self.bleurt.pooler.dense(x[:, 0]))
        return self.classifier(pooled)[:, 0]


class BleurtTokenizer:
    """Google's BLEURT encoding of (reference, candidate) pairs with a SentencePiece model (``bleurt/encoding.py``)."""

    def __init__(self, model_file: str | Path, max_seq_length: int = 512):
        import sentencepiece

        self.sp = sentencepiece.SentencePieceProcessor(model_file=str(model_file))
        self.max_seq_length = max_seq_length
        self.cls, self.sep = special_ids(self.sp, model_file)

    def encode(self, reference: str, candidate: str) -> tuple[list[int], list[int]]:
        """Token ids and segment ids of one pair, truncated as BLEURT does (the longer side loses its last piece)."""
        ref = self.sp.encode(reference, out_type=int)
        cand = self.sp.encode(candidate, out_type=int)
        while len(ref) + len(cand) > self.max_seq_length - 3:
            (ref if len(ref) > len(cand) else cand).pop()
        ids = [self.cls, *ref, self.sep, *cand, self.sep]
        return ids, [0] * (len(ref) + 2) + [1] * (len(cand) + 1)

    def batch(self, references: list[str], candidates: list[str]) -> dict[str, torch.Tensor]:
        """Padded tensors (id 0, masked) of a batch of pairs."""
        encoded = [self.encode(r, c) for r, c in zip(references, candidates, strict=True)]
        width = max(len(ids) for ids, _ in encoded)
        out = {k: torch.zeros(len(encoded), width, dtype=torch.long) for k in ("input_ids", "attention_mask")}
        out["token_type_ids"] = torch.zeros(len(encoded), width, dtype=torch.long)
        for i, (ids, segments) in enumerate(encoded):
            out["input_ids"][i, : len(ids)] = torch.tensor(ids)
            out["attention_mask"][i, : len(ids)] = 1
            out["token_type_ids"][i, : len(ids)] = torch.tensor(segments)
        return out


def _state_dict(folder: Path) -> dict[str, torch.Tensor]:
    for name in WEIGHT_FILES:
        path = folder / name
        if path.is_file():
            if name.endswith(".safetensors"):
                from safetensors.torch import load_file

                return load_file(str(path))
            return torch.load(path, map_location="cpu", weights_only=True)
    raise FileNotFoundError(f"{folder}: no BLEURT weights ({' or '.join(WEIGHT_FILES)}; evaluation.sum.bleurt)")


def load_bleurt(folder: str | Path, gelu: str = "tanh") -> tuple[BleurtRegressor, BleurtTokenizer]:
    """The model and tokenizer of a BLEURT folder in the port's layout (config.json, spm.model, weights)."""
    folder = Path(folder)
    for name in ("config.json", SPM_FILE):
        if not (folder / name).is_file():
            raise FileNotFoundError(f"{folder}: no {name}; not a BLEURT checkpoint folder (evaluation.sum.bleurt)")
    config = BleurtConfig.from_dict(read_json(folder / "config.json"))
    model = BleurtRegressor(config, gelu)
    state = {k: v for k, v in _state_dict(folder).items() if k.rsplit(".", 1)[-1] not in _BUFFERS}
    missing, unexpected = model.load_state_dict(state, strict=False)
    if missing or unexpected:
        raise ValueError(
            f"{folder}: weights do not fit the BLEURT architecture; missing {missing[:5]}, unexpected {unexpected[:5]}"
        )
    return model.eval(), BleurtTokenizer(folder / SPM_FILE, config.max_seq_length)


def save_bleurt(model: BleurtRegressor, spm_file: str | Path, folder: str | Path) -> Path:
    """A BLEURT folder in the port's layout (tests build tiny ones; the hub's are downloaded)."""
    from safetensors.torch import save_file

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    model.config.save(folder)
    save_file({k: v.contiguous() for k, v in model.state_dict().items()}, str(folder / "model.safetensors"))
    (folder / SPM_FILE).write_bytes(Path(spm_file).read_bytes())
    return folder


@torch.inference_mode()
def score_pairs(
    model: BleurtRegressor,
    tokenizer: BleurtTokenizer,
    references: list[str],
    candidates: list[str],
    batch_size: int = 16,
) -> list[float]:
    """One BLEURT score per (reference, candidate) pair, in order; batches of similar length to waste little
    padding (padding is masked: it does not change a score)."""
    if len(references) != len(candidates):
        raise ValueError(f"{len(references)} references but {len(candidates)} candidates")
    device = next(model.parameters()).device
    order = sorted(range(len(references)), key=lambda i: len(references[i]) + len(candidates[i]))
    scores = [0.0] * len(order)
    for start in range(0, len(order), batch_size):
        chunk = order[start : start + batch_size]
        inputs = tokenizer.batch([references[i] for i in chunk], [candidates[i] for i in chunk])
        values = model(**{k: v.to(device) for k, v in inputs.items()}).float().cpu().tolist()
        for i, v in zip(chunk, values, strict=True):
            scores[i] = v
    return scores


def read_predictions(path: str | Path) -> list[dict]:
    """Rows of a harness ``sum_predictions.tsv`` (run, id, reference, hypothesis)."""
    with open(path, encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE))
    if rows and not {"run", "id", "reference", "hypothesis"} <= set(rows[0]):
        raise ValueError(f"{path}: expected columns run, id, reference, hypothesis; have {list(rows[0])}")
    return rows


def score_predictions(
    predictions: str | Path,
    sum_result: str | Path,
    model_dir: str | Path,
    *,
    batch_size: int = 16,
    gelu: str = "tanh",
    device: str | None = None,
) -> tuple[dict, list[str]]:
    """The bleurt result (the sum cell's, one record per run: the mean over items) and per-item TSV lines."""
    t0 = time.time()
    sum_obj = read_json(sum_result)
    seeds = {r.get("run"): r.get("seed") for r in sum_obj.get("records", [])}
    sum_details = sum_obj.get("details") or {}
    details = {
        "task": "sum",
        "metric": "bleurt",
        "bleurt_model": str(model_dir),
        "gelu": gelu,
        "predictions": str(predictions),
    }
    rows = read_predictions(predictions)
    lines = ["run\tid\tbleurt"]
    records: list[dict] = []
    if not rows:
        details["unavailable"] = sum_details.get("unavailable") or "no sum predictions"
        return {"cell": sum_obj.get("cell", {}), "records": records, "details": details}, lines
    model, tokenizer = load_bleurt(model_dir, gelu)
    model.to(device or ("cuda" if torch.cuda.is_available() else "cpu"))
    scores = score_pairs(model, tokenizer, [r["reference"] for r in rows], [r["hypothesis"] for r in rows], batch_size)
    by_run: dict[int, list[float]] = {}
    for row, s in zip(rows, scores, strict=True):
        by_run.setdefault(int(row["run"]), []).append(s)
        lines.append(f"{row['run']}\t{row['id']}\t{s:.6f}")
    for run, values in sorted(by_run.items()):
        records.append(
            {"task": "sum", "metric": "bleurt", "value": sum(values) / len(values), "run": run, "seed": seeds.get(run)}
        )
    details.update(n_items=len(scores) // len(by_run), runs=len(by_run), seconds=round(time.time() - t0, 2))
    for key in ("data_label", "model_dir", "language"):
        if key in sum_details:
            details[key] = sum_details[key]
    return {"cell": sum_obj.get("cell", {}), "records": records, "details": details}, lines


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", required=True, help="BLEURT folder (the port's layout)")
    p.add_argument("--predictions", required=True, help="the harness's sum_predictions.tsv")
    p.add_argument("--sum-result", required=True, help="the same cell's sum.json (cell, runs and seeds)")
    p.add_argument("--out", required=True, help="result JSON (one bleurt record per run)")
    p.add_argument("--items", help="per-item scores TSV (run, id, bleurt)")
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--gelu", default="tanh", choices=["tanh", "exact"], help="tanh: TensorFlow BLEURT's")
    p.add_argument("--threads", type=int)
    p.add_argument("--log")
    a = p.parse_args(argv)
    setup_logging(a.log)
    set_threads(a.threads)
    result, lines = score_predictions(a.predictions, a.sum_result, a.model, batch_size=a.batch_size, gelu=a.gelu)
    if a.items:
        write_text(a.items, "\n".join(lines) + "\n")
    write_json(a.out, result)
    log.info("bleurt: %s", [round(r["value"], 4) for r in result["records"]] or result["details"].get("unavailable"))


if __name__ == "__main__":
    sys.exit(main())
