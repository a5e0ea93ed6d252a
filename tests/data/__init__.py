"""Tests of hf_dumpembed/data/ (hf_dumpembed/data.py for cli), one file per module."""
