"""Tests of hf_dumpembed/_utils/ (hf_dumpembed/_utils.py for cli), one file per module."""
