"""Remote code copied verbatim into every saved DumpEmbed model.

The files in this folder import only ``torch``, ``transformers`` (and ``huggingface_hub``, which transformers
requires) and each other, and read no files, so a saved model loads with ``trust_remote_code=True`` where
``hf_dumpembed`` is not installed.
"""

from .configuration_dumpembed import DumpEmbedConfig
from .modeling_dumpembed import DumpEmbedModel, DumpEmbedOutput

# Every save_pretrained of these classes copies the remote-code files and writes auto_map into config.json.
DumpEmbedConfig.register_for_auto_class()
DumpEmbedModel.register_for_auto_class("AutoModel")

__all__ = ["DumpEmbedConfig", "DumpEmbedModel", "DumpEmbedOutput"]
