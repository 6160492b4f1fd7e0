"""Small PyTorch modules the baseline tests pickle: their class must be importable by the
worker that unpickles them (it looks in its working directory, tests/onnx)."""
import torch
import torch.nn as nn


class Small(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.fc = nn.Linear(8, 4)

    def forward(self, x):
        return self.fc(torch.relu(self.conv(x)).mean((2, 3)))
