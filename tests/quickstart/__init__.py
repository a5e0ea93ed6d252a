"""Tests of hf_dumpembed/quickstart/ (hf_dumpembed/quickstart.py for cli), one file per module."""
