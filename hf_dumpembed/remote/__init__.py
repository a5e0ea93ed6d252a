"""Remote code copied verbatim into every saved DumpEmbed model.

The files in this folder import only ``torch``, ``transformers`` and each other, so a
saved model loads with ``trust_remote_code=True`` where ``hf_dumpembed`` is not installed.
"""

from .configuration_dumpembed import DumpEmbedConfig
from .modeling_dumpembed import DumpEmbedModel, DumpEmbedOutput

__all__ = ["DumpEmbedConfig", "DumpEmbedModel", "DumpEmbedOutput"]
