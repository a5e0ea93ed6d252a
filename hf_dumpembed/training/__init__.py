"""Fine-tuning with [DUMP] tokens: data rows, one config file per run, the trainer (see README "Training")."""

from .config import ConfigError, TrainConfig, load_config
from .trainer import train

__all__ = ["ConfigError", "TrainConfig", "load_config", "train"]
