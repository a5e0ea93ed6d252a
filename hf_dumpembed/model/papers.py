"""BibTeX of the three papers the package implements: the model card's citations and mteb's ModelMeta reference."""

from __future__ import annotations

PAPERS = {
    "dump_tokens_2026": """\
@inproceedings{dump_tokens_2026,
  title     = {Reducing Representational Interference in Retrieval Embeddings with Trainable Prefix Tokens},
  booktitle = {Proceedings of the 35th ACM International Conference on Information and Knowledge Management (CIKM '26)},
  year      = {2026},
  doi       = {10.1145/3799682.3840002},
  note      = {arXiv:2611.07298}
}""",
    "spectemp_2026": """\
@misc{spectemp_2026,
  title  = {Spectral Tempering for Embedding Compression in Dense Passage Retrieval},
  author = {Li, Yongkang and Eustratiadis, Panagiotis and Kanoulas, Evangelos},
  year   = {2026}
}""",
    "embedfilter_2026": """\
@misc{embedfilter_2026,
  title = {Your UnEmbedding Matrix is Secretly a Feature Lens for Text Embeddings},
  year  = {2026},
  note  = {arXiv:2606.07502}
}""",
}
