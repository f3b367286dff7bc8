"""Other ways PyTorch users write the same things (tests/torch/roundtrip.py
imports each builder and checks one step against PyTorch):

  llm():  Hugging Face style grouped-query attention (repeat_kv: expand then
          reshape of the key/value heads), a Meta-style RMSNorm
          (x.float() ... .type_as(x), eps 1e-6), nn.RMSNorm (F.rms_norm),
          nn.Dropout in eval mode, an output head with a bias;
  attn(): x @ W.T + b, attention written out with softmax, a non-causal
          F.scaled_dot_product_attention on unsqueezed heads, a
          mean-squared-error loss with ** 2;
  newops(): an MLP with nn.GELU() (the erf form), sigmoid gating, numbers
          added, subtracted, multiplied and divided (x * 0.5 + 1.0, 1.0 - x,
          x / 4.0), log of a positive value, amax / max(dim).values / amin,
          torch.where (of two tensors, or of a number and a tensor) and
          masked_fill on an integer mask input, nn.LayerNorm(bias=False),
          mean(u * u) + 1.0 (how RMSNorm starts) used as a value of its own;
  bert(): a BERT-style encoder on padded batches: a boolean key-padding
          mask (keep.bool()[:, None, None, :]) into
          F.scaled_dot_product_attention (acc's mask=), and a float
          additive mask ((1.0 - m[:, None, None, :]) * -10000.0) plus a
          learned relative-position bias [H, T, T] (acc's bias=);
  masks(): masks and casts as PyTorch users write them: a padding mask
          (pad == 0)[:, None, None, :] into
          F.scaled_dot_product_attention, (ids != pad).float() and
          masked_fill(ids == pad, 0.0) over the features, x * (x > 0).float(),
          a comparison with a parameter (broadcast), ids.float(), an
          integer mask in float arithmetic, sqrt, rsqrt and abs, and an
          RMSNorm without a weight.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F


class MetaRMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def _norm(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)

    def forward(self, x):
        return self._norm(x.float()).type_as(x) * self.weight


def repeat_kv(x, n_rep):
    b, h, s, d = x.shape
    if n_rep == 1:
        return x
    return x[:, :, None, :, :].expand(b, h, n_rep, s, d).reshape(b, h * n_rep, s, d)


class GQAttention(nn.Module):
    def __init__(self, dim=32, heads=4, kv_heads=2):
        super().__init__()
        self.heads, self.kv_heads, self.hd = heads, kv_heads, dim // heads
        self.q_proj = nn.Linear(dim, dim, bias=False)
        self.k_proj = nn.Linear(dim, kv_heads * self.hd, bias=False)
        self.v_proj = nn.Linear(dim, kv_heads * self.hd, bias=False)
        self.o_proj = nn.Linear(dim, dim, bias=False)

    def forward(self, x):
        B, T, C = x.shape
        q = self.q_proj(x).view(B, T, self.heads, self.hd).transpose(1, 2)
        k = self.k_proj(x).view(B, T, self.kv_heads, self.hd).transpose(1, 2)
        v = self.v_proj(x).view(B, T, self.kv_heads, self.hd).transpose(1, 2)
        k = repeat_kv(k, self.heads // self.kv_heads)
        v = repeat_kv(v, self.heads // self.kv_heads)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.o_proj(y.transpose(1, 2).reshape(B, T, C))


class SmallLM(nn.Module):
    def __init__(self, vocab=50, dim=32):
        super().__init__()
        self.embed_tokens = nn.Embedding(vocab, dim)
        self.input_layernorm = MetaRMSNorm(dim)
        self.self_attn = GQAttention(dim)
        self.norm = nn.RMSNorm(dim, eps=1e-5)
        self.dropout = nn.Dropout(0.1)
        self.lm_head = nn.Linear(dim, vocab)

    def forward(self, idx, targets):
        h = self.embed_tokens(idx)
        h = h + self.self_attn(self.input_layernorm(h))
        h = self.dropout(self.norm(h))
        logits = self.lm_head(h)
        return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))


class WrittenOut(nn.Module):
    def __init__(self, dim=16):
        super().__init__()
        self.W = nn.Parameter(torch.randn(dim, dim) * 0.3)
        self.b = nn.Parameter(torch.randn(dim) * 0.1)

    def forward(self, x, y):
        h = x @ self.W.T + self.b
        a = torch.softmax(h @ h.transpose(-2, -1) / 4.0, dim=-1) @ h
        o = F.scaled_dot_product_attention(a.unsqueeze(1), a.unsqueeze(1), a.unsqueeze(1)).squeeze(1)
        return ((o - y) ** 2).mean()


class NewOps(nn.Module):
    def __init__(self, dim=16, hidden=32, classes=5):
        super().__init__()
        self.norm = nn.LayerNorm(dim, bias=False)
        self.up = nn.Linear(dim, hidden)
        self.gate = nn.Linear(dim, hidden)
        self.act = nn.GELU()
        self.down = nn.Linear(hidden, dim)
        self.head = nn.Linear(dim, classes)

    def forward(self, x, mask, targets):
        h = self.norm(x)
        u = self.act(self.up(h)) * torch.sigmoid(self.gate(h))  # erf GELU, sigmoid gating
        u = u * 0.5 + 1.0
        u = torch.log(torch.exp(u - 0.25) + 1.0) - (1.0 - u) / 4.0  # log of a positive value
        u = u - torch.amax(u, dim=-1, keepdim=True)
        u = u / ((u * u).mean(-1, keepdim=True) + 1.0)  # RMSNorm's start, used as itself
        s = self.down(u)
        s = torch.where(mask.bool(), s, s * 2.0) + s.masked_fill(mask == 0, -3.0) * torch.where(mask != 0, 0.5, s)
        s = s + s.max(dim=1, keepdim=True).values - torch.amin(s, dim=-1, keepdim=True)
        logits = self.head(s)
        return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))


class Masks(nn.Module):
    def __init__(self, vocab=20, dim=16, heads=2, pad=1):
        super().__init__()
        self.emb = nn.Embedding(vocab, dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.thr = nn.Parameter(torch.randn(dim) * 0.5)
        self.head = nn.Linear(dim, vocab)
        self.dim, self.heads, self.pad = dim, heads, pad

    def forward(self, ids, padm, targets):
        b, t = ids.shape
        x = self.emb(ids)
        q, k, v = (z.view(b, t, self.heads, -1).transpose(1, 2) for z in self.qkv(x).split(self.dim, -1))
        o = F.scaled_dot_product_attention(q, k, v, attn_mask=(padm == 0)[:, None, None, :])  # 1 marks padding
        h = self.proj(o.transpose(1, 2).reshape(b, t, self.dim))
        h = h * (h > 0).float() + 0.1 * h * (h <= self.thr)  # relu written out; a parameter compared
        h = h * (ids != self.pad).float()[:, :, None] + h.masked_fill((ids == self.pad)[:, :, None], 0.0)
        n = torch.sqrt(h.abs() + 1.0) - torch.rsqrt(h * h + 0.5) + self.thr
        n = n * torch.rsqrt((n * n).mean(-1, keepdim=True) + 1e-6)  # RMSNorm without a weight
        n = n + n * padm[:, :, None] * 0.5  # an integer mask promoted to float32
        n = n - n * (1 - padm)[:, :, None] * 0.25  # integer arithmetic on the mask, then promoted
        logits = self.head(n + ids.float()[:, :, None] * 0.01)
        return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))


class QKMasks(nn.Module):
    """Boolean attention masks over queries and keys: a block-diagonal [Tq,
    Tk] mask of packed sequences from segment ids, a [B, 1, Tq, Tk] one
    (a sliding window with padding and a row that attends to nothing) read
    from an integer tensor through ~(win == 0), and a [Tq, Tk] one through
    logical_not of a comparison."""

    def __init__(self, vocab=20, dim=16, heads=2):
        super().__init__()
        self.emb = nn.Embedding(vocab, dim)
        self.qkv = nn.ModuleList(nn.Linear(dim, 3 * dim) for _ in range(3))
        self.proj = nn.ModuleList(nn.Linear(dim, dim) for _ in range(3))
        self.head = nn.Linear(dim, vocab)
        self.dim, self.heads = dim, heads

    def attend(self, i, x, mask):
        b, t, _ = x.shape
        q, k, v = (z.view(b, t, self.heads, -1).transpose(1, 2) for z in self.qkv[i](x).split(self.dim, -1))
        o = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        return x + self.proj[i](o.transpose(1, 2).reshape(b, t, self.dim))

    def forward(self, ids, seg, win, targets):
        x = self.emb(ids)
        x = self.attend(0, x, seg[:, None] == seg[None, :])  # [Tq, Tk]: block-diagonal
        x = self.attend(1, x, ~(win == 0)[:, None])  # [B, 1, Tq, Tk]
        x = self.attend(2, x, torch.logical_not(seg[:, None] < seg[None, :]))  # own and earlier sequences
        logits = self.head(x)
        return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))


class BertLayer(nn.Module):
    def __init__(self, dim=32, heads=4):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.out = nn.Linear(dim, dim)
        self.ln1 = nn.LayerNorm(dim)
        self.up = nn.Linear(dim, 2 * dim)
        self.down = nn.Linear(2 * dim, dim)
        self.ln2 = nn.LayerNorm(dim)

    def forward(self, x, attn_mask):
        B, T, C = x.shape
        q, k, v = self.qkv(x).split(C, dim=-1)
        q, k, v = (t.view(B, T, self.heads, C // self.heads).transpose(1, 2) for t in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask)
        x = self.ln1(x + self.out(y.transpose(1, 2).reshape(B, T, C)))
        return self.ln2(x + self.down(F.gelu(self.up(x))))


class TinyBert(nn.Module):
    def __init__(self, vocab=40, dim=32, heads=4, T=8):
        super().__init__()
        self.tok = nn.Embedding(vocab, dim)
        self.pos = nn.Parameter(torch.randn(T, dim) * 0.1)
        self.rel = nn.Parameter(torch.randn(heads, T, T) * 0.5)  # learned relative-position bias
        self.l1 = BertLayer(dim, heads)
        self.l2 = BertLayer(dim, heads)
        self.head = nn.Linear(dim, vocab)

    def forward(self, idx, keep, keepf, targets):
        x = self.tok(idx) + self.pos
        x = self.l1(x, keep.bool()[:, None, None, :])  # True: attend
        ext = (1.0 - keepf[:, None, None, :]) * -10000.0  # BERT's additive mask
        x = self.l2(x, ext + self.rel)
        logits = self.head(x)
        return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))


def bert():
    torch.manual_seed(6)
    keep = torch.tensor([[1, 1, 1, 1, 1, 0, 0, 0], [1, 1, 1, 1, 1, 1, 1, 1]])  # the first sequence padded
    return TinyBert(), (torch.randint(0, 40, (2, 8)), keep, keep.float(), torch.randint(0, 40, (2, 8)))


def llm():
    torch.manual_seed(3)
    model = SmallLM()
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn_like(p) * 0.1)
    model.eval()  # dropout off: PyTorch's dropout masks are not acc's
    return model, (torch.randint(0, 50, (2, 8)), torch.randint(0, 50, (2, 8)))


def attn():
    torch.manual_seed(4)
    return WrittenOut(), (torch.randn(2, 8, 16), torch.randn(2, 8, 16))


def newops():
    torch.manual_seed(5)
    mask = torch.randint(0, 2, (2, 8, 1))  # per position, broadcast over the features
    return NewOps(), (torch.randn(2, 8, 16), mask, torch.randint(0, 5, (2, 8)))


def masks():
    torch.manual_seed(7)
    ids = torch.randint(2, 20, (2, 8))
    ids[0, 5:] = 1  # the first sequence padded (pad id 1)
    return Masks(), (ids, (ids == 1).long(), torch.randint(0, 20, (2, 8)))


def qkmasks():
    torch.manual_seed(8)
    seg = torch.tensor([0, 0, 0, 1, 1, 1, 1, 2])  # three sequences packed into one row of 8
    t = torch.arange(8)
    win = ((t[None, :] <= t[:, None]) & (t[None, :] > t[:, None] - 3)).long().repeat(2, 1, 1)  # a window of 3
    win[1, :, 6:] = 0  # the second sequence padded: keys 6, 7 dropped
    win[0, 2] = 0  # query 2 of the first attends to nothing: zeros
    win[1] *= 2  # any nonzero attends
    return QKMasks(), (torch.randint(0, 20, (2, 8)), seg, win, torch.randint(0, 20, (2, 8)))
