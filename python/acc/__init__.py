"""acc: Python tools for the acc activation-checkpointing compiler.

`python3 -m acc import --module FILE.py:FUNC -o DIR` imports a PyTorch
module into acc's DSL (acc/torch_import.py). Importing this package does not
import torch.
"""
