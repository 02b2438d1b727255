"""The LAPT training data (paper 002 §6.4): sentences joined with EOS, packed into blocks, reshuffled per epoch."""

from __future__ import annotations

import functools


def pack_blocks(token_lists: list[list[int]], eos_id: int, seq_len: int) -> tuple[list[list[int]], int]:
    """Join sentences with one EOS between consecutive ones, concatenate, and cut into full blocks of ``seq_len``.

    Returns the blocks and the length of the whole stream (the remainder ``stream % seq_len`` is dropped).
    """
    stream: list[int] = []
    for i, ids in enumerate(token_lists):
        if i:
            stream.append(eos_id)
        stream.extend(ids)
    n_blocks = len(stream) // seq_len
    return [stream[b * seq_len : (b + 1) * seq_len] for b in range(n_blocks)], len(stream)


def build_blocks(lines: list[str], tokenizer, seq_len: int, source: str = "corpus"):
    """Tokenize D (one sentence a line) and pack it into a [n_blocks, seq_len] LongTensor (paper 002 §6.4).

    Blank lines are skipped. Raises ValueError naming ``source`` when D is too short for a single block.
    """
    import torch

    if seq_len < 3:
        raise ValueError(f"seq_len must be at least 3 (mtp predicts t+2), got {seq_len}")
    eos = tokenizer.eos_token_id
    if eos is None:
        raise ValueError(f"the tokenizer of the model has no EOS token; it is needed to join the sentences of {source}")
    sentences = [line for line in lines if line.strip()]
    token_lists = tokenizer(sentences, add_special_tokens=False)["input_ids"] if sentences else []
    blocks, n_tokens = pack_blocks(token_lists, eos, seq_len)
    if not blocks:
        raise ValueError(
            f"{source}: {len(sentences)} sentences give {n_tokens} tokens (EOS joins included), fewer than one block "
            f"of seq_len={seq_len}; use a smaller seq_len (at most {max(n_tokens, 1)}) or more text"
        )
    return torch.tensor(blocks, dtype=torch.long), n_tokens


@functools.lru_cache(maxsize=1)  # one epoch's order serves all of its steps
def epoch_order(n_blocks: int, seed: int, epoch: int):
    """The block order of ``epoch``: a permutation drawn from its own generator seeded with ``seed + epoch``.

    It depends on the seed alone, not on any RNG state, so a resumed run needs nothing restored to reproduce it.
    """
    import torch

    return torch.randperm(n_blocks, generator=torch.Generator().manual_seed(seed + epoch))
