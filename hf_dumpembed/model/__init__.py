"""The DumpEmbed model folder: [DUMP] tokenizer and embeddings, prompts, the builder, sentence-transformers files,
the stock export, the load-path check and the model card."""
