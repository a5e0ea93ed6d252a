"""Tests of hf_dumpembed/training/ (hf_dumpembed/training.py for cli), one file per module."""
