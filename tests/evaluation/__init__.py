"""Tests of hf_dumpembed/evaluation/ (hf_dumpembed/evaluation.py for cli), one file per module."""
