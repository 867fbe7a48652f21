"""Feeding the embedding model from Python as crates/embed does, in either of
its two forms: the published one (`attention_mask`, texts padded to the
longest of a call) and the installed int8 rewrite's (texts packed into one
row: scripts/model_int8.py, `expose_packing`). Then mean pooling over each
text's tokens and unit length, as vigil.embed does.

Numpy only, so every bench venv can import it (bench/embed/ on sys.path).
"""
import numpy as np

LOWEST = np.finfo(np.float32).min


def takes_packed(session):
    return "pack_index" in {i.name for i in session.get_inputs()}


def inputs(session, texts):
    """The feed of one call over `texts` (lists of token ids) in the form
    `session` takes."""
    names = {i.name for i in session.get_inputs()}
    batch, width = len(texts), max(len(t) for t in texts)
    if "pack_index" in names:
        ids = np.concatenate([np.asarray(t, np.int64) for t in texts])[None, :]
        positions = np.concatenate([np.arange(len(t), dtype=np.int64) for t in texts])[None, :]
        pad = np.zeros((batch, width), np.int64)
        pack = np.zeros(ids.shape[1], np.int64)
        bias = np.full((batch, 1, 1, width), LOWEST, np.float32)
        at = 0
        for row, t in enumerate(texts):
            pad[row, :] = at
            pad[row, :len(t)] = np.arange(at, at + len(t))
            pack[at:at + len(t)] = row * width + np.arange(len(t))
            bias[row, 0, 0, :len(t)] = 0
            at += len(t)
        feed = {"input_ids": ids, "position_ids": positions, "pad_index": pad, "pack_index": pack[None, :],
                "attention_bias": bias}
    else:
        ids = np.zeros((batch, width), np.int64)
        mask = np.zeros_like(ids)
        for row, t in enumerate(texts):
            ids[row, :len(t)] = t
            mask[row, :len(t)] = 1
        feed = {"input_ids": ids, "attention_mask": mask}
    if "token_type_ids" in names:
        feed["token_type_ids"] = np.zeros_like(ids)
    return feed


def embed(session, texts):
    """Unit-length mean-pooled embeddings of `texts` (lists of token ids), one call."""
    feed = inputs(session, texts)
    hidden = session.run(None, feed)[0]
    if "pack_index" in feed:
        rows, at = [], 0
        for t in texts:
            rows.append(hidden[0, at:at + len(t)].mean(0))
            at += len(t)
        mean = np.stack(rows)
    else:
        mask = feed["attention_mask"][..., None].astype(np.float32)
        mean = (hidden * mask).sum(1) / mask.sum(1)
    return mean / np.linalg.norm(mean, axis=1, keepdims=True)
