"""A plain MLP classifier written as an ordinary PyTorch module: nn.Sequential
of nn.Linear and nn.ReLU, cross-entropy over class labels. build() is the
`acc import` contract: (module, example inputs)."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class MLP(nn.Module):
    def __init__(self, d_in=24, hidden=16, classes=5):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(d_in, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.Tanh(),
                                 nn.Linear(hidden, classes))

    def forward(self, x, labels):
        return F.cross_entropy(self.net(x), labels)


def build():
    torch.manual_seed(2)
    x = torch.randn(8, 24)
    labels = torch.randint(0, 5, (8,))
    return MLP(), (x, labels)
