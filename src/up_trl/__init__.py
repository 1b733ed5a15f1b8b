"""up-trl: UP (Unbounded Positive Asymmetric Optimization, arXiv 2607.06987) for Hugging Face TRL.

Where UP lives: `up_trl.losses` (the equations, pure tensors) and `up_trl.trainer` (the glue to TRL).
"""

from .config import UPGRPOConfig
from .losses import probability_capacity, self_anchored_ratio, up_per_token_loss
from .trainer import UPGRPOTrainer

__version__ = "0.1.0"
__all__ = ["UPGRPOConfig", "UPGRPOTrainer", "probability_capacity", "self_anchored_ratio", "up_per_token_loss"]
