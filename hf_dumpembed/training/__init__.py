"""Fine-tuning with [DUMP] tokens: data rows, one config file per run, the trainer (see docs/training.md)."""

from .config import ConfigError, TrainConfig, config_from_dict, load_config
from .trainer import train

__all__ = ["ConfigError", "TrainConfig", "config_from_dict", "load_config", "train"]
