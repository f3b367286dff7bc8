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


class ErfGelu(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x):
        return F.gelu(self.fc(x)).mean()  # refused: erf gelu


class PlusOne(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x):
        return (self.fc(x) + 1.0).mean()  # refused: tensor + number


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


def padded():
    return Padded(), (torch.randn(4, 8), torch.tensor([0, 2, -100, 1]))


def cumsum():
    return Cumsum(), (torch.randn(4, 8),)


def sort():
    return Sort(), (torch.randn(4, 8),)


def erf_gelu():
    return ErfGelu(), (torch.randn(4, 8),)


def plus_one():
    return PlusOne(), (torch.randn(4, 8),)


def not_a_loss():
    return NotALoss(), (torch.randn(4, 8),)
