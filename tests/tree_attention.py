"""A test stand-in, not part of up-trl: a pure-PyTorch flash-attention-3 "tree" attention for TRL's async GRPO on CPU.
Segment s attends to its root-to-segment path keys with FA3's bottom-right causal mask: query i sees key j iff
j <= i + (Lk - Lq) (and j >= i + Lk - Lq - w + 1 with a window w). `register_reference_tree_attention()` registers
`tree_attention_reference` under TRL's name "tree_fa3"."""

from __future__ import annotations

import torch
from transformers import AttentionInterface
from transformers.integrations.flash_attention import get_target_dtype
from transformers.masking_utils import AttentionMaskInterface

TREE_ATTENTION = "tree_fa3"  # trl.experimental.async_grpo.packing.TREE_ATTENTION (pinned by tests/test_async_grpo.py)


def _segment_positions(cu_seqlens: torch.Tensor, total: int) -> tuple[torch.Tensor, torch.Tensor]:
    """For each of `total` rows: its segment index and its position inside the segment."""
    cu_seqlens = cu_seqlens.long()
    rows = torch.arange(total, device=cu_seqlens.device)
    segment = torch.searchsorted(cu_seqlens[1:], rows, right=True)
    return segment, rows - cu_seqlens[segment]


def varlen_causal_attention(
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    cu_seqlens_q: torch.Tensor,
    cu_seqlens_k: torch.Tensor,
    *,
    softmax_scale: float | None = None,
    window_size: tuple[int, int] = (-1, -1),
    softcap: float = 0.0,
) -> torch.Tensor:
    """Reference of `flash_attn_varlen_func(q, k, v, cu_q, cu_k, ..., causal=True)`: q (Nq, H, D), k/v (Nk, Hkv, D)
    with H a multiple of Hkv (GQA); returns (Nq, H, D). Computed in float32, returned in q's dtype.

    Equal scores, so each output is the mean of the values it sees. Segment 0 is plain causal over 2 tokens; segment 1
    is a 1-token branch whose path has 3 keys: it sees all 3 (bottom-right alignment).

    >>> q = torch.zeros(3, 1, 2); k = torch.zeros(5, 1, 2); v = torch.arange(5.0).view(5, 1, 1).expand(5, 1, 2)
    >>> varlen_causal_attention(q, k, v, torch.tensor([0, 2, 3]), torch.tensor([0, 2, 5]))[:, 0, 0]
    tensor([0.0000, 0.5000, 3.0000])
    """
    n_q, heads, dim = query.shape
    n_k, kv_heads = key.shape[0], key.shape[1]
    scale = dim**-0.5 if softmax_scale is None else softmax_scale
    seg_q, pos_q = _segment_positions(cu_seqlens_q, n_q)
    seg_k, pos_k = _segment_positions(cu_seqlens_k, n_k)
    offset = (cu_seqlens_k[1:] - cu_seqlens_k[:-1]).long() - (cu_seqlens_q[1:] - cu_seqlens_q[:-1]).long()
    last_visible = (pos_q + offset[seg_q]).unsqueeze(1)  # (Nq, 1): the diagonal of each query's segment
    allowed = (seg_q.unsqueeze(1) == seg_k.unsqueeze(0)) & (pos_k.unsqueeze(0) <= last_visible)
    if window_size[0] >= 0:
        allowed &= pos_k.unsqueeze(0) >= last_visible - window_size[0]

    key = key.float().repeat_interleave(heads // kv_heads, dim=1)
    value = value.float().repeat_interleave(heads // kv_heads, dim=1)
    scores = torch.einsum("qhd,khd->hqk", query.float(), key) * scale
    if softcap:
        scores = softcap * torch.tanh(scores / softcap)
    scores = scores.masked_fill(~allowed, float("-inf"))
    probs = torch.softmax(scores, dim=-1).nan_to_num(0.0)  # a query that sees no key outputs 0, as FA3 does
    return torch.einsum("hqk,khd->qhd", probs, value).to(query.dtype)


def tree_attention_reference(
    module,
    query,
    key,
    value,
    attention_mask,
    *,
    tree_kv_index,
    tree_cu_seqlens_q,
    tree_cu_seqlens_k,
    tree_max_seqlen_q,
    tree_max_seqlen_k,
    scaling=None,
    sliding_window=None,
    softcap=None,
    **kwargs,
):
    """TRL's `packing.tree_attention`, line for line, with `varlen_causal_attention` in place of the FA3 kernel."""
    dtype = get_target_dtype(query, module) or query.dtype
    query, key, value = (x.transpose(1, 2)[0].to(dtype) for x in (query, key, value))
    out = varlen_causal_attention(
        query,
        key.index_select(0, tree_kv_index),
        value.index_select(0, tree_kv_index),
        tree_cu_seqlens_q,
        tree_cu_seqlens_k,
        softmax_scale=scaling,
        window_size=(sliding_window - 1, 0) if sliding_window else (-1, -1),
        softcap=softcap or 0.0,
    )
    return out.unsqueeze(0), None


def register_reference_tree_attention() -> None:
    """Register the reference under "tree_fa3" (replacing TRL's FA3 one), as `packing.register_tree_attention` does."""
    AttentionInterface.register(TREE_ATTENTION, tree_attention_reference)
    AttentionMaskInterface.register(TREE_ATTENTION, lambda **kwargs: None)
