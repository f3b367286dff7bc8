"""Modules `acc import` must refuse, each with a clear error (tests/torch/errors.py):
one builder per case; the comment on the offending line is what the error must quote."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Cumsum(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x):
        h = self.fc(x)
        return torch.cumsum(h, dim=-1).mean()  # unsupported: cumsum


class Sort(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x):
        return torch.sort(self.fc(x), dim=-1).values.mean()  # unsupported: sort


class Reciprocal(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x):
        return (2.0 / self.fc(x)).mean()  # unsupported: number / tensor


class MaxIndices(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)
        self.emb = nn.Embedding(8, 4)

    def forward(self, x):
        i = self.fc(x).max(dim=-1).indices  # refused: argmax
        return self.emb(i).mean()


class FillInf(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x, m):
        h = self.fc(x).masked_fill(m == 0, float("-inf"))  # refused: -inf fill
        return torch.softmax(h, dim=-1).mean()


class NotALoss(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x):
        return self.fc(x)


class Padded(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 3)

    def forward(self, x, y):
        return F.cross_entropy(self.fc(x), y)  # refused: ignore_index


class QueryMask(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)
        self.register_buffer("tril", torch.tril(torch.ones(4, 4)).bool())

    def forward(self, x):
        q = self.fc(x).view(2, 4, 2, 4).transpose(1, 2)
        y = F.scaled_dot_product_attention(q, q, q, attn_mask=self.tril)  # refused: a constant mask
        return y.mean()


class ToLong(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x):
        k = (self.fc(x) * 4.0).long()  # refused: a float cast to an integer
        return (self.fc(x) * k).mean()


def query_mask():
    return QueryMask(), (torch.randn(2, 4, 8),)


def to_long():
    return ToLong(), (torch.randn(2, 4, 8),)


def padded():
    return Padded(), (torch.randn(4, 8), torch.tensor([0, 2, -100, 1]))


def cumsum():
    return Cumsum(), (torch.randn(4, 8),)


def sort():
    return Sort(), (torch.randn(4, 8),)


def reciprocal():
    return Reciprocal(), (torch.randn(4, 8),)


def max_indices():
    return MaxIndices(), (torch.randn(4, 8),)


def fill_inf():
    return FillInf(), (torch.randn(4, 8), torch.randint(0, 2, (4, 8)))


def not_a_loss():
    return NotALoss(), (torch.randn(4, 8),)
