"""Specboard runner: benchmark speculative decoding on a real llama-server.

Plain Python with no Django import, usable alone from a terminal on any GPU box.
"""

__version__ = "0.1.0"
