"""Fair neural ranking pipeline: bias-aware training and fairness evaluation of cross-encoders."""

__version__ = "0.1.0"
