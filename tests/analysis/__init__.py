"""Tests of hf_dumpembed/analysis/ (hf_dumpembed/analysis.py for cli), one file per module."""
