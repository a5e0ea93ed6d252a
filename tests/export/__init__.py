"""Tests of hf_dumpembed/export/ (hf_dumpembed/export.py for cli), one file per module."""
