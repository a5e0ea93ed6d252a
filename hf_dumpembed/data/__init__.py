"""Inputs on disk: BEIR-style retrieval folders, the builders of the real-text collections, the embedded backbones."""
